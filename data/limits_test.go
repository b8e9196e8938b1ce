package data

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
)

// TestTimeSpanLimit: two rows whose time stamps lie 28,500 years apart
// (issue 14 case 4) used to ask for a dense time mode of 10 million days;
// the load now fails before allocating it, naming --time-unit.
func TestTimeSpanLimit(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "far.csv")
	if err := os.WriteFile(path, []byte("userId,movieId,rating,timestamp\n1,1,4,0\n2,2,3,900000000000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, u := range []TimeUnit{TimeHour, TimeDay, TimeWeek, TimeMonth} {
		_, _, err := Load(path, LoadOptions{Builder: BuilderOptions{TimeUnit: u}})
		if !errors.Is(err, ErrTimeSpan) || !strings.Contains(err.Error(), "--time-unit") || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: got %v, want ErrTimeSpan naming the file and --time-unit", u, err)
		}
	}
	// Without a time mode the same file loads.
	if _, _, err := Load(path, LoadOptions{Builder: BuilderOptions{TimeUnit: TimeNone}}); err != nil {
		t.Errorf("time unit none: %v", err)
	}
	// A span just inside the limit loads; one bucket more does not.
	for _, tc := range []struct {
		days int64
		ok   bool
	}{{int64(TimeDay.MaxBuckets()) - 1, true}, {int64(TimeDay.MaxBuckets()), false}} {
		csv := "userId,movieId,rating,timestamp\n1,1,4,0\n2,2,3," + arrowItoa(tc.days*86400) + "\n"
		if err := os.WriteFile(path, []byte(csv), 0o644); err != nil {
			t.Fatal(err)
		}
		s, _, err := Load(path, LoadOptions{})
		if tc.ok && (err != nil || s.Dims[2] != TimeDay.MaxBuckets()) {
			t.Errorf("span of %d days: %v", tc.days+1, err)
		}
		if !tc.ok && !errors.Is(err, ErrTimeSpan) {
			t.Errorf("span of %d days: got %v, want ErrTimeSpan", tc.days+1, err)
		}
	}
}

// TestTimeSpanLimitParquet: ten Parquet rows with nanosecond time stamps
// at about +-290,000 years used to ask for 16.9 GB.
func TestTimeSpanLimitParquet(t *testing.T) {
	dir := t.TempDir()
	const far = 9_100_000_000_000_000 // microseconds, about 288,000 years
	ts := make([]arrow.Timestamp, 10)
	users, items := make([]int64, 10), make([]int64, 10)
	vals := make([]float64, 10)
	for i := range ts {
		// Microseconds at the ends of the int64 range: +-292,000 years.
		if i%2 == 0 {
			ts[i] = arrow.Timestamp(far)
		} else {
			ts[i] = arrow.Timestamp(-far)
		}
		users[i], items[i], vals[i] = int64(i), int64(i), 3
	}
	rec := arrowRecord(arrowI64("userId", users...), arrowI64("movieId", items...), arrowF64("rating", vals...),
		arrowColumn{"timestamp", &arrow.TimestampType{Unit: arrow.Microsecond}, func(b array.Builder) {
			b.(*array.TimestampBuilder).AppendValues(ts, nil)
		}})
	defer rec.Release()
	path := filepath.Join(dir, "far.parquet")
	arrowWriteRecord(t, path, FormatParquet, rec)
	_, _, err := Load(path, LoadOptions{})
	if !errors.Is(err, ErrTimeSpan) || !strings.Contains(err.Error(), "--time-unit") {
		t.Fatalf("got %v, want ErrTimeSpan naming --time-unit", err)
	}
}
