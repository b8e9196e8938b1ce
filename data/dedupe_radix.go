package data

import (
	"math/bits"
	"runtime"
	"sync"
	"sync/atomic"
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

// cellsDistinct reports whether the packed cell keys (of width bits,
// below 64) are all distinct, exactly: the common case of a log without
// repeated cells then needs no sort. A repeat among the first
// distinctSample keys answers at once; otherwise the keys are scattered
// into buckets by the top bits of a multiplicative hash (one pass, per-worker
// offsets as in radixSortCells), small enough that each bucket's
// open-addressing table stays in cache, and the buckets are checked on
// parallel workers until one finds a repeat. false means "not known to
// be distinct": the caller then sorts, which decides exactly.
func cellsDistinct(keys []uint64, width int) bool {
	n := len(keys)
	if width >= 64 {
		return false // key+1 would overflow; the sort decides
	}
	if n < 2 {
		return true
	}
	if !distinctIn(keys[:min(n, distinctSample)], make([]uint64, distinctTable(min(n, distinctSample)))) {
		return false
	}
	if n <= distinctSample {
		return true
	}
	bbits := max(bits.Len(uint(n/distinctBucket)), 1)
	nb := 1 << bbits
	bucket := func(k uint64) uint64 { return (k * distinctMul) >> (64 - bbits) }
	workers := 1
	if n >= radixParallelMin {
		workers = min(runtime.GOMAXPROCS(0), 8)
	}
	seg := func(w int) (int, int) { return w * n / workers, (w + 1) * n / workers }
	count := make([][]int, workers)
	for w := range count {
		count[w] = make([]int, nb)
	}
	run := func(fn func(w int)) {
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
	run(func(w int) {
		c := count[w]
		lo, hi := seg(w)
		for _, k := range keys[lo:hi] {
			c[bucket(k)]++
		}
	})
	start := make([]int, nb+1)
	sum := 0
	for b := 0; b < nb; b++ {
		start[b] = sum
		for w := range count {
			c := count[w][b]
			count[w][b] = sum
			sum += c
		}
	}
	start[nb] = n
	part := make([]uint64, n)
	run(func(w int) {
		c := count[w]
		lo, hi := seg(w)
		for _, k := range keys[lo:hi] {
			b := bucket(k)
			part[c[b]] = k
			c[b]++
		}
	})
	var repeat atomic.Bool
	run(func(w int) {
		lo, hi := w*nb/workers, (w+1)*nb/workers
		var table []uint64
		for b := lo; b < hi && !repeat.Load(); b++ {
			ks := part[start[b]:start[b+1]]
			if len(ks) > distinctBucketMax {
				// Far above the mean: likely one key many times, and
				// a table this large would cost more than the sort.
				repeat.Store(true)
				break
			}
			if size := distinctTable(len(ks)); cap(table) < size {
				table = make([]uint64, size)
			} else {
				table = table[:size]
				clear(table)
			}
			if !distinctIn(ks, table) {
				repeat.Store(true)
			}
		}
	})
	return !repeat.Load()
}

// distinctIn reports whether keys (each below 2^64-1) are distinct, with
// table (zeroed, a power of two at least twice len(keys) long) as a
// linear-probing hash set of key+1.
func distinctIn(keys []uint64, table []uint64) bool {
	mask := uint64(len(table) - 1)
	for _, k := range keys {
		k++
		i := (k * distinctMul2) >> 32 & mask
		for {
			switch table[i] {
			case 0:
				table[i] = k
			case k:
				return false
			default:
				i = (i + 1) & mask
				continue
			}
			break
		}
	}
	return true
}

// distinctTable is the table length distinctIn needs for n keys.
func distinctTable(n int) int { return 1 << bits.Len(uint(2*n)) }

// Parameters of cellsDistinct: the keys checked before any scatter, the
// target bucket size (a 64 KiB table), and the odd multipliers of the
// bucket and slot hashes (the bucket takes the top bits of one product,
// the slot middle bits of the other, so they do not repeat each other),
// and the bucket size above which the check gives up (returns false).
const (
	distinctSample    = 1 << 15
	distinctBucket    = 1 << 12
	distinctBucketMax = 64 * distinctBucket
	distinctMul       = 0x9e3779b97f4a7c15
	distinctMul2      = 0xc2b2ae3d27d4eb4f
)
