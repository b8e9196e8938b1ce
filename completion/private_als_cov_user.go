package completion

// PRIVATE ALS, USER UNIT: THE COVARIANCE STAGE.
//
// The entry unit's covariance stage (private_als_cov.go) with the user as
// the unit of privacy (add or remove a user with at most k ratings). The
// positions are private here, so the co-rating weights W are released
// with M, the rules' spread comes from a release of its own, every gate
// reads released values only, and the parallel-analysis null is drawn on
// synthetic positions built from released values:
//
//  1. The bias releases as for the item steps (ALSPrivateBiasFraction of
//     epsilon). The stage then spends the item steps' share instead of
//     them when its gates pass on the released values, so the choice is
//     post-processing, and its releases are planned to the steps' own
//     noise multiplier z = sigma/(Delta sqrt(T)) (planShare: T Gaussian
//     steps compose as one Gaussian of that multiplier), split by mu^2:
//     ALSCovUserSpreadShare to the spread, the rest to (M/c^2, W).
//  2. The spread: Q = sum over users of the mean over their d_u distinct
//     items of z0_ui^2, z0 the residuals from the released mean and item
//     biases clipped to [-c0, c0], c0 = (r_max - r_min)/2 (a repeated
//     cell at its mean residual). Removing a user moves Q by their term,
//     in [0, c0^2]: l2 sensitivity c0^2. With N~ the released number of
//     users, s^ = sqrt(max(0, Q~/N~ + ALSSpreadZ sd/N~)) and the stage's
//     rules take the width 4s, s = min(W/4, max(ALSSpreadMargin s^,
//     ALSSpreadFloor W/4)), as the entry unit's spread release does for
//     the ratings (private_als_spread.go). On a log declared on a range
//     wider than its ratings, the range's clip and ridges made the stage
//     lose to the item steps by 0.06 at epsilon 100.
//  3. z_ui = clip(clamp(r_ui) - mu~ - b~_i, -c, c) on the k-bounded log,
//     c = covUserClip (a quarter of the width up to epsilon 3, a third
//     from 30), averaged over a user's repeated ratings of an item.
//  4. M = sum_u a_u z_u z_u^T and W = sum_u a_u 1_u 1_u^T over the user's
//     d_u distinct items, a_u = sqrt(2/(d_u (d_u + 1))). Sensitivity:
//     removing u removes a_u z_u z_u^T, whose upper triangle has squared
//     norm a_u^2 ((sum_i z_ui^2)^2 + sum_i z_ui^4)/2 <= a_u^2 c^4 (d_u^2
//     + d_u)/2 = c^4, and a_u 1_u 1_u^T, whose upper triangle has squared
//     norm a_u^2 d_u (d_u + 1)/2 = 1; the other users' terms do not
//     depend on u. So (M/c^2, W) has l2 sensitivity sqrt(2) whatever d_u
//     is (reached by a user whose residuals all sit at the clip), and is
//     released as one Gaussian of noise sd sigma' (M's noise sd is then
//     sigma' c^2).
//  5. C_ij = W+_ij M~_ij / (W+_ij^2 + sigma_M^2/tau^2), W+ = max(W~, 0),
//     tau = ALSCovPrior s^2, and the item rows from C's leading
//     eigenvectors above the parallel-analysis edge and the free columns
//     as at the entry unit; users fold in with a ridge of ALSCovFoldRow
//     s^2, s the stage's (post-processing).
//
// The stage does not run after a private item selection
// (PrivateOptions.Scalars), whose released N~ and R~ cover the log before
// it. The gates, before any of the stage's releases, on released values (the
// numbers of users N~ and ratings R~ of the bounded log, the item counts
// n~_i) and public ones (I, k, epsilon, delta, the range): I at most
// ALSCovMaxItems; N~ k (k + 1)/2 at most ALSCovMaxPairs and N~ I at most
// ALSCovUserMaxNull (time); the density gate: the number of users a pair
// of items would have were the users' items independent, sum_{i<j} n~_i
// n~_j / N~ over the I (I - 1)/2 pairs (the counts scaled to sum to R~),
// at least ALSCovGate; the coverage gate: R~/(N~ I) at least
// ALSCovUserCoverage; the noise gate: with d = R~/N~, an entry of the
// mean co-rating weight N~ a_d d (d - 1)/2 over the pairs keeps at least
// ALSCovUserNoiseGate of itself (covShrink at sigma_M; c/s is fixed by the
// clip rule, so the gate does not depend on the spread not yet released).
//
// The edge: the null's positions are synthetic, round(N~) users of
// round(R~/N~) items each, drawn without replacement with probabilities
// proportional to n~_i from a fixed stream; on them the residuals are
// N(0, v) clipped to [-c, c] (v the mean of C's diagonal), M and W get
// the release's noise and C is estimated as above; its largest
// eigenvalue is the edge. Every input is released or public.

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/perturb"
)

const streamALSCovUser = 21

// alsCovUserWhat names the user unit's covariance release in the report.
const alsCovUserWhat = "(M/c^2, W): M = sum over users of a_u z_u z_u^T and W = sum over users of a_u 1_u 1_u^T, a_u = sqrt(2/(d_u (d_u + 1))), upper triangles over the catalogue's items (private ALS, covariance stage, user unit; z_u the user's clipped residuals on the k-bounded log, averaged over repeated ratings of an item, d_u their number of distinct items)"

// alsCovUserDeriv is the release's sensitivity derivation.
const alsCovUserDeriv = "add or remove a user: removing u removes a_u z_u z_u^T, whose upper triangle has squared norm a_u^2 ((sum z^2)^2 + sum z^4)/2 <= a_u^2 c^4 d_u (d_u + 1)/2 = c^4, and a_u 1_u 1_u^T, squared norm a_u^2 d_u (d_u + 1)/2 = 1, with a_u = sqrt(2/(d_u (d_u + 1))): l2 of (M/c^2, W) at most sqrt(2) whatever d_u is (completion/private_als_cov_user.go)"

// covUserNoiseGate is ALSCovUserNoiseGate, or p's measurement override.
func covUserNoiseGate(p alsPrivateParams) float64 {
	if p.covNoiseGate > 0 {
		return p.covNoiseGate
	}
	return ALSCovUserNoiseGate
}

// covUserClip is the user unit's residual clip c = BiasResidualClip
// (4s) f, 4s o's rules' width and f = 0.75 + 0.25 log10(epsilon/3)
// clamped to [0.75, 1]: a quarter of the width up to epsilon 3, a third
// from 30. (The entry unit's clip grows to 2 (r_max - r_min)/3
// at epsilon 100: at the user unit the larger noise of M made that cost
// 0.01-0.03 at epsilon 30 and 100 on the validation logs; package doc,
// and docs/privacy.md.)
func covUserClip(o *PrivateOptions) float64 {
	f := math.Max(0.75, math.Min(1, 0.75+0.25*math.Log10(o.Epsilon/3)))
	return BiasResidualClip * o.rulesRange() * f
}

// covWeightUser is the user unit's weight a_u = sqrt(2/(d_u (d_u + 1))),
// at which a user's a_u 1_u 1_u^T has norm exactly 1 over the upper
// triangle for every d_u (and a_u z_u z_u^T at most c^2). Validation
// parts (k = 100, 2 noise seeds), epsilon 3 / 10, against a_u = 1/d_u
// (norm sqrt((d_u + 1)/(2 d_u)), below 1 from d_u = 2): Jester5k 4.153 -
// 4.172 / 4.075 - 4.083 against 4.193 - 4.201 / 4.102 - 4.103, the
// joke-shaped synth 1.570 - 1.572 / 1.534 - 1.537 against 1.585 - 1.595 /
// 1.543; no log lost more than 0.008 (docs/privacy.md).
func covWeightUser(d int) float64 { return math.Sqrt(2 / (float64(d) * float64(d+1))) }

// covUser is the user unit's covariance stage, once its gates have
// passed and its release has run.
type covUser struct {
	K, kept int       // the covariance columns' number, and of them those above the edge
	L       []float64 // I x K loadings (row-major)
	lk      []float64 // the kept eigenvalues
	sigma   float64   // noise sd of each entry of M/c^2 and of W
	c, tau  float64
	edge    float64
	free    bool    // the free columns follow the K covariance columns
	dens    float64 // the density gate's value
	cover   float64 // the coverage gate's value, R~/(N~ I)
	wbar    float64 // the noise gate's mean co-rating weight
	shrink  float64 // covShrink at wbar
	acc     *perturb.Accountant
	spread  *covSpread
	s       float64         // the stage's spread s (its rules' width over 4)
	foldRow float64         // the fold-in's ridge, ALSCovFoldRow s^2
	rules   *PrivateOptions // the options at the stage's width (the free columns' scale)
}

// ALSCovUserSpreadShare is the share of the stage's mu^2 (Gaussian
// composition) that the user unit's spread release takes; the release of
// (M/c^2, W) takes the rest.
const ALSCovUserSpreadShare = 0.01

// ALSCovUserNoiseGate is the user unit's noise gate (the entry unit's is
// ALSCovNoiseGate): an entry of the mean co-rating weight must keep at
// least this share of itself (covShrink). Validation parts (k = 100, 2
// noise seeds): on the 5,000 x 100 joke logs the share is 0.17 at
// epsilon 1, where the stage lost to the item steps' fallback on
// Jester5k (0.03 - 0.04) and jokeexp (0.025 - 0.028) and won on jokeexp3
// (0.15 - 0.16), and 0.5 or more from epsilon 2, where it won on every
// joke log.
const ALSCovUserNoiseGate = 0.25

// ALSCovUserCoverage is the user unit's coverage gate: the released
// ratings a user over the items, R~/(N~ I), must be at least this. The
// covariance estimates each pair from its co-raters, whose number falls
// with the square of the coverage, where the item steps' statistics fall
// with the coverage. On MovieLens-shaped synthetic logs (data.Synth, 4,000
// users, 50 ratings each on a 0.5-5 scale, k = 100, one noise seed) the
// stage scored 0.5727 / 0.5939 / 0.6283 / 0.6671 at epsilon 10 against
// the item steps' 0.5752 / 0.5959 / 0.6154 / 0.6317 on 80 / 120 / 160 /
// 200 items (coverage 0.63 / 0.42 / 0.31 / 0.25); the joke logs'
// coverage is 0.5 - 0.73.
const ALSCovUserCoverage = 0.4

// ALSCovUserMaxNull caps N~ I, the released number of users times the
// items: the parallel-analysis null draws N~ synthetic users, each from
// the I items' weights (covNullPositions; about a second at the cap).
const ALSCovUserMaxNull = 5e7

const streamALSCovUserSpread = 22

// alsCovUserSpreadWhat names the user unit's spread release.
const alsCovUserSpreadWhat = "Q = sum over users of the mean over their distinct items of z_ui^2, z the residuals from the released mean and item biases clipped to [-c0, c0] (private ALS, covariance stage, user unit: the residual spread its rules use)"

// covSpread is the user unit's spread release.
type covSpread struct {
	c0    float64 // the release's clip
	sd    float64 // the released residual standard deviation's upper bound s^
	width float64 // the stage's rules' width 4s
	rel   perturb.Release
}

// covUserReleases are the stage's two releases at the share's noise
// multiplier z (the item steps' own, sigma/(Delta sqrt(T)), or larger):
// the spread release, Gaussian of l2 sensitivity c0^2 at multiplier z /
// sqrt(ALSCovUserSpreadShare), and (M/c^2, W), of l2 sensitivity sqrt(2)
// at z / sqrt(1 - ALSCovUserSpreadShare), so that their mu^2 add up to
// the share's. They are built once: the accountant and the noise both
// read them.
func covUserReleases(c0, z float64) (spread, cov perturb.Release) {
	zs := z / math.Sqrt(ALSCovUserSpreadShare)
	spread = perturb.Release{What: alsCovUserSpreadWhat, Mechanism: perturb.MechGaussian, SensitivityNorm: "l2", Sensitivity: c0 * c0, Derivation: fmt.Sprintf("add or remove a user: Q moves by that user's mean of z^2 over their items, in [0, c0^2], c0 = %g (half the rating range; completion/private_als_cov_user.go)", c0), Scale: zs * c0 * c0, Calibration: "sigma"}
	zc := z / math.Sqrt(1-ALSCovUserSpreadShare)
	cov = perturb.Release{What: alsCovUserWhat, Mechanism: perturb.MechGaussian, SensitivityNorm: "l2", Sensitivity: math.Sqrt2, Derivation: alsCovUserDeriv, Scale: zc * math.Sqrt2, Calibration: "sigma"}
	return spread, cov
}

// releaseCovUserSpread makes the spread release rel (covUserReleases):
// Q (alsCovUserSpreadWhat) from train's users (by) at the residuals
// about m's released mean and item biases clipped to rel's c0, with
// Gaussian noise of sd rel.Scale (none when noiseOff: measurement), and
// returns the stage's width: with N~ the released number of users, v+ =
// max(0, Q~/N~ + ALSSpreadZ rel.Scale/N~), s^ = sqrt(v+), s = min(W/4,
// max(ALSSpreadMargin s^, ALSSpreadFloor W/4)) as at the entry unit's
// spread release (there of the ratings, here of the residuals), width
// 4s.
func releaseCovUserSpread(train *data.Store, by [][]int, m *decomposition.Model, o *PrivateOptions, bias *biasFit, rel perturb.Release, noiseOff bool) (*covSpread, error) {
	c0 := math.Sqrt(rel.Sensitivity)
	z := append([]float64(nil), train.Val...)
	clippedResiduals(z, train, o, m, c0)
	t := []float64{covUserSquares(train, by, z)}
	g, err := perturb.NewGaussianSigma(rel.Sensitivity, rel.Scale)
	if err != nil {
		return nil, fmt.Errorf("completion: private ALS (spread release): %w", err)
	}
	if !noiseOff {
		g.AddTo(t, rand.New(o.source(streamALSCovUserSpread)))
	}
	o.observe(alsCovUserSpreadWhat, t, nil)
	N := math.Max(bias.noisyUsers, 1)
	sd := math.Sqrt(math.Max(0, t[0]/N+ALSSpreadZ*rel.Scale/N))
	W := o.ratingRange()
	s := math.Min(W/biasSpreadDivisor, math.Max(ALSSpreadMargin*sd, ALSSpreadFloor*W/biasSpreadDivisor))
	return &covSpread{c0: c0, sd: sd, width: biasSpreadDivisor * s, rel: rel}, nil
}

// covUserSquares is Q before its noise: the sum over users of the mean
// over their distinct items of the squared residual z (a cell rated
// more than once: the square of its mean residual, as in M).
func covUserSquares(train *data.Store, by [][]int, z []float64) float64 {
	sum := make([]float64, train.Dims[1])
	n := make([]int, train.Dims[1])
	var items []int32
	var Q float64
	for _, es := range by {
		items = items[:0]
		for _, e := range es {
			i := train.Idx[1][e]
			if n[i] == 0 {
				items = append(items, i)
			}
			sum[i] += z[e]
			n[i]++
		}
		if len(items) == 0 {
			continue
		}
		var q float64
		for _, i := range items {
			x := sum[i] / float64(n[i])
			q += x * x
			sum[i], n[i] = 0, 0
		}
		Q += q / float64(len(items))
	}
	return Q
}

// covUserGates evaluates the user unit's gates before any release of
// the stage, on released values (the numbers of users N~ and ratings R~
// of the bounded log, the item counts n~_i) and public ones (I, k): it
// returns the density gate's value, the noise gate's mean co-rating
// weight and, when a gate fails, why. With d = R~/N~ items a user, a
// user's off-diagonal weight is a_d d (d - 1)/2, so the mean weight of a
// pair is wbar = N~ a_d d (d - 1)/2 over the I (I - 1)/2 pairs (exact
// when every user rates d items); the density is sum_{i<j} n_i n_j / N~
// over the pairs, the counts scaled to sum to R~ (they are weighted over
// the log before the bound when the caller gives it, PrivateOptions.Unbounded).
func covUserGates(o *PrivateOptions, p alsPrivateParams, bias *biasFit) (dens, wbar, cover float64, why string) {
	I := len(bias.sums)
	N := math.Max(bias.noisyUsers, 1)
	Rt := math.Max(bias.noisyRatings, 0)
	var S, S2 float64
	for _, n := range bias.releasedCounts() {
		S += n
		S2 += n * n
	}
	np := float64(I) * float64(I-1) / 2
	k := float64(o.MaxRatingsPerUser)
	switch {
	case I < 2:
		return 0, 0, 0, fmt.Sprintf("covariance stage: not run (%d item(s); it needs 2)", I)
	case I > ALSCovMaxItems:
		return 0, 0, 0, fmt.Sprintf("covariance stage: not run (%d items > %d, ALSCovMaxItems)", I, ALSCovMaxItems)
	case N*k*(k+1)/2 > ALSCovMaxPairs:
		return 0, 0, 0, fmt.Sprintf("covariance stage: not run (the released number of users %.4g times k (k + 1)/2 = %.4g > %g, ALSCovMaxPairs)", N, N*k*(k+1)/2, float64(ALSCovMaxPairs))
	case o.Scalars != nil:
		// The released numbers of users and ratings are then those of the
		// log before the private item selection, not of the selected items
		// the counts and the stage cover.
		return 0, 0, 0, "covariance stage: not run (the items were selected privately: the released numbers of users and ratings cover the log before the selection, PrivateOptions.Scalars, and the gates need the selected items')"
	case N*float64(I) > ALSCovUserMaxNull:
		return 0, 0, 0, fmt.Sprintf("covariance stage: not run (the released number of users %.4g times the %d items = %.4g > %g, ALSCovUserMaxNull)", N, I, N*float64(I), float64(ALSCovUserMaxNull))
	}
	if S > 0 {
		f := Rt / S
		dens = (S*S - S2) * f * f / 2 / N / np
	}
	if d := Rt / N; d > 1 {
		wbar = N * math.Sqrt(2/(d*(d+1))) * d * (d - 1) / 2 / np
	}
	if g := covGate(p); dens < g {
		return dens, wbar, 0, fmt.Sprintf("covariance stage: not run (density gate: %.1f users a pair of items, from the released counts and numbers of users and ratings as if the users' items were independent, < %g, ALSCovGate)", dens, g)
	}
	if cover = Rt / N / float64(I); cover < ALSCovUserCoverage {
		return dens, wbar, cover, fmt.Sprintf("covariance stage: not run (coverage gate: the released ratings a user over the items, %.3g, < %g, ALSCovUserCoverage)", cover, ALSCovUserCoverage)
	}
	return dens, wbar, cover, ""
}

// alsUserCovariance runs the user unit's covariance stage when its gates
// pass (the package doc above), spending the item steps' share of the
// budget (their sigma and sensitivity: sigma, sens; p.steps of them): it
// returns nil and a note saying why when they do not, before any release.
func alsUserCovariance(train *data.Store, m *decomposition.Model, o *PrivateOptions, p alsPrivateParams, bias *biasFit, sens, sigma float64) (*covUser, string, error) {
	dens, wbar, cover, why := covUserGates(o, p, bias)
	if why != "" {
		return nil, why, nil
	}
	c0 := o.ratingRange() / 2 // the spread release's clip
	accWith := func(z float64) *perturb.Accountant {
		var acc perturb.Accountant
		for _, r := range bias.acc.Releases() {
			_ = acc.Add(r, r.Count)
		}
		sr, cr := covUserReleases(c0, z)
		_ = acc.Add(sr, 1)
		_ = acc.Add(cr, 1)
		return &acc
	}
	z, err := planShare(o, sigma/(sens*math.Sqrt(float64(p.steps))), accWith)
	if err != nil {
		return nil, "", err
	}
	srel, crel := covUserReleases(c0, z)
	sd := crel.Scale // of M/c^2 and of W
	// The noise gate, before any release: covShrink depends on sigma_M/tau
	// = sd c^2/(ALSCovPrior s^2), and c/s is the clip rule's ratio
	// whatever width the spread release gives the rules, so the range's
	// width gives the same value as the stage's (covUser.shrink).
	cr := covUserClip(o)
	shrink := covShrink(wbar, sd*cr*cr, covPrior(o, p))
	if ng := covUserNoiseGate(p); shrink < ng {
		return nil, fmt.Sprintf("covariance stage: not run (noise gate: an entry of the mean co-rating weight %.4g, from the released counts and numbers of users and ratings, keeps %.3g of itself at the release's sigma %.4g, < %g, ALSCovUserNoiseGate)", wbar, shrink, sd*cr*cr, ng), nil
	}
	by := alsUsers(train)
	spread, err := releaseCovUserSpread(train, by, m, o, bias, srel, p.noiseOff)
	if err != nil {
		return nil, "", err
	}
	oc := *o // the stage's rules, at the released spread's width
	oc.rulesWidth = spread.width
	c := covUserClip(&oc)
	tau := covPrior(&oc, p)
	sigmaM := sd * c * c
	I := len(bias.sums)
	cp := &covPlan{items: make([]int, I), m: I}
	for i := range cp.items {
		cp.items[i] = i
	}
	zs := append([]float64(nil), train.Val...)
	clippedResiduals(zs, train, o, m, c)
	M, W := covMoments(train, by, cp, zs, covWeightUser)
	g, err := perturb.NewGaussianSigma(crel.Sensitivity, crel.Scale)
	if err != nil {
		return nil, "", fmt.Errorf("completion: private ALS (covariance release): %w", err)
	}
	vec := make([]float64, 0, 2*len(M))
	for _, x := range M {
		vec = append(vec, x/(c*c))
	}
	vec = append(vec, W...)
	if !p.noiseOff {
		g.AddTo(vec, rand.New(o.source(streamALSCovUser)))
	}
	o.observe(alsCovUserWhat, vec, nil)
	for k := range M {
		M[k] = vec[k] * c * c
		W[k] = math.Max(0, vec[len(M)+k])
	}
	ridge, sigW := sigmaM*sigmaM/(tau*tau), sd
	if p.noiseOff {
		ridge, sigmaM, sigW = 0, 0, 0
	}
	vals, vecs, err := covEigen(M, W, I, ridge)
	if err != nil {
		return nil, "", err
	}
	R := m.Ranks[0]
	s := oc.rulesRange() / biasSpreadDivisor
	cu := &covUser{K: min(R, ALSPositionsMaxRank), sigma: sd, c: c, tau: tau, dens: dens, cover: cover, wbar: wbar, shrink: shrink, acc: accWith(z), spread: spread, s: s, foldRow: covFoldRow(p) * s * s, rules: &oc}
	if cu.free = R >= ALSPositionsMaxRank && !p.covNoFree; cu.free {
		cu.K = min(R-ALSFreeColumns, ALSPositionsMaxRank)
	}
	if !p.covNoCut {
		syn := covNullPositions(bias, I, o.MaxRatingsPerUser)
		cu.edge = covNullEdgeWith(syn, alsUsers(syn), cp, covMeanDiag(M, W, I, ridge), c, sigmaM, sigW, ridge, covWeightUser, rand.New(rand.NewPCG(streamALSCovUser, 3)))
		if p.covEdgeMul > 0 {
			cu.edge *= p.covEdgeMul
		}
	}
	cu.L, cu.lk = covLoadings(vals, vecs, cu.K, cu.edge)
	cu.kept = len(cu.lk)
	return cu, "", nil
}

// covNullPositions returns the user unit's null positions: round(N~)
// users of round(R~/N~) items each (at least 1, at most I and k), drawn
// without replacement with probabilities proportional to the released
// counts n~_i (uniform when every one is 0) from a fixed stream. Every
// input is released or public. Cost: N~ I log I (ALSCovUserMaxNull).
func covNullPositions(bias *biasFit, I, k int) *data.Store {
	w := bias.releasedCounts()
	if !slices.ContainsFunc(w, func(x float64) bool { return x > 0 }) {
		for i := range w {
			w[i] = 1
		}
	}
	N := max(1, int(math.Round(bias.noisyUsers)))
	d := int(math.Round(math.Max(bias.noisyRatings, 0) / float64(N)))
	d = max(1, min(d, I, max(k, 1)))
	rng := rand.New(rand.NewPCG(streamALSCovUser, 4))
	st := &data.Store{Dims: []int{N, I}, Idx: [][]int32{make([]int32, 0, N*d), make([]int32, 0, N*d)}}
	// Efraimidis-Spirakis: the d items of largest log(u)/w_i are a
	// weighted draw without replacement.
	keys := make([]float64, I)
	idx := make([]int, I)
	for u := 0; u < N; u++ {
		for i := range keys {
			idx[i] = i
			keys[i] = math.Inf(-1)
			if w[i] > 0 {
				keys[i] = math.Log(rng.Float64()) / w[i]
			}
		}
		slices.SortFunc(idx, func(a, b int) int {
			if c := cmp.Compare(keys[b], keys[a]); c != 0 {
				return c
			}
			return a - b
		})
		for _, i := range idx[:d] {
			st.Idx[0] = append(st.Idx[0], int32(u))
			st.Idx[1] = append(st.Idx[1], int32(i))
		}
	}
	st.Val = make([]float64, len(st.Idx[0]))
	return st
}

// apply writes the stage's item rows into m: the kept covariance columns
// first, then the free columns (freeItemColumnsAt at the stage's rules,
// from the released counts), the rest zero.
func (cu *covUser) apply(m *decomposition.Model, counts []float64) {
	R := m.Ranks[0]
	clear(m.Factors[1])
	for i := 0; i < m.Dims[1]; i++ {
		for k := 0; k < cu.kept; k++ {
			m.Factors[1][i*R+k] = cu.L[i*cu.K+k]
		}
	}
	if cu.free {
		freeItemColumnsAt(m, cu.rules, counts, cu.K)
	}
}

// note states the stage in a report.
func (cu *covUser) note(o *PrivateOptions, p alsPrivateParams, R int) string {
	nfree := 0
	if cu.free {
		nfree = min(ALSFreeColumns, R-cu.K)
	}
	W := o.ratingRange()
	how := "the range's, unchanged (the released spread fills it)"
	if cu.spread.width < W {
		how = fmt.Sprintf("%.4g in place of the range %g (the residuals fill less of it than its width implies)", cu.spread.width, W)
	}
	return fmt.Sprintf("covariance stage (user unit; spends the item steps' share instead of them, %g of its mu^2 on the residual spread, the rest on (M/c^2, W)): density gate %.1f users a pair of items (from the released counts and numbers of users and ratings) >= %g (ALSCovGate); coverage gate: %.3g ratings a user over the items >= %g (ALSCovUserCoverage); noise gate: an entry of the mean co-rating weight %.4g keeps %.3g >= %g of itself (ALSCovUserNoiseGate); residual spread: the released mean square of a user's residuals (clipped to %g; its upper bound: plus %g standard deviations of its noise) gives s^ = %.4g, and the stage's rules take the width 4s, s = min((r_max - r_min)/4, max(%g s^, %g (r_max - r_min)/4)): %s; residuals clipped to [-c, c], c = %.4g; (M/c^2, W) released with Gaussian noise sd %.4g at l2 sensitivity sqrt(2); C_ij = W+_ij M~_ij / (W+_ij^2 + sigma_M^2/tau^2), W+ = max(W~, 0), sigma_M = %.4g, tau = %.4g s^2 = %.4g (ALSCovPrior); the item rows' first %d columns hold sqrt(l_k) e_k for C's %d largest eigenvalues above the parallel-analysis edge %.4g (%s; the edge is C's largest eigenvalue on synthetic positions drawn from the released counts and users, with N(0, v) residuals clipped to [-c, c], v the mean of C's diagonal, and the release's noise, one data-independent draw; post-processing), the next %d the free columns, the other %d zero", ALSCovUserSpreadShare, cu.dens, covGate(p), cu.cover, ALSCovUserCoverage, cu.wbar, cu.shrink, covUserNoiseGate(p), cu.spread.c0, float64(ALSSpreadZ), cu.spread.sd, ALSSpreadMargin, ALSSpreadFloor, how, cu.c, cu.sigma, cu.sigma*cu.c*cu.c, cu.tau/(cu.s*cu.s), cu.tau, cu.K, cu.kept, cu.edge, fmtEigen(cu.lk), nfree, R-cu.K-nfree)
}
