package completion

// PRIVATE IMPLICIT FEEDBACK: weighted ALS (TrainImplicit) whose item steps
// are released with Gaussian noise under add/remove-one-user privacy, and
// whose user rows are never released (billboard model, joint DP). The
// derivation is on TrainPrivateImplicit.

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/perturb"
)

// ImplicitPrivateSteps is the number of released item steps of
// TrainPrivateImplicit when the longer run (ImplicitPrivateMaxSteps) does
// not apply. Every step costs budget, and weighted ALS from a random
// start has much of its ranking quality after two sweeps on logs with
// long histories. On the validation parts of TestPrivateImplicitSweep (k
// = 100, rank 16, binary confidence, alpha 1, reg 20, every run of T
// steps), NDCG@10 over most-popular's at epsilon 10 / 30 / 100 with T = 1
// / 2 / 3 / 5: ml-latest-small 0.85 / 1.16 / 1.32, 1.01 / 1.25 / 1.51,
// 1.03 / 1.19 / 1.52, 1.03 / 1.20 / 1.49; the MovieLens-shaped synthetic
// log (whose positions carry popularity only) 0.86 / 0.97 / 0.97, 0.80 /
// 0.83 / 0.88, 0.80 / 0.92 / 0.88, 0.73 / 0.88 / 0.93.
const ImplicitPrivateSteps = 2

// ImplicitPrivateMaxSteps is the number of steps the budget is planned
// for. They run when at least a share ImplicitPrivateLongShare of the
// items is learnable at their noise; else ImplicitPrivateSteps steps run
// at the noise of the same privacy loss (multiplier z sqrt(2/4)), or none
// (TrainPrivateImplicit). Short histories need more sweeps: non-private
// weighted ALS on a click log of 5,000 users with 8 training events each
// scored 1.05 / 1.23 / 1.40 / 1.42 times most-popular after 2 / 3 / 4 / 6
// sweeps (NDCG@10 on a per-user test part of a `dprec data synth --choice
// 1.5` log).
const ImplicitPrivateMaxSteps = 4

// ImplicitPrivateLongShare is the share of the items that must pass the
// learnability rule at the noise of ImplicitPrivateMaxSteps steps for
// those steps to run. On the validation parts of TestPrivateImplicitSweep
// (rank 8), 2 steps always against this rule, NDCG@10 over most-popular's
// at epsilon 10 / 30 / 100: ml-latest-small 1.19 / 1.30 / 1.44 against
// 1.22 / 1.31 / 1.45; the MovieLens-shaped synthetic log 0.90 / 0.95 /
// 0.96 against 0.92 / 0.93 / 0.95; click logs planted with taste, short
// histories 0.94 / 1.06 / 1.13 against 0.95 / 1.24 / 1.39, long ones 1.14
// / 1.51 / 1.74 against 1.18 / 1.50 / 1.88. At a share of 0.05 the long
// click log at epsilon 10 (8.8% of its items pass) ran 4 steps and fell
// to 1.00; the short one at 30 passes with 11.6%, so the margin is
// narrow.
const ImplicitPrivateLongShare = 0.1

// ImplicitPrivateGate is c of the learnability rule: an item's released
// sum of user vectors is above its noise when its noisy count exceeds c
// sigma sqrt(R) (the norm of the sum is at most n_i with unit user
// vectors; the noise's norm is about sigma sqrt(R)). With fewer than
// ImplicitPrivateGateItems R such items the factors cannot be learnt and
// the model is released as the private most-popular list (see
// TrainPrivateImplicit).
const ImplicitPrivateGate = 2.0

// ImplicitPrivateGateItems is the number of learnable items the
// learnability rule asks for, per factor: each of the R directions is
// then carried by several items above their noise. On the validation
// parts of TestPrivateImplicitSweep (rank 8) the learnt rows lost to the
// fallback with 14 learnable items (the MovieLens-shaped synthetic log
// at epsilon 3: 0.72 against 1.00 times most-popular) and won with 65
// (ml-latest-small at epsilon 10: 1.19 against 1.0); 4R = 32 separates
// them (R = 8 did not).
const ImplicitPrivateGateItems = 4

// Streams of the private implicit mode's noise and start.
const streamImplicitInit, streamImplicitCounts, streamImplicitSteps, streamImplicitCounts2 = 11, 12, 13, 14

const (
	implicitCountsWhat  = "item counts (distinct users per item, a user with m_u > k items weighted sqrt(k/m_u))"
	implicitCounts2What = "item counts, second release (the item steps' share, when no step runs)"
	implicitStepsWhat   = "item step statistics: each item's weighted sum (sqrt(k/m_u) above k items) of the unit-norm user vectors of its users, and the shared Gram matrix of all user vectors (upper triangle, weight sqrt(k))"
)

// ErrImplicitUnit is returned (wrapped) by TrainPrivateImplicit for any
// unit but UnitUser.
var ErrImplicitUnit = errors.New("completion: private implicit feedback is defined for the user unit only")

// TrainPrivateImplicit trains m's item factors (a CP model of order 2
// without biases; Dims = the store's users x items, the items being a
// public catalogue) from an implicit-feedback log under (epsilon,
// delta)-differential privacy for adding or removing one user with all
// of their events, and releases no user row (they are zero in m): each
// user folds in at prediction time from their own events
// (ImplicitFoldIn with the settings returned by
// PrivateImplicitSettings), the billboard model of joint differential
// privacy (Kearns et al. 2014; Jain, Rush, Smith, Song and Thakurta
// 2018). It returns the privacy report.
//
// # Relation and what is public
//
// Neighbouring logs differ by one user and all of that user's events.
// Events of one (user, item) pair count once (the log's values are not
// used: every event is a positive of confidence 1 + alpha, the binary
// confidence). A user with events on m_u > k = o.MaxRatingsPerUser
// distinct items enters the item counts and the item sums below with
// weight w_u = sqrt(k/m_u) (UserContributionWeight under Gaussian
// noise): the user's contribution then has the l2 norm of k items of
// weight 1, and every event is read (a log bounded to k items a user,
// BoundUserContributions, has weight 1 throughout). On the validation
// parts of ml-latest-small, MovieLens-100K and a click log (noise seeds 1
// to 4, epsilon 10 / 30 / 100) the weights scored a higher NDCG@10 than
// the bound in 32 of 36 runs, by up to 0.006, and lower in 4, by up to
// 0.0045; on a synthetic log of heavy-tailed activity, where no model
// beats the most-popular list, they lost up to 0.010 (docs/privacy.md).
// Public: the item catalogue (m.Dims[1]; use RestrictToDomain or
// SelectItems so that it does not depend on who is in the log), k, the
// rank, the settings and epsilon, delta. The rating range of o is not
// used. Under this relation an event-level relation is covered too: one
// event changes one user's whole contribution at most.
//
// # Mechanism
//
// First the item counts n_i (distinct users per item, each weighted
// w_u) are released with Gaussian noise: one user moves m_u counts by
// w_u, l2 w_u sqrt(m_u) <= sqrt(k). Then, from item rows Y_0 drawn independently of the data, T
// steps (T chosen below), each:
//
//  1. every user u solves their own row against the released Y as a
//     user half-step of TrainImplicit does, x_u = (w0 Y'Y + sum_{i in
//     I(u)} (c - w0) y_i y_i' + lambda I)^{-1} c sum_{i in I(u)} y_i, and
//     scales it to unit norm (x_u / |x_u|; a zero row stays zero). The
//     row is never released;
//  2. the curator releases, with Gaussian noise of standard deviation
//     sigma on every coordinate, the vector of every item's sum b_i =
//     sum_{u in U(i)} w_u x_u and of sqrt(k) times the upper triangle of
//     the Gram matrix G = sum_u x_u x_u'. Adding or removing user u adds
//     or removes w_u x_u (norm <= w_u) in m_u sums, squared norm at most
//     w_u^2 m_u <= k, and x_u x_u' in G, the upper triangle of which has
//     squared norm (|x|^4 + sum_r x_r^4)/2 <= |x|^4 <= 1: l2 sensitivity
//     Delta = sqrt(k + k) = sqrt(2k). The
//     other users' rows depend on the data only through the released Y
//     (adaptive composition conditions on it);
//  3. each item row is post-processed from the released values only:
//     b~_i is shrunk by the positive-part James-Stein factor max(0, 1 -
//     R sigma^2/|b~_i|^2) (a sum at the noise's level goes to zero
//     instead of ranking first), and y_i = (w0 G~ + rho I)^{-1} c b~_i,
//     rho = lambda + 3 w0 (sigma/sqrt(k)) sqrt(R) (G~'s noise has
//     spectral norm about 2 (sigma/sqrt(k)) sqrt(R)), doubled until the
//     matrix is positive definite.
//
// The item step drops weighted ALS's per-item term sum_{u in U(i)} (c -
// w0) x_u x_u' (releasing it would add R(R+1)/2 noisy values per item),
// so with alpha -> 0 the step is exact and otherwise it is the item
// half-step of weighted ALS whose confidences enter the right-hand side
// only. The budget is planned for the count release and
// ImplicitPrivateMaxSteps steps, Gaussian mechanisms of one noise
// multiplier z (sigma = z Delta), the smallest for which o's accounting
// (the tightest that applies) fits the budget.
//
// # Number of steps and learnability
//
// T is chosen from the first count release (post-processing), and every
// choice has the planned privacy loss: M Gaussian releases of noise
// multiplier z compose as one of multiplier z/sqrt(M) (Dong, Roth and Su
// 2022, Corollary 3.3), so M = ImplicitPrivateMaxSteps steps at z, T
// steps at z sqrt(T/M), or one more count release at z/sqrt(M) have the
// same privacy loss under any accounting exact for the Gaussian
// mechanism, and the report's (epsilon, delta) holds whichever runs. An
// item is learnable at a noise sigma when its noisy count exceeds
// ImplicitPrivateGate sigma sqrt(R) (below it the item's sum is mostly
// noise). M steps run when at least ImplicitPrivateGateItems R items,
// and a share ImplicitPrivateLongShare of all items, are learnable at
// their noise; else ImplicitPrivateSteps steps when at least
// ImplicitPrivateGateItems R items are learnable at theirs; else no step
// runs: the counts are released again (noise sigma_c/sqrt(M)), pooled
// with the first by inverse variance (standard deviation sigma_c/sqrt(1
// + M)), and the model is the private most-popular list: the first
// column of every item row is its pooled count (negative ones 0) over
// the largest, the others zero, so that every user's fold-in ranks by
// the counts.
func TrainPrivateImplicit(train *data.Store, m *decomposition.Model, s *ImplicitSettings, o *PrivateOptions) (*perturb.Report, error) {
	cfg := PrivateImplicitSettings(s)
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if o == nil {
		return nil, errors.New("completion: private implicit: nil options")
	}
	b := perturb.Budget{Epsilon: o.Epsilon, Delta: o.Delta}
	if err := b.Validate(); err != nil {
		return nil, fmt.Errorf("completion: private implicit: %w", err)
	}
	if o.Delta == 0 {
		return nil, fmt.Errorf("completion: private implicit: %w: the Gaussian mechanism has no pure epsilon: give delta > 0, well below 1/(number of users)", perturb.ErrDelta)
	}
	if o.Unit != UnitUser {
		return nil, fmt.Errorf("%w: the events are the data, so their positions cannot be public (got unit %q)", ErrImplicitUnit, o.Unit)
	}
	k := o.MaxRatingsPerUser
	if k < 1 {
		return nil, fmt.Errorf("completion: private implicit: %w: the user unit needs a contribution bound k >= 1, got %d", perturb.ErrDimension, k)
	}
	switch o.Accounting {
	case "", "best", perturb.RDP:
	case perturb.Basic, perturb.Advanced:
		return nil, fmt.Errorf("completion: private implicit: accounting %q: the mode chooses its number of steps from a release, and its branches have equal privacy loss under accountings exact for the Gaussian mechanism only: use rdp or the default", o.Accounting)
	default:
		return nil, fmt.Errorf("completion: private implicit: unknown accounting %q (want rdp)", o.Accounting)
	}
	if train == nil || m == nil {
		return nil, &ShapeError{Reason: "nil store or model"}
	}
	if m.Kind != decomposition.CP || m.Order() != 2 || m.HasBias {
		return nil, &ShapeError{Reason: "the implicit objective trains an order-2 CP model without biases"}
	}
	if train.Order() < 2 || train.Dims[0] != m.Dims[0] || train.Dims[1] != m.Dims[1] {
		return nil, &ShapeError{Reason: fmt.Sprintf("model dims %v do not match the store's users x items %v", m.Dims, train.Dims)}
	}
	R := m.Ranks[0]
	if R > m.Dims[1] {
		return nil, &ShapeError{Reason: fmt.Sprintf("rank %d exceeds the %d items", R, m.Dims[1])}
	}
	if train.NNZ() == 0 {
		return nil, ErrEmpty
	}
	if err := checkEstimate(EstimateImplicit(m.Dims[0], m.Dims[1], train.NNZ(), R, &cfg)); err != nil {
		return nil, err
	}
	pr, err := newImplicitProblem(train, &cfg)
	if err != nil {
		return nil, err
	}
	uw := implicitUserWeights(pr, k)
	acc, z, err := planImplicit(o, k)
	if err != nil {
		return nil, err
	}
	// The guarantee is the planned one, whichever branch runs below (each
	// has its privacy loss); the report lists the releases made.
	eps, delta, used, err := admit(o, acc)
	if err != nil {
		return nil, fmt.Errorf("completion: private implicit: %w", err)
	}
	I := m.Dims[1]
	// The noisy counts.
	sigC := z * math.Sqrt(float64(k))
	counts, err := pr.noisyCounts(o, k, uw, sigC, streamImplicitCounts, implicitCountsWhat)
	if err != nil {
		return nil, err
	}
	sens := math.Sqrt(2 * float64(k))
	need := ImplicitPrivateGateItems * R
	// A run of T < M = ImplicitPrivateMaxSteps steps takes its first T - 1
	// steps at the planned noise sigma_M and its last at sigma_M/sqrt(M -
	// T + 1), the same privacy loss (the item rows are the last step's,
	// so its noise matters most).
	sigmaM := z * sens
	schedule := func(T int) []float64 {
		out := make([]float64, T)
		for t := range out {
			out[t] = sigmaM
		}
		out[T-1] = sigmaM / math.Sqrt(float64(ImplicitPrivateMaxSteps-T+1))
		return out
	}
	learnableAt := func(sigma float64) (int, float64) {
		gate := ImplicitPrivateGate * sigma * math.Sqrt(float64(R))
		n := 0
		for _, c := range counts {
			if c > gate {
				n++
			}
		}
		return n, gate
	}
	clear(m.Factors[0])
	countsSD := sigC
	var route string
	steps := 0
	learnLong, gateLong := learnableAt(sigmaM)
	// The shorter run is judged at the noise of T = ImplicitPrivateSteps
	// steps sharing the budget evenly, sigma_M sqrt(T/M) (judged at its
	// last step's lower noise, it learnt and lost to the fallback at
	// epsilon 3 on two validation logs).
	learnable, gate := learnableAt(sigmaM * math.Sqrt(float64(ImplicitPrivateSteps)/ImplicitPrivateMaxSteps))
	switch {
	case learnLong >= need && float64(learnLong) >= ImplicitPrivateLongShare*float64(I):
		steps, learnable, gate = ImplicitPrivateMaxSteps, learnLong, gateLong
	case learnable >= need:
		steps = ImplicitPrivateSteps
	}
	if steps > 0 {
		sigmas := schedule(steps)
		Y, err := privateImplicitSteps(pr, uw, m.Dims[0], I, R, k, sigmas, o)
		if err != nil {
			return nil, err
		}
		copy(m.Factors[1], Y)
		acc = implicitAccountant(z, k, sigmas)
		route = fmt.Sprintf("%d steps at noise sigma %.4g, the last at %.4g: %d items have a noisy count above %g sigma sqrt(R) = %.4g at the run's mean noise (at least %d R = %d needed; %d steps when at least a share %g of the items, %d, pass at the noise of %d steps, %.4g: here %d)", steps, sigmas[0], sigmas[steps-1], learnable, ImplicitPrivateGate, gate, ImplicitPrivateGateItems, need, ImplicitPrivateMaxSteps, ImplicitPrivateLongShare, int(math.Ceil(ImplicitPrivateLongShare*float64(I))), ImplicitPrivateMaxSteps, gateLong, learnLong)
	} else {
		// The steps' share on a second release of the counts, pooled
		// with the first by inverse variance.
		sig2 := sigC / math.Sqrt(ImplicitPrivateMaxSteps)
		c2, err := pr.noisyCounts(o, k, uw, sig2, streamImplicitCounts2, implicitCounts2What)
		if err != nil {
			return nil, err
		}
		w1, w2 := 1/(sigC*sigC), 1/(sig2*sig2)
		for i := range counts {
			counts[i] = (w1*counts[i] + w2*c2[i]) / (w1 + w2)
		}
		countsSD = 1 / math.Sqrt(w1+w2)
		acc = implicitFallbackAccountant(sigC, sig2, k)
		route = fmt.Sprintf("only %d items have a noisy count above %g sigma sqrt(R) = %.4g at the mean noise of %d steps (%d R = %d needed): no item step ran; the steps' share of the budget released the counts again (sigma %.4g; %d Gaussian releases of noise multiplier z compose as one of multiplier z/sqrt(%d): Dong, Roth and Su 2022, Corollary 3.3, so every branch has the same privacy loss, and the choice is post-processing of the first release), pooled with the first by inverse variance (sd %.4g); released as the private most-popular list (first column the pooled counts over the largest, the others zero)", learnable, ImplicitPrivateGate, gate, ImplicitPrivateSteps, ImplicitPrivateGateItems, need, sig2, ImplicitPrivateMaxSteps, ImplicitPrivateMaxSteps, countsSD)
	}
	for i, v := range counts {
		counts[i] = math.Max(v, 0)
	}
	if steps == 0 {
		popularityRows(m.Factors[1], counts, R)
	}
	rep := &perturb.Report{
		Mode:         "implicit",
		Relation:     fmt.Sprintf("implicit-feedback logs differing by adding or removing one user with all of that user's events (a user with events on m_u > k = %d distinct items weighs each of them sqrt(k/m_u) in the item counts and sums, so that one user moves them no more than k items of weight 1 do; an event's value is not used)", k),
		RelationKind: perturb.RelationAddRemove,
		Unit:         string(UnitUser),
		Epsilon:      eps,
		Delta:        delta,
		Composition:  string(used),
		Releases:     acc.Releases(),
		Randomness:   o.Noise.Provenance().String(),
		Billboard:    true,
		ItemCounts:   counts,
		ItemCountsSD: countsSD,
		Covered:      []string{"B (item rows)", "item counts (noisy; used by the learnability rule and saved as the report's item_counts)"},
		Notes: []string{
			fmt.Sprintf("public: the item domain (%d items: a public catalogue, or the private selection the report lists first), k = %d, rank %d, the settings (binary confidence 1 + alpha = %g, unobserved weight %g, lambda %g), epsilon and delta; not released: the users, their number and their rows", I, k, R, 1+cfg.Alpha, cfg.UnobservedWeight, cfg.Reg),
			"not released: user rows (zero in the model); each user solves theirs at prediction time from the released item rows and their own events, as a user half-step of weighted ALS (billboard model, joint DP)",
			fmt.Sprintf("item steps: from data-independent random item rows; each user row scaled to unit norm; each step releases every item's weighted sum of its users' rows (weight min(1, sqrt(k/m_u))) and sqrt(k) times the upper triangle of the Gram matrix with Gaussian noise at l2 sensitivity sqrt(2k) = %.4g (completion.TrainPrivateImplicit); the budget is planned for M = %d steps at noise multiplier z; a run of T < M steps takes the first T - 1 at z and the last at z/sqrt(M - T + 1) (the same Gaussian privacy loss)", sens, ImplicitPrivateMaxSteps),
			fmt.Sprintf("item counts: Gaussian noise sigma %.4g at l2 sensitivity sqrt(k) = %.4g (one user moves m_u counts by w_u = min(1, sqrt(k/m_u)))", sigC, math.Sqrt(float64(k))),
			"post-processing: each item sum shrunk by max(0, 1 - R sigma^2/|b~|^2); item solve ridge lambda + 3 w0 (sigma/sqrt(k)) sqrt(R), doubled until positive definite; the per-item confidence term of weighted ALS is dropped from the item solve",
			"learnability: " + route,
			fmt.Sprintf("epsilon: one noise multiplier z = sigma/Delta = %.4g for the count release and the %d planned steps, the smallest that fits (epsilon %g, delta %g) under %s composition", z, ImplicitPrivateMaxSteps, o.Epsilon, o.Delta, used),
		},
	}
	return rep, nil
}

// PrivateImplicitSettings returns the settings TrainPrivateImplicit
// trains with and its users fold in with: s's, with the private defaults
// for a zero Alpha and Reg, resolved, with the binary confidence (the
// values of the events are not used) and ImplicitPrivateSteps as the
// number of sweeps.
func PrivateImplicitSettings(s *ImplicitSettings) ImplicitSettings {
	var r ImplicitSettings
	if s != nil {
		r = *s
	}
	if r.Alpha == 0 {
		r.Alpha = DefaultPrivateImplicitAlpha
	}
	if r.Reg == 0 {
		r.Reg = DefaultPrivateImplicitReg
	}
	cfg := r.resolved()
	cfg.Confidence = ConfidenceBinary
	cfg.Iterations = ImplicitPrivateSteps
	return cfg
}

// planImplicit returns the accountant of the count release and the
// ImplicitPrivateSteps step releases at the smallest common noise
// multiplier z (sigma = z Delta for each) that fits o's budget.
func planImplicit(o *PrivateOptions, k int) (*perturb.Accountant, float64, error) {
	ss := math.Sqrt(2 * float64(k))
	sigmas := make([]float64, ImplicitPrivateMaxSteps)
	accAt := func(z float64) *perturb.Accountant {
		for t := range sigmas {
			sigmas[t] = z * ss
		}
		return implicitAccountant(z, k, sigmas)
	}
	budget := perturb.Budget{Epsilon: o.Epsilon, Delta: o.Delta}
	acct := o.Accounting
	if acct == "best" {
		acct = ""
	}
	hi := 1.0
	for !budget.Fits(accAt(hi), acct) {
		hi *= 2
		if hi > 1e12 {
			return nil, 0, fmt.Errorf("completion: private implicit: %w: no noise fits epsilon %v, delta %v", perturb.ErrBudget, o.Epsilon, o.Delta)
		}
	}
	lo := 0.0
	for i := 0; i < 100 && hi-lo > 1e-9*hi; i++ {
		mid := (lo + hi) / 2
		if budget.Fits(accAt(mid), acct) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return accAt(hi), hi, nil
}

const implicitStepsDeriv = "one user's unit-norm row, weighted w_u = min(1, sqrt(k/m_u)), in m_u item sums (w_u sqrt(m_u) <= sqrt(k)) and its outer product in the Gram matrix at weight sqrt(k) (upper triangle norm <= 1, times sqrt(k)): sqrt(2k) (completion.TrainPrivateImplicit)"

// implicitCountsRelease is a Gaussian release of the item counts (l2
// sensitivity sqrt(k)) at noise sigma.
func implicitCountsRelease(what, deriv string, k int, sigma float64) perturb.Release {
	return perturb.Release{What: what, Mechanism: perturb.MechGaussian, SensitivityNorm: "l2", Sensitivity: math.Sqrt(float64(k)), Derivation: deriv, Scale: sigma, Calibration: "sigma"}
}

const implicitCountsDeriv = "one user adds or removes w_u = min(1, sqrt(k/m_u)) in m_u counts: w_u sqrt(m_u) <= sqrt(k)"

// implicitAccountant is the accountant of the count release (noise
// multiplier z) and a run of steps at the given noises.
func implicitAccountant(z float64, k int, sigmas []float64) *perturb.Accountant {
	ss := math.Sqrt(2 * float64(k))
	var acc perturb.Accountant
	_ = acc.Add(implicitCountsRelease(implicitCountsWhat, implicitCountsDeriv, k, z*math.Sqrt(float64(k))), 1)
	for i := 0; i < len(sigmas); {
		j := i
		for j < len(sigmas) && sigmas[j] == sigmas[i] {
			j++
		}
		_ = acc.Add(perturb.Release{What: implicitStepsWhat, Mechanism: perturb.MechGaussian, SensitivityNorm: "l2", Sensitivity: ss, Derivation: implicitStepsDeriv, Scale: sigmas[i], Calibration: "sigma"}, j-i)
		i = j
	}
	return &acc
}

// ImplicitStepsReleased returns how many item steps a report of
// TrainPrivateImplicit says were released: 0 when the mode fell back to
// the private most-popular list, else 2 or ImplicitPrivateMaxSteps.
func ImplicitStepsReleased(rep *perturb.Report) int {
	if rep == nil {
		return 0
	}
	n := 0
	for _, r := range rep.Releases {
		if r.What == implicitStepsWhat {
			n += max(r.Count, 1)
		}
	}
	return n
}

// implicitFallbackAccountant is the accountant of the fallback branch:
// the first count release and the second one in the steps' place.
func implicitFallbackAccountant(sigC, sig2 float64, k int) *perturb.Accountant {
	var acc perturb.Accountant
	_ = acc.Add(implicitCountsRelease(implicitCountsWhat, implicitCountsDeriv, k, sigC), 1)
	_ = acc.Add(implicitCountsRelease(implicitCounts2What, "as the first release: sqrt(k); noise sigma_1/sqrt(T), the T steps' Gaussian privacy loss", k, sig2), 1)
	return &acc
}

// privateImplicitSteps runs the released item steps (TrainPrivateImplicit,
// steps 1-3), step t with Gaussian noise sigmas[t], and returns the item
// rows (I x R, row-major).
func privateImplicitSteps(pr *implicitProblem, uw []float64, U, I, R, k int, sigmas []float64, o *PrivateOptions) ([]float64, error) {
	cfg := pr.cfg
	ir := rand.New(o.source(streamImplicitInit))
	Y := make([]float64, I*R)
	for t := range Y {
		Y[t] = 0.1 * ir.NormFloat64()
	}
	X := make([]float64, U*R)
	w := math.Sqrt(float64(k))
	T := R * (R + 1) / 2
	stats := make([]float64, I*R+T)
	nr := o.Noise.FastSource(streamImplicitSteps)
	A := make([]float64, R*R)
	bb := make([]float64, R)
	G := make([]float64, R*R)
	for _, sigma := range sigmas {
		g, err := perturb.NewGaussianSigma(math.Sqrt(2*float64(k)), sigma)
		if err != nil {
			return nil, fmt.Errorf("completion: private implicit: %w", err)
		}
		implicitStepStats(pr, uw, X, Y, R, k, stats)
		g.AddToFast(stats, nr)
		o.observe(implicitStepsWhat, stats, Y)
		// 3. Post-processing of the released values only.
		t := I * R
		for a := 0; a < R; a++ {
			for c := a; c < R; c++ {
				G[a*R+c] = stats[t] / w
				G[c*R+a] = G[a*R+c]
				t++
			}
		}
		ridge0 := cfg.Reg + 3*cfg.UnobservedWeight*(sigma/w)*math.Sqrt(float64(R))
		conf := 1 + cfg.Alpha
		for i := 0; i < I; i++ {
			b := stats[i*R : i*R+R]
			y := Y[i*R : i*R+R]
			n2 := dot(b, b)
			f := 0.0
			if n2 > 0 {
				f = math.Max(0, 1-float64(R)*sigma*sigma/n2)
			}
			if f == 0 {
				clear(y)
				continue
			}
			ok := false
			for ridge, try := ridge0, 0; !ok && try < 64; ridge, try = ridge*2, try+1 {
				for e := range A {
					A[e] = cfg.UnobservedWeight * G[e]
				}
				for a := 0; a < R; a++ {
					A[a*R+a] += ridge
				}
				for r := range bb {
					bb[r] = conf * f * b[r]
				}
				ok = choleskySolve(A, bb, R)
			}
			if !ok {
				clear(y)
				continue
			}
			copy(y, bb)
		}
	}
	return Y, nil
}

// implicitStepStats runs step 1 of TrainPrivateImplicit (the users' own
// rows against Y, at unit norm, into X) and writes step 2's statistic,
// before noise, into stats: every item's sum of its users' rows (I x R),
// then sqrt(k) times the upper triangle of their Gram matrix.
func implicitStepStats(pr *implicitProblem, uw, X, Y []float64, R, k int, stats []float64) {
	// A row whose system is not positive definite is left zero by half
	// (it contributes nothing, which the sensitivity allows), so its error
	// is not fatal here.
	_ = pr.half(X, Y, &pr.byUser, R)
	for u := 0; u*R < len(X); u++ {
		x := X[u*R : u*R+R]
		if n := math.Sqrt(dot(x, x)); n > 0 {
			for r := range x {
				x[r] /= n
			}
		}
	}
	I := len(pr.byItem.ptr) - 1
	clear(stats)
	parallelChunks((I+solveChunk-1)/solveChunk, pr.cfg.Threads, func(ch int) {
		for i := ch * solveChunk; i < min(I, (ch+1)*solveChunk); i++ {
			users, _ := pr.byItem.row(i)
			b := stats[i*R : i*R+R]
			for _, u := range users {
				axpy(b, uw[u], X[int(u)*R:int(u)*R+R])
			}
		}
	})
	G := gram(X, R, pr.cfg.Threads)
	w := math.Sqrt(float64(k))
	t := I * R
	for a := 0; a < R; a++ {
		for c := a; c < R; c++ {
			stats[t] = w * G[a*R+c]
			t++
		}
	}
}

// noisyCounts releases the item counts with Gaussian noise sigma (l2
// sensitivity sqrt(k)) from noise stream stream, reported to the observer
// as what.
func (p *implicitProblem) noisyCounts(o *PrivateOptions, k int, uw []float64, sigma float64, stream uint64, what string) ([]float64, error) {
	g, err := perturb.NewGaussianSigma(math.Sqrt(float64(k)), sigma)
	if err != nil {
		return nil, fmt.Errorf("completion: private implicit: %w", err)
	}
	counts := p.itemCounts(uw)
	g.AddTo(counts, rand.New(o.source(stream)))
	o.observe(what, counts, nil)
	return counts, nil
}

// itemCounts returns every item's sum of its distinct users' weights uw.
func (p *implicitProblem) itemCounts(uw []float64) []float64 {
	c := make([]float64, len(p.byItem.ptr)-1)
	for i := range c {
		users, _ := p.byItem.row(i)
		for _, u := range users {
			c[i] += uw[u]
		}
	}
	return c
}

// implicitUserWeights returns every user's weight in the private implicit
// mode's item counts and item sums: UserContributionWeight under Gaussian
// noise for the user's number of distinct items, so that a user with m_u
// > k items moves the m_u counts and sums by sqrt(k/m_u) each, l2 sqrt(k)
// as k items of weight 1 do.
func implicitUserWeights(pr *implicitProblem, k int) []float64 {
	U := len(pr.byUser.ptr) - 1
	uw := make([]float64, U)
	for u := range uw {
		uw[u] = UserContributionWeight(perturb.MechGaussian, k, int(pr.byUser.ptr[u+1]-pr.byUser.ptr[u]))
	}
	return uw
}

// popularityRows sets Y (I x R) to the private most-popular model: first
// column counts over their largest, the others zero.
func popularityRows(Y, counts []float64, R int) {
	clear(Y)
	mx := slices.Max(counts)
	if !(mx > 0) {
		return
	}
	for i, n := range counts {
		Y[i*R] = n / mx
	}
}

// Defaults of the private implicit mode (the non-private defaults are
// DefaultImplicit*): rank 8, reg 20 and alpha 1 with the binary
// confidence. The noise of every step grows with R (a user's unit row
// spreads over R noisy coordinates, and the learnability threshold is
// 2 sigma sqrt(R)). On the validation parts of TestPrivateImplicitSweep
// (reg 20), NDCG@10 over most-popular's at epsilon 10 / 30 / 100 for
// rank 8, 16, 32 with alpha 0.25 / 1 / 4: ml-latest-small 1.13 / 1.24 /
// 1.40, 1.19 / 1.30 / 1.44, 1.16 / 1.30 / 1.43 (rank 8); 0.90 / 1.13 /
// 1.39, 1.01 / 1.25 / 1.51, 1.04 / 1.24 / 1.49 (16); 1.04 / 1.22 / 1.53,
// 1.04 / 1.33 / 1.62, 1.04 / 1.34 / 1.57 (32); the MovieLens-shaped
// synthetic log 0.78 / 0.91 / 0.96, 0.90 / 0.95 / 0.96, 0.93 / 0.94 /
// 0.95 (8); 0.63 / 0.75 / 0.86, 0.80 / 0.83 / 0.88, 0.87 / 0.88 / 0.93
// (16); 0.55 / 0.69 / 0.80, 0.68 / 0.83 / 0.85, 0.78 / 0.83 / 0.86 (32).
// Rank 8 with alpha 1 is best on both logs at epsilon 10 and 30, and
// loses 0.07 to rank 16 (0.18 to rank 32) on ml-latest-small at 100.
const (
	DefaultPrivateImplicitRank  = 8
	DefaultPrivateImplicitReg   = 20
	DefaultPrivateImplicitAlpha = 1
)
