package data

import (
	"math/bits"
	"runtime"
	"sync"
)

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
// clobbered. Large inputs are counted and scattered by GOMAXPROCS workers,
// each owning a contiguous segment: the per-worker digit offsets keep the
// sort stable, so the result does not depend on the number of workers.
func radixSortCells(keys []uint64, width int) ([]uint64, []int32) {
	n := len(keys)
	pos := make([]int32, n)
	for e := range pos {
		pos[e] = int32(e)
	}
	if n < 2 || width == 0 {
		return keys, pos
	}
	workers := 1
	if n >= radixParallelMin {
		workers = min(runtime.GOMAXPROCS(0), 8)
	}
	seg := func(w int) (int, int) { return w * n / workers, (w + 1) * n / workers }
	count := make([][1 << radixDigit]int, workers)
	k2 := make([]uint64, n)
	p2 := make([]int32, n)
	parallel := func(fn func(w int)) {
		if workers == 1 {
			fn(0)
			return
		}
		var wg sync.WaitGroup
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				fn(w)
			}()
		}
		wg.Wait()
	}
	for shift := uint(0); shift < uint(width); shift += radixDigit {
		parallel(func(w int) {
			c := &count[w]
			clear(c[:])
			lo, hi := seg(w)
			for _, k := range keys[lo:hi] {
				c[(k>>shift)&(1<<radixDigit-1)]++
			}
		})
		d0 := (keys[0] >> shift) & (1<<radixDigit - 1)
		total := 0
		for w := range count {
			total += count[w][d0]
		}
		if total == n {
			continue // every key has this digit: the pass would not move anything
		}
		// Offsets: digit-major, then worker order, for stability.
		sum := 0
		for d := 0; d < 1<<radixDigit; d++ {
			for w := range count {
				c := count[w][d]
				count[w][d] = sum
				sum += c
			}
		}
		parallel(func(w int) {
			c := &count[w]
			lo, hi := seg(w)
			for e := lo; e < hi; e++ {
				k := keys[e]
				d := (k >> shift) & (1<<radixDigit - 1)
				j := c[d]
				c[d]++
				k2[j] = k
				p2[j] = pos[e]
			}
		})
		keys, k2 = k2, keys
		pos, p2 = p2, pos
	}
	return keys, pos
}

// radixParallelMin is the input size from which the sort uses several
// workers (below it, goroutine start-up costs more than it saves).
const radixParallelMin = 1 << 16
