package data

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"
)

// DuplicatePolicy says what to do with several observations of the same
// (user, item, time bucket) cell.
type DuplicatePolicy string

// Duplicate policies. DupLast keeps the observation that comes last in the
// input (the default), DupMean averages them, DupSum adds them up,
// DupError fails the load.
const (
	DupLast  DuplicatePolicy = "last"
	DupMean  DuplicatePolicy = "mean"
	DupError DuplicatePolicy = "error"
	// DupSum adds the values up (event counts of implicit feedback).
	DupSum DuplicatePolicy = "sum"
)

// ParseDuplicatePolicy parses a policy name; the empty string means DupLast.
func ParseDuplicatePolicy(s string) (DuplicatePolicy, error) {
	switch DuplicatePolicy(s) {
	case "":
		return DupLast, nil
	case DupLast, DupMean, DupError, DupSum:
		return DuplicatePolicy(s), nil
	}
	return "", fmt.Errorf("data: unknown duplicate policy %q (want last, mean, sum or error)", s)
}

// ErrDuplicate is returned (wrapped) when DupError meets a repeated cell.
var ErrDuplicate = errors.New("duplicate observation")

// ErrEmpty is returned (wrapped) when a load produces no observation.
var ErrEmpty = errors.New("no observations")

// BuilderOptions configure a Builder. The zero value buckets time by day,
// keeps the last of duplicate observations, and drops raw time stamps.
type BuilderOptions struct {
	// TimeUnit buckets the time column; TimeNone (or no time column) makes a
	// 2-way store. Zero means TimeDay.
	TimeUnit TimeUnit
	// Duplicates is the duplicate policy; zero means DupLast.
	Duplicates DuplicatePolicy
	// KeepTimestamps keeps the raw Unix seconds in Store.Timestamps.
	KeepTimestamps bool
	// MaxTimeBuckets bounds the size of the time mode (the buckets from the
	// earliest to the latest time stamp, all of which become rows of the
	// time factor); Finish fails with ErrTimeSpan, before allocating the
	// mode, when the time stamps span more. Zero means
	// TimeUnit.MaxBuckets() (200 years of buckets).
	MaxTimeBuckets int
}

// ErrTimeSpan is returned (wrapped) when the time stamps span more buckets
// than a time mode may hold.
var ErrTimeSpan = errors.New("time stamps span too many buckets")

// Builder assembles a Store from rows. Loaders intern IDs through the
// dictionaries Users and Items and call Add with the dense indices; Finish
// buckets time, resolves duplicates and returns the store. Rows are kept in
// input order, so the result is deterministic.
type Builder struct {
	Users, Items *Dict

	opts    BuilderOptions
	hasTime bool
	u, i    []int32
	r       []float64
	t       []int64
	// w[e] is the number of input rows row e stands for once Compact has
	// merged duplicates (nil before: every row is one input row).
	w  []int32
	ds DuplicateStats // merges done by Compact
}

// NewBuilder returns a builder with the given dictionaries. hasTime says
// whether the rows carry time stamps; when false (or opts.TimeUnit is
// TimeNone) the store has order 2.
func NewBuilder(users, items *Dict, hasTime bool, opts BuilderOptions) *Builder {
	if opts.TimeUnit == "" {
		opts.TimeUnit = TimeDay
	}
	if opts.Duplicates == "" {
		opts.Duplicates = DupLast
	}
	if opts.TimeUnit == TimeNone {
		hasTime = hasTime && opts.KeepTimestamps
	}
	return &Builder{Users: users, Items: items, opts: opts, hasTime: hasTime}
}

// Grow reserves room for n more rows.
func (b *Builder) Grow(n int) {
	b.u = slices.Grow(b.u, n)
	b.i = slices.Grow(b.i, n)
	b.r = slices.Grow(b.r, n)
	if b.hasTime {
		b.t = slices.Grow(b.t, n)
	}
}

// Add appends one observation. t is ignored when the builder has no time.
func (b *Builder) Add(user, item int32, rating float64, t int64) {
	b.u = append(b.u, user)
	b.i = append(b.i, item)
	b.r = append(b.r, rating)
	if b.hasTime {
		b.t = append(b.t, t)
	}
}

// Len returns the number of rows added so far.
func (b *Builder) Len() int { return len(b.r) }

// DuplicateStats reports what Finish did with repeated cells.
type DuplicateStats struct {
	// Cells is the number of distinct cells that were observed more than once.
	Cells int
	// Dropped is the number of rows removed by merging.
	Dropped int
}

// Finish builds the store. It fails with ErrEmpty when no row was added and
// with ErrDuplicate under DupError when a cell repeats.
func (b *Builder) Finish() (*Store, DuplicateStats, error) {
	ds := b.ds
	if len(b.r) == 0 {
		return nil, ds, ErrEmpty
	}
	s, err := b.cells()
	if err != nil {
		return nil, ds, err
	}
	if !b.opts.KeepTimestamps {
		s.Timestamps = nil
	}
	w := b.weights()
	b.u, b.i, b.r, b.t, b.w = nil, nil, nil, nil, nil
	if _, err := dedupe(s, b.opts.Duplicates, &ds, w); err != nil {
		return nil, ds, err
	}
	return s, ds, nil
}

// Compact merges the repeated cells among the rows added so far, by the
// duplicate policy, exactly as Finish would (DupMean keeps per-row counts,
// so the mean is over every input row; DupLast keeps the latest row; the
// report counts each repeated cell once and every merged input row). Rows
// added later are merged with these by the next Compact or by Finish.
// Loaders call it when their memory estimate runs over the limit, so that
// a log of many repeated rows needs memory for its distinct cells only.
func (b *Builder) Compact() error {
	if len(b.r) == 0 {
		return nil
	}
	s, err := b.cells()
	if err != nil {
		return err
	}
	if b.w == nil {
		b.w = make([]int32, 0, len(b.r))
	}
	w, err := dedupe(s, b.opts.Duplicates, &b.ds, b.weights())
	if err != nil {
		return err
	}
	b.u, b.i, b.r, b.w = s.Idx[0], s.Idx[1], s.Val, w
	if b.hasTime {
		b.t = s.Timestamps
	}
	return nil
}

// weights returns w extended with weight 1 for the rows added since the
// last Compact (nil before the first).
func (b *Builder) weights() []int32 {
	if b.w == nil {
		return nil
	}
	for len(b.w) < len(b.r) {
		b.w = append(b.w, 1)
	}
	return b.w
}

// cells returns the rows added so far as a store sharing the builder's
// arrays: the time stamps bucketed into a dense time mode (when there is
// one) and kept as Timestamps whenever the rows have them.
func (b *Builder) cells() (*Store, error) {
	n := len(b.r)
	timeMode := b.hasTime && b.opts.TimeUnit != TimeNone
	s := &Store{Dicts: []*Dict{b.Users, b.Items}}
	s.Dims = []int{b.Users.Len(), b.Items.Len()}
	s.Idx = [][]int32{b.u, b.i}
	s.Val = b.r
	if b.hasTime {
		s.Timestamps = b.t
	}
	if timeMode {
		unit := b.opts.TimeUnit
		// AbsBucket is non-decreasing in t, so the extreme buckets are
		// those of the extreme times: one cheap pass, no bucket array.
		minT, maxT := b.t[0], b.t[0]
		for _, t := range b.t {
			minT = min(minT, t)
			maxT = max(maxT, t)
		}
		minB, maxB := unit.AbsBucket(minT), unit.AbsBucket(maxT)
		span := maxB - minB + 1
		limit, years := int64(b.opts.MaxTimeBuckets), ""
		if limit <= 0 {
			limit, years = int64(unit.MaxBuckets()), fmt.Sprintf(" (%d years)", MaxTimeSpanYears)
		}
		limit = min(limit, math.MaxInt32)
		if span > limit || span <= 0 {
			return nil, fmt.Errorf("data: %w: the time stamps run from %d to %d (Unix seconds; %s to %s), %s buckets of one %s, more than the %d a time mode may hold%s; use a coarser --time-unit (week, month) or none for no time mode, or check that the time column is in seconds",
				ErrTimeSpan, minT, maxT, textUnixDate(minT), textUnixDate(maxT), spanText(minB, maxB), unit, limit, years)
		}
		k := make([]int32, n)
		for e, t := range b.t {
			d := unit.AbsBucket(t) - minB
			if uint64(d) >= uint64(span) {
				// Only reachable when bucket arithmetic overflows int64.
				return nil, fmt.Errorf("data: time stamp %d (row %d) is out of the supported range", t, e+1)
			}
			k[e] = int32(d)
		}
		s.Dims = append(s.Dims, int(span))
		s.Idx = append(s.Idx, k)
		s.Dicts = append(s.Dicts, nil)
		s.Time = &TimeBucketing{Unit: unit, First: minB, Count: int(span)}
	}
	return s, nil
}

// spanText is maxB-minB+1 in words, without overflowing int64.
func spanText(minB, maxB int64) string {
	if span := maxB - minB + 1; span > 0 && maxB >= minB {
		return strconv.FormatInt(span, 10)
	}
	return "more than 9.2e18"
}

// textUnixDate formats Unix seconds as a UTC date for messages (the year
// may be far outside 0..9999).
func textUnixDate(t int64) string {
	tm := time.Unix(t, 0).UTC()
	return fmt.Sprintf("%d-%02d-%02d", tm.Year(), tm.Month(), tm.Day())
}

// dedupe merges repeated cells in place, keeping the first position of each
// cell so that storage order follows first appearance. w, when not nil,
// gives the number of input rows each row stands for (rows merged by an
// earlier pass); it is merged alongside and returned.
func dedupe(s *Store, policy DuplicatePolicy, ds *DuplicateStats, w []int32) ([]int32, error) {
	n := s.NNZ()
	keys, width, packed := cellKeys(s)
	if packed && cellsDistinct(keys, width) {
		return w, nil // no cell repeats: nothing to merge
	}
	perm, cellKey := sortCells(s, keys, width, packed)
	var drop []bool
	for lo := 0; lo < n; {
		hi := lo + 1
		h0, l0 := cellKey(lo)
		for hi < n {
			h, l := cellKey(hi)
			if h != h0 || l != l0 {
				break
			}
			hi++
		}
		if hi-lo > 1 {
			first, last := perm[lo], perm[hi-1]
			if policy == DupError {
				return w, fmt.Errorf("data: %w: cell (user %s, item %s) appears %d times (rows %d and %d of the input); use duplicates=last or mean",
					ErrDuplicate, s.Dicts[0].String(s.Idx[0][first]), s.Dicts[1].String(s.Idx[1][first]), hi-lo, first+1, last+1)
			}
			if drop == nil {
				drop = make([]bool, n)
			}
			mergeCell(s, policy, ds, w, perm[lo:hi])
			for _, e := range perm[lo+1 : hi] {
				drop[e] = true
			}
		}
		lo = hi
	}
	if drop == nil {
		return w, nil
	}
	return compactRows(s, drop, w), nil
}

// sortCells sorts the row positions by cell, then by position, so that the
// rows of one cell form a run; cellKey(j) is the key of the j-th sorted
// row. It radix-sorts packed cell keys when the modes fit in 64 bits (the
// usual case), else uses a comparison sort.
//
// keys, width and packed are cellKeys(s) (keys is clobbered).
func sortCells(s *Store, keys []uint64, width int, packed bool) (perm []int32, cellKey func(j int) (uint64, uint32)) {
	if packed {
		var sorted []uint64
		sorted, perm = radixSortCells(keys, width)
		return perm, func(j int) (uint64, uint32) { return sorted[j], 0 }
	}
	order := len(s.Dims)
	key := func(e int32) (uint64, uint32) {
		hi := uint64(uint32(s.Idx[0][e]))<<32 | uint64(uint32(s.Idx[1][e]))
		var lo uint32
		if order > 2 {
			lo = uint32(s.Idx[2][e])
		}
		return hi, lo
	}
	perm = make([]int32, s.NNZ())
	for e := range perm {
		perm[e] = int32(e)
	}
	slices.SortFunc(perm, func(a, b int32) int {
		ha, la := key(a)
		hb, lb := key(b)
		switch {
		case ha < hb:
			return -1
		case ha > hb:
			return 1
		case la < lb:
			return -1
		case la > lb:
			return 1
		}
		return int(a - b)
	})
	return perm, func(j int) (uint64, uint32) { return key(perm[j]) }
}

// mergeCell merges the rows of one cell (run, in position order) into its
// first row under policy, counting them in ds (and w, when not nil).
func mergeCell(s *Store, policy DuplicatePolicy, ds *DuplicateStats, w []int32, run []int32) {
	first, last := run[0], run[len(run)-1]
	// weight is the number of input rows row e stands for.
	weight := func(e int32) int64 {
		if w == nil {
			return 1
		}
		return int64(w[e])
	}
	var count int64
	seen := false // the cell was already merged by an earlier pass
	for _, e := range run {
		count += weight(e)
		seen = seen || weight(e) > 1
	}
	if !seen {
		ds.Cells++
	}
	ds.Dropped += int(count - weight(first))
	switch policy {
	case DupMean, DupSum:
		var sum float64
		for _, e := range run {
			if policy == DupSum {
				sum += s.Val[e] // a merged row already holds its rows' sum
			} else {
				sum += s.Val[e] * float64(weight(e)) // a merged row holds its rows' mean
			}
		}
		if policy == DupMean {
			sum /= float64(count)
		}
		s.Val[first] = sum
	default: // DupLast
		s.Val[first] = s.Val[last]
		if s.Timestamps != nil {
			s.Timestamps[first] = s.Timestamps[last]
		}
	}
	if w != nil {
		w[first] = int32(min(count, math.MaxInt32))
	}
}

// compactRows removes the dropped rows from s (and w), keeping order, and
// returns the shortened w.
func compactRows(s *Store, drop []bool, w []int32) []int32 {
	k := 0
	for e := range drop {
		if drop[e] {
			continue
		}
		for m := range s.Idx {
			s.Idx[m][k] = s.Idx[m][e]
		}
		s.Val[k] = s.Val[e]
		if s.Timestamps != nil {
			s.Timestamps[k] = s.Timestamps[e]
		}
		if w != nil {
			w[k] = w[e]
		}
		k++
	}
	for m := range s.Idx {
		s.Idx[m] = slices.Clip(s.Idx[m][:k])
	}
	s.Val = slices.Clip(s.Val[:k])
	if s.Timestamps != nil {
		s.Timestamps = slices.Clip(s.Timestamps[:k])
	}
	if w != nil {
		w = slices.Clip(w[:k])
	}
	return w
}
