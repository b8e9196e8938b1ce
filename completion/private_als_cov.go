package completion

// PRIVATE ALS, ENTRY UNIT: THE COVARIANCE STAGE.
//
// On a dense log (many users rated each pair of items: a joke log, a
// survey, a short catalogue) the item-item covariance of the residuals can
// be estimated from every user at once, and its leading eigenvectors are
// the item factors. The covariance stage releases that covariance once
// (the "Analyze Gauss" mechanism of Dwork, Talwar, Thakurta and Zhang
// 2014 on the residual matrix) and takes the item rows from it:
//
//  1. z_ui = clip(clamp(r_ui) - mu~ - b~_i, -c, c), the residual from the
//     released mean and item biases (c the positions stage's clip,
//     alsPositionsClip), averaged over a user's repeated ratings of one
//     item (|z_ui| <= c still; the number of ratings of a cell is
//     public).
//  2. M = sum over users of a_u z_u z_u^T over the user's d_u distinct
//     items, a_u = 1/sqrt(4 (d_u - 1) + 1) (public: the positions are).
//     Sensitivity: one rating's value moves one z_ui by at most 2c (its
//     mean over the user's n_ui ratings of item i by at most 2c/n_ui) and
//     nothing else, so row and column i of M move by a_u Dz z_uj (j != i)
//     and the diagonal entry by a_u (z'^2 - z^2), |z'^2 - z^2| <= c^2;
//     over the upper triangle (the release) the l2 change is at most
//     a_u sqrt(4c^2 c^2 (d_u - 1) + c^4) = c^2: l2 sensitivity c^2,
//     whatever the user's history (the weight a_u is what makes it so;
//     the bound is slightly loose: with Dz = z' - z and s = z' + z,
//     |Dz| + |s| <= 2c, the change is a_u |Dz| sqrt(sum_j z_uj^2 + s^2),
//     at most a_u 2c^2 sqrt(d_u - 1) for d_u >= 2).
//     Gaussian mechanism at (epsilon_M, delta), epsilon_M = (1 -
//     ALSCovBiasFraction) epsilon.
//  3. C_ij = W_ij M~_ij / (W_ij^2 + sigma^2/tau^2) with W_ij = sum over
//     users who rated both of a_u (public), 0 where no user rated both:
//     the pairwise covariance of the residuals, each pair from its own
//     co-raters, shrunk towards 0 where the noise outweighs them (the
//     posterior mean under a N(0, tau^2) prior, tau = ALSCovPrior s^2;
//     post-processing).
//  4. The item rows' first K columns are v_i = (sqrt(l_1) e_1i, ...,
//     sqrt(l_K) e_Ki), e_k the eigenvectors of C with the K largest
//     eigenvalues l_k above the parallel-analysis edge (covEdge: the
//     largest eigenvalue C would have, on the same positions and with
//     the release's noise, if the residuals were independent N(0, v)
//     clipped to [-c, c], v the mean of C's diagonal; post-processing) (K = min(R - ALSFreeColumns,
//     ALSPositionsMaxRank) from rank ALSPositionsMaxRank up, then the
//     free columns, the rest zero; K = R below; columns beyond C's
//     positive eigenvalues are zero): the
//     loadings of a K-factor model of the residuals in which a user's
//     factors have unit variance. Each user folds in from them and their
//     own ratings (billboard model) with a ridge of ALSCovFoldRow s^2 on
//     the row and bias (s = (r_max - r_min)/4 the public spread: a unit
//     prior variance on the factors against a residual variance of about
//     s^2).
//
// The stage runs when the log is dense enough for step 3 (the density
// gate, public: a mean of at least ALSCovGate users a pair of items), has
// at most ALSCovMaxItems items and ALSCovMaxPairs co-rated pairs in all
// (time bounds), and the noise leaves an entry of the mean co-rating
// weight enough of itself (the noise gate, public: ALSCovNoiseGate).
// Budget: ALSCovBiasFraction of epsilon to the bias release (pure), the
// rest to M (Gaussian at (epsilon_M, delta)); basic composition.

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/mat"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/perturb"
)

// Public constants of the covariance stage.
const (
	// ALSCovGate is the covariance gate: the mean number of users who
	// rated a pair of the log's items (sum over users of d_u (d_u - 1)/2
	// over the number of pairs) must be at least this.
	ALSCovGate = 150.0
	// ALSCovMaxItems caps the items the stage takes (its matrices are
	// items x items and it solves two eigenproblems, C's and the
	// parallel-analysis null's: a few seconds at 1000 items).
	ALSCovMaxItems = 1000
	// ALSCovMaxPairs caps the sum over users of d_u (d_u + 1)/2, the
	// additions that build M and the null's M (about 2 s each at the
	// cap).
	ALSCovMaxPairs = 1e9
	// ALSCovBiasFraction is the share of epsilon the bias release takes.
	ALSCovBiasFraction = 0.2
	// ALSCovFoldRow is the fold-in's ridge on a user's row and bias, in
	// units of s^2, s = (r_max - r_min)/4.
	ALSCovFoldRow = 0.8
	// ALSCovPrior is tau, the prior standard deviation of a covariance
	// entry, in units of s^2.
	ALSCovPrior = 0.1
	// ALSCovNoiseGate is the noise gate: the estimate of a covariance
	// entry with the mean co-rating weight must keep at least this share
	// of it (covShrink).
	ALSCovNoiseGate = 0.12
)

const streamALSCov = 20

// alsCovWhat names the covariance release in the report.
const alsCovWhat = "M = sum over users of a_u z_u z_u^T, upper triangle (private ALS, covariance stage; z_u the user's clipped residuals, averaged over repeated ratings of an item, a_u = 1/sqrt(4 (d_u - 1) + 1))"

// covPlan is the covariance stage's public plan.
type covPlan struct {
	// items maps the log's item index to its row in the stage's
	// matrices (-1: no rating); m is their number.
	items []int
	m     int
	// pairs is the mean number of users who rated a pair of the items,
	// wbar the mean co-rating weight W_ij over the pairs, adds the sum
	// over users of d_u (d_u + 1)/2.
	pairs, wbar, adds float64
}

// planCovariance evaluates the covariance gate on train's positions
// (public), with by listing each user's ratings (alsUsers).
func planCovariance(train *data.Store, by [][]int) *covPlan {
	cp := &covPlan{items: make([]int, train.Dims[1])}
	for i := range cp.items {
		cp.items[i] = -1
	}
	for _, i := range train.Idx[1] {
		if cp.items[i] < 0 {
			cp.items[i] = 0
		}
	}
	for i, x := range cp.items {
		if x == 0 {
			cp.items[i] = cp.m
			cp.m++
		}
	}
	if cp.m < 2 {
		return cp
	}
	seen := make([]int, train.Dims[1])
	var tot, wtot float64
	for u, es := range by {
		d := 0
		for _, e := range es {
			if i := train.Idx[1][e]; seen[i] != u+1 {
				seen[i] = u + 1
				d++
			}
		}
		pairs := float64(d) * float64(d-1) / 2
		tot += pairs
		cp.adds += pairs + float64(d)
		if d > 0 {
			wtot += pairs / math.Sqrt(4*float64(d-1)+1)
		}
	}
	np := float64(cp.m) * float64(cp.m-1) / 2
	cp.pairs, cp.wbar = tot/np, wtot/np
	return cp
}

// pass reports whether the covariance gate passes (gate: ALSCovGate, or
// p's measurement override).
func (cp *covPlan) pass(gate float64) bool {
	return cp.m >= 2 && cp.m <= ALSCovMaxItems && cp.adds <= ALSCovMaxPairs && cp.pairs >= gate
}

// covShrink is the factor by which the estimate C_ij = W_ij M~_ij / (W_ij^2
// + sigma^2/tau^2) shrinks an entry of mean weight wbar: wbar^2 / (wbar^2
// + sigma^2/tau^2).
func covShrink(wbar, sigma, tau float64) float64 {
	r := sigma / tau
	return wbar * wbar / (wbar*wbar + r*r)
}

// covPrior is tau, the prior standard deviation of a covariance entry
// (ALSCovPrior s^2, or p's measurement override).
func covPrior(o *PrivateOptions, p alsPrivateParams) float64 {
	s := o.rulesRange() / biasSpreadDivisor
	tau := ALSCovPrior
	if p.covTau > 0 {
		tau = p.covTau
	}
	return tau * s * s
}

// covBiasFraction is ALSCovBiasFraction, or p's measurement override.
func covBiasFraction(p alsPrivateParams) float64 {
	if p.covBias > 0 {
		return p.covBias
	}
	return ALSCovBiasFraction
}

// covAdmit reports whether the covariance stage runs on cp at o's
// epsilon: the density gate (ALSCovGate users a pair) and the noise gate
// (covShrink at least ALSCovNoiseGate at the release's sigma), with a
// note saying why not (public: counts, positions, the plan).
func covAdmit(o *PrivateOptions, p alsPrivateParams, cp *covPlan) (bool, string) {
	gate := covGate(p)
	if !cp.pass(gate) {
		switch {
		case cp.m < 2:
			return false, fmt.Sprintf("covariance stage: not run (%d item(s) with ratings; it needs 2)", cp.m)
		case cp.m > ALSCovMaxItems:
			return false, fmt.Sprintf("covariance stage: not run (%d items > %d, ALSCovMaxItems)", cp.m, ALSCovMaxItems)
		case cp.adds > ALSCovMaxPairs:
			return false, fmt.Sprintf("covariance stage: not run (%.4g co-rated pairs over the users > %g, ALSCovMaxPairs)", cp.adds, float64(ALSCovMaxPairs))
		}
		return false, fmt.Sprintf("covariance stage: not run (density gate: %.1f users a pair of items < %g, ALSCovGate)", cp.pairs, gate)
	}
	g, _, err := covMechanism(o, alsPositionsClip(o), (1-covBiasFraction(p))*o.Epsilon)
	if err != nil {
		return false, fmt.Sprintf("covariance stage: not run (its Gaussian cannot be calibrated: %v)", err)
	}
	ng := covNoiseGate(p)
	if f := covShrink(cp.wbar, g.Sigma(), covPrior(o, p)); f < ng {
		return false, fmt.Sprintf("covariance stage: not run (noise gate: an entry of the mean co-rating weight %.4g keeps %.3g of itself at the release's sigma %.4g, < %g, ALSCovNoiseGate)", cp.wbar, f, g.Sigma(), ng)
	}
	return true, ""
}

// covFoldRow is ALSCovFoldRow, or p's measurement override.
func covFoldRow(p alsPrivateParams) float64 {
	if p.covFold > 0 {
		return p.covFold
	}
	return ALSCovFoldRow
}

// covGate and covNoiseGate are ALSCovGate and ALSCovNoiseGate, or p's
// measurement overrides.
func covGate(p alsPrivateParams) float64 {
	if p.covGate > 0 {
		return p.covGate
	}
	return ALSCovGate
}

func covNoiseGate(p alsPrivateParams) float64 {
	if p.covNoiseGate > 0 {
		return p.covNoiseGate
	}
	return ALSCovNoiseGate
}

// covMechanism returns the covariance release's mechanism at epsilon eps:
// Gaussian of l2 sensitivity c^2 at (eps, o.Delta), calibrated
// analytically.
func covMechanism(o *PrivateOptions, c, eps float64) (*perturb.Gaussian, perturb.Release, error) {
	g, err := perturb.NewGaussian(c*c, eps, o.Delta, perturb.Analytic)
	if err != nil {
		return nil, perturb.Release{}, err
	}
	rel := g.Release(alsCovWhat)
	rel.Derivation = fmt.Sprintf("positions public, so the weights a_u and the users' item sets are the same on neighbours; one rating's value moves one residual z_ui by at most 2c (|z| <= c), which moves M_ij by a_u Dz z_uj for the user's other items j and M_ii by at most a_u c^2: l2 <= a_u sqrt(4 c^4 (d_u - 1) + c^4) = c^2 = %g (completion/private_als_cov.go)", c*c)
	return g, rel, nil
}

// covMoments returns M and W, the upper triangles (packed row by row:
// triIndex) over the plan's items of sum_u a_u z_u z_u^T and of
// sum_u a_u 1_u 1_u^T, from the residuals z of train's ratings, a_u =
// weight(d_u) for a user with d_u distinct items (covWeightEntry at the
// entry unit, covWeightUser at the user unit).
func covMoments(train *data.Store, by [][]int, cp *covPlan, z []float64, weight func(d int) float64) (M, W []float64) {
	m := cp.m
	M = make([]float64, m*(m+1)/2)
	W = make([]float64, len(M))
	type cell struct {
		row  int
		sum  float64
		nrat int
	}
	var cells []cell
	at := make([]int, m) // 1 + the row's cell for the current user, 0: none
	for _, es := range by {
		for _, c := range cells {
			at[c.row] = 0
		}
		cells = cells[:0]
		for _, e := range es {
			row := cp.items[train.Idx[1][e]]
			if at[row] == 0 {
				cells = append(cells, cell{row: row})
				at[row] = len(cells)
			}
			cells[at[row]-1].sum += z[e]
			cells[at[row]-1].nrat++
		}
		d := len(cells)
		if d == 0 {
			continue
		}
		slices.SortFunc(cells, func(a, b cell) int { return a.row - b.row })
		a := weight(d)
		for x := range cells {
			zx := cells[x].sum / float64(cells[x].nrat)
			base := triIndex(m, cells[x].row, 0)
			for y := x; y < d; y++ {
				zy := cells[y].sum / float64(cells[y].nrat)
				k := base + cells[y].row
				M[k] += a * zx * zy
				W[k] += a
			}
		}
	}
	return M, W
}

// covWeightEntry is the entry unit's weight a_u = 1/sqrt(4 (d_u - 1) + 1)
// of a user with d_u distinct items (the release's l2 sensitivity is then
// c^2 under a change of one rating).
func covWeightEntry(d int) float64 { return 1 / math.Sqrt(4*float64(d-1)+1) }

// triIndex is the index of entry (a, b), a <= b, of an m x m upper
// triangle packed row by row.
func triIndex(m, a, b int) int {
	return a*m - a*(a-1)/2 + b - a
}

// covEigen returns the eigenvalues (ascending) and eigenvectors of C,
// C_ij = W_ij M_ij / (W_ij^2 + ridge) (0 where W_ij is 0).
func covEigen(M, W []float64, m int, ridge float64) ([]float64, *mat.Dense, error) {
	var es mat.EigenSym
	if !es.Factorize(covEstimate(M, W, m, ridge), true) {
		return nil, nil, errors.New("completion: private ALS: the covariance's eigendecomposition failed")
	}
	var vecs mat.Dense
	es.VectorsTo(&vecs)
	return es.Values(nil), &vecs, nil
}

// covLoadings returns the items x K loadings (row-major, the plan's item
// order) of the K largest eigenvalues above edge (and 0) of the
// eigenpairs (vals ascending, vecs), each sqrt(l_k) times its
// eigenvector, and those eigenvalues.
func covLoadings(vals []float64, vecs *mat.Dense, K int, edge float64) ([]float64, []float64) {
	m := len(vals)
	var lk []float64
	L := make([]float64, m*K)
	for k := 0; k < K; k++ {
		j := m - 1 - k
		if j < 0 || !(vals[j] > 0) || !(vals[j] > edge) {
			break
		}
		lk = append(lk, vals[j])
		f := math.Sqrt(vals[j])
		for i := 0; i < m; i++ {
			L[i*K+k] = f * vecs.At(i, j)
		}
	}
	return L, lk
}

// covEstimate returns C, C_ij = W_ij M_ij / (W_ij^2 + ridge) (0 where
// W_ij is 0), from the packed upper triangles M and W.
func covEstimate(M, W []float64, m int, ridge float64) *mat.SymDense {
	C := mat.NewSymDense(m, nil)
	for a := 0; a < m; a++ {
		for b := a; b < m; b++ {
			k := triIndex(m, a, b)
			if W[k] > 0 {
				C.SetSym(a, b, W[k]*M[k]/(W[k]*W[k]+ridge))
			}
		}
	}
	return C
}

// covNullEdge returns the largest eigenvalue C would have if the
// residuals carried no covariance (parallel analysis): every rating's
// residual drawn N(0, v) and clipped to [-c, c], on train's positions,
// the release's Gaussian noise sigma added, estimated as C is. v is the
// mean diagonal entry of the released C (post-processing; covEdge); the
// draws are data-independent (a fixed stream, one draw). Eigenvalues of
// C below it are what the positions' sampling and the noise give without
// taste.
func covNullEdge(train *data.Store, by [][]int, cp *covPlan, v, c, sigma, ridge float64) float64 {
	return covNullEdgeWith(train, by, cp, v, c, sigma, 0, ridge, covWeightEntry, rand.New(rand.NewPCG(streamALSCov, 3)))
}

// covNullEdgeWith is covNullEdge with the weights a_u = weight(d_u), the
// draws from rng, and, when sigmaW > 0, noise of that sd on W too (the
// user unit releases W), W then clamped at 0 as the release's is.
func covNullEdgeWith(train *data.Store, by [][]int, cp *covPlan, v, c, sigma, sigmaW, ridge float64, weight func(int) float64, rng *rand.Rand) float64 {
	z := make([]float64, len(train.Val))
	sd := math.Sqrt(math.Max(v, 0))
	for e := range z {
		z[e] = math.Max(-c, math.Min(c, sd*rng.NormFloat64()))
	}
	M, W := covMoments(train, by, cp, z, weight)
	for k := range M {
		M[k] += sigma * rng.NormFloat64()
	}
	if sigmaW > 0 {
		for k := range W {
			W[k] = math.Max(0, W[k]+sigmaW*rng.NormFloat64())
		}
	}
	var es mat.EigenSym
	if !es.Factorize(covEstimate(M, W, cp.m, ridge), false) {
		return 0
	}
	vals := es.Values(nil)
	return vals[len(vals)-1]
}

// covEdge is the parallel-analysis edge for C: covNullEdge at v, the
// mean of C's diagonal. The null's residuals are N(0, v) clipped to
// [-c, c], so their second moment is below v (by 7-28% at the clips of
// the validation logs) and the edge below that of independent residuals
// with C's diagonal. Measured against it, on the same validation parts
// (2 noise seeds, epsilon 1 / 3 / 10 / 100): the null matched to v's
// second moment, with v refined twice for the excess of the kept
// eigenvalues over the edge (the taste they explain is not noise), was
// worse on five of the six joke-shaped and taste-less logs (by up to
// 0.02: jokeexp3 at epsilon 1, 4.0744 against 4.0610) and better only on
// Jester5k at epsilon 100 (4.0386 against 4.0438); matched without the
// refinement it cost Jester5k 0.02 at epsilon 3 (it cut real
// components).
func covEdge(train *data.Store, by [][]int, cp *covPlan, M, W []float64, c, sigma, ridge float64) float64 {
	return covNullEdge(train, by, cp, covMeanDiag(M, W, cp.m, ridge), c, sigma, ridge)
}

// covMeanDiag is the mean of C's diagonal, C_ii = W_ii M_ii / (W_ii^2 +
// ridge) (0 where W_ii is 0), over the m items: the null's residual
// variance v.
func covMeanDiag(M, W []float64, m int, ridge float64) float64 {
	v := 0.0
	for i := 0; i < m; i++ {
		if k := triIndex(m, i, i); W[k] > 0 {
			v += W[k] * M[k] / (W[k]*W[k] + ridge)
		}
	}
	return v / float64(m)
}

// trainALSCovariance is the entry unit's private ALS by the covariance
// stage (the covariance gate has passed): the bias release, then the
// release of M and the item rows from its eigenvectors.
func trainALSCovariance(train *data.Store, by [][]int, m *decomposition.Model, o *PrivateOptions, p alsPrivateParams, cp *covPlan) (*perturb.Report, error) {
	R := m.Ranks[0]
	fb := covBiasFraction(p)
	c := alsPositionsClip(o)
	g, rel, err := covMechanism(o, c, (1-fb)*o.Epsilon)
	if err != nil {
		return nil, fmt.Errorf("completion: private ALS (covariance release): %w", err)
	}
	wm, brep, acc, err := biasThenRelease(train, m.Dims[:2], o, fb, rel)
	if err != nil {
		return nil, err
	}
	z := append([]float64(nil), train.Val...)
	clippedResiduals(z, train, o, wm, c)
	M, W := covMoments(train, by, cp, z, covWeightEntry)
	if !p.noiseOff {
		g.AddTo(M, rand.New(o.source(streamALSCov)))
	}
	o.observe(alsCovWhat, M, nil)
	K := min(R, ALSPositionsMaxRank)
	free := R >= ALSPositionsMaxRank && !p.covNoFree
	if free {
		K = min(R-ALSFreeColumns, ALSPositionsMaxRank)
	}
	s := o.rulesRange() / biasSpreadDivisor
	tau := covPrior(o, p)
	ridge := g.Sigma() * g.Sigma() / (tau * tau)
	if p.noiseOff {
		ridge = 0
	}
	vals, vecs, err := covEigen(M, W, cp.m, ridge)
	if err != nil {
		return nil, err
	}
	edge := 0.0
	if !p.covNoCut {
		sig := g.Sigma()
		if p.noiseOff {
			sig = 0
		}
		edge = covEdge(train, by, cp, M, W, c, sig, ridge)
	}
	L, lk := covLoadings(vals, vecs, K, edge)
	m.Mean = wm.Mean
	copy(m.Bias[1], wm.Bias[1])
	clear(m.Factors[1])
	for i, row := range cp.items {
		if row < 0 {
			continue
		}
		for k := range lk {
			m.Factors[1][i*R+k] = L[row*K+k]
		}
	}
	nfree := 0
	if free {
		nfree = min(ALSFreeColumns, R-K)
		freeItemColumnsAt(m, o, brep.ItemCounts, K)
	}
	foldRow := covFoldRow(p)
	rep := entryALSReport(o, m, &acc.acc, acc.eps, acc.delta, acc.used, brep)
	rep.FoldRow = foldRow * s * s
	rep.Composition = fmt.Sprintf("bias release (epsilon %g) then the covariance release (epsilon %g), %s", fb*o.Epsilon, (1-fb)*o.Epsilon, acc.used)
	rep.Notes = append(rep.Notes,
		fmt.Sprintf("not released: user rows and user biases (zero in the model); each user solves them at prediction time from the released item side and their own ratings with a ridge of %.4g = %g s^2 on the row and bias (ALSCovFoldRow; billboard model)", rep.FoldRow, foldRow),
		fmt.Sprintf("covariance stage (entry unit; the positions are public): %.4g of epsilon to the bias release, the rest to M (ALSCovBiasFraction); density gate: %.1f users a pair of the %d items >= %g (ALSCovGate); noise gate: an entry of the mean co-rating weight %.4g keeps %.3g >= %g of itself (ALSCovNoiseGate); residuals clipped to [-c, c], c = %g; C_ij = W_ij M~_ij / (W_ij^2 + sigma^2/tau^2) with W the public co-rating weights, sigma = %.4g the noise's and tau = %g s^2 = %.4g the prior's standard deviation (ALSCovPrior); the item rows' first %d columns hold sqrt(l_k) e_k for C's %d largest eigenvalues l_k above the parallel-analysis edge %.4g (%s; any column past them zero; the edge is C's largest eigenvalue had the residuals no covariance: N(0, v) residuals clipped to [-c, c] on the same positions, v the mean of C's diagonal, with the release's noise, estimated as C is, one data-independent draw; post-processing), the next %d the free columns, the other %d zero", fb, cp.pairs, cp.m, covGate(p), cp.wbar, covShrink(cp.wbar, g.Sigma(), tau), covNoiseGate(p), c, g.Sigma(), tau/(s*s), tau, K, len(lk), edge, fmtEigen(lk), nfree, R-K-nfree))
	appendBiasReleaseNotes(rep, brep)
	return rep, nil
}

func fmtEigen(l []float64) string {
	s := ""
	for i, x := range l {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%.4g", x)
	}
	return s
}
