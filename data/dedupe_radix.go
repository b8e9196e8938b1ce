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
	pos := make([]int32, n)
	for e := range pos {
		pos[e] = int32(e)
	}
	if n < 2 || width == 0 {
		return keys, pos
	}
	k2 := make([]uint64, n)
	p2 := make([]int32, n)
	var count [1 << radixDigit]int
	for shift := 0; shift < width; shift += radixDigit {
		clear(count[:])
		for _, k := range keys {
			count[(k>>uint(shift))&(1<<radixDigit-1)]++
		}
		if count[(keys[0]>>uint(shift))&(1<<radixDigit-1)] == n {
			continue // every key has this digit: the pass would not move anything
		}
		sum := 0
		for d, c := range count {
			count[d] = sum
			sum += c
		}
		for e, k := range keys {
			d := (k >> uint(shift)) & (1<<radixDigit - 1)
			j := count[d]
			count[d]++
			k2[j] = k
			p2[j] = pos[e]
		}
		keys, k2 = k2, keys
		pos, p2 = p2, pos
	}
	return keys, pos
}
