package otd

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/internal/eigen"
	"github.com/dprec/dprec/perturb"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// MethodAGNWhitened is the single-topic model's AGN at real vocabulary
// sizes: no D x D x D tensor is formed (derivation (S10) in the package
// doc, "# Sensitivities").
const MethodAGNWhitened Method = "agn-whitened"

// MaxPrivateVocab is the largest PrivateOptions.Vocab: the selected
// words' second moment is formed densely and eigendecomposed
// (8 Vocab^2 bytes, O(Vocab^3) time; about 5 s at 3000).
const MaxPrivateVocab = 3000

// Defaults of PrivateOptions and of agn-whitened's budget split.
const (
	defaultPrivateVocab = 1000
	defaultClipLen      = 20
	defaultClipM3       = 1
)

// defaultAGNWhitenedSplit are the budget fractions (vocabulary
// selection, M2, whitened tensor). The whitening carries the largest
// share because its noise, not the tensor's, limits accuracy: at the
// default clipping the tensor's noise is about two orders of magnitude
// below its eigenvalues at N = 10^6 on 20news (docs/spectral.md, private topics).
var defaultAGNWhitenedSplit = [3]float64{0.1, 0.6, 0.3}

// PrivateOptions tunes agn-whitened ((S10), (S11)). Zero values are the
// defaults.
type PrivateOptions struct {
	// Vocab is the number of words kept by the private vocabulary
	// selection (stage 0: the words of largest noisy frequency); 0 means
	// 1000, at most MaxPrivateVocab. A vocabulary of at most Vocab words
	// is kept whole, and stage 0's budget share goes to stages 1 and 2.
	Vocab int
	// ClipLen L sets the clipping of each document's stage-0 and stage-1
	// contributions: its word-frequency vector is scaled to l2 norm at
	// most 1/sqrt(L), its pair distribution to Frobenius norm at most
	// 1/sqrt(L(L-1)), the norms of a document of L distinct words. 0
	// means 20; a negative value turns this clipping off (bounds 1).
	ClipLen float64
	// ClipM3 is kappa in the clipping of each document's whitened
	// third-moment contribution to packed l2 norm kappa K^{3/2} (the
	// whitened moment of a topic of weight 1/K has norm about K^{3/2}). 0
	// means 1; a negative value turns it off (bound r_W^3).
	ClipM3 float64
}

// clips returns the clip norms (C1, C2, C3) of (S10); each is at most the
// unclipped bound (1, 1, +Inf).
func (p PrivateOptions) clips(k int) (c1, c2, c3 float64) {
	l := p.ClipLen
	if l == 0 {
		l = defaultClipLen
	}
	c1, c2, c3 = 1, 1, math.Inf(1)
	if l > 1 {
		c1, c2 = math.Min(1, 1/math.Sqrt(l)), math.Min(1, 1/math.Sqrt(l*(l-1)))
	}
	kappa := p.ClipM3
	if kappa == 0 {
		kappa = defaultClipM3
	}
	if kappa > 0 {
		c3 = kappa * math.Pow(float64(k), 1.5)
	}
	return c1, c2, c3
}

func (p PrivateOptions) validate() error {
	if p.Vocab < 0 || p.Vocab > MaxPrivateVocab {
		return fmt.Errorf("otd: private vocabulary size %d must be in [0, %d] (0: %d)", p.Vocab, MaxPrivateVocab, defaultPrivateVocab)
	}
	if math.IsNaN(p.ClipLen) || math.IsInf(p.ClipLen, 0) || (p.ClipLen > 0 && p.ClipLen <= 1) {
		return fmt.Errorf("otd: clipping length %v must be > 1, 0 (default %d) or negative (off)", p.ClipLen, defaultClipLen)
	}
	if math.IsNaN(p.ClipM3) || math.IsInf(p.ClipM3, 0) {
		return fmt.Errorf("otd: third-moment clip factor %v must be finite", p.ClipM3)
	}
	return nil
}

// agnWhitenedStages returns the (epsilon, delta) of stages 0-2 of (S10);
// stage 0 gets nothing when no selection is made.
func agnWhitenedStages(opts *FitOptions, selecting bool) (eps, delta [3]float64, err error) {
	f := defaultAGNWhitenedSplit
	switch len(opts.Split) {
	case 0:
	case 2:
		f = [3]float64{0, opts.Split[0], opts.Split[1]}
	case 3:
		copy(f[:], opts.Split)
	default:
		return eps, delta, fmt.Errorf("otd: method %q splits its budget over 3 releases (vocabulary, M2, whitened tensor), got %d fractions", opts.Method, len(opts.Split))
	}
	if !(f[1] > 0 && f[2] > 0 && f[0] >= 0) || math.Abs(f[0]+f[1]+f[2]-1) > 1e-9 {
		return eps, delta, fmt.Errorf("otd: budget split %v: want non-negative fractions summing to 1, positive for M2 and the whitened tensor", opts.Split)
	}
	if selecting && f[0] == 0 {
		return eps, delta, errors.New("otd: the vocabulary selection needs a positive budget fraction")
	}
	if !selecting {
		s := f[1] + f[2]
		f = [3]float64{0, f[1] / s, f[2] / s}
	}
	for i := range f {
		eps[i], delta[i] = f[i]*opts.Epsilon, f[i]*opts.Delta
	}
	return eps, delta, nil
}

// agnWhitenedSetup is what both models' agn-whitened share: the checked
// corpus, its restriction to the privately selected words (stage 0), the
// clip norms and the stage budgets.
type agnWhitenedSetup struct {
	c, sub     *data.Corpus
	sel        []int32 // selected word ids (nil: all words)
	n, k       int
	c1, c2, c3 float64
	eps, delta [3]float64
	rels       []perturb.Release
}

// newAGNWhitenedSetup validates the options and runs stage 0 of (S10).
func newAGNWhitenedSetup(in *Input, opts *FitOptions, b PrivacyBudget, r *rand.Rand) (*agnWhitenedSetup, error) {
	if opts.Model == ModelSTM && opts.Estimator != AllTriples {
		return nil, fmt.Errorf("otd: private methods need the all-triples estimator (the %v estimator's word choice depends on the whole corpus)", opts.Estimator)
	}
	if err := opts.Private.validate(); err != nil {
		return nil, err
	}
	c, err := prepare(in.Corpus, AllTriples, 3)
	if err != nil {
		return nil, err
	}
	st := &agnWhitenedSetup{c: c, sub: c, n: c.NumDocs(), k: opts.K}
	v := opts.Private.Vocab
	if v == 0 {
		v = defaultPrivateVocab
	}
	if v < st.k {
		return nil, fmt.Errorf("otd: private vocabulary of %d words is smaller than K = %d", v, st.k)
	}
	selecting := c.V() > v
	if !selecting && c.V() > MaxPrivateVocab {
		return nil, fmt.Errorf("otd: agn-whitened forms the selected words' dense second moment: at most %d words, the vocabulary has %d", MaxPrivateVocab, c.V())
	}
	if st.eps, st.delta, err = agnWhitenedStages(opts, selecting); err != nil {
		return nil, err
	}
	st.c1, st.c2, st.c3 = opts.Private.clips(st.k)
	if selecting {
		var rel perturb.Release
		if st.sel, rel, err = privateTopWords(c, v, st.c1, st.n, st.eps[0], st.delta[0], b.Calibration, r); err != nil {
			return nil, err
		}
		st.rels = append(st.rels, rel)
		st.sub = restrictCorpus(c, st.sel)
	}
	return st, nil
}

// finish decomposes T, un-whitens and packages the result.
func (st *agnWhitenedSetup) finish(opts *FitOptions, b PrivacyBudget, W *mat.Dense, T *SymTensor, note string, secure bool, r *rand.Rand) (*Result, error) {
	lam, V, err := PowerIteration(T, st.k, opts.TPM, r)
	if err != nil {
		return nil, err
	}
	var A *mat.Dense
	var w []float64
	if opts.Model == ModelLDA {
		A, w = UnwhitenLDA(W, lam, V, opts.Alpha0)
	} else {
		A, w = Unwhiten(W, lam, V)
	}
	if st.sel != nil {
		A = embedRows(A, st.sel, st.c.V())
	}
	res := assemble(opts, A, w, lam)
	res.Path = "whitened"
	res.Vocab = st.c.Vocab
	res.Report = privateReport(opts, b, st.rels, "basic: the sum of the releases' (epsilon, delta) (vocabulary selection, moments of the selected words, whitened tensor)", secure, st.n)
	res.Report.Notes = append(res.Report.Notes, fmt.Sprintf("agn-whitened: %d of %d words selected privately; per-document contributions clipped to norms %.3g (frequencies), %.3g (pairs), %.3g (whitened triples), so the moments are weighted averages that down-weight short or repetitive documents ((S10))", st.sub.V(), st.c.V(), st.c1, st.c2, st.c3))
	if note != "" {
		res.Report.Notes = append(res.Report.Notes, note)
	}
	return res, nil
}

// fitAGNWhitened runs (S10) (single-topic model) or (S11) (LDA).
func fitAGNWhitened(in *Input, opts *FitOptions, b PrivacyBudget, secure bool, r *rand.Rand) (*Result, error) {
	st, err := newAGNWhitenedSetup(in, opts, b, r)
	if err != nil {
		return nil, err
	}
	if opts.Model == ModelLDA {
		return fitAGNWhitenedLDA(st, opts, b, secure, r)
	}
	W, rel1, note, err := clippedWhitening(st.sub, st.k, st.c2, st.n, st.eps[1], st.delta[1], b.Calibration, r)
	if err != nil {
		return nil, err
	}
	T, rel2, err := clippedWhitenedM3(st.sub, W, st.c3, st.n, st.eps[2], st.delta[2], b.Calibration, r, opts.Progress)
	if err != nil {
		return nil, err
	}
	st.rels = append(st.rels, rel1, rel2)
	return st.finish(opts, b, W, T, note, secure, r)
}

// clipScale returns min(1, clip/norm) (1 for a zero norm).
func clipScale(norm, clip float64) float64 {
	if norm <= clip {
		return 1
	}
	return clip / norm
}

// clippedFrequencies is stage 0's statistic of (S10): (1/n) sum_d
// clip(c_d / l_d, c1) over the documents of c.
func clippedFrequencies(c *data.Corpus, c1 float64, n int) (m []float64, rho float64) {
	m = make([]float64, c.V())
	for d := 0; d < c.NumDocs(); d++ {
		ws, cs := c.Doc(d)
		l := float64(c.DocLen(d))
		if l == 0 {
			continue
		}
		var s2 float64
		for _, x := range cs {
			s2 += float64(x) * float64(x)
		}
		sc := clipScale(math.Sqrt(s2)/l, c1)
		rho += sc / float64(n)
		f := sc / (l * float64(n))
		for i, w := range ws {
			m[w] += f * float64(cs[i])
		}
	}
	return m, rho
}

// privateTopWords is stage 0 of (S10): the clipped mean word-frequency
// vector plus Gaussian noise (l2 sensitivity sqrt(2) c1 / n), and the ids
// (ascending) of the v words with the largest noisy values.
func privateTopWords(c *data.Corpus, v int, c1 float64, n int, eps, delta float64, cal perturb.Calibration, r *rand.Rand) ([]int32, perturb.Release, error) {
	m, _ := clippedFrequencies(c, c1, n)
	g, err := perturb.NewGaussian(math.Sqrt2*c1/float64(n), eps, delta, cal)
	if err != nil {
		return nil, perturb.Release{}, fmt.Errorf("otd: noise on the word frequencies: %w", err)
	}
	g.AddTo(m, r)
	idx := eigen.Order(m, eigen.ByValue)
	sel := make([]int32, v)
	for i := range sel {
		sel[i] = int32(idx[i])
	}
	sort.Slice(sel, func(a, b int) bool { return sel[a] < sel[b] })
	rel := g.Release("clipped mean word frequencies (D entries; the top words by noisy value are kept)")
	rel.Derivation = "go doc otd (S10) stage 0: sqrt(2) C1 / N, frequency vectors clipped to l2 norm C1"
	return sel, rel, nil
}

// restrictCorpus returns the corpus on the words sel (ascending ids),
// keeping every document (possibly empty) in order.
func restrictCorpus(c *data.Corpus, sel []int32) *data.Corpus {
	newID := make([]int32, c.V())
	for i := range newID {
		newID[i] = -1
	}
	vocab := make([]string, len(sel))
	for j, w := range sel {
		newID[w] = int32(j)
		vocab[j] = c.Vocab[w]
	}
	out := &data.Corpus{Vocab: vocab, DocPtr: make([]int64, 1, c.NumDocs()+1)}
	for d := 0; d < c.NumDocs(); d++ {
		ws, cs := c.Doc(d)
		for i, w := range ws {
			if j := newID[w]; j >= 0 {
				out.Words = append(out.Words, j)
				out.Counts = append(out.Counts, cs[i])
			}
		}
		out.DocPtr = append(out.DocPtr, int64(len(out.Words)))
	}
	return out
}

// embedRows returns the D x K matrix with row sel[j] equal to row j of a
// and zeros elsewhere.
func embedRows(a *mat.Dense, sel []int32, d int) *mat.Dense {
	_, k := a.Dims()
	out := mat.NewDense(d, k, nil)
	for j, w := range sel {
		out.SetRow(int(w), a.RawRowView(j))
	}
	return out
}

// clippedM2 returns (1/n) sum_d s_d P2_d over the documents of c with at
// least 2 words, P2_d = (c c^T - diag c)/(l(l-1)) and s_d =
// min(1, c2/||P2_d||_F), and rho = (1/n) sum_d s_d.
func clippedM2(c *data.Corpus, c2 float64, n int) (*mat.SymDense, float64) {
	var rho float64
	v := c.V()
	M := mat.NewSymDense(v, nil)
	raw := M.RawSymmetric()
	for d := 0; d < c.NumDocs(); d++ {
		ws, cs := c.Doc(d)
		l := float64(c.DocLen(d))
		if l < 2 {
			continue
		}
		var s2, s3 float64
		for _, x := range cs {
			fx := float64(x)
			s2 += fx * fx
			s3 += fx * fx * fx
		}
		den := l * (l - 1)
		// ||c c^T - diag c||_F^2 = (sum c^2)^2 - 2 sum c^3 + sum c^2.
		sc := clipScale(math.Sqrt(math.Max(s2*s2-2*s3+s2, 0))/den, c2)
		rho += sc / float64(n)
		f := sc / (den * float64(n))
		for i, wi := range ws {
			xi := f * float64(cs[i])
			row := raw.Data[int(wi)*raw.Stride:]
			row[wi] += xi * float64(cs[i]-1)
			for j := i + 1; j < len(ws); j++ {
				row[ws[j]] += xi * float64(cs[j])
			}
		}
	}
	return M, rho
}

// clippedWhitening is stage 1 of (S10): Analyze Gauss on the clipped M2
// of the selected words (upper triangle, l2 sensitivity sqrt(2) c2 / n),
// WhitenSVD, and the swamp warning.
func clippedWhitening(c *data.Corpus, k int, c2 float64, n int, eps, delta float64, cal perturb.Calibration, r *rand.Rand) (*mat.Dense, perturb.Release, string, error) {
	M2, _ := clippedM2(c, c2, n)
	m2n, rel, err := AnalyzeGaussM2(M2, math.Sqrt2*c2/float64(n), eps, delta, cal, r)
	if err != nil {
		return nil, rel, "", err
	}
	rel.What = "clipped M2 of the selected words (upper triangle)"
	rel.Derivation = "go doc otd (S10) stage 1: sqrt(2) C2 / N, pair distributions clipped to Frobenius norm C2"
	W, err := WhitenSVD(m2n, k)
	if err != nil {
		return nil, rel, "", err
	}
	top, err := topAbsEigen(m2n, k)
	if err != nil {
		return nil, rel, "", err
	}
	return W, rel, swampNote(top, 2*rel.Scale*math.Sqrt(float64(c.V())), k, n), nil
}

// tripleNormBound returns an upper bound on ||P3_d(W,W,W)||_F for a
// document with counts cs of words ws (length l >= 3): the smaller of
// (||y||^3 + 3 ||y|| S2 + 2 S3)/(l(l-1)(l-2)) (inclusion-exclusion over
// repeated positions, y = W^T c, S_p = sum_i c_i r_i^p) and the average
// over distinct position triples of r_p r_q r_r (r_i = ||W^T e_i||), which
// is (S1^3 - 3 S2 S1 + 2 S3)/(l(l-1)(l-2)).
func tripleNormBound(ws, cs []int32, l float64, W *mat.Dense, rn, y []float64) float64 {
	for j := range y {
		y[j] = 0
	}
	var s1, s2, s3 float64
	for i, w := range ws {
		x := float64(cs[i])
		floats.AddScaled(y, x, W.RawRowView(int(w)))
		rw := rn[w]
		s1 += x * rw
		s2 += x * rw * rw
		s3 += x * rw * rw * rw
	}
	yn := floats.Norm(y, 2)
	den := l * (l - 1) * (l - 2)
	return math.Min(yn*yn*yn+3*yn*s2+2*s3, math.Max(s1*s1*s1-3*s2*s1+2*s3, 0)) / den
}

// clippedTriples is stage 2's statistic of (S10): the packed
// (1/n) sum_d s_d P3_d(W,W,W), s_d = min(1, c3/bound_d) (0 for documents
// with fewer than 3 tokens), its l2 sensitivity 2 min(c3, r_W^3)/n, and
// rho = (1/n) sum_d s_d.
func clippedTriples(c *data.Corpus, W *mat.Dense, c3 float64, n int, prog ProgressFunc) (p []float64, sens, rho float64) {
	d, k := W.Dims()
	rn := make([]float64, d)
	var rw float64
	for a := range rn {
		rn[a] = floats.Norm(W.RawRowView(a), 2)
		rw = math.Max(rw, rn[a])
	}
	wt := make([]float64, c.NumDocs())
	y := make([]float64, k)
	for doc := range wt {
		l := float64(c.DocLen(doc))
		if l < 3 {
			continue
		}
		ws, cs := c.Doc(doc)
		wt[doc] = clipScale(tripleNormBound(ws, cs, l, W, rn, y), c3)
		rho += wt[doc] / float64(n)
	}
	a := newM3Accum(W, d)
	a.wt, a.nDiv = wt, float64(n)
	return a.run(c, 0, prog), 2 * math.Min(c3, rw*rw*rw) / float64(n), rho
}

// clippedWhitenedM3 is stage 2 of (S10): clippedTriples released with
// Gaussian noise on the packed entries.
func clippedWhitenedM3(c *data.Corpus, W *mat.Dense, c3 float64, n int, eps, delta float64, cal perturb.Calibration, r *rand.Rand, prog ProgressFunc) (*SymTensor, perturb.Release, error) {
	_, k := W.Dims()
	p, sens, _ := clippedTriples(c, W, c3, n, prog)
	g, err := perturb.NewGaussian(sens, eps, delta, cal)
	if err != nil {
		return nil, perturb.Release{}, fmt.Errorf("otd: noise on the whitened tensor: %w", err)
	}
	g.AddTo(p, r)
	T, err := FromPacked(k, p)
	if err != nil {
		return nil, perturb.Release{}, err
	}
	rel := g.Release("clipped whitened tensor M3(W,W,W) (packed, C(K+2,3) entries)")
	rel.Derivation = "go doc otd (S10) stage 2: 2 min(C3, r_W^3) / N with W from stage 1"
	return T, rel, nil
}

// swampNote returns a warning when top[k-1], the K-th of the largest
// singular values top (descending, at least k of them) of a released
// matrix whose noise has spectral norm about level, is below twice level,
// and "" otherwise. The warning counts the directions above twice the
// noise and estimates the N that would lift the K-th to twice the noise
// (the noise level scales as 1/N) from the K-th signal
// sqrt(s_K^2 - level^2); when s_K <= level no signal is detectable and
// only "more than 2 N" can be said (a signal below level needs the noise
// to shrink more than twofold).
func swampNote(top []float64, level float64, k, n int) string {
	sK := top[k-1]
	if !(level > 0) || sK >= 2*level {
		return ""
	}
	r := 0
	for _, v := range top[:k] {
		if v >= 2*level {
			r++
		}
	}
	msg := fmt.Sprintf("WARNING: the %d-th singular value of the noisy second-moment release (%.3g) is below twice the spectral norm of its noise (%.3g): %d of the K = %d whitening directions stand above it, and topics beyond those are dominated by noise; ", k, sK, level, r, k)
	if sK > level {
		need := math.Ceil(float64(n) * 2 * level / math.Sqrt(sK*sK-level*level))
		return msg + fmt.Sprintf("about N = %.0f documents (now %d) or a proportionally larger epsilon would be needed for K = %d", need, n, k)
	}
	return msg + fmt.Sprintf("no signal is detectable in the %d-th direction: many more than 2 N = %d documents, a much larger epsilon or a smaller K (at most %d) would be needed", k, 2*n, max(r, 1))
}

// topAbsEigen returns the k largest absolute eigenvalues of s, descending.
func topAbsEigen(s *mat.SymDense, k int) ([]float64, error) {
	vals, _, ok := eigen.Decompose(s, false)
	if !ok {
		return nil, errors.New("otd: eigendecomposition of the noisy M2 failed")
	}
	return eigen.Largest(vals, k, eigen.ByAbs), nil
}

// privateWhitening releases a whitening matrix for the corpus moment with
// concentration alpha0 (0: single-topic model): Analyze Gauss on the dense
// M2 for D <= DenseWhitenMax, the private sketch (S7) above, with the
// swamp warning of (S10) ("" when the noise is small).
func privateWhitening(c *data.Corpus, alpha0 float64, k int, sens Sensitivities, eps, delta float64, cal perturb.Calibration, r *rand.Rand) (*mat.Dense, []perturb.Release, string, error) {
	n := c.NumDocs()
	if c.V() > DenseWhitenMax {
		W, rels, topY, err := privateWhitenSketchEig(c, alpha0, k, sens.M2, eps, delta, cal, r)
		if err != nil {
			return nil, nil, "", err
		}
		p := 2*k + sketchOversample
		if p > c.V() {
			p = c.V()
		}
		level := rels[0].Scale * (math.Sqrt(float64(c.V())) + math.Sqrt(float64(p)))
		return W, rels, swampNote(topY, level, k, n), nil
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
	top, err := topAbsEigen(m2n, k)
	if err != nil {
		return nil, nil, "", err
	}
	return W, []perturb.Release{rel}, swampNote(top, 2*rel.Scale*math.Sqrt(float64(c.V())), k, n), nil
}
