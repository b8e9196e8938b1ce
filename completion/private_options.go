package completion

// Private training modes: shared options, validation and helpers.
//
// NEIGHBOURING RELATION (default, unit "entry"). Two rating logs D, D' are
// neighbours when they have the same set of observed positions (user,
// item[, time bucket]) and differ in the value of exactly one rating. All
// ratings are clamped to a public range [r_min, r_max] given by the caller
// (PrivateOptions.RatingMin/RatingMax; the CLI documents its default
// scale), never derived from the data, so the changed rating moves by at
// most Delta_r = r_max - r_min. The positions (who rated what, when) and
// their number are public under this relation; only values are protected.
//
// USER UNIT ("user", MaxRatingsPerUser = k). For the bias and als modes
// it is add/remove-one-user privacy (private_user.go: public item and time
// domains, nothing user-specific released). For the SGD modes (input,
// gradient, output) neighbours have the same observed positions and
// differ in the values of any subset of ONE user's ratings. Every user must contribute at most k ratings; BoundUserRatings
// enforces that before training by keeping k positions per user chosen
// uniformly at random (a function of the positions only, which are public,
// so the selection costs no privacy), and Plan refuses a store where some
// user has more than k. Sensitivities are then those of k entries changing
// at once; each mode's file derives them.
//
// MEAN. With biases the trainer sets the global mean mu to the average of
// the training values and every residual uses it, so under gradient
// perturbation an un-noised mu would make every step depend on every
// rating. The gradient modes therefore release mu~ = mu + Laplace(Delta_r/(n
// epsilon_mu)) (sensitivity Delta_r/n with n the public number of
// observations; k Delta_r/n for the user unit), account for it, correct
// every residual to use mu~ inside the gradient transform, and write mu~
// into the released model (see private_gradient.go).

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

// Unit is the privacy unit of a private training mode: what two
// neighbouring rating logs differ in. The zero value means UnitEntry.
type Unit string

// Privacy units (the CLI's --privacy-unit values).
const (
	// UnitEntry: neighbours differ in one rating value (positions public).
	UnitEntry Unit = "entry"
	// UnitUser: neighbours differ by adding or removing one user with at
	// most MaxRatingsPerUser ratings (the bias and als modes), or in the
	// values of one user's ratings (the SGD modes; positions public).
	UnitUser Unit = "user"
)

// ParseUnit parses a privacy unit name; "" means UnitEntry.
func ParseUnit(s string) (Unit, error) {
	switch Unit(s) {
	case "", UnitEntry:
		return UnitEntry, nil
	case UnitUser:
		return UnitUser, nil
	}
	return "", fmt.Errorf("completion: unknown privacy unit %q (want entry or user)", s)
}

// Protect is the target of gradient perturbation. The zero value means
// ProtectAll: the default private gradient run covers every released
// parameter, and the seed's Algorithm 2 (ProtectC, which covers none) is
// asked for by name.
type Protect string

// Protection targets of gradient perturbation (the CLI's --protect values).
const (
	// ProtectC: Wei et al. 2021 Algorithm 2, the gradient of the protected mode's
	// rows only.
	ProtectC Protect = "C"
	// ProtectAll: every parameter an entry touches (Gaussian noise, RDP).
	ProtectAll Protect = "all"
)

// ParseProtect parses a protection target; "" means ProtectAll, "c" ProtectC.
func ParseProtect(s string) (Protect, error) {
	switch s {
	case "C", "c":
		return ProtectC, nil
	case "", "all":
		return ProtectAll, nil
	}
	return "", fmt.Errorf("completion: unknown protect target %q (want C or all)", s)
}

// Defaults of PrivateOptions.
const (
	// DefaultClip is the gradient clipping norm m: per-entry data gradients
	// of ratings on a 1-5 scale with factor rows of norm about 1 are a few
	// units, and clipping at 1 keeps most of their direction.
	DefaultClip = 1.0
	// DefaultRowClip is the norm bound on the fixed factor rows of the
	// output-mode refit (z_e is their product, |z_e| <= RowClip^(N-1)).
	DefaultRowClip = 1.0
	// DefaultOutputLambda is the ridge penalty of the output-mode refit.
	// Delta_O = Delta_r RowClip^(N-1)/lambda, so lambda trades bias for
	// noise; 10 is the order of the number of ratings per time bucket row
	// divided by the rank on the seed-001 set-ups, where the ridge bias
	// stays small.
	DefaultOutputLambda = 10.0
	// DefaultMeanFraction is the share of epsilon spent on the global mean
	// in gradient mode with biases: its sensitivity Delta_r/n is tiny, so 2%
	// of the budget already gives an error far below the rating scale.
	DefaultMeanFraction = 0.02
)

// PrivateOptions configure the private training modes. The zero value of
// every field except Epsilon and the rating range means its documented
// default.
type PrivateOptions struct {
	// Epsilon and Delta are the total budget of the training run
	// (Delta may be 0 for pure modes: input Laplace, gradient C with basic
	// accounting, output).
	Epsilon, Delta float64
	// RatingMin and RatingMax are the public rating range [r_min, r_max];
	// values are clamped to it. Required (RatingMin < RatingMax, finite).
	RatingMin, RatingMax float64
	// Unit is UnitEntry (default) or UnitUser.
	Unit Unit
	// MaxRatingsPerUser is k for the user unit (required there, >= 1).
	MaxRatingsPerUser int
	// Mechanism of input mode: "laplace" (default, Algorithm 1) or
	// "gaussian".
	Mechanism string
	// Calibration of Gaussian noise with a single release (input gaussian):
	// analytic (default), classic or tight.
	Calibration perturb.Calibration
	// Accounting is the composition used to fit the budget: "" (the
	// tightest that applies), "basic", "advanced" or "rdp".
	Accounting perturb.Composition
	// Protect is the gradient-mode target: ProtectAll (default: every
	// parameter an entry touches, Gaussian noise, RDP; covers the whole
	// model, needs Delta > 0) or ProtectC (Wei et al. 2021 Algorithm 2: the
	// gradient of the protected mode's row only, pure epsilon per step,
	// covers no released parameter).
	Protect Protect
	// ProtectMode is the mode whose factor is "C": 0 means the last mode
	// (the time mode of an order-3 store, the items of an order-2 one);
	// otherwise ProtectMode-1 (so 1 = users, 2 = items, 3 = time).
	ProtectMode int
	// Clip is the gradient clipping norm m (gradient mode; default
	// DefaultClip) or the row-norm bound of the fixed factors (output mode;
	// default DefaultRowClip).
	Clip float64
	// Lambda is the ridge penalty of the output-mode refit (default
	// DefaultOutputLambda).
	Lambda float64
	// Sigma, when > 0, fixes the Gaussian noise of --protect all instead of
	// solving for it; Plan then refuses it if the budget is exceeded. Its
	// unit depends on the variant: minibatch DP-SGD (the default) reads it
	// as the noise multiplier, the noise standard deviation per coordinate
	// being Sigma times the clip C; the per-entry variant reads it as the
	// noise standard deviation itself.
	Sigma float64
	// StepEpsilon, when > 0, fixes the per-step epsilon of --protect C
	// instead of solving for it; Plan refuses it if the budget is exceeded.
	StepEpsilon float64
	// MeanFraction is the share of Epsilon spent on the global mean in
	// gradient mode with biases (default DefaultMeanFraction).
	MeanFraction float64
	// SelectedItems says (user unit, bias and als modes) that the store's
	// item mode came from SelectItems rather than a public catalogue: the
	// report names what is public accordingly, and Scalars may be given.
	SelectedItems bool
	// Scalars (user unit, bias and als modes, with SelectedItems) is the
	// log the items were selected from, bounded: every user at most
	// MaxRatingsPerUser ratings, one per item (what dprec train passes:
	// the log restricted to the public time range by RestrictToDomain,
	// then BoundForUnit; the training store is its restriction to the
	// selected items). The number of users, the number of ratings and the
	// centred sum behind the global mean are released from it instead of
	// from the training store: when the selection keeps few items, a mean
	// over their ratings alone is swamped by its noise. The mean is then
	// that of every item of the bounded log, not of the selected ones; the
	// item biases carry the difference. The sensitivities are the same
	// (one user still adds at most k ratings; the bound is checked). nil:
	// the training store.
	Scalars *data.Store
	// Unbounded (user unit, bias and als modes) is the training log
	// before the contribution bound: every user's ratings on the same
	// public item domain as the training store (RestrictToDomain, then the
	// private item selection when there is one; dprec train passes it).
	// The item counts and sums read it, each of a user's ratings (one per
	// item) weighted by UserContributionWeight, so that a user moves them
	// no more than k ratings do; private ALS's position columns read their
	// co-occurrence from it, at most ALSUserPositionsMaxPerUser items a
	// user (its sensitivity, 1, does not depend on how many items a user
	// rated). In both the k bound would only discard ratings (package doc,
	// "User unit" and "the position columns"). The other releases read the
	// bounded training store. nil: the training store.
	Unbounded *data.Store
	// DPSGD selects the algorithm of gradient mode with Protect "all":
	// DPSGDMinibatch (the zero value; Poisson-subsampled minibatch DP-SGD,
	// private_dpsgd.go) or DPSGDPerEntry.
	DPSGD DPSGDVariant
	// SampleRate is the Poisson sampling rate q of minibatch DP-SGD, in
	// (0, 1] (default DefaultDPSGDRate).
	SampleRate float64
	// WarmFraction is the share of Epsilon spent on the bias mode's
	// release in (0, 1): the warm start of minibatch DP-SGD (default
	// DefaultWarmFraction) and the first release of the input mode's
	// residual release (default DefaultInputBiasFraction).
	WarmFraction float64
	// ALSPositions (als mode) selects whether private ALS runs its
	// stages beyond the default route: at the entry unit those that read
	// the public positions, the covariance stage on dense logs
	// (private_als_cov.go) and the positions stage
	// (private_als_positions.go); at the user unit the covariance stage
	// (private_als_cov_user.go). ALSPositionsAuto, the zero value, runs
	// each when its gates pass; ALSPositionsOff runs none.
	ALSPositions ALSPositions
	// Noise selects the noise source: the zero value is secure
	// (perturb.SecureSource); perturb.SeededNoise(seed) gives reproducible
	// streams (NOT private). Its provenance is what the report records.
	Noise perturb.Noise
	// probe, when set (tests only), sees the noisy releases of the bias
	// and als modes (releaseProbe).
	probe *releaseProbe
	// dpsgdRules, when set (sweeps only: TestMovieLensDPSGDSweep), replaces
	// rules of minibatch DP-SGD; its zero fields keep the rule.
	dpsgdRules *dpsgdRules
	// rulesWidth, when positive, is the width private ALS's entry-unit
	// rules take in place of the range (the released rating spread:
	// private_als_spread.go); 0 is the range's.
	rulesWidth float64
}

// dpsgdRules overrides rules of minibatch DP-SGD in the sweeps that chose
// them: DPSGDClipNoise, DPSGDKappaFactor (a constant) and DPSGDBiasPrior
// (negative: zero).
type dpsgdRules struct {
	clipNoise, kappaFactor, biasPrior float64
	// fallbackNoise replaces DPSGDFallbackNoise (negative: never).
	fallbackNoise float64
	// noSelect switches the selection of the released model off
	// (private_dpsgd_select.go).
	noSelect bool
	// ownHoldout replaces DPSGDSelectOwnHoldout.
	ownHoldout float64
}

// releaseProbe lets a test see a vector the bias and als modes release,
// right after its noise is added and before any post-processing, so that
// it can measure the noise against the statistic it computes from the
// data itself (TestReleasedNoiseVariance). what is the Release.What of the
// release in the report; public is the released state the statistic was
// computed from (the item rows of an ALS step; nil otherwise). It must
// not keep or modify the slices.
type releaseProbe struct {
	seen func(what string, noisy, public []float64)
}

// observe passes a noisy release to the probe, if any.
func (o *PrivateOptions) observe(what string, noisy, public []float64) {
	if o.probe != nil {
		o.probe.seen(what, noisy, public)
	}
}

// resolvedOptions validates o and fills defaults.
func (o *PrivateOptions) resolve(mode string) (PrivateOptions, error) {
	if o == nil {
		return PrivateOptions{}, fmt.Errorf("completion: %s perturbation: nil options", mode)
	}
	r := *o
	b := perturb.Budget{Epsilon: r.Epsilon, Delta: r.Delta}
	if err := b.Validate(); err != nil {
		return r, fmt.Errorf("completion: %s perturbation: %w", mode, err)
	}
	fin := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	if !fin(r.RatingMin) || !fin(r.RatingMax) || !(r.RatingMin < r.RatingMax) {
		return r, fmt.Errorf("completion: %s perturbation: %w: public rating range [%v, %v] must be finite with min < max (declare it; it is never taken from the data)", mode, perturb.ErrSensitivity, r.RatingMin, r.RatingMax)
	}
	u, err := ParseUnit(string(r.Unit))
	if err != nil {
		return r, fmt.Errorf("completion: %s perturbation: %w", mode, err)
	}
	r.Unit = u
	switch r.Protect {
	case "":
		r.Protect = ProtectAll
	case ProtectC, ProtectAll:
	default:
		return r, fmt.Errorf("completion: %s perturbation: unknown protect target %q (want C or all)", mode, r.Protect)
	}
	if r.Delta == 0 && (mode == "als" || mode == "gradient" && r.Protect == ProtectAll) {
		what := "private ALS"
		if mode == "gradient" {
			what = "gradient perturbation with ProtectAll (the default)"
		}
		return r, fmt.Errorf("completion: %s perturbation: %w: %s uses the Gaussian mechanism, which has no pure epsilon: give delta > 0, well below 1/(number of ratings)", mode, perturb.ErrDelta, what)
	}
	if r.Unit == UnitUser && r.MaxRatingsPerUser < 1 {
		return r, fmt.Errorf("completion: %s perturbation: %w: user unit needs max ratings per user >= 1, got %d", mode, perturb.ErrDimension, r.MaxRatingsPerUser)
	}
	if r.Scalars != nil && (r.Unit != UnitUser || !r.SelectedItems || !billboardMode(mode)) {
		return r, fmt.Errorf("completion: %s perturbation: Scalars (the log before a private item selection) applies to the bias and als modes at the user unit with SelectedItems only", mode)
	}
	switch r.Accounting {
	case "", "best", perturb.Basic, perturb.Advanced, perturb.RDP:
	default:
		return r, fmt.Errorf("completion: %s perturbation: unknown accounting %q (want basic, advanced or rdp)", mode, r.Accounting)
	}
	if r.Accounting == "best" {
		r.Accounting = ""
	}
	cal, err := perturb.ParseCalibration(string(r.Calibration))
	if err != nil {
		return r, err
	}
	r.Calibration = cal
	for _, p := range []struct {
		name string
		v    float64
	}{{"clip", r.Clip}, {"lambda", r.Lambda}, {"sigma", r.Sigma}, {"step epsilon", r.StepEpsilon}, {"mean fraction", r.MeanFraction}, {"sample rate", r.SampleRate}, {"warm fraction", r.WarmFraction}} {
		if !fin(p.v) || p.v < 0 {
			return r, fmt.Errorf("completion: %s perturbation: %w: %s is %v, must be finite and >= 0 (0 = default)", mode, perturb.ErrSensitivity, p.name, p.v)
		}
	}
	if r.MeanFraction == 0 {
		r.MeanFraction = DefaultMeanFraction
	}
	if r.SampleRate > 1 || r.WarmFraction >= 1 {
		return r, fmt.Errorf("completion: %s perturbation: sample rate %v must be <= 1 and warm fraction %v < 1", mode, r.SampleRate, r.WarmFraction)
	}
	if r.DPSGD > DPSGDPerEntry {
		return r, fmt.Errorf("completion: %s perturbation: unknown DP-SGD variant %v", mode, r.DPSGD)
	}
	if r.MeanFraction >= 1 {
		return r, fmt.Errorf("completion: %s perturbation: mean fraction %v must be < 1", mode, r.MeanFraction)
	}
	if r.ProtectMode < 0 || r.ProtectMode > 3 {
		return r, fmt.Errorf("completion: %s perturbation: protect mode %d out of range (0 = last mode, 1..3)", mode, r.ProtectMode)
	}
	return r, nil
}

// ratingRange is Delta_r = r_max - r_min.
func (o *PrivateOptions) ratingRange() float64 { return o.RatingMax - o.RatingMin }

// rulesRange is the width private ALS's rules take for the range: the
// released spread's (private_als_spread.go) when one was released,
// otherwise r_max - r_min. Sensitivities of releases whose clip is not a
// rule of it (the bias mode's, the clamp) keep ratingRange.
func (o *PrivateOptions) rulesRange() float64 {
	if o.rulesWidth > 0 {
		return o.rulesWidth
	}
	return o.ratingRange()
}

// unitCount is the number of ratings one privacy unit can change: 1 for
// entries, k for users.
func (o *PrivateOptions) unitCount() int {
	if o.Unit == UnitUser {
		return o.MaxRatingsPerUser
	}
	return 1
}

// relation returns the report's neighbouring relation of a mode.
func (o *PrivateOptions) relation(mode string) string {
	if o.Unit == UnitUser && billboardMode(mode) {
		return o.userRelation(o.weightedBound(false))
	}
	if o.Unit == UnitUser {
		return fmt.Sprintf("rating logs with the same observed positions differing in the values of one user's ratings (each user bounded to at most %d ratings before training); ratings clamped to the public range [%g, %g]", o.MaxRatingsPerUser, o.RatingMin, o.RatingMax)
	}
	return fmt.Sprintf("rating logs with the same observed positions differing in one rating value; ratings clamped to the public range [%g, %g]", o.RatingMin, o.RatingMax)
}

// userRelation is the user unit's relation with the contribution bound
// stated as bound.
func (o *PrivateOptions) userRelation(bound string) string {
	return fmt.Sprintf("rating logs differing by adding or removing one user with all of that user's ratings (%s); ratings clamped to the public range [%g, %g]", bound, o.RatingMin, o.RatingMax)
}

// relationCooccurrence is the user unit's relation when private ALS
// released the users' item co-occurrence from the log before the bound
// (PrivateOptions.Unbounded).
func (o *PrivateOptions) relationCooccurrence() string {
	return o.userRelation(o.weightedBound(true))
}

// weightedBound states the bias and als modes' contribution bound at the
// user unit; cooc says private ALS released the users' item
// co-occurrence, which reads every rating too.
func (o *PrivateOptions) weightedBound(cooc bool) string {
	but, also := "the item counts and sums", ""
	if cooc {
		but = "the item counts and sums and the users' item co-occurrence"
		also = fmt.Sprintf("; the co-occurrence reads at most %d distinct items a user, and its sensitivity does not grow with them", ALSUserPositionsMaxPerUser)
	}
	return fmt.Sprintf("each user bounded to at most %d ratings, one per item, in every release but %s, which read every rating of each user when the caller gives the log before the bound (dprec train and dprec-beam do); the item counts and sums weigh each of a user's ratings, one per item, by w_u (UserContributionWeight: 1 for m_u <= k distinct items, sqrt(k/m_u) under Gaussian noise and k/m_u under Laplace above), so that a user moves them no more than k ratings of weight 1 do%s", o.MaxRatingsPerUser, but, also)
}

// relationKind returns the report's relation kind of a mode (minibatch
// DP-SGD overrides it with zero-out).
func (o *PrivateOptions) relationKind(mode string) string {
	if o.Unit == UnitUser && billboardMode(mode) {
		return perturb.RelationAddRemove
	}
	return perturb.RelationValueChange
}

// billboardMode reports whether mode releases only the item side (the
// bias and als modes), which is what makes add/remove-user privacy
// possible.
func billboardMode(mode string) bool { return mode == "bias" || mode == "als" }

// source returns the noise source of stream id s.
func (o *PrivateOptions) source(s uint64) rand.Source {
	return o.Noise.Source(s)
}

// Stream ids: one per mechanism and per worker, so no two share a stream.
const (
	streamInput  = 1
	streamOutput = 2
	streamMean   = 3
	streamWorker = 1 << 20 // + worker index
)

// StepCap returns the largest SGD learning rate a private mode allows when
// every per-entry gradient coordinate of a parameter carries noise of
// variance s2. SGD with step lr on a parameter whose loss has curvature
// about 2 per entry (a bias under squared error) keeps the noise's
// stationary variance near lr s2/4, so lr <= tau^2/s2 keeps its spread
// within half the public prior spread of a bias, tau^2 = ((r_max -
// r_min)/4)^2 / BiasItemPenalty (the bias mode's prior). Only public
// quantities enter (epsilon, delta and the rating range through s2, the
// number of epochs through the calibration); no run is retried after
// looking at its error. The factor (half the prior spread rather than
// all of it, 4 tau^2/s2) was chosen on the validation part of
// ml-latest-small's training log: input 0.956 against 0.984 at epsilon 1,
// gradient --protect all 0.927 against 0.973 at epsilon 5.
func StepCap(o *PrivateOptions, s2 float64) float64 {
	t := o.ratingRange() / 4
	return t * t / BiasItemPenalty / s2
}

// capStep lowers s's learning rates to the step cap for noise variance s2
// (the core's in the same ratio) and notes it in rep.
func capStep(o *PrivateOptions, s *Settings, s2 float64) string {
	c := StepCap(o, s2)
	if !(s.LearningRate > c) {
		return ""
	}
	f := c / s.LearningRate
	old := s.LearningRate
	s.LearningRate = c
	s.CoreLearningRate *= f
	return fmt.Sprintf("learning rate capped from %g to %.4g = tau^2/s^2 (per-coordinate gradient noise variance s^2 = %.4g, tau^2 = ((r_max-r_min)/4)^2/%g; completion.StepCap)", old, c, s2, BiasItemPenalty)
}

// fastNoiseNote is the report note of a mode whose Gaussian noise is
// drawn in bulk by perturb.Gaussian.AddToFast.
func fastNoiseNote(what string) string {
	return what + " noise sampler: perturb.Gaussian.AddToFast (inputs snapped to the power-of-two grid, ziggurat normals dithered to float64 precision from perturb.Noise.FastSource, a ChaCha8 keyed from crypto/rand for secure noise, rounded to the grid so that every grid point within 41 sigma of the input is reachable, the tail included, sigma corrected for the snapping): outputs are grid points, and the guarantee is that of the continuous Gaussian mechanism to the accuracy of the ziggurat sampler, not of the exact discrete Gaussian (perturb package doc, Floating point)"
}

// clampValue clamps v to [lo, hi].
func clampValue(v, lo, hi float64) float64 {
	// In range (and not a zero, whose sign math.Max/Min choose): they would
	// return v, and they are not inlined on amd64.
	if v >= lo && v <= hi && v != 0 {
		return v
	}
	return math.Min(hi, math.Max(lo, v))
}

// ErrUserBound is returned (wrapped) by Plan when the user unit is chosen
// and some user has more than MaxRatingsPerUser ratings in the store.
var ErrUserBound = errors.New("completion: user contribution not bounded")

// checkUserBound verifies that no user (mode 0) has more than k ratings.
func checkUserBound(train *data.Store, k int) error {
	cnt := make([]int, train.Dims[0])
	for _, u := range train.Idx[0] {
		cnt[u]++
		if cnt[u] > k {
			return fmt.Errorf("%w: user index %d has more than %d ratings; bound contributions first (BoundUserRatings / --max-ratings-per-user)", ErrUserBound, u, k)
		}
	}
	return nil
}

// BoundUserRatings returns the positions of a subset of train in which every
// user (mode 0) keeps at most k of their ratings, chosen uniformly at
// random with src (a function of the observed positions only, never of the
// rating values, so it needs no privacy budget under the relations used
// here), and the store restricted to them (train.Subset). Positions are
// returned in increasing order. k must be >= 1.
func BoundUserRatings(train *data.Store, k int, src rand.Source) (*data.Store, []int, error) {
	r, byUser, err := rowsByUser("BoundUserRatings", train, k, src)
	if err != nil {
		return nil, nil, err
	}
	var keep []int
	for _, es := range byUser {
		if len(es) > k {
			r.Shuffle(len(es), func(i, j int) { es[i], es[j] = es[j], es[i] })
			es = es[:k]
		}
		keep = append(keep, es...)
	}
	slices.Sort(keep)
	return train.Subset(keep), keep, nil
}

// rowsByUser checks the arguments of the contribution-bounding functions
// (fn names the caller in errors) and returns the random stream and each
// user's (mode 0) row positions in store order.
func rowsByUser(fn string, train *data.Store, k int, src rand.Source) (*rand.Rand, [][]int, error) {
	if k < 1 {
		return nil, nil, fmt.Errorf("%w: max ratings per user is %d, must be >= 1", perturb.ErrDimension, k)
	}
	if train == nil || train.Order() < 2 {
		return nil, nil, fmt.Errorf("completion: %s: nil or malformed store", fn)
	}
	if src == nil {
		return nil, nil, fmt.Errorf("completion: %s: nil random source", fn)
	}
	byUser := make([][]int, train.Dims[0])
	for e, u := range train.Idx[0] {
		byUser[u] = append(byUser[u], e)
	}
	return rand.New(src), byUser, nil
}

// admit composes acc and checks the budget with the chosen accounting.
func admit(o *PrivateOptions, acc *perturb.Accountant) (eps, delta float64, method perturb.Composition, err error) {
	return perturb.Budget{Epsilon: o.Epsilon, Delta: o.Delta}.Admit(acc, o.Accounting)
}

// baseReport fills the fields every mode shares.
func baseReport(o *PrivateOptions, mode string, acc *perturb.Accountant, eps, delta float64, method perturb.Composition) *perturb.Report {
	return &perturb.Report{
		Mode:         mode,
		Relation:     o.relation(mode),
		RelationKind: o.relationKind(mode),
		Unit:         string(o.Unit),
		Epsilon:      eps,
		Delta:        delta,
		Composition:  string(method),
		Releases:     acc.Releases(),
		Randomness:   o.Noise.Provenance().String(),
		Notes:        []string{publicNote(o, mode)},
	}
}

// publicClamp sets the model's prediction clamp to the public rating range
// (a caller may have set it from the data's min and max, which would be a
// non-private release) and notes it in the report.
func publicClamp(o *PrivateOptions, m *decomposition.Model, rep *perturb.Report) {
	m.ClampLo, m.ClampHi = o.RatingMin, o.RatingMax
	if rep != nil {
		rep.Notes = append(rep.Notes, fmt.Sprintf("predictions clamped to the public range [%g, %g]", o.RatingMin, o.RatingMax))
	}
}

// paramNames lists the model's released parameter groups by mode letter.
func paramNames(order int, tucker, bias bool) []string {
	letters := []string{"A (users)", "B (items)", "C (time)"}
	if order == 2 {
		letters = letters[:2]
	}
	out := append([]string(nil), letters...)
	if tucker {
		out = append(out, "G (core)")
	}
	if bias {
		out = append(out, "biases", "global mean")
	}
	return out
}

// Public lists, per relation, what a report names as public (the
// complement of what the relation protects). Tests check reports against
// these strings.
const (
	// PublicEntry: entry-level relation (one rating value changes).
	PublicEntry = "public under the relation: the observed positions (user and item dictionaries, who rated what and when), every count, the time range"
	// PublicUserValues: the SGD modes' user unit (the values of one
	// user's ratings change; positions stay).
	PublicUserValues = PublicEntry + "; only the values of one user's ratings are protected, NOT whether the user is in the log"
	// PublicUserCatalogue: add/remove one user, public item catalogue.
	PublicUserCatalogue = "public under the relation: the item catalogue (--items), the time range (--time-from/--time-to), the rating range and the bound k; NOT public and never released without noise: the users (no user dictionary or rows), their number, the number of ratings, every count"
	// PublicUserSelected: add/remove one user, items selected privately.
	PublicUserSelected = "public under the relation: the time range (--time-from/--time-to), the rating range and the bound k; the item set is selected privately (its own release); NOT public and never released without noise: the users (no user dictionary or rows), their number, the number of ratings, every count"
)

// publicNote names what the relation of mode treats as public.
func publicNote(o *PrivateOptions, mode string) string {
	switch {
	case o.Unit == UnitUser && billboardMode(mode) && o.SelectedItems:
		return PublicUserSelected
	case o.Unit == UnitUser && billboardMode(mode):
		return PublicUserCatalogue
	case o.Unit == UnitUser:
		return PublicUserValues
	}
	return PublicEntry
}
