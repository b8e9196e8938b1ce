package decomposition

import (
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/mat"
)

// FoldIn solves the factor row of a new user (mode 0) against the frozen
// model from that user's own ratings, by regularised least squares:
//
//	a = argmin_a sum_e (r_e - o_e - <z_e, a>)^2 + lambda |a|^2
//
// where z_e = d xhat / d a at (item_e, time_e) and o_e is the model's offset
// without a user bias (mean + item bias + time bias). When the model has
// biases the user's bias is solved jointly (with the same penalty) and
// returned as one extra last element, so the result has Ranks[0] elements,
// or Ranks[0]+1 with biases; PredictFolded uses it directly.
//
// times must be nil for an order-2 model and have one bucket per rating for
// an order-3 model. lambda must be positive and finite. FoldIn is
// FoldInUser without bucket biases.
func FoldIn(m *Model, items []int32, times []int32, ratings []float64, lambda float64) ([]float64, error) {
	f, err := FoldInUser(m, items, times, ratings, FoldPenalties{Row: lambda})
	if err != nil {
		return nil, err
	}
	return f.Row, nil
}

// FoldPenalties are the ridge penalties of a fold-in.
type FoldPenalties struct {
	// Row penalises the user's factor row and bias (lambda |a|^2); it must
	// be non-negative and finite, and Row + PerRating positive.
	Row float64
	// PerRating adds a penalty per rating of the user: the row and bias
	// are penalised by Row + PerRating n for a user with n ratings (the
	// per-observation ridge lambda n_u of ALS and of private ALS's user
	// solve).
	PerRating float64
	// Bucket penalises each of the user's time-bucket biases (lambda_t
	// b_t^2); 0 fits none. Only order-3 models have buckets.
	Bucket float64
}

// Folded is a user folded into a frozen model by FoldInUser.
type Folded struct {
	// Row is the user's factor row, followed by the user's bias when the
	// model has biases (FoldIn's result).
	Row []float64
	// Buckets are the time buckets of the user's own ratings, sorted, and
	// BucketBias the user's bias on each (a user-by-day bias, as
	// timeSVD++'s b_{u,t}; Koren 2009). Empty without bucket biases.
	Buckets    []int32
	BucketBias []float64
}

// BucketBiasAt returns the user's bias on time bucket k (0 for a bucket
// without ratings of the user).
func (f *Folded) BucketBiasAt(k int32) float64 {
	if i, ok := slices.BinarySearch(f.Buckets, k); ok {
		return f.BucketBias[i]
	}
	return 0
}

// FoldInUser folds a new user into the frozen model m from that user's own
// ratings: the factor row a (with the bias, as FoldIn) and, when
// p.Bucket > 0 and the model has order 3, one bias b_t per time bucket of
// the user's ratings, jointly by regularised least squares:
//
//	min_{a, b} sum_e (y_e - <z_e, a> - b_{t(e)})^2 + lambda |a|^2 + lambda_t sum_t b_t^2
//
// with y_e = r_e - o_e and z_e as in FoldIn (z_e has a trailing 1 for the
// user bias). The stationarity conditions in b_t give
//
//	b_t = (Y_t - <s_t, a>) / (n_t + lambda_t),  Y_t = sum_{t(e)=t} y_e,  s_t = sum_{t(e)=t} z_e,
//
// and substituting them into those in a leaves the Schur complement system
//
//	(Z'Z + lambda I - sum_t s_t s_t'/(n_t + lambda_t)) a = Z'y - sum_t s_t Y_t/(n_t + lambda_t),
//
// which is positive definite (a Schur complement of the positive definite
// joint system), so one Cholesky solve of size Ranks[0](+1) gives a, and
// b_t follows. Without bucket biases the sums over t vanish and this is
// FoldIn.
func FoldInUser(m *Model, items []int32, times []int32, ratings []float64, p FoldPenalties) (*Folded, error) {
	if err := checkFoldIn(m, items, times, ratings, p); err != nil {
		return nil, err
	}
	lambda := p.Row + p.PerRating*float64(len(ratings))
	R := m.Ranks[0]
	n := R
	if m.HasBias {
		n++
	}
	w := m.NewWork()
	idx := make([]int32, m.Order())
	ata := make([]float64, n*n)
	atb := make([]float64, n)
	z := make([]float64, n)
	buckets := p.Bucket > 0 && m.Order() == 3
	var g bucketSums
	if buckets {
		g = newBucketSums(times, n)
	}
	for e, it := range items {
		idx[1] = it
		if m.Order() == 3 {
			idx[2] = times[e]
		}
		// Row 0 of mode 0 stands in for the new user: d xhat/d a does not
		// depend on a.
		m.Partial(idx, w)
		copy(z, w.Factor[0])
		y := ratings[e]
		if m.HasBias {
			y -= m.OffsetWithout(idx, 0)
			z[R] = 1
		}
		for p := 0; p < n; p++ {
			atb[p] += y * z[p]
			for q := p; q < n; q++ {
				ata[p*n+q] += z[p] * z[q]
			}
		}
		if buckets {
			g.add(times[e], y, z)
		}
	}
	for p := 0; p < n; p++ {
		ata[p*n+p] += lambda
	}
	if buckets {
		g.reduce(ata, atb, p.Bucket)
	}
	out, err := solveSym(ata, atb, n)
	if err != nil {
		return nil, err
	}
	f := &Folded{Row: out}
	if buckets {
		f.Buckets, f.BucketBias = g.solve(out, p.Bucket)
	}
	return f, nil
}

// checkFoldIn checks FoldInUser's arguments.
func checkFoldIn(m *Model, items, times []int32, ratings []float64, p FoldPenalties) error {
	if len(items) != len(ratings) {
		return fmt.Errorf("decomposition: fold-in has %d items for %d ratings", len(items), len(ratings))
	}
	if len(ratings) == 0 {
		return fmt.Errorf("decomposition: fold-in needs at least one rating")
	}
	if m.Order() == 3 && len(times) != len(ratings) {
		return fmt.Errorf("decomposition: fold-in into an order-3 model needs one time bucket per rating (got %d for %d)", len(times), len(ratings))
	}
	if m.Order() == 2 && times != nil {
		return fmt.Errorf("decomposition: fold-in into an order-2 model takes no time buckets")
	}
	if !(p.Row >= 0) || math.IsInf(p.Row, 0) || !(p.PerRating >= 0) || math.IsInf(p.PerRating, 0) || !(p.Row+p.PerRating > 0) {
		return fmt.Errorf("decomposition: fold-in lambda %g (plus %g per rating) must be non-negative and finite, and positive in all", p.Row, p.PerRating)
	}
	if !(p.Bucket >= 0) || math.IsInf(p.Bucket, 0) {
		return fmt.Errorf("decomposition: fold-in bucket penalty %g must be non-negative and finite", p.Bucket)
	}
	for e, it := range items {
		if it < 0 || int(it) >= m.Dims[1] {
			return fmt.Errorf("decomposition: fold-in rating %d: item index %d outside 0..%d", e, it, m.Dims[1]-1)
		}
		if m.Order() == 3 && (times[e] < 0 || int(times[e]) >= m.Dims[2]) {
			return fmt.Errorf("decomposition: fold-in rating %d: time bucket %d outside 0..%d", e, times[e], m.Dims[2]-1)
		}
		if r := ratings[e]; math.IsNaN(r) || math.IsInf(r, 0) {
			return fmt.Errorf("decomposition: fold-in rating %d is %g", e, r)
		}
	}
	return nil
}

// bucketSums are the per-bucket sums of a fold-in: count n_t, residual sum
// Y_t and design sum s_t (n values each) of the user's ratings in bucket t.
type bucketSums struct {
	keys  []int32 // sorted distinct buckets
	count []float64
	y     []float64
	s     []float64 // len(keys)*n
	n     int
}

func newBucketSums(times []int32, n int) bucketSums {
	keys := slices.Clone(times)
	slices.Sort(keys)
	keys = slices.Compact(keys)
	return bucketSums{keys: keys, count: make([]float64, len(keys)), y: make([]float64, len(keys)), s: make([]float64, len(keys)*n), n: n}
}

func (g *bucketSums) add(t int32, y float64, z []float64) {
	i, _ := slices.BinarySearch(g.keys, t)
	g.count[i]++
	g.y[i] += y
	s := g.s[i*g.n : (i+1)*g.n]
	for p, v := range z {
		s[p] += v
	}
}

// reduce turns the joint system into its Schur complement in the row:
// ata -= s_t s_t'/(n_t + lambda_t), atb -= s_t Y_t/(n_t + lambda_t) (upper
// triangle of ata).
func (g *bucketSums) reduce(ata, atb []float64, lt float64) {
	n := g.n
	for i := range g.keys {
		d := g.count[i] + lt
		s := g.s[i*n : (i+1)*n]
		for p := 0; p < n; p++ {
			atb[p] -= s[p] * g.y[i] / d
			for q := p; q < n; q++ {
				ata[p*n+q] -= s[p] * s[q] / d
			}
		}
	}
}

// solve returns b_t = (Y_t - <s_t, a>)/(n_t + lambda_t) for every bucket.
func (g *bucketSums) solve(a []float64, lt float64) ([]int32, []float64) {
	out := make([]float64, len(g.keys))
	for i := range g.keys {
		s := g.s[i*g.n : (i+1)*g.n]
		v := g.y[i]
		for p, x := range s {
			v -= x * a[p]
		}
		out[i] = v / (g.count[i] + lt)
	}
	return g.keys, out
}

// solveSym solves the n x n symmetric positive definite system whose upper
// triangle is in ata.
func solveSym(ata, atb []float64, n int) ([]float64, error) {
	var chol mat.Cholesky
	if !chol.Factorize(mat.NewSymDense(n, ata)) {
		return nil, fmt.Errorf("decomposition: fold-in system is singular")
	}
	var sol mat.VecDense
	if err := chol.SolveVecTo(&sol, mat.NewVecDense(n, atb)); err != nil {
		return nil, fmt.Errorf("decomposition: fold-in: %w", err)
	}
	out := make([]float64, n)
	for p := range out {
		out[p] = sol.AtVec(p)
	}
	return out, nil
}

// PredictFoldedUser predicts the entry (item, time) for a user folded in by
// FoldInUser: PredictFolded plus the user's bias on the entry's time
// bucket (order-3 models; 0 for a bucket without the user's ratings).
func (m *Model) PredictFoldedUser(f *Folded, idx []int32, w *Work) float64 {
	if len(f.Buckets) == 0 || len(idx) < 3 {
		return m.PredictFolded(f.Row, idx, w)
	}
	return m.Clamp(m.predictFoldedRaw(f.Row, idx, w) + f.BucketBiasAt(idx[2]))
}

// PredictFolded predicts the entry (item, time) for a folded-in user whose
// row (and bias, last, when the model has biases) FoldIn returned. idx[0] is
// ignored; w is scratch from NewWork.
func (m *Model) PredictFolded(row []float64, idx []int32, w *Work) float64 {
	return m.Clamp(m.predictFoldedRaw(row, idx, w))
}

// predictFoldedRaw is PredictFolded before clamping.
func (m *Model) predictFoldedRaw(row []float64, idx []int32, w *Work) float64 {
	var buf [3]int32
	copy(buf[:], idx)
	buf[0] = 0 // any valid user: d xhat/d a does not depend on a
	idx = buf[:len(idx)]
	m.Partial(idx, w)
	R := m.Ranks[0]
	s := 0.0
	for p, z := range w.Factor[0][:R] {
		s += z * row[p]
	}
	if m.HasBias {
		s += m.OffsetWithout(idx, 0) + row[R]
	}
	return s
}
