package completion

// PRIVATE ALS UNDER JOINT DP (the billboard model; Chien, Jain, Krichene,
// Rendle, Song, Thakurta and Zhang, "Private Alternating Least Squares",
// ICML 2021), entry-level relation. The derivation of the sensitivity is in
// the package doc (Sensitivities, "Private ALS"); this file implements it.
//
// Released: the global mean and item biases (the bias mode, with a share of
// epsilon), the item factor rows, and constant time rows (all ones: the
// model is the user x item matrix; no time effect is learnt). Never
// released: user rows and user biases; at prediction time each user solves
// them from the released item side and their own ratings
// (decomposition.FoldIn).

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"gonum.org/v1/gonum/stat"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/perturb"
)

// Public settings of private ALS. Each is a constant or a rule of what the
// relation makes public (epsilon, delta, the rating range, the rank and,
// under the entry unit, the user and item counts); none is read from the
// ratings. They were chosen on the validation parts of a joke-shaped
// synthetic log (5,000 users, 100 items, 202,500 ratings), of
// ml-latest-small's training log (user x movie) and of a MovieLens-shaped
// synthetic log, never on a test part (completion doc, "Private ALS:
// public constants", gives the measurements).
const (
	// ALSPrivateSteps is the number of released item steps T.
	ALSPrivateSteps = 5
	// ALSPrivateUserClip is Gamma_u, the bound on the norm of a user's
	// vector (row and bias together) in the item statistics.
	ALSPrivateUserClip = 1.0
	// ALSPrivateReg is lambda, the per-observation ridge penalty of the
	// private user solve (lambda n_u). It makes a user's vector lambda
	// n_u-stable in each of their ratings, which bounds the sensitivity
	// (package doc), but it also shrinks the user vectors below Gamma_u
	// and the item statistics towards zero whatever epsilon is: at 1 (the
	// earlier value) the factors carried no signal even without noise.
	// Fold-ins of the released model use the same per-rating penalty.
	ALSPrivateReg = 0.05
	// ALSPrivateItemReg is the per-term ridge of the item solve
	// (lambda_v t_i, plus sigma for the noise): post-processing of the
	// released statistics. Under the user unit the last step's ridge is
	// chosen among ALSRidgeCandidates, this one first, on held-out users
	// (private_als_ridge.go).
	ALSPrivateItemReg = 0.3
	// ALSPrivateFoldRow is the fold-in's penalty on a user's row and bias
	// beyond ALSPrivateReg per rating (decomposition.FoldPenalties.Row).
	ALSPrivateFoldRow = 1.0
	// ALSPrivateTermsQuantile: under the entry unit each user's vector
	// enters the statistics of at most k of their items, k the
	// ALSPrivateTermsQuantile quantile of the public user counts (at least
	// ALSPrivateMinTerms); a user with more ratings contributes a public
	// pseudo-random choice of k (alsTermsOf). Under the user unit k is the
	// contribution bound --max-ratings-per-user.
	ALSPrivateTermsQuantile = 0.9
	ALSPrivateMinTerms      = 20
	// ALSPrivateGateShare: an item's factor row is learnt only when its
	// count n_i makes the expected Gram diagonal n_i Gamma_u^2 / R at
	// least the noise sigma of its statistics; otherwise its row is zero
	// (a rule on public counts and the planned sigma, or under the user
	// unit the released noisy counts). Under the entry unit, when the
	// items that pass carry less than ALSPrivateGateShare of the ratings,
	// no item step is run and the whole budget goes to the biases.
	ALSPrivateGateShare = 0.1
	// ALSPrivateUserGateShare is ALSPrivateGateShare under the user unit,
	// where the rule can only be read after the bias releases, on their
	// noisy counts: when the items that pass carry less than this share
	// of the noisy count total, no item step runs and the steps' share
	// of the budget goes to a second release of the item counts and sums
	// (alsUserFallback), so the model is the bias mode's at about the
	// whole budget. Validation parts, k = 100 (TestPrivateALSSweep with
	// DPREC_ALS_USERK=100): on MovieLens-shaped logs the steps lost to
	// the bias mode wherever they ran (MovieLens-100K at epsilon 30, 34%
	// passing: 0.9604 against 0.9458; ml-latest-small at 100, 12%: 0.8922
	// against 0.8845); on joke-shaped logs they won from 60% up
	// (exposure-biased, epsilon 3: 4.395 against 4.580) but lost at 66%
	// on the one whose factors carry little (4.179 against 4.143).
	// Before the fallback existed the steps' share was left unspent, and
	// the model was the bias mode's at 30% of epsilon (0.9808 against
	// 0.9571 on MovieLens-100K at 10). Since the fallback's item rows
	// carry the free columns (freeItemColumns) it beats the steps at 66%
	// too: MovieLens-100K at epsilon 100, 0.9261 against the steps'
	// 0.9427 (and the exposure-biased joke log at 3, 60%, loses 0.18 to
	// it); the share was raised from 0.5 to 0.8, between the 66% where
	// the steps lost twice in three and the 98% and more where they won
	// on every joke-shaped log. With the free columns in the steps too
	// (alsStepsFree), 0.5 was measured again: the steps then won at 60%
	// and 66% (exposure-biased joke logs at epsilon 3: 4.2449 against
	// 4.5781, 4.1361 against 4.1416) and lost at 66% on MovieLens-100K at
	// epsilon 100 (0.9256 against 0.9182, above its 0.9249 at 30: not
	// monotone on the real log); 0.8 was kept.
	ALSPrivateUserGateShare = 0.8
	// ALSPrivateGramWeight sets w, the weight of the shared Gram matrix in
	// each step's released vector (alsPrivateParams.gramWeight).
	ALSPrivateGramWeight = 0.25
)

// ALSPrivateBiasFraction is the share of epsilon given to the bias mode's
// releases (mean and item biases); the item steps get the rest: 0.8 up to
// epsilon 1 (where the factors carry little), 0.3 from epsilon 10 (where
// the factors carry most of what the biases do not), log-linear between.
func ALSPrivateBiasFraction(epsilon float64) float64 {
	switch {
	case epsilon <= 1:
		return 0.8
	case epsilon >= 10:
		return 0.3
	}
	return 0.8 - 0.5*math.Log10(epsilon)
}

// alsDebug, when set (tests), receives diagnostics of the item steps.
var alsDebug func(format string, args ...any)

// alsDebugExact, when set (tests), receives each user's count, terms and
// exact unprojected vector move 2c max_j |A^{-1} z_j|.
var alsDebugExact func(n, t int, du float64)

const streamALSInit, streamALSSteps, streamALSFallback = 6, 7, 10

// alsStatsWhat names the item steps' release in the report.
const alsStatsWhat = "item statistics"

// alsPrivateParams are the derived public constants of one run.
type alsPrivateParams struct {
	c      float64 // residual clip (BiasResidualClip Delta_r)
	gu, gv float64 // user and item row norm bounds
	lambda float64 // per-observation ridge of the private user solve
	// itemLambda is the per-observation ridge of the item solve (post-
	// processing of the noisy statistics; no privacy role).
	itemLambda float64
	steps      int     // released item steps T
	biasFrac   float64 // share of epsilon to the bias releases
	// terms caps the items a user's vector is added to in each step's
	// statistics (0: no cap): a user with n > terms ratings contributes
	// the terms of a public pseudo-random choice of terms of their items
	// (alsTermsOf); their vector is still solved from all n ratings.
	terms int
	// noiseRidge multiplies sigma, the ridge added to every noisy
	// item system (post-processing).
	noiseRidge float64
	// gate is the factor of the learnability rule: item i gets a factor
	// row only when n_i Gamma_u^2 / R >= gate sigma (0: every item).
	gate float64
	// wMul, exactGram: measurement hooks for tests (TestPrivateALSProbe).
	// wMul > 0 multiplies the Gram weight; exactGram solves each item
	// from its own exact (noise-free, NOT private) Gram matrix.
	wMul      float64
	exactGram bool
	// noiseOff (measurement only: not private) skips the item steps'
	// (and the user unit's covariance stage's)
	// noise and takes sigma as 0 in the ridge and the learnability rule.
	noiseOff bool
	// curve names the curve columns the fallback set (fallbackItemRows),
	// for the report.
	curve []string
	// gateSigma > 0 (measurement only) replaces sigma in the learnability
	// rule of the item solves.
	gateSigma float64
	// userGateShare is ALSPrivateUserGateShare (measurement hook).
	userGateShare float64
	// input selects the residual route (entry unit only,
	// private_als_input.go); inputBiasFrac, inputClip, inputReg (0: the
	// rule) and inputSweeps (0: DefaultALSSweeps) are its constants.
	input         bool
	inputBiasFrac float64
	inputClip     float64
	posClip       float64 // the positions stage's residual clip (alsPositionsClip)
	inputReg      float64
	inputSweeps   int
	inputGate     float64
	inputFallback float64
	inputNoCorr   bool
	// noPositions (measurement) skips the positions stage; posBias and
	// posReg (measurement) replace ALSPositionsBiasFraction and
	// ALSPositionsReg.
	noPositions     bool
	posBias, posReg float64
	posNoScale      bool
	posNoFree       bool    // measurement: the positions stage without the free columns
	posFloor        float64 // measurement: ALSPositionsRidgeFloor (< 0: none)
	quietRatio      float64 // measurement: ALSResidualQuietRatio
	quietNoise      float64 // measurement: ALSResidualQuietNoise
	inputNoFree     bool    // measurement: the residual route without the free columns
	stepsNoFree     bool    // measurement: the item steps without the free columns
	// userPosOff (measurement) skips the user unit's position columns;
	// userCols are the columns alsUserFallback released (nil: none).
	userPosOff      bool
	finalItemLambda float64 // measurement: the last step's item ridge
	userPosShare    float64 // the co-occurrence's share of the fallback's mu^2
	userPosEdge     float64 // g of the columns' rule (ALSUserPositionsEdge)
	userPosGate     float64 // the release's gate (ALSUserPositionsGate)
	userPosScale    float64 // the columns' scale (ALSUserPositionsScale)
	userCols        *userPositions
	// userCov is the user unit's covariance stage when it ran in place
	// of the item steps (private_als_cov_user.go; nil: it did not).
	userCov    *covUser
	heldOut    []bool    // user unit: users held out of the steps (alsHeldOut)
	ridgeCands []float64 // the last step's candidate item ridges (ALSRidgeCandidates)
	ridgeOff   bool      // measurement: no ridge selection
	// noCov (measurement) skips the covariance stage; covGate, covBias,
	// covFold and covTau (0: the constants) replace ALSCovGate,
	// ALSCovBiasFraction, ALSCovFoldRow and ALSCovPrior; covNoFree drops
	// its free columns.
	noCov                                           bool
	covGate, covBias, covFold, covTau, covNoiseGate float64
	covNoFree                                       bool
	covNoCut                                        bool    // measurement: no parallel-analysis edge
	covEdgeMul                                      float64 // measurement: a factor on the user unit's edge (0: 1)
}

func newALSPrivateParams(o *PrivateOptions) alsPrivateParams {
	c := BiasResidualClip * o.ratingRange()
	p := alsPrivateParams{c: c, gu: ALSPrivateUserClip, gv: c / ALSPrivateUserClip, lambda: ALSPrivateReg,
		itemLambda: ALSPrivateItemReg, steps: ALSPrivateSteps, biasFrac: ALSPrivateBiasFraction(o.Epsilon), noiseRidge: 1, gate: 1}
	if o.Unit == UnitUser {
		p.terms = o.MaxRatingsPerUser
		p.userGateShare = ALSPrivateUserGateShare
		p.userPosShare = ALSUserPositionsShare
		p.userPosEdge = ALSUserPositionsEdge
		p.userPosGate = ALSUserPositionsGate
		p.userPosScale = ALSUserPositionsScale
	} else {
		p.input = true
		p.inputBiasFrac = ALSInputBiasFraction
		p.inputClip = alsInputClip(o)
		p.posClip = alsPositionsClip(o)
		p.inputGate = ALSInputGate
		p.inputFallback = ALSInputFallbackGate
	}
	return p
}

// alsTermsRule returns k for the entry unit: the ALSPrivateTermsQuantile
// quantile of the public user counts, at least ALSPrivateMinTerms.
func alsTermsRule(by [][]int) int {
	h := map[int]int{}
	for _, es := range by {
		if len(es) > 0 {
			h[len(es)]++
		}
	}
	return alsTermsRuleHist(h)
}

// alsTermsRuleHist is alsTermsRule from the histogram of the user counts
// (count -> number of users with it; counts < 1 are ignored).
func alsTermsRuleHist(h map[int]int) int {
	var keys []int
	total := 0
	for c, n := range h {
		if c > 0 && n > 0 {
			keys = append(keys, c)
			total += n
		}
	}
	if total == 0 {
		return ALSPrivateMinTerms
	}
	slices.Sort(keys)
	// The count at index min(total-1, floor(q total)) of the sorted counts.
	at := min(total-1, int(ALSPrivateTermsQuantile*float64(total)))
	k, cum := keys[len(keys)-1], 0
	for _, c := range keys {
		if cum += h[c]; cum > at {
			k = c
			break
		}
	}
	return max(k, ALSPrivateMinTerms)
}

// ALSSensitivity returns the l2 sensitivity of one item step's released
// vector (every item's right-hand side, then the shared Gram matrix's
// upper triangle at weight w) when one rating of a user with n ratings
// changes, for the public constants of o without a terms bound (t = n;
// TrainPrivateALS bounds t by the entry rule's k) (derivation in the
// package doc):
//
//	delta_u = min(2 Gamma_u, 2 c Gamma_z/(lambda n), c/sqrt(lambda n)),  Gamma_z = sqrt(Gamma_v^2 + 1)
//	Delta_h = min(sqrt(((2c + delta_u) Gamma_u + c' delta_u)^2 + (t - 1) delta_u^2 (Gamma_u + c')^2),
//	              2 sqrt(t) Gamma_u c'),  c' = c + Gamma_u
//	Delta_G = 2 t Gamma_u min(delta_u, Gamma_u)
//	Delta   = sqrt(Delta_h^2 + w^2 Delta_G^2).
func ALSSensitivity(o *PrivateOptions, n int) float64 {
	p := newALSPrivateParams(o)
	return p.sensitivity(n)
}

func (p alsPrivateParams) sensitivity(n int) float64 {
	h, g := p.entryParts(n)
	w := p.gramWeight()
	return math.Sqrt(h*h + w*w*g*g)
}

// entryParts returns the l2 sensitivities, when one rating of a user with
// n ratings (t = min(n, terms) terms) changes, of the right-hand sides
// (all items) and of the shared Gram matrix G (package doc):
//
//	delta_u = min(2 Gamma_u, 2 c Gamma_z/(lambda n), c/sqrt(lambda n))
//	Delta_h = min(sqrt(a^2 + (t - 1) delta_u^2 (Gamma_u + c')^2), 2 sqrt(t) Gamma_u c'),
//	          a = (2c + delta_u) Gamma_u + c' delta_u, c' = c + Gamma_u
//	Delta_G = 2 t Gamma_u min(delta_u, Gamma_u).
func (p alsPrivateParams) entryParts(n int) (dh, dg float64) {
	nf := float64(n)
	tf := nf // the user's terms in the statistics
	if p.terms > 0 && n > p.terms {
		tf = float64(p.terms)
	}
	gz := math.Sqrt(p.gv*p.gv + 1)
	// The user's vector moves by at most 2 Gamma_u (both in the ball),
	// by ||(Z^T Z + lambda n I)^-1|| ||Z^T dy|| <= 2 c Gamma_z/(lambda n),
	// and by ||(Z^T Z + lambda n I)^-1 Z^T|| ||dy|| <= 2c max_s s/(s^2 +
	// lambda n) = c/sqrt(lambda n) (s the singular values of Z).
	du := min(2*p.gu, 2*p.c*gz/(p.lambda*nf), p.c/math.Sqrt(p.lambda*nf))
	cp := p.c + p.gu
	a := (2*p.c+du)*p.gu + cp*du
	stable := math.Sqrt(a*a + (tf-1)*du*du*(p.gu+cp)*(p.gu+cp))
	// Replacing the user's t right-hand side terms outright: each z x has
	// norm <= Gamma_u c', so an item's term moves by at most twice that.
	replace := 2 * math.Sqrt(tf) * p.gu * cp
	return math.Min(stable, replace), 2 * tf * p.gu * math.Min(du, p.gu)
}

// gramWeight is w, the public factor the shared Gram matrix is released
// at: ALSPrivateGramWeight c'/(2 Gamma_u sqrt(k)), k the terms bound (or
// ALSPrivateMinTerms without one), about ALSPrivateGramWeight times the
// ratio of the right-hand sides' sensitivity to G's, so that G adds about
// ALSPrivateGramWeight^2 / 2 to the squared sensitivity while its noise,
// sigma/w, stays far below its size (a sum over every term).
func (p alsPrivateParams) gramWeight() float64 {
	k := p.terms
	if k <= 0 {
		k = ALSPrivateMinTerms
	}
	w := ALSPrivateGramWeight * (p.c + p.gu) / (2 * p.gu * math.Sqrt(float64(k)))
	if p.wMul > 0 {
		w *= p.wMul
	}
	return w
}

// alsTermsOf returns, for each user, the entries whose terms enter the
// item statistics: all of them, or with p.terms > 0 and more ratings than
// that, p.terms of them chosen by a pseudo-random permutation seeded by
// the user's index only (the choice depends on public positions, never on
// values or on the noise).
func alsTermsOf(by [][]int, p alsPrivateParams) [][]int {
	if p.terms <= 0 {
		return by
	}
	out := make([][]int, len(by))
	for u, es := range by {
		if len(es) <= p.terms {
			out[u] = es
			continue
		}
		r := rand.New(rand.NewPCG(uint64(u), 0x616c737465726d73))
		sel := append([]int(nil), es...)
		r.Shuffle(len(sel), func(i, j int) { sel[i], sel[j] = sel[j], sel[i] })
		out[u] = sel[:p.terms]
	}
	return out
}

// alsUsers groups the training entries by user (positions: public).
func alsUsers(train *data.Store) [][]int {
	by := make([][]int, train.Dims[0])
	for e, u := range train.Idx[0] {
		by[u] = append(by[u], e)
	}
	return by
}

// alsItemStats runs the private user step against the public item rows V
// (row-major Dims[1] x R) and returns one step's released vector: every
// item's right-hand side h_i = sum_u z_ui x_u over the users whose terms
// include item i (item i at [i*R, (i+1)*R)), then w times the upper
// triangle (row-major, R(R+1)/2 entries) of the shared Gram matrix G =
// sum_u t_u x_u x_u^T (t_u the user's number of terms, w =
// p.gramWeight()). x_u is the user's row (its bias excluded) and z_ui =
// y_ui - b_u, y_ui = clip(clamp(r_ui) - mu - beta_i, -c, c); the user
// vector (row, bias) is the ridge solution with penalty lambda n_u,
// projected onto the ball of radius Gamma_u. Item i's Gram matrix is then
// estimated as (t_i / sum_j t_j) G (alsPrivateStepsAll), so no item's own
// Gram matrix is released.
func alsItemStats(train *data.Store, by [][]int, mu float64, itemBias, V []float64, R int, p alsPrivateParams, o *PrivateOptions) []float64 {
	return alsItemStatsY(train, by, alsTermsOf(by, p), alsResiduals(train, mu, itemBias, p, o), V, R, p, nil)
}

// alsResiduals returns y_e = clip(clamp(r_e) - mu - beta_i, -c, c) for
// every training entry e (store order). They depend on the released mean
// and item biases only, which the item steps do not change, so
// alsPrivateStepsAll computes them once for all steps.
func alsResiduals(train *data.Store, mu float64, itemBias []float64, p alsPrivateParams, o *PrivateOptions) []float64 {
	ys := make([]float64, len(train.Val))
	for e, r := range train.Val {
		ys[e] = alsResidual(r, mu, itemBias[train.Idx[1][e]], p, o)
	}
	return ys
}

// alsItemStatsY is alsItemStats with the residuals y_e given (alsResiduals).
//
// itemGram, when not nil (measurement only: not private), receives every
// item's exact Gram matrix sum_u x_u x_u^T (R x R at [i*R*R, (i+1)*R*R)).
func alsItemStatsY(train *data.Store, by, terms [][]int, ys, V []float64, R int, p alsPrivateParams, itemGram []float64) []float64 {
	T := R * (R + 1) / 2
	stats := make([]float64, train.Dims[1]*R+T)
	gram := stats[train.Dims[1]*R:]
	n1 := R + 1
	ata := make([]float64, n1*n1)
	atb := make([]float64, n1)
	x := make([]float64, n1)
	uu := make([]float64, T)
	for user, es := range by {
		if len(es) == 0 {
			continue
		}
		clear(ata)
		clear(atb)
		for _, e := range es {
			// The regressor is (v_i, 1); products with the constant 1 are
			// exact, so they are written as the factor itself.
			i := train.Idx[1][e]
			v := V[int(i)*R : int(i+1)*R]
			y := ys[e]
			for a, va := range v {
				atb[a] += y * va
				row := ata[a*n1 : a*n1+n1]
				for b := a; b < R; b++ {
					row[b] += va * v[b]
				}
				row[R] += va
			}
			atb[R] += y
			ata[R*n1+R]++
		}
		reg := p.lambda * float64(len(es))
		for a := 0; a < n1; a++ {
			ata[a*n1+a] += reg
			for b := 0; b < a; b++ {
				ata[a*n1+b] = ata[b*n1+a]
			}
		}
		copy(x, atb)
		if !cholSolve(ata, x, n1) {
			clear(x) // cannot happen: the system is positive definite
		}
		if alsDebugExact != nil {
			// ata now holds U; max_j |A^{-1} z_j| over the user's items.
			worst := 0.0
			zj := make([]float64, n1)
			for _, e := range es {
				i := train.Idx[1][e]
				copy(zj, V[int(i)*R:int(i+1)*R])
				zj[R] = 1
				forwardSolveUpperT(ata, zj, n1)
				backSolveUpper(ata, zj, n1)
				var q float64
				for _, v := range zj {
					q += v * v
				}
				worst = max(worst, math.Sqrt(q))
			}
			alsDebugExact(len(es), len(terms[user]), 2*p.c*worst)
		}
		projectBall(x, p.gu)
		bu := x[R]
		u := x[:R]
		// The user's Gram term, the same for each of their items.
		k := 0
		for a := 0; a < R; a++ {
			for b := a; b < R; b++ {
				uu[k] = u[a] * u[b]
				k++
			}
		}
		tu := float64(len(terms[user]))
		for k, v := range uu {
			gram[k] += tu * v
		}
		for _, e := range terms[user] {
			i := int(train.Idx[1][e])
			z := ys[e] - bu
			rhs := stats[i*R : (i+1)*R]
			for a, ua := range u {
				rhs[a] += z * ua
			}
			if itemGram != nil {
				gi := itemGram[i*R*R : (i+1)*R*R]
				for a, ua := range u {
					for b, ub := range u {
						gi[a*R+b] += ua * ub
					}
				}
			}
		}
	}
	w := p.gramWeight()
	for k := range gram {
		gram[k] *= w
	}
	return stats
}

func alsResidual(r, mu, bi float64, p alsPrivateParams, o *PrivateOptions) float64 {
	return clampValue(clampValue(r, o.RatingMin, o.RatingMax)-mu-bi, -p.c, p.c)
}

// projectBall scales x onto the ball of radius g if it lies outside.
func projectBall(x []float64, g float64) {
	var s float64
	for _, v := range x {
		s += v * v
	}
	if s > g*g {
		f := g / math.Sqrt(s)
		for i := range x {
			x[i] *= f
		}
	}
}

// TrainPrivateALS fits m (CP with biases, order 2 or 3, trained as the
// user x item matrix) by private ALS and returns the privacy report.
//
// Under the entry unit it first releases the rating spread at
// ALSSpreadFraction of epsilon (private_als_spread.go), which sets the
// width its rules take for the range; then, on what is left of epsilon, it
// takes the covariance stage on a dense log (many users a pair of items at
// a noise the gate allows: private_als_cov.go), else the positions stage
// when the positions have structure and the
// residual route is in neither of its regimes (many ratings an item at
// small noise: alsResidualRegime), or else the residual route
// (private_als_input.go,
// package doc "Private ALS, entry unit"): ALSInputBiasFraction of epsilon
// on the bias mode's release, the rest on every rating's clipped residual
// from it with Laplace noise, then ALS of m's rank on the noisy residuals
// (post-processing) whose item rows and bias corrections are released;
// rows of items below the learnability rule's count are zero, and when
// too few ratings lie on items that pass ALSInputFallbackGate's rule the
// bias mode takes the whole budget and every row is zero. The release is
// pure (delta 0 is spent).
//
// Under the user unit (the item-statistics route) it spends ALSPrivateBiasFraction(epsilon) of epsilon on the bias mode
// (TrainPrivateBias) and the rest on ALSPrivateSteps item steps, each
// releasing every item's right-hand side and one shared Gram matrix with
// Gaussian noise of the same sigma (the smallest for which all releases
// compose within (epsilon, delta) by the tightest accounting); delta must
// be > 0. After each step item i's row is the ridge solution of its share
// of the noisy Gram matrix and its noisy right-hand side (penalty
// ALSPrivateItemReg t_i + sigma), projected onto the ball of radius
// Gamma_v, or zero when its count fails the learnability rule (package
// doc, "Private ALS"); the last step's ridge per term is chosen among
// ALSRidgeCandidates on held-out users, who are in no step
// (private_als_ridge.go; ALSRidgeShare of the steps' and the selection's
// mu^2 together). When the items whose noisy counts pass the rule
// carry less than ALSPrivateUserGateShare of the noisy count total, no
// step runs and their share of the budget goes to a second release of
// the item counts and sums, pooled with the bias mode's (alsUserFallback;
// the same privacy loss as the steps). User rows and biases are zero in m
// (not released).
//
// Under the entry unit n_i and the user counts are public. Under the user
// unit (add or remove one user; train re-indexed onto a public domain and
// bounded as for TrainPrivateBias, m's user mode of any size) n_i is the
// bias mode's noisy count and the steps' sensitivity is that of one
// user's whole contribution (ALSUserSensitivity); the bias mode's scalars
// follow PrivateOptions.Scalars as in TrainPrivateBias.
func TrainPrivateALS(train *data.Store, m *decomposition.Model, opts *PrivateOptions) (*perturb.Report, error) {
	return trainPrivateALS(train, m, opts, nil)
}

// trainPrivateALS is TrainPrivateALS with the public constants adjusted by
// tweak (nil: the rules of newALSPrivateParams).
func trainPrivateALS(train *data.Store, m *decomposition.Model, opts *PrivateOptions, tweak func(*alsPrivateParams)) (*perturb.Report, error) {
	o, err := resolveALS(train, m, opts)
	if err != nil {
		return nil, err
	}
	src := storeALSSource{storeBiasSource{train}}
	if o.Unit != UnitEntry {
		return trainPrivateALSResolved(train, src, m, o, tweak)
	}
	// The rating spread the entry unit's rules take
	// (private_als_spread.go), then the route at the rest of epsilon.
	spread, err := releaseALSSpread(src, &o)
	if err != nil {
		return nil, err
	}
	spread.apply(&o)
	rep, err := trainPrivateALSResolved(train, src, m, o, tweak)
	if err != nil {
		return nil, err
	}
	spread.report(rep, &o)
	return rep, nil
}

// trainPrivateALSResolved is trainPrivateALS on resolved options (at the
// entry unit, after the spread release).
func trainPrivateALSResolved(train *data.Store, src storeALSSource, m *decomposition.Model, o PrivateOptions, tweak func(*alsPrivateParams)) (*perturb.Report, error) {
	R := m.Ranks[0]
	by := alsUsers(train)
	p := newALSPrivateParams(&o)
	if o.Unit == UnitEntry {
		p.terms = alsTermsRule(by)
	}
	if tweak != nil {
		tweak(&p)
	}
	if o.Unit == UnitEntry && p.input {
		// The positions stage when the positions have structure
		// (private_als_positions.go); otherwise the residual route, or
		// its fallback to the bias mode (private_als_input.go).
		note := "positions stage: off (ALSPositionsOff)"
		if p.noPositions {
			note = "positions stage: off (measurement)"
		}
		counts := itemCounts(train)
		var covNote string
		if o.ALSPositions != ALSPositionsOff && !p.noPositions && !p.noCov {
			cp := planCovariance(train, by)
			ok, why := covAdmit(&o, p, cp)
			if ok {
				return trainALSCovariance(train, by, m, &o, p, cp)
			}
			covNote = why
		}
		if rich, why := alsResidualRegime(&o, p, R, counts); rich && o.ALSPositions != ALSPositionsOff && !p.noPositions {
			note = why
		} else if o.ALSPositions != ALSPositionsOff && !p.noPositions {
			pe := planPositions(train, positionsRank(R, p))
			if pe.pass() {
				rep, err := trainALSPositions(train, by, m, &o, p, pe)
				var shrunk *positionsShrunk
				if !errors.As(err, &shrunk) {
					if err == nil && covNote != "" {
						rep.Notes = append(rep.Notes, covNote)
					}
					return rep, err
				}
				note = shrunk.Error()
			} else {
				note = fmt.Sprintf("positions stage: not run (spectral gate: the largest non-trivial singular value of the normalised position matrix, %.4g, is below %g x %.4g, that of the same degrees with shuffled items: the positions carry no structure to use)", pe.Top, ALSPositionsGate, pe.Floor)
			}
		}
		rep, err := trainALSInputRoute(src, counts, m, &o, p)
		if err == nil {
			rep.Notes = append(rep.Notes, note)
			if covNote != "" {
				rep.Notes = append(rep.Notes, covNote)
			}
		}
		return rep, err
	}
	sens, deriv := alsStepSensitivity(&o, p, by)
	// Under the entry unit the item counts are public: when, at the sigma
	// the planned split gives, the items whose counts pass the
	// learnability rule carry too few of the ratings, the item steps are
	// skipped and the biases take the whole budget.
	var gateNote string
	if o.Unit == UnitEntry && p.gate > 0 && p.steps > 0 {
		sigma0, err := alsPlannedSigma(&o, p, sens)
		if err != nil {
			return nil, err
		}
		share := alsGateShare(train, p, R, sigma0)
		gateNote = fmt.Sprintf("learnability rule: at the planned item-step sigma %.4g, items with n_i Gamma_u^2 / R >= %g sigma carry %.1f%% of the ratings", sigma0, p.gate, 100*share)
		if share < ALSPrivateGateShare {
			gateNote += fmt.Sprintf(" (below %g%%): no item step is run, the item rows are the free columns and the curve columns (below) and the biases take the whole budget", 100*ALSPrivateGateShare)
			p.steps, p.biasFrac = 0, 1
		}
	}
	bo := alsBiasOptions(&o, p)
	bias, err := fitPrivateBias(train, m, &bo)
	if err != nil {
		return nil, fmt.Errorf("completion: private ALS: %w", err)
	}
	var acc *perturb.Accountant
	var sigma float64
	if p.steps > 0 {
		if sigma, acc, err = planALSSteps(&o, bias.acc.Releases(), sens, deriv, p.steps); err != nil {
			return nil, err
		}
	}
	// The fallback's plan: the steps alone (it spends their whole share).
	fallbackSigma := sigma
	if o.Unit == UnitUser && p.steps > 0 && !p.ridgeOff && p.finalItemLambda == 0 && len(ALSRidgeCandidates()) >= 2 {
		// The last step's item ridge, chosen on held-out users
		// (private_als_ridge.go): they leave the steps, and the selection
		// takes ALSRidgeShare of the steps' and its own mu^2 together. The
		// steps' sigma with it is the one the learnability rule below and
		// the steps use.
		p.heldOut, p.ridgeCands = alsHeldOut(train, by), ALSRidgeCandidates()
		J := len(p.ridgeCands)
		sel := func(s float64) perturb.Release {
			return alsRidgeRelease(J, p.c, alsRidgeSigma(J, p.c, s, sens, p.steps))
		}
		if sigma, acc, err = planALSStepsWith(&o, bias.acc.Releases(), sens, deriv, p.steps, sel); err != nil {
			return nil, err
		}
	}
	var covNote string
	if o.Unit == UnitUser && p.steps > 0 && !p.noCov && o.ALSPositions != ALSPositionsOff {
		// The covariance stage, when its gates pass on the released
		// counts and users: it spends the steps' share instead of them
		// (private_als_cov_user.go).
		cu, why, err := alsUserCovariance(train, m, &o, p, bias, sens, fallbackSigma)
		if err != nil {
			return nil, err
		}
		if cu != nil {
			p.userCov = cu
			p.steps, acc = 0, cu.acc
			p.heldOut, p.ridgeCands = nil, nil
		} else {
			covNote = why
		}
	}
	if o.Unit == UnitUser && p.gate > 0 && p.steps > 0 {
		// Under the user unit the counts are private, but the bias mode
		// has just released noisy ones: the same rule on them, after the
		// fact. When it fails, the steps' share of the budget goes to a
		// second release of the item counts and sums (alsUserFallback).
		var pass, all float64
		for _, n := range bias.counts {
			n = math.Max(n, 0)
			all += n
			if alsLearnable(n, p, R, sigma) {
				pass += n
			}
		}
		share := 0.0
		if all > 0 {
			share = pass / all
		}
		gateNote = fmt.Sprintf("learnability rule: at the item-step sigma %.4g, items whose released noisy counts pass n_i Gamma_u^2 / R >= %g sigma carry %.1f%% of the noisy count total", sigma, p.gate, 100*share)
		if share < p.userGateShare {
			fb, note, up, err := alsUserFallback(train, m, &o, p, bias, sens, fallbackSigma)
			if err != nil {
				return nil, err
			}
			p.userCols = up
			rows := "the free columns and the curve columns (below)"
			if up != nil && up.K > 0 {
				rows = "the free columns, the position columns and the curve columns (below)"
			}
			gateNote += fmt.Sprintf(" (below %g%%): no item step is run and the item rows are %s; %s", 100*p.userGateShare, rows, note)
			p.steps, acc = 0, fb
			p.heldOut, p.ridgeCands = nil, nil
		}
	}
	var steps func(*perturb.Gaussian) []float64
	var ridgeNote string
	var ridgeErr error
	if p.steps > 0 {
		free := alsStepsFree(R, p)
		F := R - free
		mv, err := decomposition.NewModel(decomposition.CP, m.Dims, []int{F}, true)
		if err != nil {
			return nil, err
		}
		steps = func(g *perturb.Gaussian) []float64 {
			mv.Mean = m.Mean
			copy(mv.Bias[1], m.Bias[1])
			Vs := alsPrivateStepsAll(train, by, mv, bias.counts, g, p, &o)
			orig := m.Factors[1]
			defer func() { m.Factors[1] = orig }()
			rows := make([][]float64, len(Vs))
			for j, V := range Vs {
				rows[j] = make([]float64, len(m.Factors[1]))
				for i := 0; i < m.Dims[1]; i++ {
					copy(rows[j][i*R:i*R+F], V[i*F:(i+1)*F])
				}
				if free > 0 {
					// The free columns follow (freeItemColumnsAt).
					m.Factors[1] = rows[j]
					freeItemColumnsAt(m, &o, bias.releasedCounts(), F)
				}
			}
			best := 0
			if len(rows) > 1 {
				pen := decomposition.FoldPenalties{Row: ALSPrivateFoldRow, PerRating: p.lambda, Bucket: BiasBucketPenalty}
				stat, _, err := heldOutLossDiffs(train, by, p.heldOut, m, rows, &o, pen, ALSRidgeClip*p.c*p.c)
				if err != nil {
					ridgeErr = err
					return rows[0]
				}
				m.Factors[1] = orig
				J := len(rows)
				if best, ridgeNote, err = chooseRidge(stat, p.ridgeCands, alsRidgeSigma(J, p.c, g.Sigma(), sens, p.steps), &o, p.c); err != nil {
					ridgeErr = err
					return rows[0]
				}
			}
			return rows[best]
		}
	}
	rep, err := alsRelease(&o, p, &bo, m, bias, acc, sigma, sens, steps, gateNote, "")
	if err == nil && ridgeErr != nil {
		return nil, ridgeErr
	}
	if err == nil && ridgeNote != "" {
		rep.Notes = append(rep.Notes, ridgeNote)
	}
	if err == nil && covNote != "" {
		rep.Notes = append(rep.Notes, covNote)
	}
	return rep, err
}

// ridgeRule says, for the report's constants, how the last step's ridge
// was set.
func ridgeRule(p alsPrivateParams) string {
	if len(p.ridgeCands) < 2 || p.steps == 0 {
		return ""
	}
	return fmt.Sprintf(", the last step's chosen among %v on held-out users (the item ridge note)", p.ridgeCands)
}

// alsRidgeSigma is the ridge selection's noise at J candidates and
// residual clip c when the T item steps have noise sigma at sensitivity
// sens: ALSRidgeShare of the two's mu^2 (Gaussian composition) to the
// selection.
func alsRidgeSigma(J int, c, sigma, sens float64, T int) float64 {
	return alsRidgeSensitivity(J, c) * sigma / (sens * math.Sqrt(float64(T))) * math.Sqrt((1-ALSRidgeShare)/ALSRidgeShare)
}

// alsBiasOptions are the options of the item-statistics route's bias
// releases (and of the residual route's fallback): p.biasFrac of epsilon,
// the default mean share, Laplace and pure under the entry unit, Gaussian
// under the user unit.
func alsBiasOptions(o *PrivateOptions, p alsPrivateParams) PrivateOptions {
	bo := *o
	bo.Epsilon = p.biasFrac * o.Epsilon
	bo.MeanFraction = 0
	if o.Unit == UnitEntry {
		bo.Delta, bo.Mechanism = 0, perturb.MechLaplace
	} else {
		bo.Mechanism = perturb.MechGaussian
	}
	return bo
}

// alsRelease finishes the item-statistics route after the bias releases
// (bias, with options bo) and the planning of the steps (acc and sigma
// when p.steps > 0; steps runs them): it admits the budget, sets the item
// rows and builds the report. The residual route's fallback runs it with
// no step.
func alsRelease(o *PrivateOptions, p alsPrivateParams, bo *PrivateOptions, m *decomposition.Model, bias *biasFit, acc *perturb.Accountant, sigma, sens float64, steps func(*perturb.Gaussian) []float64, gateNote, inputNote string) (*perturb.Report, error) {
	R := m.Ranks[0]
	if acc == nil {
		acc = &bias.acc
	}
	eps, delta, used, err := admit(o, acc)
	if err != nil {
		return nil, fmt.Errorf("completion: private ALS: %w", err)
	}
	clear(m.Factors[1])
	switch {
	case p.userCov != nil:
		p.userCov.apply(m, bias.releasedCounts())
	case p.steps == 0:
		p.curve = fallbackItemRows(m, o, bias.releasedCounts(), p.userCols)
	}
	if p.steps > 0 {
		g, err := perturb.NewGaussianSigma(sens, sigma)
		if err != nil {
			return nil, fmt.Errorf("completion: private ALS: %w", err)
		}
		copy(m.Factors[1], steps(g))
	}
	clear(m.Factors[0])
	if m.Order() == 3 {
		for i := range m.Factors[2] {
			m.Factors[2][i] = 1
		}
	}
	rep := baseReport(o, "als", acc, eps, delta, used)
	if p.userCols != nil && p.userCols.unbounded {
		rep.Relation = o.relationCooccurrence()
	}
	rep.Billboard = true
	rep.ItemCounts, rep.ItemCountsSD = bias.releasedCounts(), bias.countsSD()
	if p.steps > 0 {
		// Users fold in with the training's user solve; without item
		// steps the model is the bias mode's and folds in as it does,
		// but for the user unit's fallback ridge on the row and bias.
		rep.FoldPerRating = p.lambda
	} else if p.userCov != nil {
		rep.FoldRow = p.userCov.foldRow
	} else if o.Unit == UnitUser {
		rep.FoldRow = ALSUserFallbackFoldRow
	}
	publicClamp(o, m, rep)
	rep.Covered = []string{"global mean", "item biases", "B (item rows)", "C (time rows: constant ones, data-independent)"}
	if o.Unit == UnitUser {
		// The bias notes release the noisy numbers of users and ratings;
		// the item ridge and the learnability rule use the noisy item
		// counts.
		counts := "item counts (noisy; used by the bias estimate, the item solve and the learnability rule, and saved as the report's item_counts for rankings)"
		if p.userCov != nil {
			counts = "item counts (noisy; used by the bias estimate, the covariance stage's gates, null and free columns, and saved as the report's item_counts for rankings)"
		}
		rep.Covered = append(rep.Covered, "number of users", "number of ratings", counts)
	}
	if p.userCov != nil {
		rep.Covered = append(rep.Covered, "residual spread (the covariance stage's s^, stated in its note)")
	}
	rest := "the Gaussian item steps"
	if p.steps > 0 && len(p.ridgeCands) >= 2 {
		rest = fmt.Sprintf("the Gaussian item steps and the item ridge's selection (%g of their mu^2 together)", ALSRidgeShare)
	}
	if p.steps == 0 && p.biasFrac < 1 {
		rest = "the second release of the item counts and sums (no item step ran)"
		if p.userCov != nil {
			rest = "the covariance stage's releases of the residual spread and of (M/c^2, W) (no item step ran)"
		} else if p.userCols != nil {
			rest = fmt.Sprintf("the second release of the item counts and sums and the release of the users' item co-occurrence (no item step ran; %g of the share's mu^2 to the co-occurrence, its gate: the noise's spectral edge 2 sigma sqrt(I) at most %g times the released number of users)", p.userPosShare, p.userPosGate)
		}
	}
	fold := fmt.Sprintf("with the training's per-rating ridge %g plus %g", p.lambda, ALSPrivateFoldRow)
	if p.userCov != nil {
		fold = fmt.Sprintf("with the bias mode's penalties but a ridge of %.4g = %g s^2 on the row and bias, s the covariance stage's (no item step ran; ALSCovFoldRow)", rep.FoldRow, covFoldRow(p))
		rep.Notes = append(rep.Notes, p.userCov.note(o, p, R))
	} else if p.steps == 0 {
		fold = "with the bias mode's penalties (no item step ran)"
		if o.Unit == UnitUser {
			fold = fmt.Sprintf("with the bias mode's penalties but a fixed ridge of %g on the row and bias (no item step ran; ALSUserFallbackFoldRow)", ALSUserFallbackFoldRow)
		}
		if R >= 1 {
			rep.Notes = append(rep.Notes, freeColumnsNote(o, R, p.userCols, p.curve))
		}
		if p.userCols != nil {
			rep.Notes = append(rep.Notes, p.userCols.note())
		}
	}
	rep.Notes = append(rep.Notes,
		fmt.Sprintf("not released: user rows and user biases (zero in the model); each user solves them, and their biases on the time buckets of their own ratings, at prediction time from the released item side and their own ratings %s (billboard model, joint DP)", fold))
	if p.steps > 0 {
		rep.Notes = append(rep.Notes,
			fmt.Sprintf("item steps: %d, each releasing every item's Gram matrix (upper triangle) and right-hand side with Gaussian noise sigma %.4g at l2 sensitivity %.4g (package doc, Sensitivities)%s", p.steps, sigma, sens, stepsFreeNote(R, p)),
			fastNoiseNote("item-step"))
	}
	if gateNote != "" {
		rep.Notes = append(rep.Notes, gateNote)
	}
	if inputNote != "" {
		rep.Notes = append(rep.Notes, inputNote)
	}
	constants := fmt.Sprintf("public constants and their rules: residual clip c = (r_max - r_min)/3 = %g; user vector norm <= Gamma_u = %g; item row norm <= Gamma_v = c/Gamma_u = %g; user-solve ridge %g per observation; item-solve ridge %g per term plus %g sigma (post-processing; each item's Gram matrix is its share t_i/sum t_j of the released shared one)%s; at most k = %d terms a user (%s); %d item steps; items learnt when n_i Gamma_u^2 / R >= %g sigma, else zero rows%s; rank %d", p.c, p.gu, p.gv, p.lambda, p.itemLambda, p.noiseRidge, ridgeRule(p), p.terms, alsTermsSource(o), p.steps, p.gate, weightedTermsNote(o), R)
	if p.userCov != nil {
		constants = fmt.Sprintf("public constants and their rules: the covariance stage's (its note above: ALSCovGate, ALSCovUserCoverage, ALSCovUserNoiseGate, ALSCovMaxItems, ALSCovMaxPairs, ALSCovUserMaxNull, ALSCovPrior, ALSCovFoldRow, ALSCovUserSpreadShare, the clip rule covUserClip, the spread rule with ALSSpreadMargin, ALSSpreadFloor and ALSSpreadZ); the item steps' constants do not apply (none ran); rank %d", R)
	}
	rep.Notes = append(rep.Notes, constants,
		fmt.Sprintf("epsilon: %g%% of it calibrates the bias releases (%s; rule: 80%% up to epsilon 1, 30%% from 10, log-linear between, all of it when no item step runs at the entry unit, whose epsilon here is what the rating spread's release leaves); %s take the rest under %s composition", 100*p.biasFrac, bo.Mechanism, rest, used))
	rep.Notes = append(rep.Notes, bias.notes...)
	return rep, nil
}

// alsUserFallback spends the item steps' share of the budget, when the
// learnability rule fails under the user unit, on a second release of the
// item counts and the item sums of clipped residuals about the released
// mean, pools each with the bias mode's release of it by inverse variance
// and refits the item biases from the pooled values (post-processing).
// The choice depends on released values only (the noisy counts), and both
// branches have the same privacy loss: T Gaussian steps of l2 sensitivity
// Delta and noise sigma compose, under any accounting exact for the
// Gaussian mechanism, as one Gaussian of noise multiplier sigma/(Delta
// sqrt(T)) (their privacy loss is Gaussian with mu = sqrt(T) Delta/sigma;
// Dong, Roth and Su 2022, Corollary 3.3). The second release is one
// Gaussian of the vector (a n_i, S_i) over the items, a = c
// sqrt(share_counts/share_sums) weighting the counts as the bias mode's
// budget shares do; n_i and S_i weighted as the bias releases'
// (UserContributionWeight, Gaussian rule), one user moves m_u counts by
// w_u and m_u sums by at most w_u c, w_u^2 m_u <= k, so its l2
// sensitivity is sqrt(k (a^2 + c^2)), and its noise
// sigma_f = sqrt(k (a^2 + c^2)) sigma/(Delta sqrt(T)), raised if o's
// accounting needs more to fit the budget. It returns the accountant of
// the bias releases and this one, and a note for the report.
func alsUserFallback(train *data.Store, m *decomposition.Model, o *PrivateOptions, p alsPrivateParams, bias *biasFit, sens, sigma float64) (*perturb.Accountant, string, *userPositions, error) {
	const what = alsFallbackWhat
	a, l2 := alsFallbackWeight(o)
	c := BiasResidualClip * o.ratingRange()
	deriv := fmt.Sprintf("the user's m_u items, each count moving by w_u a (a = %.4g) and each sum by w_u times a term in [-c, c], c = %g, w_u = min(1, sqrt(k/m_u)), k = %d: l2 w_u sqrt(m_u (a^2 + c^2)) <= sqrt(k (a^2 + c^2)); noise multiplier that of the %d planned item steps composed, sigma/(Delta sqrt(T)) (completion doc, Sensitivities, User unit)", a, c, o.MaxRatingsPerUser, p.steps)
	pos := userPositionsRun(m.Ranks[0], len(bias.sums), p)
	f := 0.0 // the co-occurrence release's share of the steps' mu^2
	if pos && o.Accounting == perturb.Advanced {
		// Defensive (advanced composition admits pure releases only, and
		// the user unit's are Gaussian, so it refuses the bias releases
		// first): it is not exact for Gaussians, the gate's two branches
		// would be planned at different noise, and a choice between them
		// on a released value would need a privacy filter's argument.
		// Basic composition (adaptive by filters) and the Gaussian-exact
		// accountings need none.
		pos = false
	}
	if pos {
		f = p.userPosShare
	}
	const posDeriv = "removing a user removes p_u p_u^T, p_u = 1/sqrt(n_u) on each item the user rated (at most ALSUserPositionsMaxPerUser, a subset that depends on the user's own items and a seed only): its upper triangle has squared norm (n_u + 1)/(2 n_u) <= 1 whatever n_u is (completion doc, Sensitivities, Private ALS, user unit: the position columns)"
	// z is the noise multiplier of the whole share as one release; the
	// counts and sums get z/sqrt(1 - f), the co-occurrence z/sqrt(f).
	accWith := func(z float64) *perturb.Accountant {
		var acc perturb.Accountant
		for _, r := range bias.acc.Releases() {
			_ = acc.Add(r, r.Count)
		}
		if f < 1 {
			_ = acc.Add(perturb.Release{What: what, Mechanism: perturb.MechGaussian, SensitivityNorm: "l2", Sensitivity: l2, Derivation: deriv, Scale: l2 * z / math.Sqrt(1-f), Calibration: "sigma"}, 1)
		}
		if f > 0 {
			_ = acc.Add(perturb.Release{What: alsUserPosWhat, Mechanism: perturb.MechGaussian, SensitivityNorm: "l2", Sensitivity: 1, Derivation: posDeriv, Scale: z / math.Sqrt(f), Calibration: "sigma"}, 1)
		}
		return &acc
	}
	plan := func() (float64, error) {
		return planShare(o, sigma/(sens*math.Sqrt(float64(p.steps))), accWith)
	}
	z, err := plan()
	if err != nil {
		return nil, "", nil, err
	}
	var gate string
	if f > 0 {
		// The gate, on public values and the released number of users:
		// whether the noise's spectral edge leaves room for eigenvalues
		// of the size the users' mass can give (userPositionsGate).
		var ok bool
		if ok, gate = userPositionsGate(z/math.Sqrt(f), len(bias.sums), bias.noisyUsers, p.userPosGate); !ok {
			f = 0
			if z, err = plan(); err != nil {
				return nil, "", nil, err
			}
		}
	}
	var up *userPositions
	if f > 0 {
		if up, err = userPositionColumns(train, o, m.Ranks[0], z/math.Sqrt(f), p.userPosEdge, p.userPosScale); err != nil {
			return nil, "", nil, err
		}
	}
	s := l2 * z / math.Sqrt(1-f)
	g, err := perturb.NewGaussianSigma(l2, s)
	if err != nil {
		return nil, "", nil, fmt.Errorf("completion: private ALS: %w", err)
	}
	I := len(bias.sums)
	vec, err := alsFallbackStats(train, o, bias.mu, I)
	if err != nil {
		return nil, "", nil, err
	}
	g.AddTo(vec, rand.New(o.source(streamALSFallback)))
	o.observe(what, vec, nil)
	pool := func(x1, v1, x2, v2 float64) float64 { return (x1*v2 + x2*v1) / (v1 + v2) }
	vs, vc := s*s, s*s/(a*a)
	sums := make([]float64, I)
	for i := range I {
		sums[i] = pool(bias.sums[i], bias.itemsVar, vec[I+i], vs)
		bias.counts[i] = math.Max(pool(bias.rawCounts[i], bias.countVar, vec[i]/a, vc), 0)
	}
	also := ""
	if f > 0 {
		also = fmt.Sprintf(" and, %g of it (of mu^2 under Gaussian composition; ALSUserPositionsShare), on the release of the users' item co-occurrence (the position columns, below)", f)
	}
	note := fmt.Sprintf("the steps' share of epsilon is spent instead on a second release of the item counts and sums%s (Gaussian sigma %.4g at l2 sensitivity %.4g; count noise sd %.4g against the first release's %.4g, sum noise sd %.4g against %.4g), each pooled with the first by inverse variance, and the item biases are refitted from the pooled values", also, s, l2, math.Sqrt(vc), math.Sqrt(bias.countVar), s, math.Sqrt(bias.itemsVar))
	bias.itemsVar = bias.itemsVar * vs / (bias.itemsVar + vs)
	bias.countVar = bias.countVar * vc / (bias.countVar + vc)
	bias.notes = slices.DeleteFunc(bias.notes, func(n string) bool { return strings.HasPrefix(n, itemBiasNote) })
	bias.setItemBiases(m, bias.mu, sums, bias.countVar)
	if gate != "" {
		note += "; " + gate
	} else if m.Ranks[0] > ALSFreeColumns && len(bias.sums) > ALSUserPositionsMaxItems {
		note += fmt.Sprintf("; the users' item co-occurrence is not released (%d items, above ALSUserPositionsMaxItems = %d)", len(bias.sums), ALSUserPositionsMaxItems)
	}
	return accWith(z), note, up, nil
}

// planShare returns the smallest noise multiplier z, from start up in
// steps of 1%, at which the accountant accWith(z) (the bias releases and
// what spends the item steps' share at multiplier z) fits o's budget:
// start is the steps' own, sigma/(Delta sqrt(T)), so a branch that spends
// the share instead of the steps has no more privacy loss than they.
func planShare(o *PrivateOptions, start float64, accWith func(z float64) *perturb.Accountant) (float64, error) {
	budget := perturb.Budget{Epsilon: o.Epsilon, Delta: o.Delta}
	z := start
	for !budget.Fits(accWith(z), o.Accounting) {
		if z *= 1.01; math.IsInf(z, 0) {
			return 0, fmt.Errorf("completion: private ALS: %w: no noise fits epsilon %v, delta %v", perturb.ErrBudget, o.Epsilon, o.Delta)
		}
	}
	return z, nil
}

// alsFallbackWhat names alsUserFallback's release in the report.
const alsFallbackWhat = "per-item rating counts (weighted) and sums of the clipped residuals r - mu~ (second release, the item steps' share)"

// alsFallbackWeight returns a, the weight of the counts in
// alsUserFallback's release, and the release's l2 sensitivity
// sqrt(k (a^2 + c^2)).
func alsFallbackWeight(o *PrivateOptions) (a, l2 float64) {
	c := BiasResidualClip * o.ratingRange()
	a = c * math.Sqrt(userShareCounts/userShareSums)
	return a, math.Sqrt(float64(o.MaxRatingsPerUser) * (a*a + c*c))
}

// alsFallbackStats returns the vector alsUserFallback releases before its
// noise: a n_i for each of the I items, then the item sums of residuals
// about mu, both weighted as the bias releases' (UserContributionWeight
// under Gaussian noise, over o.Unbounded when set).
func alsFallbackStats(train *data.Store, o *PrivateOptions, mu float64, I int) ([]float64, error) {
	a, _ := alsFallbackWeight(o)
	gauss := *o
	gauss.Mechanism = perturb.MechGaussian
	ws, w, err := weightedSource(train, &gauss)
	if err != nil {
		return nil, err
	}
	vec := make([]float64, 2*I)
	for i, c := range userWeightedCounts(ws, w) {
		vec[i] = a * c
	}
	copy(vec[I:], userWeightedResidualSums(ws, w, o, mu))
	return vec, nil
}

// alsTermsSource says where k came from, for the report.
func alsTermsSource(o *PrivateOptions) string {
	if o.Unit == UnitUser {
		return "the contribution bound"
	}
	return fmt.Sprintf("the %g quantile of the public user counts, at least %d", ALSPrivateTermsQuantile, ALSPrivateMinTerms)
}

// alsPlannedSigma is the item steps' sigma planned before the bias
// releases run, with the bias releases stood in for by one Laplace release
// of their total epsilon (entry unit: pure). It only feeds the
// learnability rule; the released sigma is planned after the real bias
// releases (planALSSteps).
func alsPlannedSigma(o *PrivateOptions, p alsPrivateParams, sens float64) (float64, error) {
	lap, err := perturb.NewLaplace(1, p.biasFrac*o.Epsilon)
	if err != nil {
		return 0, fmt.Errorf("completion: private ALS: %w", err)
	}
	r := lap.Release("bias releases (planning)")
	r.Count = 1
	sigma, _, err := planALSSteps(o, []perturb.Release{r}, sens, "planning", p.steps)
	return sigma, err
}

// alsGateShare is the share of train's ratings on items whose public
// counts pass the learnability rule at sigma.
func alsGateShare(train *data.Store, p alsPrivateParams, R int, sigma float64) float64 {
	counts := make([]float64, train.Dims[1])
	for _, i := range train.Idx[1] {
		counts[i]++
	}
	var pass float64
	for _, n := range counts {
		if alsLearnable(n, p, R, sigma) {
			pass += n
		}
	}
	return pass / float64(train.NNZ())
}

// alsLearnable is the learnability rule for an item with count n.
func alsLearnable(n float64, p alsPrivateParams, R int, sigma float64) bool {
	return p.gate <= 0 || n*p.gu*p.gu/float64(R) >= p.gate*sigma
}

// resolveALS validates the options and shapes of TrainPrivateALS.
func resolveALS(train *data.Store, m *decomposition.Model, opts *PrivateOptions) (PrivateOptions, error) {
	o, err := resolveALSOptions(opts)
	if err != nil {
		return o, err
	}
	if m == nil || m.Kind != decomposition.CP || !m.HasBias || train == nil || len(m.Dims) != train.Order() || m.Dims[1] != train.Dims[1] || (o.Unit == UnitEntry && m.Dims[0] != train.Dims[0]) {
		return o, &ShapeError{Reason: "private ALS needs a CP model with biases whose modes match the training store"}
	}
	if train.NNZ() == 0 {
		return o, errors.New("completion: private ALS: empty training store")
	}
	return o, nil
}

// resolveALSOptions validates private ALS's options and fills defaults.
func resolveALSOptions(opts *PrivateOptions) (PrivateOptions, error) {
	if opts == nil {
		return PrivateOptions{}, errors.New("completion: private ALS: nil options")
	}
	o, err := opts.resolve("als")
	if err != nil {
		return o, err
	}
	if err := perturb.CheckPositiveDelta(o.Delta); err != nil {
		return o, fmt.Errorf("completion: private ALS: %w", err)
	}
	if o.ALSPositions != ALSPositionsAuto && o.ALSPositions != ALSPositionsOff {
		return o, fmt.Errorf("completion: private ALS: ALSPositions %q: want %q (auto) or %q", o.ALSPositions, ALSPositionsAuto, ALSPositionsOff)
	}
	return o, nil
}

// ALSUserSensitivity returns the l2 sensitivity of one item step's
// released vector when one user with at most k ratings (one per item) is
// added or removed (package doc, Sensitivities, "User unit"): the user's
// vector has norm <= Gamma_u and |z| <= c' = c + Gamma_u, so each of at
// most k right-hand sides gains a term of norm <= Gamma_u c' and the
// shared Gram matrix gains k x x^T, of Frobenius norm <= k Gamma_u^2:
//
//	Delta_2 = sqrt(k Gamma_u^2 c'^2 + w^2 k^2 Gamma_u^4).
func ALSUserSensitivity(o *PrivateOptions) float64 {
	return newALSPrivateParams(o).userSensitivity(o.MaxRatingsPerUser)
}

func (p alsPrivateParams) userSensitivity(k int) float64 {
	cp := p.c + p.gu
	kf := float64(k)
	w := p.gramWeight()
	return math.Sqrt(kf*p.gu*p.gu*cp*cp + w*w*kf*kf*p.gu*p.gu*p.gu*p.gu)
}

// alsStepSensitivity is the l2 sensitivity of one item step (under the
// entry unit the largest over the users' public counts) and its
// derivation, for the report.
func alsStepSensitivity(o *PrivateOptions, p alsPrivateParams, by [][]int) (float64, string) {
	if o.Unit == UnitUser {
		k := o.MaxRatingsPerUser
		sens := p.userSensitivity(k)
		return sens, fmt.Sprintf("adding or removing one user with at most k = %d ratings (one per item) adds or removes, for each of their items, a right-hand side term of norm <= Gamma_u c' and, in the shared Gram matrix G = sum_u t_u x_u x_u^T released at weight w = %.4g, k x x^T of Frobenius norm <= k Gamma_u^2: Delta_2 = sqrt(k Gamma_u^2 c'^2 + w^2 k^2 Gamma_u^4) = %g, c' = c + Gamma_u, c = %g, Gamma_u = %g (completion.ALSUserSensitivity; completion doc, Sensitivities, Private ALS, user unit)", k, p.gramWeight(), sens, p.c, p.gu)
	}
	sens, arg := 0.0, 0
	for _, es := range by {
		if len(es) > 0 {
			if s := p.sensitivity(len(es)); s > sens {
				sens, arg = s, len(es)
			}
		}
	}
	return sens, fmt.Sprintf("one changed rating of a user with n public ratings (t = min(n, k) terms, k = %d) moves the user's vector by delta_u <= min(2 Gamma_u, 2 c Gamma_z/(lambda n), c/sqrt(lambda n)), Gamma_z = sqrt(Gamma_v^2 + 1), and only that user's terms: the right-hand sides by Delta_h = min(sqrt(a^2 + (t - 1) delta_u^2 (Gamma_u + c')^2), 2 sqrt(t) Gamma_u c'), a = (2c + delta_u) Gamma_u + c' delta_u, and the shared Gram matrix G = sum_u t_u x_u x_u^T, released at weight w = %.4g, by Delta_G = 2 t Gamma_u min(delta_u, Gamma_u): Delta_2 = sqrt(Delta_h^2 + w^2 Delta_G^2), c' = c + Gamma_u, c = %g, Gamma_u = %g, Gamma_v = %g, lambda = %g; largest over the public user counts at n = %d: %g (completion.ALSSensitivity; completion doc, Sensitivities, Private ALS)", p.terms, p.gramWeight(), p.c, p.gu, p.gv, p.lambda, arg, sens)
}

// withGaussian returns an accountant of rels (each Count times) followed
// by count Gaussian releases of l2 sensitivity sens and noise sigma.
func withGaussian(rels []perturb.Release, what string, sens, sigma float64, deriv string, count int) *perturb.Accountant {
	var acc perturb.Accountant
	for _, r := range rels {
		_ = acc.Add(r, r.Count)
	}
	_ = acc.Add(perturb.Release{What: what, Mechanism: perturb.MechGaussian, SensitivityNorm: "l2", Sensitivity: sens, Derivation: deriv, Scale: sigma, Calibration: "sigma"}, count)
	return &acc
}

// planALSSteps returns the smallest sigma for which the bias releases and
// ALSPrivateSteps Gaussian steps of l2 sensitivity sens (derived by
// deriv) compose within o's budget, and their accountant.
func planALSSteps(o *PrivateOptions, biasRels []perturb.Release, sens float64, deriv string, steps int) (float64, *perturb.Accountant, error) {
	return planALSStepsWith(o, biasRels, sens, deriv, steps, nil)
}

// planALSStepsWith is planALSSteps with one more release after the steps
// whose noise follows the steps' sigma (sel; nil: none).
func planALSStepsWith(o *PrivateOptions, biasRels []perturb.Release, sens float64, deriv string, steps int, sel func(sigma float64) perturb.Release) (float64, *perturb.Accountant, error) {
	budget := perturb.Budget{Epsilon: o.Epsilon, Delta: o.Delta}
	accWith := func(sigma float64) *perturb.Accountant {
		acc := withGaussian(biasRels, alsStatsWhat, sens, sigma, deriv, steps)
		if sel != nil {
			_ = acc.Add(sel(sigma), 1)
		}
		return acc
	}
	hi := sens
	for !budget.Fits(accWith(hi), o.Accounting) {
		hi *= 2
		if math.IsInf(hi, 0) {
			return 0, nil, fmt.Errorf("completion: private ALS: %w: no noise fits epsilon %v, delta %v", perturb.ErrBudget, o.Epsilon, o.Delta)
		}
	}
	lo := 0.0
	for i := 0; i < 100 && hi-lo > 1e-9*hi; i++ {
		mid := (lo + hi) / 2
		if budget.Fits(accWith(mid), o.Accounting) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi, accWith(hi), nil
}

// alsPrivateStepsAll runs the released item steps from a
// data-independent start and returns the item rows (row-major Dims[1] x
// R) of the last step solved at each of p.ridgeCands (the item ridge
// per term; p.itemLambda alone when there are none). Users that
// p.heldOut marks are in no step's statistics.
func alsPrivateStepsAll(train *data.Store, by [][]int, m *decomposition.Model, counts []float64, g *perturb.Gaussian, p alsPrivateParams, o *PrivateOptions) [][]float64 {
	R := m.Ranks[0]
	if p.heldOut != nil {
		kept := make([][]int, len(by))
		for u, es := range by {
			if !p.heldOut[u] {
				kept[u] = es
			}
		}
		by = kept
	}
	cands := p.ridgeCands
	if len(cands) == 0 {
		cands = []float64{p.itemLambda}
	}
	var out [][]float64
	ir := rand.New(o.source(streamALSInit))
	V := make([]float64, m.Dims[1]*R)
	for i := range V {
		V[i] = 0.1 * ir.NormFloat64()
	}
	T := R * (R + 1) / 2
	I := m.Dims[1]
	// Bulk noise (every item's statistics, every step): grid-rounded
	// ziggurat normals from a fast source (a ChaCha8 keyed from
	// crypto/rand, or the seeded stream), perturb.Gaussian.AddToFast; the
	// report says so (fastNoiseNote).
	nr := o.Noise.FastSource(streamALSSteps)
	a := make([]float64, R*R)
	bvec := make([]float64, R)
	sigma := g.Sigma()
	if p.noiseOff {
		sigma = 0
	}
	// The residuals use the released mean and item biases, fixed during
	// the item steps: computed once.
	ys := alsResiduals(train, m.Mean, m.Bias[1], p, o)
	terms := alsTermsOf(by, p)
	// t_i, the number of users whose terms include item i: public
	// positions under the entry unit; under the user unit every kept
	// rating is a term, and the bias mode's noisy item counts stand for
	// them (negative ones taken as 0). They are weighted (they read every
	// rating, UserContributionWeight), so where users rate more than k
	// items they exceed the bounded log's: the Gram shares t_i/sum t_j do
	// not depend on the scale, the ridge per term does (package doc, "The
	// weighted item counts and sums": scaling them down was measured and
	// not kept).
	ti := make([]float64, I)
	if o.Unit == UnitEntry {
		for _, es := range terms {
			for _, e := range es {
				ti[train.Idx[1][e]]++
			}
		}
	} else {
		for i, n := range counts {
			ti[i] = math.Max(n, 0)
		}
	}
	var total float64
	for _, t := range ti {
		total += t
	}
	w := p.gramWeight()
	gram := make([]float64, T)
	for step := 0; step < p.steps; step++ {
		var exact []float64
		if p.exactGram {
			exact = make([]float64, I*R*R)
		}
		stats := alsItemStatsY(train, by, terms, ys, V, R, p, exact)
		if !p.noiseOff {
			g.AddToFast(stats, nr)
		}
		o.observe(alsStatsWhat, stats, V)
		// Post-processing: the shared Gram matrix, unweighted, and each
		// item's share of it, t_i / sum_j t_j.
		for k, v := range stats[I*R:] {
			gram[k] = v / w
		}
		if alsDebug != nil {
			tr, k := 0.0, 0
			for x := 0; x < R; x++ {
				tr += gram[k]
				k += R - x
			}
			alsDebug("step %d: weighted mean |x|^2 %.4g (trace G / sum t = %.4g / %.4g), sigma %.4g", step, tr/total, tr, total, sigma)
		}
		lams := []float64{p.itemLambda}
		if step == p.steps-1 {
			lams = cands
			if p.finalItemLambda > 0 {
				lams = []float64{p.finalItemLambda}
			}
		}
		var prev []float64
		if len(lams) > 1 {
			prev = slices.Clone(V) // every candidate starts from this step's input rows
		}
		for li, lam := range lams {
			if li > 0 {
				V = slices.Clone(prev)
			}
			alsSolveItems(V, stats, gram, ti, total, counts, sigma, lam, a, bvec, exact, p, R, I)
			if step == p.steps-1 {
				out = append(out, V)
			}
		}
	}
	return out
}

// alsSolveItems solves every item row of V from one step's released
// statistics (post-processing) at item ridge lam per term.
func alsSolveItems(V, stats, gram, ti []float64, total float64, counts []float64, sigma, lam float64, a, bvec, exact []float64, p alsPrivateParams, R, I int) {
	for i := 0; i < I; i++ {
		row := V[i*R : (i+1)*R]
		gs := sigma
		if p.gateSigma > 0 {
			gs = p.gateSigma
		}
		if !alsLearnable(counts[i], p, R, gs) || total == 0 {
			clear(row)
			continue
		}
		share := ti[i] / total
		ridge := lam*ti[i] + p.noiseRidge*sigma
		if ridge <= 0 {
			ridge = 1e-9 // noiseOff and no terms: keep the loop finite
		}
		for {
			k := 0
			for x := 0; x < R; x++ {
				for y := x; y < R; y++ {
					a[x*R+y] = share * gram[k]
					if exact != nil {
						a[x*R+y] = exact[i*R*R+x*R+y]
					}
					a[y*R+x] = a[x*R+y]
					k++
				}
				a[x*R+x] += ridge
			}
			copy(bvec, stats[i*R:(i+1)*R])
			if cholSolve(a, bvec, R) {
				break
			}
			ridge *= 2 // post-processing of released values only
		}
		copy(row, bvec)
		projectBall(row, p.gv)
	}
}

// freeItemColumns sets the first columns of m's item rows from released
// (or public) item statistics only (freeItemColumnsAt at column 0).
func freeItemColumns(m *decomposition.Model, o *PrivateOptions, counts []float64) {
	freeItemColumnsAt(m, o, counts, 0)
}

// freeItemColumnsAt sets columns col and col+1 (those below the rank) of
// m's item rows from released (or public) item statistics only,
// post-processing with no budget (package doc, "the free columns"); the
// other columns are left as they are. The branches that learn no factor
// from the ratings release them at column 0, the positions stage after
// its own columns:
//
//   - the slope column: v_i = b~_i / s, the released item biases over the
//     public spread s = (r_max - r_min)/4. A user folding in fits a slope
//     a_u on it, predicting mu~ + b_u + (1 + a_u) b~_i: users differ in
//     how far they follow the consensus.
//   - the popularity column: the standardised log(1 + n~_i) of counts
//     (the public counts at the entry unit, the released noisy ones at the
//     user unit), scaled to the slope column's standard deviation so that
//     the fold-in's one ridge treats the two alike. A user fits how much
//     more or less they like the items many others rated: mainstream
//     against niche taste.
//
// Both are rank-one structures of real logs that a biases-only model
// misses. Validation parts (completion doc): on MovieLens-100K the
// bias release's RMSE at epsilon 100 falls from 0.9327 to 0.9171 (slope)
// and 0.9108 (both) at the entry unit, from 0.9401 to 0.9261 and 0.9184
// at the user unit (k = 100); the planted synthetic logs, which have
// neither structure, move by at most 0.0016.
func freeItemColumnsAt(m *decomposition.Model, o *PrivateOptions, counts []float64, col int) {
	R := m.Ranks[0]
	if col >= R {
		return
	}
	I := m.Dims[1]
	s := o.rulesRange() / biasSpreadDivisor
	for i := 0; i < I; i++ {
		m.Factors[1][i*R+col] = m.Bias[1][i] / s
	}
	if col+1 >= R || len(counts) != I || I < 2 {
		return
	}
	slopeSD := columnSD(m.Factors[1], R, col)
	lg := make([]float64, I)
	for i, n := range counts {
		lg[i] = math.Log1p(math.Max(n, 0))
	}
	mean, sd := stat.PopMeanStdDev(lg, nil)
	for i := 0; i < I; i++ {
		v := 0.0
		if sd > 0 {
			v = slopeSD * (lg[i] - mean) / sd
		}
		m.Factors[1][i*R+col+1] = v
	}
}

// columnSD is the (population) standard deviation of column c of the
// row-major R-column matrix A.
func columnSD(A []float64, R, c int) float64 {
	col := make([]float64, 0, len(A)/R)
	for i := c; i < len(A); i += R {
		col = append(col, A[i])
	}
	_, sd := stat.PopMeanStdDev(col, nil)
	return sd
}

// freeColumnsNote states freeItemColumns' columns in a report.
func freeColumnsNote(o *PrivateOptions, R int, up *userPositions, curve []string) string {
	counts := "the public item counts"
	if o.Unit == UnitUser {
		counts = "the released noisy item counts"
	}
	K := up.columns()
	var parts []string
	if K > 0 {
		what := "the position columns (below)"
		if K == 1 {
			what = "the position column (below)"
		}
		parts = append(parts, columnsNote(3, 2+K, what))
	}
	if len(curve) > 0 {
		parts = append(parts, curveColumnsNote(2+K, curve))
	}
	if z := R - 2 - K - len(curve); z > 0 {
		parts = append(parts, columnsNote(R-z+1, R, "zero"))
	}
	rest := ""
	if len(parts) > 0 {
		rest = "; " + strings.Join(parts, "; ")
	}
	if R < 2 {
		return fmt.Sprintf("item rows: no factor is learnt from the ratings; column 1 is the slope column, the released item biases over s = %g (the rules' spread: (r_max - r_min)/4, or the released spread's at the entry unit) (post-processing: no budget), on which each user fits a slope of their own when folding in", o.rulesRange()/biasSpreadDivisor)
	}
	return fmt.Sprintf("item rows: no factor is learnt from the ratings; column 1 is the slope column, the released item biases over s = %g (the rules' spread), and column 2 the popularity column, the standardised log(1 + n_i) of %s scaled to the slope column's standard deviation (both post-processing: no budget); each user fits a slope of their own on each when folding in%s", o.rulesRange()/biasSpreadDivisor, counts, rest)
}

// alsStepsFree is the number of free columns after the item steps' fit
// at model rank R: ALSFreeColumns from rank ALSPositionsMaxRank up (0
// with the measurement hook stepsNoFree), as for the entry unit's routes.
// The steps then fit R - 2 columns. Validation parts, user unit (k =
// 100), epsilon 10 / 30 / 100, with against without: the joke-shaped logs
// with exposure-biased positions 4.0725 / 4.0697 / 4.0708 against 4.1004
// / 4.0968 / 4.0993 ("jokeexp") and 4.0502 / 4.0364 / 4.0334 against
// 4.0747 / 4.0684 / 4.0707 ("jokeexp3"); the planted joke-shaped log,
// which has neither structure, 1.5372 / 1.5331 / 1.5323 against 1.5328
// / 1.5288 / 1.5280 (non-private ALS 1.5304). On the MovieLens logs at k
// = 100 the steps do not run (the fallback carries the free columns).
func alsStepsFree(R int, p alsPrivateParams) int {
	if R >= ALSPositionsMaxRank && !p.stepsNoFree {
		return ALSFreeColumns
	}
	return 0
}

// stepsFreeNote says, for the report, which columns the item steps fit.
func stepsFreeNote(R int, p alsPrivateParams) string {
	free := alsStepsFree(R, p)
	if free == 0 {
		return ""
	}
	return fmt.Sprintf("; the steps fit the item rows' first %d columns, and the last %d are the free columns (the released item biases over s, then the standardised log(1 + n_i) of the released noisy counts at the first's spread; post-processing: each user fits a slope of their own on each when folding in)", R-free, free)
}
