package otd

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/perturb"
	"gonum.org/v1/gonum/mat"
)

// MethodAGNWhitened is the single-topic model's AGN at real vocabulary
// sizes: no D x D x D tensor is formed.
const MethodAGNWhitened = "agn-whitened"

// (S10) agn-whitened: the single-topic model through the whitened tensor
// (seed 004 configuration 2 transported to seed 000's model).
//
// Stage 1 (eps1, delta1) releases a whitening matrix W. For D <=
// DenseWhitenMax it is Analyze Gauss on the dense M2 (upper triangle,
// l2 sensitivity sqrt(2)/N, (S1)) followed by WhitenSVD. Above it, the
// private sketch of (S7) (privateWhitenSketch) with Frobenius sensitivity
// sqrt(2)/N: for the single-topic model ||M2 - M2'||_F = ||P2 - P2'||_F/N
// with P2, P2' non-negative matrices summing to 1, so
// ||P2 - P2'||_F^2 <= ||P2||_F^2 + ||P2'||_F^2 <= 2 (the (S1) argument on
// the full matrix). W is then public for stage 2.
//
// Stage 2 (eps2, delta2) releases the packed K x K x K tensor
// T = M3(W,W,W) plus Gaussian noise. Replacing document n changes T by
// (P3_n(W,W,W) - P3'_n(W,W,W))/N, and for a probability tensor P,
// ||P(W,W,W)||_F = ||sum_abc P_abc w_a (x) w_b (x) w_c||_F
// <= sum_abc P_abc ||w_a|| ||w_b|| ||w_c|| <= r_W^3 (w_a the rows of W,
// r_W = max_a ||w_a||), so the Frobenius change is at most 2 r_W^3 / N
// (the rows of W can point in opposite directions, so the non-negativity
// argument of (S1) does not apply) and the packed vector's change is at
// most that: WhitenedTensorSensitivity(W, 2/N). T is computed from the
// whitened documents in O(nnz K + N K^3) (STMWhitenedM3). The power
// method and un-whitening are post-processing; the stages compose by basic
// composition to (eps1 + eps2, delta1 + delta2).
//
// Warning (both whitening routes; post-processing of released values).
// A released m x n matrix X + G with i.i.d. N(0, sigma^2) noise G has noise
// singular values up to about sigma (sqrt(m) + sqrt(n)) (for a symmetric
// m x m noise matrix, 2 sigma sqrt(m)). When the K-th singular value s_K
// of the released matrix (the noisy D x D M2, or the D x p sketch
// M2 Omega + G of (S7)) is below twice that level, the K-th direction of
// the whitening is mostly noise, and the report carries a warning with an
// estimate of the N that would lift it to twice the noise: the signal
// is estimated as sqrt(s_K^2 - level^2) and the noise level scales as 1/N
// (the moments do not depend on N); when no signal is detectable the
// warning says so.

// swampNote returns a warning when sK, the K-th singular value of a
// released matrix whose noise has spectral norm about level, is below
// twice level, and "" otherwise.
func swampNote(sK, level float64, k, n int) string {
	if !(level > 0) || sK >= 2*level {
		return ""
	}
	msg := fmt.Sprintf("WARNING: the %d-th singular value of the noisy second-moment release (%.3g) is below twice the spectral norm of its noise (%.3g): the whitening, and so the topics, are dominated by noise; ", k, sK, level)
	if sig := math.Sqrt(math.Max(sK*sK-level*level, 0)); sig > 0 {
		return msg + fmt.Sprintf("about N = %.0f documents (now %d) or a proportionally larger epsilon would be needed", math.Ceil(float64(n)*2*level/sig), n)
	}
	return msg + fmt.Sprintf("no signal is detectable above the noise: many more than 2 N = %d documents or a much larger epsilon would be needed", 2*n)
}

// kthAbsEigen returns the k-th largest absolute eigenvalue of s.
func kthAbsEigen(s *mat.SymDense, k int) (float64, error) {
	var es mat.EigenSym
	if !es.Factorize(s, false) {
		return 0, errors.New("otd: eigendecomposition of the noisy M2 failed")
	}
	vals := es.Values(nil)
	abs := make([]float64, len(vals))
	for i, v := range vals {
		abs[i] = math.Abs(v)
	}
	sortFloats(abs)
	return abs[len(abs)-k], nil
}

// fitAGNWhitened runs (S10) on a single-topic corpus.
func fitAGNWhitened(in *Input, opts *FitOptions, b PrivacyBudget, secure bool, r *rand.Rand) (*Result, error) {
	if opts.Estimator != AllTriples {
		return nil, fmt.Errorf("otd: private methods need the all-triples estimator (the %v estimator's word choice depends on the whole corpus)", opts.Estimator)
	}
	c, err := prepare(in.Corpus, AllTriples, 3)
	if err != nil {
		return nil, err
	}
	n := c.NumDocs()
	sens, err := STMSensitivities(n)
	if err != nil {
		return nil, err
	}
	e1, d1, e2, d2, err := b.stages(false)
	if err != nil {
		return nil, err
	}
	W, rels, note, err := privateWhitening(c, 0, opts.K, sens, e1, d1, b.Calibration, r)
	if err != nil {
		return nil, err
	}
	Tw, err := whitenedM3(c, W, 0, opts.Progress)
	if err != nil {
		return nil, err
	}
	st := WhitenedTensorSensitivity(W, 2/float64(n))
	g, err := perturb.NewGaussian(st, e2, d2, b.Calibration)
	if err != nil {
		return nil, fmt.Errorf("otd: noise on the whitened tensor: %w", err)
	}
	p := Tw.Packed()
	g.AddTo(p, r)
	T, err := FromPacked(Tw.D, p)
	if err != nil {
		return nil, err
	}
	relT := g.Release("whitened tensor M3(W,W,W) (packed, C(K+2,3) entries)")
	relT.Derivation = "otd/agn_whitened.go (S10): 2 r_W^3 / N with W from stage 1"
	rels = append(rels, relT)
	lam, V, err := PowerIteration(T, opts.K, opts.TPM, r)
	if err != nil {
		return nil, err
	}
	A, w := Unwhiten(W, lam, V)
	res := assemble(opts, A, w, lam)
	res.Path = "whitened"
	res.Vocab = c.Vocab
	res.Report = privateReport(opts, b, rels, "basic: (eps1+eps2, delta1+delta2) over the whitening and the whitened tensor", secure, n)
	if note != "" {
		res.Report.Notes = append(res.Report.Notes, note)
	}
	return res, nil
}

// privateWhitening releases a whitening matrix for the corpus moment with
// concentration alpha0 (0: single-topic model): Analyze Gauss on the dense
// M2 for D <= DenseWhitenMax, the private sketch (S7) above, with the
// swamp warning of (S10) ("" when the noise is small).
func privateWhitening(c *data.Corpus, alpha0 float64, k int, sens Sensitivities, eps, delta float64, cal perturb.Calibration, r *rand.Rand) (*mat.Dense, []perturb.Release, string, error) {
	n := c.NumDocs()
	if c.V() > DenseWhitenMax {
		W, rels, sK, err := privateWhitenSketchEig(c, alpha0, k, sens.M2, eps, delta, cal, r)
		if err != nil {
			return nil, nil, "", err
		}
		p := 2*k + sketchOversample
		if p > c.V() {
			p = c.V()
		}
		level := rels[0].Scale * (math.Sqrt(float64(c.V())) + math.Sqrt(float64(p)))
		return W, rels, swampNote(sK, level, k, n), nil
	}
	M2 := secondMoment(c, alpha0)
	m2n, rel, err := AnalyzeGaussM2(M2, sens.M2, eps, delta, cal, r)
	if err != nil {
		return nil, nil, "", err
	}
	rel.Derivation = sens.M2Ref
	W, err := WhitenSVD(m2n, k)
	if err != nil {
		return nil, nil, "", err
	}
	kth, err := kthAbsEigen(m2n, k)
	if err != nil {
		return nil, nil, "", err
	}
	return W, []perturb.Release{rel}, swampNote(kth, 2*rel.Scale*math.Sqrt(float64(c.V())), k, n), nil
}
