// lda-output: seed 004 configuration 4 (noise on the final topics and
// weights only), in the closest variant whose sensitivity can be proved.
//
// (S9) What seed 004 gives. Theorem 7 bounds the change of the final
// topics by O(k^2 sqrt(sigma_1(M2)) / (gamma_s N sigma_k(M2)^{3/2})):
// unspecified constants, data-dependent sigma_1, sigma_k and gamma_s, and
// a chain through Theorem 6 (the decomposition's stability, see (S8)) and
// Lemma 32 (the whitening's stability, whose use in Theorem 5 contains
// the wrong cubic step of (S6)). In configuration 4 nothing but the output
// is released, so W itself changes between neighbours and its rotation
// freedom, the un-whitening and the decomposition would all have to enter
// a certified local-sensitivity bound; we have not derived one, so the
// paper's calibration is NOT implemented.
//
// (S9.1) What is implemented instead: public bounds enforced by
// projection. The non-private pipeline (Fit, method "nonprivate": whitened
// path, robust power method, UnwhitenLDA, topics sorted by weight) gives
// A (D x K) and weights w. The released function is
// f(x) = (P(a_1), ..., P(a_K), P(w)), with P the Euclidean projection onto
// the probability simplex (Duchi, Shalev-Shwartz, Singer and Chandra
// 2008). Any two probability vectors p, q satisfy ||p - q||_2^2 <=
// ||p - q||_1 ||p - q||_inf <= 2 * 1, so whatever the data, the power
// method's restarts (coupled between neighbours) or the order of the
// topics:
//
//	||P(A) - P(A')||_F <= sqrt(2K),    ||P(w) - P(w')||_2 <= sqrt(2),
//
// data-independent global sensitivities; in l1, ||p - q||_1 <= 2 gives
// 2K and 2. The topics and the weights are released at (eps1, delta1)
// and (eps2, delta2) of the budget split (equal by default;
// FitOptions.Split gives [topics, weights]), each with whichever of the
// Gaussian mechanism (l2 sensitivity) and the Laplace mechanism (l1
// sensitivity, pure DP; its delta share is then unused and the report's
// total delta is smaller) has the smaller per-entry variance, a choice
// that depends only on K, eps and delta. The l1 sensitivity does not grow
// with D, so Laplace wins for small K and at large epsilon. Basic
// composition gives the total. If the
// non-private pipeline fails numerically on the data (e.g. M2 of rank <
// K), f(x) is the public uniform output (topics 1/D, weights 1/K), so the
// existence of an output reveals nothing; input-validation errors
// (documents shorter than 3 words, too few documents) concern the public
// shape of the input and are returned. After the noise, columns and
// weights are projected onto the simplex again and re-sorted
// (post-processing); Lambda is derived from the weights by the inverse of
// UnwhitenLDA's map (0 where a weight is 0).
//
// (S9.2) Cost. The sensitivity does not fall with N, so the noise per
// entry is min(sqrt(2K) tau(eps1, delta1), 2 sqrt(2) K/eps1) in standard
// deviation: the released topics are useful only at very large epsilon
// (or tiny D K). This is the price of a guarantee
// that holds without any condition on the data; a Lemma 33 variant with a
// data-dependent bound that falls as 1/N is not provided.

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

// fitLDAOutput runs seed 004 configuration 4 in the projected variant of
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
	relA.Derivation = "otd/ldapriv_output.go (S9.1): diameter of K simplex columns, sqrt(2K) in l2, 2K in l1 (data-independent)"
	relW, err := outputNoise(w, sW, 2, e2, d2, b.Calibration, r)
	if err != nil {
		return nil, fmt.Errorf("otd: noise on the weights: %w", err)
	}
	relW.What = "topic weights (projected onto the simplex)"
	relW.Derivation = "otd/ldapriv_output.go (S9.1): diameter of the simplex, sqrt(2) in l2, 2 in l1 (data-independent)"
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
		"basic (seed 004 Proposition 23): (eps1+eps2, delta1+delta2) over the topics and weights releases", secure, n)
	res.Report.Notes = append(res.Report.Notes,
		"lda-output: seed 004's data-dependent Delta_mu (Theorem 7) is not certified; topics and weights are projected onto the simplex and noised with the data-independent sensitivities sqrt(2K), sqrt(2) (l2) or 2K, 2 (l1) (otd/ldapriv_output.go (S9)); useful only at large epsilon",
		"the eigenvalues are derived from the released weights (post-processing)")
	return res, nil
}
