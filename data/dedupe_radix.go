package data

import "math/bits"

// radixDigit is the digit width of the cell sort: 2^11 counters (16 KiB)
// stay in L1 cache, and 64-bit keys need at most 6 passes.
const radixDigit = 11

// cellKeys packs the cell (all mode indices) of every observation into one
// uint64, most significant mode first, so that key order is cell order. It
// returns ok=false when the modes need more than 64 bits together.
func cellKeys(s *Store) (keys []uint64, width int, ok bool) {
	var w [8]int
	if len(s.Dims) > len(w) {
		return nil, 0, false
	}
	for m, d := range s.Dims {
		w[m] = bits.Len64(uint64(max(d-1, 0)))
		width += w[m]
	}
	if width > 64 {
		return nil, 0, false
	}
	keys = make([]uint64, s.NNZ())
	for m, idx := range s.Idx {
		sh := uint(w[m])
		if sh == 0 {
			continue
		}
		for e, v := range idx {
			keys[e] = keys[e]<<sh | uint64(uint32(v))
		}
	}
	return keys, width, true
}

// radixSortCells sorts positions 0..n-1 by keys (stably, so equal keys keep
// ascending positions) with a least-significant-digit radix sort over the
// low width bits. It returns the sorted keys and positions; keys is
// clobbered.
func radixSortCells(keys []uint64, width int) ([]uint64, []int32) {
	n := len(keys)
	if n < 2 || width == 0 {
		pos := make([]int32, n)
		for e := range pos {
			pos[e] = int32(e)
		}
		return keys, pos
	}
	passes := (width + radixDigit - 1) / radixDigit
	// The digit histograms do not depend on the order of the keys, so one
	// read pass counts them all.
	count := make([][1 << radixDigit]int, passes)
	for _, k := range keys {
		for p := range count {
			count[p][(k>>uint(p*radixDigit))&(1<<radixDigit-1)]++
		}
	}
	var pos []int32 // nil: still the identity
	k2 := make([]uint64, n)
	p2 := make([]int32, n)
	for p := range count {
		shift := uint(p * radixDigit)
		c := &count[p]
		if c[(keys[0]>>shift)&(1<<radixDigit-1)] == n {
			continue // every key has this digit: the pass would not move anything
		}
		sum := 0
		for d, x := range c {
			c[d] = sum
			sum += x
		}
		for e, k := range keys {
			d := (k >> shift) & (1<<radixDigit - 1)
			j := c[d]
			c[d]++
			k2[j] = k
			if pos == nil {
				p2[j] = int32(e)
			} else {
				p2[j] = pos[e]
			}
		}
		keys, k2 = k2, keys
		if pos == nil {
			pos = make([]int32, n)
		}
		pos, p2 = p2, pos
	}
	if pos == nil {
		pos = make([]int32, n)
		for e := range pos {
			pos[e] = int32(e)
		}
	}
	return keys, pos
}
