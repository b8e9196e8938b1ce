package decomposition

import (
	"fmt"
	"slices"
)

// PairBias is a sparse bias on pairs of indices of two modes, such as a
// user-by-day bias (a person's mood or scale on one day) or an
// item-by-period bias (a film's popularity drifting over the years), the
// time-dependent biases of timeSVD++ (Koren, "Collaborative Filtering with
// Temporal Dynamics", KDD 2009). The pair of an entry idx is
//
//	(idx[A], idx[B] / Div)
//
// so Div > 1 coarsens mode B into periods of Div consecutive buckets. Only
// pairs seen in training carry a value; every other pair contributes 0.
// Keys are sorted and unique, key = a<<32 | b.
type PairBias struct {
	// A and B are the two modes (A != B).
	A, B int
	// Div coarsens mode B (1: every bucket is its own period).
	Div int
	// Keys are the sorted pair keys, Vals the bias of each.
	Keys []uint64
	Vals []float64
}

// Key returns the pair key of idx.
func (p *PairBias) Key(idx []int32) uint64 {
	return uint64(uint32(idx[p.A]))<<32 | uint64(uint32(idx[p.B]/int32(p.Div)))
}

// Find returns the position of idx's pair in Keys, or -1.
func (p *PairBias) Find(idx []int32) int {
	k := p.Key(idx)
	i, ok := slices.BinarySearch(p.Keys, k)
	if !ok {
		return -1
	}
	return i
}

// Value returns the bias of idx's pair (0 for a pair not seen in training).
func (p *PairBias) Value(idx []int32) float64 {
	if i := p.Find(idx); i >= 0 {
		return p.Vals[i]
	}
	return 0
}

// Validate checks the pair bias against the model's modes and sizes.
func (p *PairBias) Validate(dims []int) error {
	n := len(dims)
	switch {
	case p.A < 0 || p.A >= n || p.B < 0 || p.B >= n || p.A == p.B:
		return fmt.Errorf("decomposition: pair bias on modes (%d, %d) of an order-%d model", p.A, p.B, n)
	case p.Div < 1:
		return fmt.Errorf("decomposition: pair bias period %d (want >= 1)", p.Div)
	case len(p.Keys) != len(p.Vals):
		return fmt.Errorf("decomposition: pair bias has %d keys and %d values", len(p.Keys), len(p.Vals))
	}
	nb := (dims[p.B] + p.Div - 1) / p.Div
	for i, k := range p.Keys {
		if i > 0 && k <= p.Keys[i-1] {
			return fmt.Errorf("decomposition: pair bias keys not sorted and unique at %d", i)
		}
		a, b := int(k>>32), int(uint32(k))
		if a >= dims[p.A] || b >= nb {
			return fmt.Errorf("decomposition: pair bias key (%d, %d) outside modes of sizes %d and %d", a, b, dims[p.A], nb)
		}
	}
	return nil
}

// pairOffset is the sum of every pair bias at idx.
func (m *Model) pairOffset(idx []int32) float64 {
	s := 0.0
	for i := range m.Pairs {
		s += m.Pairs[i].Value(idx)
	}
	return s
}

// OffsetWithout is Offset(idx) without the bias of mode mo and without the
// pair biases that involve mode mo: the part of the offset that does not
// depend on mo's index (fold-in of a new user solves the rest).
func (m *Model) OffsetWithout(idx []int32, mo int) float64 {
	if !m.HasBias {
		return 0
	}
	s := m.Mean
	for k, b := range m.Bias {
		if k != mo {
			s += b[idx[k]]
		}
	}
	for i := range m.Pairs {
		if p := &m.Pairs[i]; p.A != mo && p.B != mo {
			s += p.Value(idx)
		}
	}
	return s
}
