package data

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// Split is a partition of a store's observations into a training and a
// test part, as positions in ascending (storage) order, so that the parts
// keep the store's first-appearance order.
type Split struct {
	Train, Test []int
}

// Stores returns the two parts as stores (see Store.Subset: dictionaries and
// time bucketing are shared with s).
func (sp Split) Stores(s *Store) (train, test *Store) {
	return s.Subset(sp.Train), s.Subset(sp.Test)
}

// ErrSplit is returned (wrapped) for split parameters that cannot give
// two non-empty parts.
var ErrSplit = errors.New("bad split")

func checkFraction(frac float64) error {
	if !(frac > 0 && frac < 1) {
		return fmt.Errorf("%w: test fraction %v must lie strictly between 0 and 1", ErrSplit, frac)
	}
	return nil
}

// splitFromMask turns a test mask into a Split, failing when a part is
// empty.
func splitFromMask(test []bool, what string) (Split, error) {
	var sp Split
	for e, t := range test {
		if t {
			sp.Test = append(sp.Test, e)
		} else {
			sp.Train = append(sp.Train, e)
		}
	}
	switch {
	case len(sp.Test) == 0:
		return sp, fmt.Errorf("%w: %s leaves the test part empty", ErrSplit, what)
	case len(sp.Train) == 0:
		return sp, fmt.Errorf("%w: %s leaves the training part empty", ErrSplit, what)
	}
	return sp, nil
}

// roundCount is frac*n rounded half up (the number of observations a
// fraction selects).
func roundCount(frac float64, n int) int { return int(math.Floor(frac*float64(n) + 0.5)) }

// RandomSplit holds out round(frac*NNZ) observations chosen uniformly at
// random (a Fisher-Yates shuffle driven by src).
func RandomSplit(s *Store, frac float64, src rand.Source) (Split, error) {
	if err := checkFraction(frac); err != nil {
		return Split{}, err
	}
	n := s.NNZ()
	perm := rand.New(src).Perm(n)
	test := make([]bool, n)
	for _, e := range perm[:roundCount(frac, n)] {
		test[e] = true
	}
	return splitFromMask(test, fmt.Sprintf("test fraction %v of %d observations", frac, n))
}

// byUser returns the positions of each user's observations, in storage
// order.
func byUser(s *Store) [][]int {
	counts := make([]int, s.Dims[0])
	for _, u := range s.Idx[0] {
		counts[u]++
	}
	groups := make([][]int, s.Dims[0])
	for u, c := range counts {
		groups[u] = make([]int, 0, c)
	}
	for e, u := range s.Idx[0] {
		groups[u] = append(groups[u], e)
	}
	return groups
}

// PerUserSplit holds out, for every user, k randomly chosen observations
// (k > 0) or round(frac*c) of the user's c observations (k == 0). A user
// gives test observations only if at least as many stay in training: a
// user with fewer than 2h observations (h the number to hold out) stays
// entirely in the training part, so every tested user is also trained on.
// Users are visited in dense-index order and each user's observations are
// shuffled with src, so the split is deterministic given src.
func PerUserSplit(s *Store, k int, frac float64, src rand.Source) (Split, error) {
	switch {
	case k < 0:
		return Split{}, fmt.Errorf("%w: per-user k %d is negative", ErrSplit, k)
	case k == 0:
		if err := checkFraction(frac); err != nil {
			return Split{}, err
		}
	}
	rng := rand.New(src)
	test := make([]bool, s.NNZ())
	for _, pos := range byUser(s) {
		h := k
		if k == 0 {
			h = roundCount(frac, len(pos))
		}
		if h == 0 || len(pos) < 2*h {
			continue
		}
		rng.Shuffle(len(pos), func(i, j int) { pos[i], pos[j] = pos[j], pos[i] })
		for _, e := range pos[:h] {
			test[e] = true
		}
	}
	what := fmt.Sprintf("holding out %d per user", k)
	if k == 0 {
		what = fmt.Sprintf("holding out a fraction %v per user", frac)
	}
	return splitFromMask(test, what+" (users with fewer than twice that many observations stay in training)")
}

// observationTimes returns a sortable time for each observation: the raw
// Unix seconds when kept, else the time bucket index; an error when the
// store has neither.
func observationTimes(s *Store) (func(e int) int64, error) {
	switch {
	case s.Timestamps != nil:
		return func(e int) int64 { return s.Timestamps[e] }, nil
	case s.Time != nil && len(s.Idx) > 2:
		return func(e int) int64 { return int64(s.Idx[2][e]) }, nil
	}
	return nil, fmt.Errorf("%w: a time split needs time stamps or a time mode (load with a time column and a time unit other than none)", ErrSplit)
}

// TimeSplit holds out the latest round(frac*c) of each user's c
// observations, by raw time stamp when the store keeps them, else by time
// bucket; ties go by storage order (later rows count as later). Every user
// keeps at least one training observation.
func TimeSplit(s *Store, frac float64) (Split, error) {
	if err := checkFraction(frac); err != nil {
		return Split{}, err
	}
	at, err := observationTimes(s)
	if err != nil {
		return Split{}, err
	}
	test := make([]bool, s.NNZ())
	for _, pos := range byUser(s) {
		h := min(roundCount(frac, len(pos)), len(pos)-1)
		if h <= 0 {
			continue
		}
		slices.SortStableFunc(pos, func(a, b int) int {
			ta, tb := at(a), at(b)
			switch {
			case ta < tb:
				return -1
			case ta > tb:
				return 1
			}
			return 0
		})
		for _, e := range pos[len(pos)-h:] {
			test[e] = true
		}
	}
	return splitFromMask(test, fmt.Sprintf("holding out the last fraction %v of each user's observations", frac))
}

// CutoffSplit puts every observation at or after Unix time cutoff in the
// test part. With raw time stamps the comparison is exact; with only time
// buckets an observation is in the test part when its bucket starts at or
// after cutoff.
func CutoffSplit(s *Store, cutoff int64) (Split, error) {
	test := make([]bool, s.NNZ())
	switch {
	case s.Timestamps != nil:
		for e, t := range s.Timestamps {
			test[e] = t >= cutoff
		}
	case s.Time != nil && len(s.Idx) > 2:
		for e, k := range s.Idx[2] {
			test[e] = s.Time.Start(k) >= cutoff
		}
	default:
		_, err := observationTimes(s)
		return Split{}, err
	}
	return splitFromMask(test, fmt.Sprintf("cut-off at Unix time %d", cutoff))
}

// KFold partitions the observations into k folds of sizes differing by at
// most one (a shuffle driven by src, then consecutive blocks) and returns k
// splits: split f tests on fold f and trains on the others. The test parts
// are disjoint and together cover every observation. The splits hold k n
// positions (8 bytes each): a k whose splits would exceed the physical
// memory fails with ErrMemoryLimit before any is built.
func KFold(s *Store, k int, src rand.Source) ([]Split, error) {
	n := s.NNZ()
	if k < 2 || k > n {
		return nil, fmt.Errorf("%w: k-fold needs 2 <= k <= %d observations, got k = %d", ErrSplit, n, k)
	}
	if need, phys := 8*float64(k)*float64(n)+16*float64(n), float64(PhysicalMemory()); phys > 0 && need > phys {
		return nil, fmt.Errorf("%w: k-fold with k = %d on %d observations holds %d training lists, about %s, more than the physical memory (%s): lower k", ErrMemoryLimit, k, n, k, FormatBytes(int64(need)), FormatBytes(int64(phys)))
	}
	perm := rand.New(src).Perm(n)
	fold := make([]int, n)
	for j, e := range perm {
		fold[e] = j * k / n
	}
	splits := make([]Split, k)
	for f := range splits {
		splits[f].Test = make([]int, 0, n/k+1)
		splits[f].Train = make([]int, 0, n-n/k)
	}
	for e, f := range fold {
		for g := range splits {
			if g == f {
				splits[g].Test = append(splits[g].Test, e)
			} else {
				splits[g].Train = append(splits[g].Train, e)
			}
		}
	}
	return splits, nil
}
