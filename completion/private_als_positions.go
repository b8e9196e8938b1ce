package completion

// PRIVATE ALS, ENTRY UNIT: THE POSITIONS STAGE.
//
// Under the entry relation one rating's value changes and the positions
// (who rated what) stay: they are public, and on real logs they say much
// about taste (EASE on the positions alone ranks far above most-popular on
// MovieLens). The positions stage turns them into item rows at a privacy
// cost that does not grow with the number of ratings:
//
//  1. Q (items x K): the top K right singular vectors of the
//     degree-normalised position matrix A = D_u^-1/2 B D_i^-1/2 (B_ui = 1
//     when u rated i) on the largest connected component of the position
//     graph, by subspace iteration from a data-independent start; P = A Q
//     (users x K: the left singular vectors times the singular values);
//     each scaled by its largest row norm so that |p_u| <= 1 and
//     |q_i| <= 1; K is clamped to the columns with a nonzero singular
//     value. They are functions of the positions only: public.
//  2. z_ui = clip(clamp(r_ui) - mu~ - b~_i, -c, c), the residual from the
//     released mean and item biases, and the K x K statistic
//     S = sum over ratings of z_ui p_u q_i^T. One rating's value moves one
//     z_ui by at most 2c and nothing else (P, Q and the positions are the
//     same on both neighbours), so |S - S'|_F = |z - z'| |p_u| |q_i| <= 2c:
//     l2 sensitivity 2c (Gaussian mechanism at (epsilon_p, delta)).
//  3. vec(W) = (G + rho I)^-1 vec(S~), G = sum over ratings of
//     (p_u p_u^T) (x) (q_i q_i^T) (public), the least-squares fit of
//     z_ui ~ p_u^T W q_i; rho = max(ALSPositionsRidgeFloor,
//     ALSPositionsReg (1 + v_S/c^2)), v_S the noise variance of one entry
//     of S~ (a noisy statistic calls for a ridge in proportion to its
//     noise; the factor was fitted on validation parts of ml-latest-small
//     and MovieLens-100K; the floor holds W's scale, against which the
//     users' fixed fold-in ridge is set, where the noise is small).
//     Post-processing.
//  4. The released item rows' first K columns are v_i = W q_i / s, s =
//     (r_max - r_min)/4 the public spread (in these units the fold-in's
//     fixed ridge on a user's row scales with s^2, as the data term does;
//     in rating units the fold-in overfits on wide scales:
//     TestPrivateALSPositionsWideScale); each user folds in from them and
//     their own ratings (billboard model).
//
// The stage runs only when the positions have structure beyond their
// degrees (the spectral gate, also public): the largest non-trivial
// singular value of the normalised position matrix must exceed
// ALSPositionsGate times that of a matrix with the same user and item
// degrees and shuffled items. On logs whose positions are random (the
// synthetic logs of data synth) it fails and the residual route runs as
// before.
//
// The stage replaces the residual route when the gate passes and the
// route is in neither of its regimes (ALSResidualRichRatio,
// ALSResidualQuietRatio: many ratings an item at small noise) (on
// ml-latest-small and MovieLens-100K it scored better at every epsilon on
// validation parts: on MovieLens-100K's 0.9258 against the bias mode's
// 0.9580 at epsilon 1, 0.9134 against non-private ALS's 0.9188 at 100;
// a split of the rank between the two, tried, was worse on
// ml-latest-small). Budget: ALSPositionsBiasFraction(epsilon) of epsilon to the
// bias release (pure), the rest to S (Gaussian at (epsilon_p, delta));
// basic composition. Users fold in with the bias
// mode's penalties but a fixed ridge of ALSPositionsFoldRow on the row
// and bias (none per rating), which suits item rows of this scale
// (validation parts: 0.9258 against 0.9324 with private ALS's fold-in at
// epsilon 1 on MovieLens-100K; the ridge's value: ALSPositionsFoldRow).

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/mat"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/perturb"
)

// ALSPositions selects whether private ALS runs the positions stage and
// the covariance stages.
type ALSPositions string

const (
	// ALSPositionsAuto (the zero value) runs the covariance stage when
	// its gates pass, else, at the entry unit, the positions stage when
	// the spectral gate passes, unless the residual route is in one of
	// its regimes (alsResidualRegime).
	ALSPositionsAuto ALSPositions = ""
	// ALSPositionsOff runs neither: at the entry unit the residual route
	// alone (as a source without the positions, such as dprec-beam's,
	// runs), at the user unit the item steps or their fallback.
	ALSPositionsOff ALSPositions = "off"
)

// Public constants of the positions stage.
const (
	// ALSPositionsMaxRank caps K, the positions' columns (the normal
	// equations are K^2 x K^2).
	ALSPositionsMaxRank = 10
	// ALSPositionsGate is the spectral gate's factor.
	ALSPositionsGate = 1.2
	// ALSPositionsReg is the ridge factor of W's solve.
	ALSPositionsReg = 0.1
	// ALSPositionsIters is the number of subspace iterations.
	ALSPositionsIters = 12
	// ALSPositionsShrinkGate is the shrinkage gate's factor: the stage
	// runs only when the mean diagonal entry of the public Gram matrix G
	// is at least this times the noise's ridge ALSPositionsReg (1 +
	// v_S/c^2), before ALSPositionsRidgeFloor (at a smaller ratio the ridge,
	// which grows with the noise, shrinks W to about zero while the bias
	// release has lost 35% of its budget at these epsilons:
	// ALSPositionsBiasFraction). Validation parts: the stage
	// scored worse than the bias mode at ratios 0.0006-0.011
	// (ml-latest-small at epsilon 0.1-0.5, MovieLens-100K at 0.1),
	// level at 0.038 (ml-latest-small at 1) and better from 0.034
	// (MovieLens-100K at 0.3).
	ALSPositionsShrinkGate = 0.03
	// ALSPositionsFoldRow is the fixed ridge on a user's row and bias
	// when the user folds into the positions stage's release (the bias
	// mode's BiasUserPenalty, 10, before). Validation parts, rank 10,
	// wherever the stage ran, ridge 10 / 7 / 5 / 4 / 3: Jester5k (the
	// real joke log, 5,000 users, 100 jokes) at epsilon 1 4.2432 /
	// 4.2299 / 4.2218 / 4.2187 / 4.2172; MovieLens-100K at epsilon 1
	// 0.8998 / 0.8985 / 0.8977 / 0.8974 / 0.8973 and at 100 0.8882 /
	// 0.8883 / 0.8889 / 0.8895 / 0.8905; ml-latest-small at 1 0.8657 /
	// 0.8634 / 0.8616 / 0.8607 / 0.8597 and at 100 0.8391 / 0.8394 /
	// 0.8400 / 0.8405 / 0.8413; the exposure-biased joke-shaped logs at 1
	// 4.4658 / 4.4660 / 4.4708 / 4.4760 / 4.4846 (jokeexp3) and 4.1205 /
	// - / 4.1276 / - / - (jokeexp). 5 gains on every real log at epsilon
	// 1, where the stage matters most, and costs at most 0.0009 on them
	// at 100 and 0.007 on the synthetic ones. The bias mode keeps 10: on
	// Jester5k its release scored 4.3398 with 10 and 4.3346 with 5.
	ALSPositionsFoldRow = 5.0
)

// ALSFreeColumns is the number of free columns (freeItemColumnsAt: the
// slope and popularity columns, post-processing of the bias release)
// that private ALS's positions stage and residual route release after
// the columns they fit, from rank ALSPositionsMaxRank up: they fit R - 2
// columns (the positions stage at most ALSPositionsMaxRank). Validation
// parts, rank 10, epsilon 1 / 3 / 10 / 30 / 100, the positions stage
// (K = 8 and the free columns against K = 10): MovieLens-100K 0.8998 /
// 0.8895 / 0.8870 / 0.8879 / 0.8882 against 0.9036 / 0.8886 / 0.8871 /
// 0.8881 / 0.8890, ml-latest-small 0.8657 / 0.8488 / 0.8422 / 0.8402 /
// 0.8391 against 0.8763 / 0.8550 / 0.8441 / 0.8409 / 0.8395; on the
// joke-shaped logs with exposure-biased positions 4.1205 against 4.1169
// and 4.4658 against 4.4663 at epsilon 1. The slope column alone (K = 9)
// gained on MovieLens-100K but lost 0.003 on ml-latest-small at epsilon
// 30 and 100. The residual route: see alsInputFree.
const ALSFreeColumns = 2

// positionsRank is K, the positions stage's own columns at rank R.
func positionsRank(R int, p alsPrivateParams) int {
	if positionsFree(R, p) {
		return min(R-ALSFreeColumns, ALSPositionsMaxRank)
	}
	return min(R, ALSPositionsMaxRank)
}

// positionsFree reports whether the positions stage releases the free
// columns at rank R: from rank ALSPositionsMaxRank up, where they were
// validated. Below it the positions need every column: on a planted log
// of five user groups at rank 5 (TestPrivateALSPositionsConverges), K = 3
// and the free columns scored 0.7345 against non-private ALS's 0.6761.
func positionsFree(R int, p alsPrivateParams) bool {
	return R >= ALSPositionsMaxRank && !p.posNoFree
}

// ALSPositionsRidgeFloor is the least ridge of W's solve (in the units of
// G, a sum over ratings of products of unit-bounded embeddings). The
// noise's ridge ALSPositionsReg (1 + v_S/c^2) falls to ALSPositionsReg as
// epsilon grows, W grows with it, and the users' fixed fold-in ridge
// (ALSPositionsFoldRow) weighs less against W's columns: without a floor
// the stage scored worse at epsilon 10 and 20 than at 3 (MovieLens-100K's
// validation part, 2 noise seeds: 0.9086 / 0.9126 / 0.9165 at epsilon 3 /
// 10 / 20). Floors 1 / 2.5 / 5, same parts: MovieLens-100K at 10 0.9108 /
// 0.9075 / 0.9077, at 20 0.9112 / 0.9082 / 0.9083, at 100 - / 0.9091 /
// 0.9092 (0.9181 without); ml-latest-small at 10 0.8389 / 0.8370 /
// 0.8366, at 20 0.8379 / 0.8363 / 0.8362, at 100 - / 0.8357 / 0.8361
// (0.8404 without; non-private ALS 0.8462). At epsilon <= 3 on these logs,
// and on the joke logs at every epsilon where the stage runs, the noise's
// ridge is above the floor (38 at epsilon 1, 5.3 at 3 on the MovieLens
// logs), and nothing changes. The shrinkage gate reads the noise's ridge.
const ALSPositionsRidgeFloor = 2.5

// ALSPositionsBiasFraction is the share of epsilon the positions stage
// gives the bias release, evaluated at the epsilon left after the rating
// spread's release (0.99 of the user's): 0.35 up to epsilon 0.5, 0.65 from epsilon 1, log-linear
// between. S is K^2 numbers fitted from every rating, so its share can
// shrink as epsilon grows; the item biases, one per item from that
// item's ratings alone, gain more from the budget. Validation parts (the
// sweep, 3-5 noise seeds each, mean RMSE at shares 0.35 / 0.5 / 0.65 /
// 0.8): ml-latest-small at epsilon 1 0.8589 / 0.8546 / 0.8524 / 0.8568,
// at 3 0.8466 / 0.8428 / 0.8401 / 0.8390, at 10 0.8412 / 0.8403 /
// 0.8395 / 0.8382, at 100 0.8400 / 0.8401 / 0.8404 / 0.8409;
// MovieLens-100K at 1 0.9205 / 0.9175 / 0.9175 / 0.9229, at 3 0.9138 /
// 0.9114 / 0.9096 / 0.9084, at 10 0.9146 / 0.9138 / 0.9124 / 0.9099, at
// 100 0.9182 / 0.9183 / 0.9184 / 0.9187; Jester5k at 1 4.2210 / - /
// 4.2217 / 4.2221 (flat within the seeds' spread, 0.005); the
// joke-shaped log with exposure-biased positions ("jokeexp") at 1
// 4.1305 / - / 4.1251 / 4.1239. Below epsilon 1 the larger share lost
// (MovieLens-100K at 0.5: 0.9343 against 0.9367 at 0.65; at 0.3 the
// smaller S budget fails the shrinkage gate: 0.9526 against 0.9582).
// Session 19 and before: 0.35 at every epsilon (MovieLens-100K at
// epsilon 1, one seed: 0.35 against 0.2 and 0.5).
func ALSPositionsBiasFraction(epsilon float64) float64 {
	switch {
	case !(epsilon > 0.5):
		return 0.35
	case epsilon >= 1:
		return 0.65
	}
	return 0.35 + 0.3*math.Log2(epsilon/0.5)
}

const streamALSPositions = 9

// alsPositionsWhat names the positions release in the report.
const alsPositionsWhat = "S = sum over ratings of the clipped residual times p_u q_i^T (private ALS, positions stage; P, Q the spectral embedding of the public positions)"

// positionsEmbed is the spectral embedding of a store's positions.
type positionsEmbed struct {
	K    int
	P, Q []float64 // users x K and items x K, row-major, rows scaled to norm <= 1
	// Top and Floor are the largest non-trivial singular values of the
	// normalised position matrix and of its shuffled twin.
	Top, Floor float64
}

// embedPositions returns the rank-K spectral embedding of the positions
// (users, items) of an n x m log and its singular values, sorted
// decreasing.
func embedPositions(n, m int, users, items []int32, K int) (P, Q, sv []float64) {
	du := make([]float64, n)
	di := make([]float64, m)
	for e := range users {
		du[users[e]]++
		di[items[e]]++
	}
	w := make([]float64, len(users))
	for e := range w {
		w[e] = 1 / math.Sqrt(du[users[e]]*di[items[e]])
	}
	k := min(K+2, m, n) // two extra columns speed the convergence
	rng := rand.New(rand.NewPCG(streamALSPositions, 1))
	Q = make([]float64, m*k)
	for i := range Q {
		Q[i] = rng.NormFloat64()
	}
	P = make([]float64, n*k)
	mult := func() { // P = B Q
		clear(P)
		for e := range w {
			u, i := int(users[e]), int(items[e])
			pu, qi := P[u*k:u*k+k], Q[i*k:i*k+k]
			for j := range pu {
				pu[j] += w[e] * qi[j]
			}
		}
	}
	for range ALSPositionsIters {
		mult()
		clear(Q)
		for e := range w {
			u, i := int(users[e]), int(items[e])
			pu, qi := P[u*k:u*k+k], Q[i*k:i*k+k]
			for j := range qi {
				qi[j] += w[e] * pu[j]
			}
		}
		orthonormalCols(Q, m, k)
	}
	mult()
	// Order the columns by singular value |P_j| (Q orthonormal).
	sv = make([]float64, k)
	for u := 0; u < n; u++ {
		for j := 0; j < k; j++ {
			sv[j] += P[u*k+j] * P[u*k+j]
		}
	}
	order := make([]int, k)
	for j := range order {
		order[j] = j
		sv[j] = math.Sqrt(sv[j])
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(sv[b], sv[a]) })
	pick := func(A []float64, rows int) []float64 {
		out := make([]float64, rows*K)
		for r := 0; r < rows; r++ {
			for j := 0; j < K && j < k; j++ {
				out[r*K+j] = A[r*k+order[j]]
			}
		}
		scaleRows(out, K)
		return out
	}
	svs := make([]float64, k)
	for j, o := range order {
		svs[j] = sv[o]
	}
	return pick(P, n), pick(Q, m), svs
}

// orthonormalCols orthonormalises the k columns of the rows x k
// row-major matrix A in place (modified Gram-Schmidt, twice for
// stability); a column that vanishes is left zero.
func orthonormalCols(A []float64, rows, k int) {
	for range 2 {
		for j := 0; j < k; j++ {
			for l := 0; l < j; l++ {
				s := 0.0
				for r := 0; r < rows; r++ {
					s += A[r*k+j] * A[r*k+l]
				}
				for r := 0; r < rows; r++ {
					A[r*k+j] -= s * A[r*k+l]
				}
			}
			s := 0.0
			for r := 0; r < rows; r++ {
				s += A[r*k+j] * A[r*k+j]
			}
			if s == 0 {
				continue
			}
			s = 1 / math.Sqrt(s)
			for r := 0; r < rows; r++ {
				A[r*k+j] *= s
			}
		}
	}
}

// Public constants of the choice between the positions stage and the
// residual route: the residual route is preferred where non-private ALS
// has many ratings an item to learn from (a mean of at least
// ALSResidualRichRatio R ratings an item) and its noise is small (the
// noise variance of a released residual at most ALSResidualRichNoise
// s^2). On the joke-shaped log with exposure-biased positions
// ("jokeexp3" of TestPrivateALSSweep, 2,700 ratings an item) the residual
// route scored 4.166 / 4.070 / 4.061 at epsilon 3 / 10 / 100 (v/s^2 1.95 /
// 0.18 / 0.002) against the positions stage's 4.464-4.466 (non-private
// ALS 4.070), and 4.641 against 4.466 at epsilon 1 (v/s^2 17.6); on the
// MovieLens logs (48 and 8 ratings an item) the positions stage scored
// better at every epsilon. The noise bound was 4 s^2 until the residual
// route's clip was halved below epsilon 3.16 (ALSInputClipFloor): with
// the smaller clip, the route entered its regime at epsilon 2 on Jester5k
// (v/s^2 1.1) and jokeexp and scored worse there than the positions
// stage at epsilon 1 (4.2267 against 4.2218, 4.1892 against 4.1276); at
// 1 s^2 both stay with the positions stage at 2 and take the route from
// 3 (v/s^2 0.49), where it beats the stage (validation figures under
// ALSInputClipFloor). The v/s^2 figures here are at the route's bias
// share of 0.1; at 0.05 (since session 21) the residuals' noise is
// (0.9/0.95)^2 of them and the regime starts at epsilon 2.07 instead of
// 2.11 (Jester5k's validation part: the stage's 4.2203 at 2.05, the
// route's 4.2240 at 2.2).
const (
	ALSResidualRichRatio = 50
	ALSResidualRichNoise = 1
)

// Public constants of the residual route's quiet regime: the residual
// route is also preferred where the noise variance v of a released
// residual is at most ALSResidualQuietNoise s^2 and the log has a mean
// of at least ALSResidualQuietRatio R ratings an item. v/s^2 is a
// function of epsilon alone (14.2 log10(epsilon)^2 / epsilon_w^2 from
// epsilon 10, epsilon_w the residuals' share): the regime starts at
// epsilon 25.2. There the route is nearly non-private ALS, which
// converges whatever the positions say; the positions stage fits the
// item rows in the span of the positions' embedding, which carries taste
// on real logs but need not: on a synthetic log with heavy-tailed
// activity whose positions pass the spectral gate without carrying taste
// ("heavy" of TestPrivateALSSweep: 405 ratings an item, 40 R) the stage
// stayed at the bias model's level at every epsilon (0.8284 / 0.8280 at
// epsilon 30 / 100, non-private ALS 0.6137), and the route scored 0.6257
// / 0.6193. On real logs the stage (with ALSPositionsRidgeFloor) was the
// better one: validation parts, 2 noise seeds, epsilon 30 / 100, the stage
// against the route: MovieLens-100K (48 ratings an item, 4.8 R) 0.9086 /
// 0.9091 against 0.9139 / 0.9126; its 200 most rated items (174 an item,
// 17 R) 0.8989 / 0.8988 against 0.9009 / 0.8995. The ratio sits between
// the two (25 R); a real log above it, where the positions carry taste,
// pays the route's cost from epsilon 25: about 0.002 on the 200 items.
// The noise bound: at epsilon 20 (v/s^2 0.088) the route lost on the 200
// items before the floor (0.9019 against 0.8985), and at 10 (0.16) on
// both MovieLens logs (0.9255 against 0.9123, 0.9080 against 0.8987).
const (
	ALSResidualQuietRatio = 25.0
	ALSResidualQuietNoise = 0.05
)

// alsResidualRegime reports whether the residual route is in its rich or
// its quiet regime (public: counts and the plan), with a note saying
// why.
func alsResidualRegime(o *PrivateOptions, p alsPrivateParams, R int, counts []int) (bool, string) {
	plan := planALSInput(o, p, R, counts)
	var n, items float64
	for _, c := range counts {
		if c > 0 {
			n += float64(c)
			items++
		}
	}
	s := o.rulesRange() / biasSpreadDivisor
	if items == 0 || plan.Fallback {
		return false, ""
	}
	lowRatio, lowNoise := ALSResidualQuietRatio, ALSResidualQuietNoise
	if p.quietRatio > 0 {
		lowRatio = p.quietRatio
	}
	if p.quietNoise > 0 {
		lowNoise = p.quietNoise
	}
	perItem := n / items
	switch {
	case perItem >= ALSResidualRichRatio*float64(R) && plan.NoiseVar <= ALSResidualRichNoise*s*s:
		return true, fmt.Sprintf("positions stage: not run (the residual route's regime: %.0f ratings an item >= %d R and a residual noise variance %.4g <= %g s^2, s = %g)", perItem, ALSResidualRichRatio, plan.NoiseVar, float64(ALSResidualRichNoise), s)
	case perItem >= lowRatio*float64(R) && plan.NoiseVar <= lowNoise*s*s:
		return true, fmt.Sprintf("positions stage: not run (the residual route's quiet regime: %.0f ratings an item >= %g R and a residual noise variance %.4g <= %g s^2, s = %g)", perItem, lowRatio, plan.NoiseVar, lowNoise, s)
	}
	return false, ""
}

// positionsShrunk says the shrinkage gate failed (no budget spent).
type positionsShrunk struct{ gbar, rho float64 }

func (e *positionsShrunk) Error() string {
	return fmt.Sprintf("positions stage: not run (shrinkage gate: the public Gram matrix's mean diagonal entry %.4g is below %g x the ridge %.4g that the noise of S calls for at this epsilon: W would be about zero)", e.gbar, ALSPositionsShrinkGate, e.rho)
}

// scaleRows divides every row of A (K columns) by the largest row norm.
func scaleRows(A []float64, K int) {
	mx := 0.0
	for r := 0; r+K <= len(A); r += K {
		mx = math.Max(mx, math.Sqrt(dot(A[r:r+K], A[r:r+K])))
	}
	if mx == 0 {
		return
	}
	for i := range A {
		A[i] /= mx
	}
}

// planPositions embeds train's positions in K columns and evaluates the
// spectral gate (public: positions only).
func planPositions(train *data.Store, K int) *positionsEmbed {
	n, m := train.Dims[0], train.Dims[1]
	// The largest connected component of the bipartite position graph:
	// every other component has a singular value of exactly 1 of its own
	// (one user who alone rated one item is one), which would pass the
	// gate and, being the largest rows, shrink every other row in the
	// scaling. Users and items outside it get zero rows.
	users, items := largestComponent(n, m, train.Idx[0], train.Idx[1])
	P, Q, sv := embedPositions(n, m, users, items, K)
	// Columns beyond the positions' rank carry nothing: K is clamped to
	// the columns with a nonzero singular value.
	k := 0
	for k < len(sv) && k < K && sv[k] > 1e-9 {
		k++
	}
	pe := &positionsEmbed{K: k, P: firstCols(P, K, k), Q: firstCols(Q, K, k)}
	if len(sv) > 1 {
		pe.Top = sv[1]
	}
	// The shuffled twin: the same user and item degrees, items assigned
	// to the ratings by a data-independent permutation.
	shuf := append([]int32(nil), items...)
	rng := rand.New(rand.NewPCG(streamALSPositions, 2))
	rng.Shuffle(len(shuf), func(a, b int) { shuf[a], shuf[b] = shuf[b], shuf[a] })
	su, si := largestComponent(n, m, users, shuf)
	_, _, rsv := embedPositions(n, m, su, si, K)
	if len(rsv) > 1 {
		pe.Floor = rsv[1]
	}
	return pe
}

// largestComponent returns the ratings (users[e], items[e]) of the
// largest connected component of the bipartite graph they form (ties:
// the one with the smallest user or item index).
func largestComponent(n, m int, users, items []int32) ([]int32, []int32) {
	parent := make([]int, n+m)
	for i := range parent {
		parent[i] = i
	}
	find := func(x int) int {
		for parent[x] != x {
			parent[x] = parent[parent[x]]
			x = parent[x]
		}
		return x
	}
	for e := range users {
		a, b := find(int(users[e])), find(n+int(items[e]))
		if a != b {
			parent[max(a, b)] = min(a, b)
		}
	}
	size := make([]int, n+m)
	for e := range users {
		size[find(int(users[e]))]++
	}
	best := 0
	for r, c := range size {
		if c > size[best] {
			best = r
		}
	}
	if len(users) > 0 && size[best] == len(users) {
		return users, items
	}
	var ou, oi []int32
	for e := range users {
		if find(int(users[e])) == best {
			ou = append(ou, users[e])
			oi = append(oi, items[e])
		}
	}
	return ou, oi
}

// firstCols returns the first K of the k columns of the row-major A.
func firstCols(A []float64, k, K int) []float64 {
	if K == k {
		return A
	}
	rows := len(A) / k
	out := make([]float64, rows*K)
	for r := 0; r < rows; r++ {
		copy(out[r*K:r*K+K], A[r*k:r*k+K])
	}
	return out
}

// pass reports whether the spectral gate passes.
func (pe *positionsEmbed) pass() bool {
	return pe.K >= 1 && pe.Top > 1e-9 && pe.Floor > 0 && pe.Top >= ALSPositionsGate*pe.Floor
}

// positionsGram returns the public Gram matrix G (K^2 x K^2, row
// (a K + b), column (a2 K + b2): the sum over train's ratings of
// p_ua p_ua2 q_ib q_ib2) of the fit z_ui ~ p_u^T W q_i; by lists each
// user's ratings (alsUsers).
func positionsGram(train *data.Store, by [][]int, pe *positionsEmbed) []float64 {
	K := pe.K
	k2 := K * K
	G := make([]float64, k2*k2)
	M := make([]float64, k2)
	for u, es := range by {
		if len(es) == 0 {
			continue
		}
		clear(M)
		pu := pe.P[u*K : u*K+K]
		for _, e := range es {
			i := int(train.Idx[1][e])
			qi := pe.Q[i*K : i*K+K]
			for a := 0; a < K; a++ {
				for b := 0; b < K; b++ {
					M[a*K+b] += qi[a] * qi[b]
				}
			}
		}
		for a := 0; a < K; a++ {
			for a2 := 0; a2 < K; a2++ {
				pp := pu[a] * pu[a2]
				if pp == 0 {
					continue
				}
				for b := 0; b < K; b++ {
					row := G[(a*K+b)*k2+a2*K : (a*K+b)*k2+a2*K+K]
					mb := M[b*K : b*K+K]
					for b2 := range row {
						row[b2] += pp * mb[b2]
					}
				}
			}
		}
	}
	return G
}

// positionsS returns S (K x K, row-major: S[a K + b] multiplies
// p_ua q_ib), the sum over train's ratings of z_ui p_u q_i^T, z the
// residuals from the released mean and item biases clipped to [-c, c].
func positionsS(train *data.Store, o *PrivateOptions, bias *decomposition.Model, pe *positionsEmbed, c float64) []float64 {
	K := pe.K
	S := make([]float64, K*K)
	z := append([]float64(nil), train.Val...)
	clippedResiduals(z, train, o, bias, c)
	for e, ze := range z {
		pu := pe.P[int(train.Idx[0][e])*K : int(train.Idx[0][e])*K+K]
		qi := pe.Q[int(train.Idx[1][e])*K : int(train.Idx[1][e])*K+K]
		for a := 0; a < K; a++ {
			za := ze * pu[a]
			for b := 0; b < K; b++ {
				S[a*K+b] += za * qi[b]
			}
		}
	}
	return S
}

// positionsMechanism returns the positions release's mechanism at
// epsilon eps: Gaussian of l2 sensitivity 2c at (eps, o.Delta) (private
// ALS requires delta > 0), calibrated analytically (Balle and Wang 2018;
// o.Calibration is input mode's setting), and its noise variance per
// entry.
func positionsMechanism(o *PrivateOptions, c, eps float64) (*perturb.Gaussian, perturb.Release, float64, error) {
	g, err := perturb.NewGaussian(2*c, eps, o.Delta, perturb.Analytic)
	if err != nil {
		return nil, perturb.Release{}, 0, err
	}
	rel := g.Release(alsPositionsWhat)
	rel.Derivation = fmt.Sprintf("positions public, so P and Q are the same on neighbours; one rating's value moves one clipped residual by at most 2c and S by (z - z') p_u q_i^T, |p_u|, |q_i| <= 1: l2 = 2c = %g (completion/private_als_positions.go)", 2*c)
	return g, rel, g.Sigma() * g.Sigma(), nil
}

// solvePositions returns v (items x K, row-major), v_i = W q_i with
// vec(W) = (G + rho I)^-1 vec(S~).
func solvePositions(S, G []float64, pe *positionsEmbed, rho float64) ([]float64, error) {
	K := pe.K
	k2 := K * K
	g := mat.NewSymDense(k2, append([]float64(nil), G...))
	for a := 0; a < k2; a++ {
		g.SetSym(a, a, g.At(a, a)+rho)
	}
	var ch mat.Cholesky
	if !ch.Factorize(g) {
		return nil, fmt.Errorf("completion: private ALS: the positions' normal equations are not positive definite")
	}
	var w mat.VecDense
	if err := ch.SolveVecTo(&w, mat.NewVecDense(k2, append([]float64(nil), S...))); err != nil {
		return nil, err
	}
	m := len(pe.Q) / K
	v := make([]float64, m*K)
	for i := 0; i < m; i++ {
		qi := pe.Q[i*K : i*K+K]
		for a := 0; a < K; a++ {
			s := 0.0
			for b := 0; b < K; b++ {
				s += w.AtVec(a*K+b) * qi[b]
			}
			v[i*K+a] = s
		}
	}
	return v, nil
}

// stageBudget is the accounting of an entry-unit stage's two releases.
type stageBudget struct {
	acc        perturb.Accountant
	eps, delta float64
	used       perturb.Composition
}

// biasThenRelease is the budget of the entry unit's positions and
// covariance stages: the bias mode's release at fb of o.Epsilon (it runs
// here and returns the bias model and its report), then rel, admitted
// within (o.Epsilon, o.Delta) by basic composition.
func biasThenRelease(train *data.Store, dims []int, o *PrivateOptions, fb float64, rel perturb.Release) (*decomposition.Model, *perturb.Report, *stageBudget, error) {
	wm, brep, err := scratchBiasReleaseFrom(storeBiasSource{train}, dims, o, fb*o.Epsilon)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("completion: private ALS (bias release): %w", err)
	}
	b := &stageBudget{}
	if err := addReleases(&b.acc, brep.Releases); err != nil {
		return nil, nil, nil, err
	}
	if err := b.acc.Add(rel, 1); err != nil {
		return nil, nil, nil, err
	}
	budget := perturb.Budget{Epsilon: o.Epsilon, Delta: o.Delta}
	if b.eps, b.delta, b.used, err = budget.Admit(&b.acc, perturb.Basic); err != nil {
		return nil, nil, nil, fmt.Errorf("completion: private ALS: %w", err)
	}
	return wm, brep, b, nil
}

// trainALSPositions is the entry unit's private ALS by the positions
// stage (the spectral gate has passed): the bias release, then the
// positions release and W's solve.
func trainALSPositions(train *data.Store, by [][]int, m *decomposition.Model, o *PrivateOptions, p alsPrivateParams, pe *positionsEmbed) (*perturb.Report, error) {
	R, K := m.Ranks[0], pe.K
	fb := ALSPositionsBiasFraction(o.Epsilon)
	if p.posBias > 0 {
		fb = p.posBias
	}
	fp := 1 - fb
	c := p.posClip
	g, rel, vS, err := positionsMechanism(o, c, fp*o.Epsilon)
	if err != nil {
		return nil, fmt.Errorf("completion: private ALS (positions release): %w", err)
	}
	reg := ALSPositionsReg
	if p.posReg > 0 {
		reg = p.posReg
	}
	rho := reg * (1 + vS/(c*c))
	if p.noiseOff {
		rho = reg
	}
	// The shrinkage gate (public: G is a function of the positions) is on
	// the noise's ridge; the solve takes at least the floor.
	G := positionsGram(train, by, pe)
	gbar := 0.0
	for a := 0; a < K*K; a++ {
		gbar += G[a*K*K+a]
	}
	gbar /= float64(K * K)
	if gbar < ALSPositionsShrinkGate*rho {
		return nil, &positionsShrunk{gbar: gbar, rho: rho}
	}
	floor := ALSPositionsRidgeFloor
	if p.posFloor != 0 {
		floor = max(p.posFloor, 0)
	}
	rhoNoise := rho
	rho = max(rho, floor)
	wm, brep, acc, err := biasThenRelease(train, m.Dims[:2], o, fb, rel)
	if err != nil {
		return nil, err
	}
	S := positionsS(train, o, wm, pe, c)
	if !p.noiseOff {
		g.AddTo(S, rand.New(o.source(streamALSPositions)))
	}
	o.observe(alsPositionsWhat, S, nil)
	v, err := solvePositions(S, G, pe, rho)
	if err != nil {
		return nil, err
	}
	m.Mean = wm.Mean
	copy(m.Bias[1], wm.Bias[1])
	clear(m.Factors[1])
	// Released in units of the public spread s: the fold-in's ridge on
	// the user's row then scales with s^2, as the data term does.
	s := o.rulesRange() / biasSpreadDivisor
	if p.posNoScale {
		s = 1
	}
	for i := 0; i < m.Dims[1]; i++ {
		for j := 0; j < K; j++ {
			m.Factors[1][i*R+j] = v[i*K+j] / s
		}
	}
	free := 0
	if positionsFree(R, p) {
		free = min(ALSFreeColumns, R-K)
		freeItemColumnsAt(m, o, brep.ItemCounts, K)
	}
	rep := entryALSReport(o, m, &acc.acc, acc.eps, acc.delta, acc.used, brep)
	rep.FoldRow = ALSPositionsFoldRow
	rep.Composition = fmt.Sprintf("bias release (epsilon %g) then the positions release (epsilon %g), %s", fb*o.Epsilon, fp*o.Epsilon, acc.used)
	rep.Notes = append(rep.Notes,
		fmt.Sprintf("not released: user rows and user biases (zero in the model); each user solves them at prediction time from the released item side and their own ratings with a ridge of %g on the row and bias (ALSPositionsFoldRow; the bias mode's time-bucket penalty; billboard model)", ALSPositionsFoldRow),
		fmt.Sprintf("positions stage budget: %.4g of its epsilon (%g, what the rating spread's release leaves) to the bias release, the rest to S (rule on that epsilon: 0.35 up to 0.5, 0.65 from 1, log-linear between; ALSPositionsBiasFraction)", fb, o.Epsilon),
		fmt.Sprintf("positions stage (entry unit; the positions are public): P, Q the rank-%d spectral embedding of the degree-normalised position matrix (%d subspace iterations, rows scaled to norm <= 1); spectral gate: its largest non-trivial singular value %.4g >= %g x %.4g, that of the same degrees with shuffled items; residuals clipped to [-c, c], c = %g; W = (G + rho I)^-1 S~ with G the public Gram matrix and rho = max(%g, %g (1 + v_S/c^2) = %.4g) = %.4g (v_S = %.4g the noise variance of an entry of S~; the floor: ALSPositionsRidgeFloor); shrinkage gate: G's mean diagonal entry %.4g >= %g x the noise's ridge %.4g; the item rows' first %d columns are W q_i / s (s = %g, the rules' spread: in these units the fold-in's ridge on a user's row scales with s^2, as the data term does), the next %d the free columns (the released item biases over s, then the standardised log(1 + n_i) of the public counts at the first's spread; post-processing: each user fits a slope of their own on each when folding in), the other %d zero", K, ALSPositionsIters, pe.Top, ALSPositionsGate, pe.Floor, c, floor, reg, rhoNoise, rho, vS, gbar, ALSPositionsShrinkGate, rhoNoise, K, o.rulesRange()/biasSpreadDivisor, free, R-K-free))
	appendBiasReleaseNotes(rep, brep)
	return rep, nil
}
