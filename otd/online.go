package otd

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/dprec/dprec/data"
	"gonum.org/v1/gonum/mat"
)

// Stream feeds the online tensor power method (Wang and Anandkumar 2016 Algorithm 2) with
// data: Associate reads the next n data points and, for each vector u in
// us, writes into dstU[l] the estimate of T(I,u,u) and into dstL[l] the
// estimate of T(u,u,u) from those n points alone, where T is the
// population tensor to decompose (K-dimensional; the points are whitened).
// Implementations include the model's moment corrections, so each batch
// estimate is unbiased. The built-in streams cycle over a finite data set.
type Stream interface {
	// Dim returns K, the dimension of the tensor.
	Dim() int
	// Associate performs the data-association step on the next n points.
	Associate(us [][]float64, n int, dstU [][]float64, dstL []float64) error
}

// StreamOptions configures StreamingPowerIteration. Zero values take
// defaults.
type StreamOptions struct {
	// Restarts is L (default 10).
	Restarts int
	// Iters is R (default 30).
	Iters int
	// Batch is n, the data points read per power step (default 1000).
	Batch int
}

// StreamingPowerIteration runs the online robust tensor power method of
// Wang and Anandkumar 2016 Algorithm 2 on s: for each of k components it keeps L vectors,
// and for R steps replaces each u by the normalised batch estimate of
// T(I,u,u) from the next Batch points, minus the deflation terms
// sum_j lambda_j (v_j^T u)^2 v_j of the components already found; it keeps
// the vector with the largest estimated T(u,u,u). Memory is O(K (k + L))
// beyond the stream's own; the tensor is never formed. It returns the
// eigenvalues and the K x k matrix of eigenvectors, like PowerIteration.
func StreamingPowerIteration(s Stream, k int, opts StreamOptions, src rand.Source) ([]float64, *mat.Dense, error) {
	if opts.Restarts <= 0 {
		opts.Restarts = 10
	}
	if opts.Iters <= 0 {
		opts.Iters = 30
	}
	if opts.Batch <= 0 {
		opts.Batch = 1000
	}
	d := s.Dim()
	if k < 1 || k > d {
		return nil, nil, fmt.Errorf("otd: %d components requested from a %d-dimensional stream", k, d)
	}
	rng := rand.New(src)
	L := opts.Restarts
	us := make([][]float64, L)
	tu := make([][]float64, L)
	tl := make([]float64, L)
	for l := range us {
		us[l] = make([]float64, d)
		tu[l] = make([]float64, d)
	}
	lambda := make([]float64, 0, k)
	vs := make([][]float64, 0, k)
	for c := 0; c < k; c++ {
		for l := range us {
			randomUnit(rng, us[l])
		}
		for t := 0; t < opts.Iters; t++ {
			if err := s.Associate(us, opts.Batch, tu, tl); err != nil {
				return nil, nil, err
			}
			for l := range us {
				for j, v := range vs {
					var xi float64
					for i := range v {
						xi += v[i] * us[l][i]
					}
					for i := range v {
						tu[l][i] -= lambda[j] * xi * xi * v[i]
					}
					tl[l] -= lambda[j] * xi * xi * xi
				}
				n := norm2(tu[l])
				if n == 0 || math.IsNaN(n) {
					if math.IsNaN(n) {
						return nil, nil, errors.New("otd: stream produced NaN")
					}
					continue
				}
				for i := range tu[l] {
					us[l][i] = tu[l][i] / n
				}
			}
		}
		// One more association to evaluate T(u,u,u) at the final vectors.
		if err := s.Associate(us, opts.Batch, tu, tl); err != nil {
			return nil, nil, err
		}
		best := 0
		for l := range us {
			for j, v := range vs {
				var xi float64
				for i := range v {
					xi += v[i] * us[l][i]
				}
				tl[l] -= lambda[j] * xi * xi * xi
			}
			if tl[l] > tl[best] {
				best = l
			}
		}
		lambda = append(lambda, tl[best])
		vs = append(vs, append([]float64(nil), us[best]...))
	}
	V := mat.NewDense(d, k, nil)
	for c, v := range vs {
		V.SetCol(c, v)
	}
	return lambda, V, nil
}

// RowStream streams the rows of X projected by W (y = W^T x), cycling over
// the rows, for the tensor E[y^(x)3] - sigma2 sym3(E[y] (x) W^T W) (the
// whitened mixture-of-Gaussians M3, Imtiaz and Sarwate 2018b app. B-B; sigma2 = 0 gives the
// plain third moment E[y^(x)3]). A nil W streams the rows unprojected.
type RowStream struct {
	Y      *mat.Dense
	G      *mat.Dense // W^T W (nil: identity when sigma2 != 0)
	Sigma2 float64
	next   int
}

// NewRowStream projects X (N x D) by W (D x K, or nil).
func NewRowStream(X, W *mat.Dense, sigma2 float64) *RowStream {
	s := &RowStream{Sigma2: sigma2}
	if W == nil {
		s.Y = X
		_, d := X.Dims()
		s.G = mat.NewDense(d, d, nil)
		for i := 0; i < d; i++ {
			s.G.Set(i, i, 1)
		}
		return s
	}
	s.Y = new(mat.Dense)
	s.Y.Mul(X, W)
	s.G = new(mat.Dense)
	s.G.Mul(W.T(), W)
	return s
}

// Dim implements Stream.
func (s *RowStream) Dim() int { _, d := s.Y.Dims(); return d }

// Associate implements Stream.
func (s *RowStream) Associate(us [][]float64, n int, dstU [][]float64, dstL []float64) error {
	N, d := s.Y.Dims()
	mean := make([]float64, d)
	for l := range us {
		for i := range dstU[l] {
			dstU[l][i] = 0
		}
	}
	for b := 0; b < n; b++ {
		y := s.Y.RawRowView(s.next)
		s.next = (s.next + 1) % N
		for i, v := range y {
			mean[i] += v / float64(n)
		}
		for l, u := range us {
			var p float64
			for i, v := range y {
				p += v * u[i]
			}
			f := p * p / float64(n)
			for i, v := range y {
				dstU[l][i] += f * v
			}
		}
	}
	for l, u := range us {
		if s.Sigma2 != 0 {
			// T(I,u,u) of sigma2 sym3(m (x) G) = sigma2 ((u^T G u) m + 2 (m^T u) G u).
			gu := make([]float64, d)
			var ugu, mu float64
			for i := 0; i < d; i++ {
				for j := 0; j < d; j++ {
					gu[i] += s.G.At(i, j) * u[j]
				}
				ugu += u[i] * gu[i]
				mu += mean[i] * u[i]
			}
			for i := range dstU[l] {
				dstU[l][i] -= s.Sigma2 * (ugu*mean[i] + 2*mu*gu[i])
			}
		}
		var t float64
		for i, v := range dstU[l] {
			t += v * u[i]
		}
		dstL[l] = t
	}
	return nil
}

// CorpusStream streams the documents of a single-topic corpus (at least 3
// words each) whitened by W, cycling over them, for the tensor
// M3(W,W,W) of STMMoments with AllTriples. The per-document estimate of
// T(I,u,u) is the u-contraction of the whitened DeCarolis et al. 2020 eq. 8 estimator:
// [(c~.u)^2 c~ + 2 sum_i c_i (w_i.u)^2 w_i - sum_i c_i ((w_i.u)^2 c~ +
// 2 (w_i.u)(c~.u) w_i)] / (l(l-1)(l-2)), with w_i the i-th row of W, in
// O(nnz K) per document and vector.
type CorpusStream struct {
	C    *data.Corpus
	W    *mat.Dense
	next int
}

// Dim implements Stream.
func (s *CorpusStream) Dim() int { _, k := s.W.Dims(); return k }

// Associate implements Stream.
func (s *CorpusStream) Associate(us [][]float64, n int, dstU [][]float64, dstL []float64) error {
	k := s.Dim()
	raw := s.W.RawMatrix()
	ct := make([]float64, k)
	for l := range us {
		for i := range dstU[l] {
			dstU[l][i] = 0
		}
	}
	for b := 0; b < n; b++ {
		ws, cs := s.C.Doc(s.next)
		ln := float64(s.C.DocLen(s.next))
		if ln < 3 {
			return fmt.Errorf("otd: document %d has %d words, need 3", s.next, int(ln))
		}
		s.next = (s.next + 1) % s.C.NumDocs()
		for i := range ct {
			ct[i] = 0
		}
		for p, w := range ws {
			row := raw.Data[int(w)*raw.Stride : int(w)*raw.Stride+k]
			for i, v := range row {
				ct[i] += float64(cs[p]) * v
			}
		}
		f := 1 / (ln * (ln - 1) * (ln - 2) * float64(n))
		for l, u := range us {
			var cu float64
			for i, v := range ct {
				cu += v * u[i]
			}
			var sumA float64 // sum_i c_i (w_i.u)^2
			dst := dstU[l]
			for p, w := range ws {
				row := raw.Data[int(w)*raw.Stride : int(w)*raw.Stride+k]
				var wu float64
				for i, v := range row {
					wu += v * u[i]
				}
				ci := float64(cs[p])
				sumA += ci * wu * wu
				g := f * ci * (2*wu*wu - 2*wu*cu)
				for i, v := range row {
					dst[i] += g * v
				}
			}
			g := f * (cu*cu - sumA)
			for i, v := range ct {
				dst[i] += g * v
			}
		}
	}
	for l, u := range us {
		var t float64
		for i, v := range dstU[l] {
			t += v * u[i]
		}
		dstL[l] = t
	}
	return nil
}
