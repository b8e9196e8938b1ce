// lda-decomposition: DeCarolis et al. 2020 configuration 3; derivation (S8) in the
// package documentation (go doc otd, "# Sensitivities").

package otd

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/internal/eigen"
	"github.com/dprec/dprec/perturb"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// Shares of configuration 3's second-stage budget (S8.4): the gap and the
// tensor norm each get 1/6 of eps2 (a coarse bound suffices: the
// confidence margin t grows only as 1/eps), Z the remaining 2/3; delta2 is
// halved between the failure probability delta3 of the bound and Z.
const (
	decompStatShare = 1.0 / 6
	decompDelta3    = 0.5
)

// decompOutput is the deterministic output of (S8.1) on a whitened tensor.
type decompOutput struct {
	Z     *mat.Dense // K x K, column i = T(I, v_i, v_i)
	Gap   float64    // min_j mu_j - mu_{j+1} of T(I,I,theta); +Inf for K = 1
	Frob  float64    // ||T||_F
	Theta []float64
}

// contractedDecomposition computes (S8.1): the eigenvectors of
// T(I,I,theta), their minimum eigengap and Z.
func contractedDecomposition(T *SymTensor, theta []float64) (*decompOutput, error) {
	k := T.D
	if len(theta) != k {
		panic("otd: contraction vector length mismatch")
	}
	M := mat.NewSymDense(k, nil)
	for i := 0; i < k; i++ {
		for j := i; j < k; j++ {
			row := T.Data[(i*k+j)*k : (i*k+j)*k+k]
			M.SetSym(i, j, floats.Dot(row, theta))
		}
	}
	mu, vecs, ok := eigen.Decompose(M, true) // mu ascending
	if !ok {
		return nil, errors.New("otd: eigendecomposition of the contracted whitened tensor failed")
	}
	gap := math.Inf(1)
	for j := 1; j < k; j++ {
		gap = math.Min(gap, mu[j]-mu[j-1])
	}
	Z := mat.NewDense(k, k, nil)
	v := make([]float64, k)
	z := make([]float64, k)
	for c := 0; c < k; c++ {
		mat.Col(v, k-1-c, vecs) // descending order of mu
		T.TIuu(v, z)
		Z.SetCol(c, z)
	}
	return &decompOutput{Z: Z, Gap: gap, Frob: T.FrobeniusNorm(), Theta: theta}, nil
}

// decompEigError is e(gamma) of (S8.3): the bound on ||v_i - s v_i'||.
func decompEigError(k int, deltaM, gap float64) float64 {
	if k == 1 {
		return 0
	}
	if !(gap > 0) {
		return math.Sqrt2
	}
	return math.Min(math.Sqrt2, 2*math.Sqrt2*deltaM/gap)
}

// decompLocalSensitivity is the bound of (S8.3) on the l2 (Frobenius)
// local sensitivity of Z at a data set with tensor norm frob and gap gap.
func decompLocalSensitivity(k int, frob, gap, deltaT, deltaM float64) float64 {
	return math.Sqrt(float64(k)) * (2*math.Max(frob, 0)*decompEigError(k, deltaM, gap) + deltaT)
}

// laplaceMargin returns t with P[noise of l's AddTo on one value, plus
// its grid snap, exceeds t] <= p/2 on each side: t = b_eff ln(1/p) + g.
func laplaceMargin(l *perturb.Laplace, p float64) float64 {
	g := l.Granularity()
	bEff := (l.Sensitivity() + g) / l.Epsilon()
	return bEff*math.Log(1/p) + g
}

// decompLSBound releases gap and frob privately (S8.4) and returns the
// private local-sensitivity bound LS~ and the two releases (the gap
// release is skipped for K = 1).
func decompLSBound(k int, out *decompOutput, deltaT, deltaM, epsG, epsF, delta3 float64, r *rand.Rand) (float64, []perturb.Release, error) {
	var rels []perturb.Release
	p := delta3 // per statistic failure probability delta3/2 (laplaceMargin)
	gapLow := math.Inf(1)
	if k > 1 {
		lg, err := perturb.NewLaplace(2*deltaM, epsG)
		if err != nil {
			return 0, nil, fmt.Errorf("otd: noise on the eigengap: %w", err)
		}
		x := []float64{out.Gap}
		lg.AddTo(x, r)
		gapLow = x[0] - laplaceMargin(lg, p)
		rel := lg.Release("minimum eigengap of T(I,I,theta) (for the local-sensitivity bound)")
		rel.Derivation = "go doc otd (S8.2): Weyl, 2 Delta_3 r_W^2 ||W theta||_inf"
		rels = append(rels, rel)
	}
	lf, err := perturb.NewLaplace(deltaT, epsF)
	if err != nil {
		return 0, nil, fmt.Errorf("otd: noise on the tensor norm: %w", err)
	}
	x := []float64{out.Frob}
	lf.AddTo(x, r)
	frobUp := x[0] + laplaceMargin(lf, p)
	rel := lf.Release("Frobenius norm of the whitened tensor (for the local-sensitivity bound)")
	rel.Derivation = "go doc otd (S8.2): Delta_3 r_W^3"
	rels = append(rels, rel)
	return decompLocalSensitivity(k, frobUp, gapLow, deltaT, deltaM), rels, nil
}

// ldaPrivateWhitening is the first stage shared by configurations 2 and 3:
// W from the Analyze-Gauss noisy M2 (or the private sketch of (S7) for
// D > DenseWhitenMax), with budget (eps, delta).
func ldaPrivateWhitening(c *data.Corpus, alpha0 float64, k int, sens Sensitivities, eps, delta float64, cal perturb.Calibration, r *rand.Rand) (*mat.Dense, []perturb.Release, error) {
	if c.V() > DenseWhitenMax {
		return privateWhitenSketch(c, alpha0, k, sens.M2, eps, delta, cal, r)
	}
	_, M2, err := LDASecondMoment(c, alpha0)
	if err != nil {
		return nil, nil, err
	}
	m2n, rel2, err := AnalyzeGaussM2(M2, sens.M2, eps, delta, cal, r)
	if err != nil {
		return nil, nil, err
	}
	rel2.Derivation = sens.M2Ref
	W, err := WhitenSVD(m2n, k)
	if err != nil {
		return nil, nil, err
	}
	return W, []perturb.Release{rel2}, nil
}

// decompDeltas returns delta_T and delta_M of (S8.2) for public W, theta.
func decompDeltas(W *mat.Dense, theta []float64, delta3L1 float64) (deltaT, deltaM float64) {
	rw := maxRowNorm(W)
	d, _ := W.Dims()
	wt := make([]float64, d)
	mat.NewVecDense(d, wt).MulVec(W, mat.NewVecDense(len(theta), theta))
	inf := floats.Norm(wt, math.Inf(1))
	return delta3L1 * rw * rw * rw, delta3L1 * rw * rw * math.Min(inf, rw)
}

// fitLDADecomposition runs DeCarolis et al. 2020 configuration 3 ("lda-decomposition"):
// noisy M2 -> public W; Z = (T(I,v_i,v_i))_i from the contracted
// decomposition of T = M3(W,W,W) released with Gaussian noise calibrated
// to a privately released bound on its local sensitivity (S8, Lemma 33);
// then lambda_i = ||z_i||, v_i = z_i/lambda_i and UnwhitenLDA.
func fitLDADecomposition(in *Input, opts *FitOptions, b PrivacyBudget, secure bool, r *rand.Rand) (*Result, error) {
	c := in.Corpus
	n := c.NumDocs()
	if err := checkCorpus(c, 3); err != nil {
		return nil, err
	}
	sens, err := LDASensitivities(n, opts.Alpha0)
	if err != nil {
		return nil, err
	}
	e1, d1, e2, d2, err := b.stages(false)
	if err != nil {
		return nil, err
	}
	W, rels, err := ldaPrivateWhitening(c, opts.Alpha0, opts.K, sens, e1, d1, b.Calibration, r)
	if err != nil {
		return nil, err
	}
	k := opts.K
	theta := dptpmRandomUnit(r, k) // public: independent of the data
	T, err := LDAWhitenedM3(c, W, opts.Alpha0)
	if err != nil {
		return nil, err
	}
	out, err := contractedDecomposition(T, theta)
	if err != nil {
		return nil, err
	}
	deltaT, deltaM := decompDeltas(W, theta, sens.M3)
	epsG, epsF, epsZ := decompStatShare*e2, decompStatShare*e2, (1-2*decompStatShare)*e2
	if k == 1 {
		epsG, epsZ = 0, (1-decompStatShare)*e2
	}
	delta3 := decompDelta3 * d2
	ls, srels, err := decompLSBound(k, out, deltaT, deltaM, epsG, epsF, delta3, r)
	if err != nil {
		return nil, err
	}
	g, err := perturb.NewGaussian(ls, epsZ, d2-delta3, b.Calibration)
	if err != nil {
		return nil, fmt.Errorf("otd: noise on the decomposition output: %w", err)
	}
	zd := out.Z.RawMatrix().Data // a new Dense is contiguous
	g.AddTo(zd, r)
	relZ := g.Release("decomposition output Z = (T(I,v_i,v_i))_i, K x K (eigenvalues ||z_i||, eigenvectors z_i/||z_i||)")
	relZ.Derivation = fmt.Sprintf("go doc otd (S8.3-S8.4): privately released local-sensitivity bound sqrt(K)(2 ||T||_F e(gamma) + delta_T), valid except with probability delta3 = %.3g (DeCarolis et al. 2020 Lemma 33)", delta3)
	rels = append(rels, srels...)
	rels = append(rels, relZ)
	lam := make([]float64, k)
	V := mat.NewDense(k, k, nil)
	col := make([]float64, k)
	for i := 0; i < k; i++ {
		mat.Col(col, i, out.Z)
		lam[i] = floats.Norm(col, 2)
		if lam[i] > 0 {
			floats.Scale(1/lam[i], col)
		} else {
			col[i] = 1
		}
		V.SetCol(i, col)
	}
	A, w := UnwhitenLDA(W, lam, V, opts.Alpha0)
	res := assemble(opts, A, w, lam)
	res.Path = "whitened"
	res.Vocab = c.Vocab
	res.Report = privateReport(opts, b, rels,
		fmt.Sprintf("basic over the two stages (DeCarolis et al. 2020 Proposition 23); stage 2 by DeCarolis et al. 2020 Lemma 33: (eps_gap + eps_norm + eps_Z, delta_Z + delta3) with delta3 = %.3g the probability that the released bound falls below the local sensitivity", delta3), secure, n)
	// delta3 is part of the guarantee but not a release of its own.
	res.Report.Delta += delta3
	res.Report.Notes = append(res.Report.Notes,
		"lda-decomposition: the decomposition is the eigendecomposition of T(I,I,theta) (public random theta) plus one power step, not the robust power method, whose output sensitivity cannot be certified (go doc otd (S8))")
	return res, nil
}
