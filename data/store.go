package data

import (
	"fmt"
)

// Store is a sparse coordinate (COO) store of the observed entries of an
// N-way tensor, kept as a struct of arrays: Idx[m][e] is the dense index of
// observation e in mode m and Val[e] its value.
//
// Mode 0 holds users and mode 1 items; an order-3 store has the time bucket
// in mode 2. The order-3 store costs 3*4 + 8 = 20 bytes per observation
// (plus slice slack); Timestamps, when kept, costs 8 more.
//
// A Store is read-only once built and is then safe for concurrent readers.
type Store struct {
	// Dims are the mode sizes (number of distinct users, items, time buckets).
	Dims []int
	// Idx[m] are the dense indices of every observation in mode m.
	Idx [][]int32
	// Val are the observed values (ratings).
	Val []float64
	// Dicts map external IDs to dense indices for the ID modes (users and
	// items); Dicts[m] is nil for the time mode.
	Dicts []*Dict
	// Time describes how raw Unix seconds were bucketed into mode 2. It is
	// nil for an order-2 store.
	Time *TimeBucketing
	// Timestamps are the raw Unix seconds of each observation. It is kept
	// only when the loader is asked to (conversion and splitting keep it so
	// that writing the store back loses nothing); otherwise nil.
	Timestamps []int64
}

// Order returns the number of modes.
func (s *Store) Order() int { return len(s.Dims) }

// NNZ returns the number of observed entries.
func (s *Store) NNZ() int { return len(s.Val) }

// Validate checks the store's internal consistency: lengths agree and every
// index lies inside its mode. It is meant for stores assembled by hand.
func (s *Store) Validate() error {
	if len(s.Dims) < 2 {
		return fmt.Errorf("data: store has order %d, need at least 2", len(s.Dims))
	}
	if len(s.Idx) != len(s.Dims) {
		return fmt.Errorf("data: store has %d index slices for %d modes", len(s.Idx), len(s.Dims))
	}
	n := len(s.Val)
	for m, idx := range s.Idx {
		if len(idx) != n {
			return fmt.Errorf("data: mode %d has %d indices for %d values", m, len(idx), n)
		}
		d := int32(s.Dims[m])
		for e, v := range idx {
			if v < 0 || v >= d {
				return fmt.Errorf("data: observation %d has index %d outside mode %d of size %d", e, v, m, d)
			}
		}
	}
	if s.Timestamps != nil && len(s.Timestamps) != n {
		return fmt.Errorf("data: %d timestamps for %d values", len(s.Timestamps), n)
	}
	if len(s.Dicts) != 0 && len(s.Dicts) != len(s.Dims) {
		return fmt.Errorf("data: %d dictionaries for %d modes", len(s.Dicts), len(s.Dims))
	}
	for m, d := range s.Dicts {
		if d != nil && d.Len() != s.Dims[m] {
			return fmt.Errorf("data: dictionary of mode %d has %d IDs, mode size %d", m, d.Len(), s.Dims[m])
		}
	}
	return nil
}

// Subset returns a new store holding the observations at the given positions,
// in that order. Dictionaries and time bucketing are shared with s (the mode
// sizes do not shrink), so models trained on a subset index like s.
func (s *Store) Subset(pos []int) *Store {
	out := &Store{
		Dims:  append([]int(nil), s.Dims...),
		Idx:   make([][]int32, len(s.Idx)),
		Val:   make([]float64, len(pos)),
		Dicts: s.Dicts,
		Time:  s.Time,
	}
	for m := range s.Idx {
		src := s.Idx[m]
		dst := make([]int32, len(pos))
		for i, p := range pos {
			dst[i] = src[p]
		}
		out.Idx[m] = dst
	}
	for i, p := range pos {
		out.Val[i] = s.Val[p]
	}
	if s.Timestamps != nil {
		out.Timestamps = make([]int64, len(pos))
		for i, p := range pos {
			out.Timestamps[i] = s.Timestamps[p]
		}
	}
	return out
}

// Entry returns the indices of observation e, written into idx (which must
// have length Order()), and its value.
func (s *Store) Entry(e int, idx []int32) float64 {
	for m := range s.Idx {
		idx[m] = s.Idx[m][e]
	}
	return s.Val[e]
}

// Each calls fn for every observation in the order given by perm (a
// permutation, or any list of positions) without copying the store. With a
// nil perm it visits the store in storage order. Iteration stops early when
// fn returns false.
func (s *Store) Each(perm []int, fn func(e int, idx []int32, v float64) bool) {
	idx := make([]int32, len(s.Idx))
	if perm == nil {
		for e := range s.Val {
			v := s.Entry(e, idx)
			if !fn(e, idx, v) {
				return
			}
		}
		return
	}
	for _, e := range perm {
		v := s.Entry(e, idx)
		if !fn(e, idx, v) {
			return
		}
	}
}

// Concat returns a new store with the observations of a followed by those of
// b. Both must share their shape (as stores cut from one log by Subset do);
// the dictionaries and time bucketing are a's.
func Concat(a, b *Store) *Store {
	n := a.NNZ() + b.NNZ()
	out := &Store{Dims: append([]int(nil), a.Dims...), Idx: make([][]int32, len(a.Idx)),
		Val: make([]float64, 0, n), Dicts: a.Dicts, Time: a.Time}
	for m := range a.Idx {
		out.Idx[m] = append(append(make([]int32, 0, n), a.Idx[m]...), b.Idx[m]...)
	}
	out.Val = append(append(out.Val, a.Val...), b.Val...)
	if a.Timestamps != nil && b.Timestamps != nil {
		out.Timestamps = append(append(make([]int64, 0, n), a.Timestamps...), b.Timestamps...)
	}
	return out
}
