// lda-output: DeCarolis et al. 2020 configuration 4; derivation (S9) in the package
// documentation (go doc otd, "# Sensitivities").

package otd

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"github.com/dprec/dprec/perturb"
	"gonum.org/v1/gonum/mat"
)

// projectSimplex replaces x by its Euclidean projection onto the
// probability simplex {p : p_i >= 0, sum p_i = 1} (Duchi et al. 2008,
// Figure 1: sort, find the threshold, clip). Non-finite entries are
// treated as 0 (they arise only from a failed pipeline, which is replaced
// by the public output before this is called; this keeps the projection
// total).
func projectSimplex(x []float64) {
	n := len(x)
	if n == 0 {
		return
	}
	for i, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			x[i] = 0
		}
	}
	s := append([]float64(nil), x...)
	sort.Sort(sort.Reverse(sort.Float64Slice(s)))
	var cum, theta float64
	for i, v := range s {
		cum += v
		if t := (cum - 1) / float64(i+1); v-t > 0 {
			theta = t
		}
	}
	for i, v := range x {
		x[i] = math.Max(v-theta, 0)
	}
}

// outputSensitivities returns the global l2 sensitivities of (S9.1) for K
// topics: sqrt(2K) for the projected topic matrix, sqrt(2) for the
// projected weights.
func outputSensitivities(k int) (topics, weights float64) {
	return math.Sqrt(2 * float64(k)), math.Sqrt2
}

// uniformOutput is the public output used when the non-private pipeline
// fails (S9.1).
func uniformOutput(d, k int) (*mat.Dense, []float64) {
	A := mat.NewDense(d, k, nil)
	for i := 0; i < d; i++ {
		for c := 0; c < k; c++ {
			A.Set(i, c, 1/float64(d))
		}
	}
	w := make([]float64, k)
	for c := range w {
		w[c] = 1 / float64(k)
	}
	return A, w
}

// projectOutput projects every column of A and the weights onto the
// simplex, in place.
func projectOutput(A *mat.Dense, w []float64) {
	d, k := A.Dims()
	col := make([]float64, d)
	for c := 0; c < k; c++ {
		mat.Col(col, c, A)
		projectSimplex(col)
		A.SetCol(c, col)
	}
	projectSimplex(w)
}

// outputNoise adds to x the noise of (S9.1): the Laplace mechanism (l1
// sensitivity s1, pure eps-DP) when its per-entry variance 2 (s1/eps)^2 is
// below the Gaussian mechanism's sigma^2 (l2 sensitivity s2, (eps,
// delta)), the Gaussian mechanism otherwise. The choice depends only on
// public quantities (K, eps, delta).
func outputNoise(x []float64, s2, s1, eps, delta float64, cal perturb.Calibration, r *rand.Rand) (perturb.Release, error) {
	g, err := perturb.NewGaussian(s2, eps, delta, cal)
	if err != nil {
		return perturb.Release{}, err
	}
	l, err := perturb.NewLaplace(s1, eps)
	if err != nil {
		return perturb.Release{}, err
	}
	if 2*l.Scale()*l.Scale() < g.Sigma()*g.Sigma() {
		l.AddTo(x, r)
		return l.Release(""), nil
	}
	g.AddTo(x, r)
	return g.Release(""), nil
}

// fitLDAOutput runs DeCarolis et al. 2020 configuration 4 in the projected variant of
// (S9): non-private fit, projection onto the simplex, Gaussian noise on
// the topics and on the weights with data-independent sensitivities.
func fitLDAOutput(in *Input, opts *FitOptions, b PrivacyBudget, secure bool, r *rand.Rand) (*Result, error) {
	c := in.Corpus
	n := c.NumDocs()
	if err := checkCorpus(c, 3); err != nil {
		return nil, err
	}
	e1, d1, e2, d2, err := b.stages(false)
	if err != nil {
		return nil, err
	}
	d, k := c.V(), opts.K
	np := *opts
	np.Method = MethodNonPrivate
	np.Split = nil
	var A *mat.Dense
	var w []float64
	if res, err := Fit(in, np, r); err == nil {
		A, w = res.A, res.Weights
	} else {
		A, w = uniformOutput(d, k) // (S9.1): failure is replaced by a public output
	}
	projectOutput(A, w)
	sA, sW := outputSensitivities(k)
	relA, err := outputNoise(A.RawMatrix().Data, sA, 2*float64(k), e1, d1, b.Calibration, r) // Fit's A is a new contiguous Dense
	if err != nil {
		return nil, fmt.Errorf("otd: noise on the topics: %w", err)
	}
	relA.What = "final topics (D x K, each column projected onto the simplex)"
	relA.Derivation = "go doc otd (S9.1): diameter of K simplex columns, sqrt(2K) in l2, 2K in l1 (data-independent)"
	relW, err := outputNoise(w, sW, 2, e2, d2, b.Calibration, r)
	if err != nil {
		return nil, fmt.Errorf("otd: noise on the weights: %w", err)
	}
	relW.What = "topic weights (projected onto the simplex)"
	relW.Derivation = "go doc otd (S9.1): diameter of the simplex, sqrt(2) in l2, 2 in l1 (data-independent)"
	projectOutput(A, w)
	lam := make([]float64, k)
	for i, wi := range w {
		if wi > 0 {
			// Inverse of UnwhitenLDA: w = 4(a0+1)/((a0+2)^2 lambda^2).
			lam[i] = 2 * math.Sqrt(opts.Alpha0+1) / ((opts.Alpha0 + 2) * math.Sqrt(wi))
		}
	}
	res := assemble(opts, A, w, lam)
	res.Path = "whitened"
	res.Vocab = c.Vocab
	res.Report = privateReport(opts, b, []perturb.Release{relA, relW},
		"basic (DeCarolis et al. 2020 Proposition 23): (eps1+eps2, delta1+delta2) over the topics and weights releases", secure, n)
	res.Report.Notes = append(res.Report.Notes,
		"lda-output: DeCarolis et al. 2020's data-dependent Delta_mu (Theorem 7) is not certified; topics and weights are projected onto the simplex and noised with the data-independent sensitivities sqrt(2K), sqrt(2) (l2) or 2K, 2 (l1) (go doc otd (S9)); useful only at large epsilon",
		"the eigenvalues are derived from the released weights (post-processing)")
	return res, nil
}
