package data

import (
	"fmt"
	"time"
)

// TimeUnit is the width of a time bucket.
type TimeUnit string

// The supported time units. Buckets are aligned to UTC: an hour bucket is
// floor(t/3600), a day floor(t/86400), a week floor((t+3*86400)/604800)
// (weeks start on Monday 00:00 UTC), and a month is a calendar month in UTC.
// TimeNone drops the time mode and makes a 2-way (user x item) store.
const (
	TimeHour  TimeUnit = "hour"
	TimeDay   TimeUnit = "day"
	TimeWeek  TimeUnit = "week"
	TimeMonth TimeUnit = "month"
	TimeNone  TimeUnit = "none"
)

// ParseTimeUnit parses a time-unit name; the empty string means TimeDay.
func ParseTimeUnit(s string) (TimeUnit, error) {
	switch TimeUnit(s) {
	case "":
		return TimeDay, nil
	case TimeHour, TimeDay, TimeWeek, TimeMonth, TimeNone:
		return TimeUnit(s), nil
	}
	return "", fmt.Errorf("data: unknown time unit %q (want hour, day, week, month or none)", s)
}

// AbsBucket returns the absolute bucket number of Unix time t (seconds):
// the number of whole units since the Unix epoch, floored.
func (u TimeUnit) AbsBucket(t int64) int64 {
	switch u {
	case TimeHour:
		return floorDiv(t, 3600)
	case TimeWeek:
		// 1970-01-01 was a Thursday; shift so weeks start on Monday.
		return floorDiv(t+3*86400, 604800)
	case TimeMonth:
		tm := time.Unix(t, 0).UTC()
		return int64(tm.Year()-1970)*12 + int64(tm.Month()-1)
	default:
		return floorDiv(t, 86400)
	}
}

// Start returns the Unix time at which absolute bucket b begins.
func (u TimeUnit) Start(b int64) int64 {
	switch u {
	case TimeHour:
		return b * 3600
	case TimeWeek:
		return b*604800 - 3*86400
	case TimeMonth:
		y := 1970 + floorDiv(b, 12)
		m := b - floorDiv(b, 12)*12
		return time.Date(int(y), time.Month(m+1), 1, 0, 0, 0, 0, time.UTC).Unix()
	default:
		return b * 86400
	}
}

// MaxTimeSpanYears bounds the time a dense time mode may cover: 200 years
// of buckets of its unit (MaxBuckets). Every bucket between the first and
// the last time stamp is a row of the time factor, so two time stamps far
// apart (a millisecond column read as seconds, a corrupt date) would
// otherwise ask for millions of rows from a two-row file.
const MaxTimeSpanYears = 200

// MaxBuckets returns the largest time mode of unit u: the number of its
// buckets in MaxTimeSpanYears years of 365.25 days (hour 1,753,200, day
// 73,050, week 10,436, month 2,400).
func (u TimeUnit) MaxBuckets() int {
	const days = MaxTimeSpanYears * 36525 / 100
	switch u {
	case TimeHour:
		return days * 24
	case TimeWeek:
		return (days + 6) / 7
	case TimeMonth:
		return MaxTimeSpanYears * 12
	default:
		return days
	}
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// TimeBucketing records how raw Unix seconds map to the dense time mode, so
// that a later prediction for a time stamp lands in the same bucket.
// Dense bucket k covers absolute bucket First+k; the mode is contiguous
// (buckets with no observation in between still exist), Count buckets long.
type TimeBucketing struct {
	Unit  TimeUnit `json:"unit"`
	First int64    `json:"first_bucket"`
	Count int      `json:"buckets"`
}

// Bucket maps Unix time t to a dense bucket. Times outside the trained range
// map to the nearest bucket, and clamped reports that this happened.
func (tb *TimeBucketing) Bucket(t int64) (k int32, clamped bool) {
	b := tb.Unit.AbsBucket(t) - tb.First
	if b < 0 {
		return 0, true
	}
	if b >= int64(tb.Count) {
		return int32(tb.Count - 1), true
	}
	return int32(b), false
}

// Start returns the Unix time at which dense bucket k begins.
func (tb *TimeBucketing) Start(k int32) int64 { return tb.Unit.Start(tb.First + int64(k)) }
