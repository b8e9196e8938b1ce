package completion

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"sync"

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
// blocks, each in a uniformly random order, using p goroutines. It takes
// ownership of vals (the result holds a permuted copy). Each mode's indices
// are assigned to contiguous blocks balanced by observation count.
//
// The random order is the Rao-Sandelius shuffle: every observation is sent
// to its block and to one of S sub-buckets drawn uniformly at random, and
// each sub-bucket (a few thousand entries, in cache) is then shuffled by
// Fisher-Yates; given the sub-bucket sizes every arrangement is equally
// likely, so each block is a uniformly random permutation. The scatter
// writes to p^order x S sequential streams, where an in-place cycle-
// following permutation or a Fisher-Yates pass over a whole block would
// make a random memory access per observation. The result depends on the
// seed and on p only.
func newLayout(st *data.Store, vals []float64, p int, rng *rand.Rand) (*layout, error) {
	n := st.NNZ()
	L := &layout{order: st.Order(), p: p}
	if err := L.pack(st.Dims); err != nil {
		return nil, err
	}
	blockOf := blockRanges(st, p)
	nb := 1
	for range L.order {
		nb *= p
	}
	S := max(1, n/(nb*subBucketLen))
	keys := nb * S
	// The observations are cut into p contiguous ranges, one per
	// goroutine, each drawing its sub-buckets from its own stream; the
	// scatter pass redraws the same numbers from the same seeds.
	seeds := make([][2]uint64, p)
	for w := range seeds {
		seeds[w] = [2]uint64{rng.Uint64(), rng.Uint64()}
	}
	rangeOf := func(w int) (int, int) { return w * n / p, (w + 1) * n / p }
	keyOf := func(e int, r *rand.Rand) int {
		b := 0
		for m := range L.order {
			b = b*p + int(blockOf[m][st.Idx[m][e]])
		}
		if S == 1 {
			return b
		}
		return b*S + int(r.Uint64N(uint64(S)))
	}
	counts := make([][]int, p)
	parallelFor(p, func(w int) {
		c := make([]int, keys)
		r := rand.New(rand.NewPCG(seeds[w][0], seeds[w][1]))
		lo, hi := rangeOf(w)
		for e := lo; e < hi; e++ {
			c[keyOf(e, r)]++
		}
		counts[w] = c
	})
	// next[w][k] is where range w writes its next observation of key k:
	// keys in order, and within a key the ranges in order.
	next := make([][]int, p)
	for w := range next {
		next[w] = make([]int, keys)
	}
	keyStart := make([]int, keys+1)
	pos := 0
	for k := 0; k < keys; k++ {
		keyStart[k] = pos
		for w := 0; w < p; w++ {
			next[w][k] = pos
			pos += counts[w][k]
		}
	}
	keyStart[keys] = pos
	L.coords = make([]uint64, n)
	out := make([]float64, n)
	parallelFor(p, func(w int) {
		r := rand.New(rand.NewPCG(seeds[w][0], seeds[w][1]))
		nx := next[w]
		lo, hi := rangeOf(w)
		for e := lo; e < hi; e++ {
			k := keyOf(e, r)
			c := uint64(0)
			for m := range L.order {
				c |= uint64(st.Idx[m][e]) << L.shift[m]
			}
			L.coords[nx[k]], out[nx[k]] = c, vals[e]
			nx[k]++
		}
	})
	L.vals = out
	L.start = make([]int, nb+1)
	for b := 0; b <= nb; b++ {
		L.start[b] = keyStart[b*S]
	}
	// Shuffle the sub-buckets, each from its own stream, dealt out to the
	// goroutines in a fixed pattern.
	bseeds := make([][2]uint64, keys)
	for k := range bseeds {
		bseeds[k] = [2]uint64{rng.Uint64(), rng.Uint64()}
	}
	parallelFor(p, func(w int) {
		for k := w; k < keys; k += p {
			L.shuffleRange(keyStart[k], keyStart[k+1], rand.New(rand.NewPCG(bseeds[k][0], bseeds[k][1])))
		}
	})
	return L, nil
}

// pack sets the bit fields of the packed coordinates for mode sizes dims.
func (L *layout) pack(dims []int) error {
	total := uint(0)
	for m, d := range dims {
		w := uint(bits.Len(uint(d - 1)))
		if w == 0 {
			w = 1
		}
		L.shift[m] = total
		L.mask[m] = 1<<w - 1
		total += w
	}
	if total > 63 {
		return &ShapeError{Reason: fmt.Sprintf("mode sizes %v need %d bits per packed coordinate (limit 63)", dims, total)}
	}
	return nil
}

// subBucketLen is the target sub-bucket size of newLayout's shuffle: 8192
// entries are 128 KiB of coordinates and values, which fit in L2.
var subBucketLen = 8192 // a variable so tests can exercise several sub-buckets

// blockRanges returns, per mode, the block of every index: contiguous index
// ranges cut where the running observation count crosses multiples of
// n/p, so blocks are balanced by work and each worker's factor rows and
// biases sit in their own stretch of memory (a random relabelling balances
// too, but interleaves rows of different workers within cache lines: false
// sharing made 2 threads slower than 1 on MovieLens-sized data).
func blockRanges(st *data.Store, p int) [][]int32 {
	n := st.NNZ()
	blockOf := make([][]int32, st.Order())
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
	return blockOf
}

// parallelFor runs fn(0..p-1) on p goroutines and waits for them.
func parallelFor(p int, fn func(w int)) {
	if p == 1 {
		fn(0)
		return
	}
	var wg sync.WaitGroup
	for w := 0; w < p; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(w)
		}()
	}
	wg.Wait()
}

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
