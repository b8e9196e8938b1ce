package completion

import (
	"fmt"
	"math/bits"
	"math/rand/v2"

	"github.com/dprec/dprec/data"
)

// layout is the training working space: the observations bucketed by
// stratification block, each stored as one packed uint64 of coordinates
// (mode m's index in bits [shift[m], shift[m]+width[m]), at most 63 bits) and one float64
// value (the trainer's private, possibly perturbed copy). That is 16 bytes
// per observation and is all the per-observation memory training uses; the
// hot loop then reads its entries sequentially.
type layout struct {
	order  int
	p      int // blocks per mode
	shift  [3]uint
	mask   [3]uint64
	coords []uint64
	vals   []float64
	// start[b] is the first position of block b, with block ids
	// b = b0*p + b1 (order 2) or b0*p*p + b1*p + b2 (order 3); start has
	// p^order + 1 entries.
	start []int
}

// newLayout buckets the observations of st (values vals) into p^order
// blocks. It takes ownership of vals, which it permutes in place into
// block order (so the working space stays at 16 bytes per observation). Each
// mode's indices are assigned to contiguous blocks balanced by observation
// count, and each block starts in a random order.
func newLayout(st *data.Store, vals []float64, p int, rng *rand.Rand) (*layout, error) {
	n := st.NNZ()
	L := &layout{order: st.Order(), p: p}
	total := uint(0)
	for m, d := range st.Dims {
		w := uint(bits.Len(uint(d - 1)))
		if w == 0 {
			w = 1
		}
		L.shift[m] = total
		L.mask[m] = 1<<w - 1
		total += w
	}
	if total > 63 {
		return nil, &ShapeError{Reason: fmt.Sprintf("mode sizes %v need %d bits per packed coordinate (limit 63)", st.Dims, total)}
	}
	// blockOf[m][i] is the block of index i in mode m. Blocks are
	// contiguous index ranges cut where the running observation count
	// crosses multiples of n/p, so they are balanced by work and each
	// worker's factor rows and biases sit in its own stretch of memory (a
	// random relabelling balances too, but interleaves rows of different
	// workers within cache lines: false sharing made 2 threads slower than
	// 1 on MovieLens-sized data).
	blockOf := make([][]int32, L.order)
	for m, d := range st.Dims {
		cnt := make([]int64, d)
		for _, i := range st.Idx[m] {
			cnt[i]++
		}
		bo := make([]int32, d)
		var before int64
		for i := range bo {
			mid := before + cnt[i]/2
			b := int32(mid * int64(p) / int64(max(n, 1)))
			if b >= int32(p) {
				b = int32(p - 1)
			}
			bo[i] = b
			before += cnt[i]
		}
		blockOf[m] = bo
	}
	nb := 1
	for range L.order {
		nb *= p
	}
	blockID := func(e int) int {
		b := 0
		for m := range L.order {
			b = b*p + int(blockOf[m][st.Idx[m][e]])
		}
		return b
	}
	L.start = make([]int, nb+1)
	for e := 0; e < n; e++ {
		L.start[blockID(e)+1]++
	}
	for b := 0; b < nb; b++ {
		L.start[b+1] += L.start[b]
	}
	// Move every observation e to its position pos(e) in block order
	// (stable within a block) without a second copy: coords first holds
	// pos(e) at index e; following the cycles of that permutation, each
	// slot receives its packed coordinates (marked by the top bit until the
	// pass ends) and vals is permuted in place.
	next := append([]int(nil), L.start[:nb]...)
	L.coords = make([]uint64, n)
	for e := 0; e < n; e++ {
		b := blockID(e)
		L.coords[e] = uint64(next[b])
		next[b]++
	}
	const done = 1 << 63
	pack := func(e int) uint64 {
		c := uint64(0)
		for m := range L.order {
			c |= uint64(st.Idx[m][e]) << L.shift[m]
		}
		return c | done
	}
	for e0 := 0; e0 < n; e0++ {
		if L.coords[e0]&done != 0 {
			continue
		}
		// Carry observation e0 along its cycle e0 -> pos(e0) -> ... -> e0,
		// reading each slot's pos before overwriting it.
		v, c, dst := vals[e0], pack(e0), int(L.coords[e0])
		for dst != e0 {
			ndst, nv, nc := int(L.coords[dst]), vals[dst], pack(dst)
			L.coords[dst], vals[dst] = c, v
			dst, v, c = ndst, nv, nc
		}
		L.coords[e0], vals[e0] = c, v
	}
	for i := range L.coords {
		L.coords[i] &^= done
	}
	L.vals = vals
	for b := 0; b < nb; b++ {
		L.shuffle(b, rng)
	}
	return L, nil
}

// shuffle permutes block b uniformly at random (Fisher-Yates).
func (L *layout) shuffle(b int, rng *rand.Rand) { L.shuffleRange(L.start[b], L.start[b+1], rng) }

// shuffleRange permutes positions [lo, hi) uniformly at random.
func (L *layout) shuffleRange(lo, hi int, rng *rand.Rand) {
	c := L.coords[lo:hi]
	v := L.vals[lo:hi]
	for i := len(c) - 1; i > 0; i-- {
		j := int(rng.Uint64N(uint64(i + 1)))
		c[i], c[j] = c[j], c[i]
		v[i], v[j] = v[j], v[i]
	}
}

// strata returns the stratum schedule of one epoch: p^(order-1) strata of p
// blocks each, in which no two blocks share a block of any mode, covering
// every block exactly once. Stratum (s1[, s2]) holds the blocks
// (b, b+s1 mod p[, b+s2 mod p]) for b = 0..p-1.
func (L *layout) strata() [][]int {
	p := L.p
	var out [][]int
	if L.order == 2 {
		for s := 0; s < p; s++ {
			st := make([]int, p)
			for b := 0; b < p; b++ {
				st[b] = b*p + (b+s)%p
			}
			out = append(out, st)
		}
		return out
	}
	for s1 := 0; s1 < p; s1++ {
		for s2 := 0; s2 < p; s2++ {
			st := make([]int, p)
			for b := 0; b < p; b++ {
				st[b] = (b*p+(b+s1)%p)*p + (b+s2)%p
			}
			out = append(out, st)
		}
	}
	return out
}
