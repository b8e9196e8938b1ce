package completion

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/dprec/dprec/data"
)

// UniformCP returns a synthetic order-2 or order-3 store of nnz entries at
// uniformly drawn coordinates with values
//
//	3 + sum_r prod_m f_m[i_m, r] + noise * N(0, 1),  f ~ N(0, 1/rank),
//
// the shape of the peer benchmarks (bench/README.md). Coordinates are drawn
// independently, so a cell may repeat (about nnz^2 / (2 prod dims) times:
// 10 for 10M entries of 200,000 x 50,000 x 500), which does not matter for
// timing. It allocates the store only (the factors are mode-sized).
func UniformCP(dims []int, nnz, rank int, noise float64, src rand.Source) (*data.Store, error) {
	if len(dims) < 2 || len(dims) > 3 || nnz <= 0 || rank <= 0 || math.IsNaN(noise) || noise < 0 {
		return nil, fmt.Errorf("completion: UniformCP(dims %v, nnz %d, rank %d, noise %g): want order 2 or 3 and positive sizes", dims, nnz, rank, noise)
	}
	for _, d := range dims {
		if d <= 0 || d > math.MaxInt32 {
			return nil, fmt.Errorf("completion: UniformCP: mode size %d out of range", d)
		}
	}
	rng := rand.New(src)
	sd := 1 / math.Sqrt(float64(rank))
	f := make([][]float64, len(dims))
	for m, d := range dims {
		f[m] = make([]float64, d*rank)
		for i := range f[m] {
			f[m][i] = sd * rng.NormFloat64()
		}
	}
	s := &data.Store{Dims: append([]int(nil), dims...), Idx: make([][]int32, len(dims)), Val: make([]float64, nnz)}
	for m := range dims {
		s.Idx[m] = make([]int32, nnz)
	}
	prod := make([]float64, rank)
	for e := 0; e < nnz; e++ {
		for r := range prod {
			prod[r] = 1
		}
		for m, d := range dims {
			i := int32(rng.Uint64N(uint64(d)))
			s.Idx[m][e] = i
			row := f[m][int(i)*rank : int(i)*rank+rank]
			for r := range prod {
				prod[r] *= row[r]
			}
		}
		v := 3.0
		for _, p := range prod {
			v += p
		}
		if noise > 0 {
			v += noise * rng.NormFloat64()
		}
		s.Val[e] = v
	}
	return s, nil
}
