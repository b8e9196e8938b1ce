package completion

// PRIVATE ALS, ENTRY UNIT: THE RELEASED RATING SPREAD.
//
// The entry unit's rules (the residual route's clip, ridge and
// learnability gates, the positions stage's clip and regime, the scale of
// the free columns) take the spread of a rating to be s = (r_max -
// r_min)/4, the bias mode's sigma_r: a public quantity, right when the
// ratings fill the declared range. When the range overstates the spread
// the rules go wrong in the harmful direction: the noise is calibrated to
// the declared range (a wider clip) while the signal is the data's, so the
// gates let the route run under noise the ratings cannot carry. On a
// joke-shaped synthetic log declared on [-5, 12] (standard deviation
// 1.76 against the rules' 4.25) private ALS scored 1.7668 at epsilon 1
// against the private bias model's 1.6639.
//
// So the entry unit first releases the spread. With m = (r_min + r_max)/2
// the range's midpoint and W = r_max - r_min, the release is the vector
//
//	(sum_e (clamp(r_e) - m), sum_e (clamp(r_e) - m)^2)
//
// with Laplace noise at epsilon_s = ALSSpreadFraction epsilon. Under the
// entry relation one rating changes, from a to b with a, b in [-h, h], h =
// W/2 (the clamped values less m). The vector moves in l1 by
//
//	|a - b| + |a^2 - b^2| = |a - b| (1 + |a + b|).
//
// By the symmetry (a, b) -> (-b, -a) take a > b and sigma = a + b >= 0;
// for a fixed sigma, a - b is largest at a = h, so the bound is the
// maximum over sigma in [0, 2h] of g(sigma) = (2h - sigma)(1 + sigma),
// whose derivative 2h - 1 - 2 sigma vanishes at sigma = h - 1/2. Hence
//
//	Delta_1 = (h + 1/2)^2 = ((W + 1)/2)^2   when W >= 1 (a = h, b = -1/2),
//	Delta_1 = W                            when W < 1 (a = h, b = -h),
//
// attained by the pair given, below the sum of the two coordinates'
// separate bounds, W + W^2/4 (81 against 89.25 on [-5, 12]). The count N
// is public. With b = Delta_1/epsilon_s the Laplace scale, the released
// variance and its upper bound are
//
//	v~ = Q~/N - (S~/N)^2,
//	v+ = max(0, v~ + ALSSpreadZ sqrt(2) (b/N) sqrt(1 + 4 (S~/N)^2)),
//
// the second term ALSSpreadZ times the standard deviation of v~'s noise to
// first order (Q~/N and S~/N each carry noise of variance 2 (b/N)^2, and
// S~/N enters squared); s^ = sqrt(v+). It is a margin, not a confidence
// bound: the Laplace tail leaves the noise below -2 sd with probability
// about e^(-2 sqrt 2)/2 = 3%, and the floor limits the harm. On a small log, or at a small
// epsilon, the bound is loose and the rules keep the range's width: they
// narrow only as far as the release shows. The rules take the width 4s
// with
//
//	s = min(W/4, max(ALSSpreadMargin s^, ALSSpreadFloor W/4))
//
// in place of W (post-processing of the release). The margin keeps the
// rules where they were calibrated: on the logs whose validation parts
// chose them the released s^ is 0.93 (ml-latest-small), 1.04 (Jester5k)
// and 1.13 (MovieLens-100K) times W/4, so 1.25 s^ >= W/4 and nothing
// changes; the rules move only when the ratings fill less than 80% of the
// spread the range implies. The floor keeps s away from zero on a log
// whose ratings are (nearly) all equal.
//
// The clamp stays the declared range, and every sensitivity downstream is
// stated from the clip the rules choose (public: a function of epsilon, the
// range and the released s^). Composition: the spread release, then the
// route at epsilon - epsilon_s, basic: their epsilons add.

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"

	"github.com/dprec/dprec/perturb"
)

// ALSSpreadFraction is the share of epsilon the entry unit spends on the
// rating spread's release. At epsilon 1 on the 1-5 scale with 90,000
// ratings the released mean square has noise of standard deviation
// sqrt(2) 6.25/(0.01 x 90,000) = 0.0098 (against a spread of about 1).
const ALSSpreadFraction = 0.01

// ALSSpreadMargin is the factor on the released standard deviation in the
// rules' spread, s = min((r_max - r_min)/4, max(ALSSpreadMargin s^,
// ALSSpreadFloor (r_max - r_min)/4)); ALSSpreadFloor
// bounds s below by that fraction of (r_max - r_min)/4; ALSSpreadZ is the
// number of the noise's standard deviations added to the released
// variance (its upper bound v+).
const (
	ALSSpreadMargin = 1.25
	ALSSpreadFloor  = 0.1
	ALSSpreadZ      = 2
)

const streamALSSpread = 18

// alsSpreadMarginHook, when positive (measurement: TestPrivateALSSweep's
// DPREC_ALS_SPREADMARGIN), replaces ALSSpreadMargin; negative skips the
// rule (the rules keep the range's width; the release is still made).
var alsSpreadMarginHook float64

// alsSpreadWhat names the spread release in the report.
const alsSpreadWhat = "sum and sum of squares of the clamped ratings about the range's midpoint (private ALS, entry unit: the rating spread its rules use)"

// SquareSource supplies the sum of squares of the spread release.
type SquareSource interface {
	// SquareSum returns the sum over the ratings r of (BiasClamp(r,
	// o.RatingMin, o.RatingMax) - (o.RatingMin + o.RatingMax)/2)^2.
	SquareSum(o *PrivateOptions) (float64, error)
}

// ALSSpreadSensitivity is the l1 sensitivity of the spread release for a
// rating range of width W: ((W + 1)/2)^2 when W >= 1, W otherwise (the
// derivation above).
func ALSSpreadSensitivity(W float64) float64 {
	if W >= 1 {
		return (W + 1) * (W + 1) / 4
	}
	return W
}

// alsSpread is the spread release of one run.
type alsSpread struct {
	eps   float64 // epsilon_s
	sd    float64 // the released standard deviation s^
	width float64 // the rules' width 4s
	rel   perturb.Release
}

// releaseALSSpread releases the rating spread from n ratings whose clamped
// values sum to sum (BiasSource.Totals) and src's sum of squares, at
// epsilon_s = ALSSpreadFraction o.Epsilon, and returns it; o.Epsilon is left
// to the caller.
func releaseALSSpread(src BiasSource, o *PrivateOptions) (*alsSpread, error) {
	sq, ok := src.(SquareSource)
	if !ok {
		return nil, errors.New("completion: private ALS: the source supplies no sum of squares (SquareSource)")
	}
	n, sum, _, err := src.Totals(o)
	if err != nil {
		return nil, err
	}
	if n <= 0 {
		return nil, errors.New("completion: private ALS: no rating")
	}
	q, err := sq.SquareSum(o)
	if err != nil {
		return nil, err
	}
	W := o.ratingRange()
	mid := (o.RatingMin + o.RatingMax) / 2
	eps := ALSSpreadFraction * o.Epsilon
	l1 := ALSSpreadSensitivity(W)
	lap, err := perturb.NewLaplace(l1, eps)
	if err != nil {
		return nil, fmt.Errorf("completion: private ALS (spread release): %w", err)
	}
	t := []float64{sum - float64(n)*mid, q}
	lap.AddTo(t, rand.New(o.source(streamALSSpread)))
	o.observe(alsSpreadWhat, t, nil)
	observeSource(src, alsSpreadWhat, t)
	N := float64(n)
	mean, bn := t[0]/N, lap.Scale()/N
	sd := math.Sqrt(math.Max(0, t[1]/N-mean*mean+ALSSpreadZ*math.Sqrt2*bn*math.Sqrt(1+4*mean*mean)))
	// Six significant digits (post-processing), so that a source summing
	// the squares in another order (dprec-beam: per item, then over the
	// items) plans the same width, clip and report.
	sd, _ = strconv.ParseFloat(strconv.FormatFloat(sd, 'g', 6, 64), 64)
	rel := lap.Release(alsSpreadWhat)
	rel.Derivation = fmt.Sprintf("positions public: one rating moves a = clamp(r) - m to b, both in [-W/2, W/2], W = %g, and the vector by |a - b| (1 + |a + b|): l1 = ((W + 1)/2)^2 for W >= 1, W for W < 1; here l1 = %g (completion/private_als_spread.go)", W, l1)
	margin := ALSSpreadMargin
	if alsSpreadMarginHook > 0 {
		margin = alsSpreadMarginHook
	}
	s := math.Min(W/biasSpreadDivisor, math.Max(margin*sd, ALSSpreadFloor*W/biasSpreadDivisor))
	if alsSpreadMarginHook < 0 {
		s = W / biasSpreadDivisor
	}
	return &alsSpread{eps: eps, sd: sd, width: biasSpreadDivisor * s, rel: rel}, nil
}

// apply sets the rules' width in o and leaves o the route's epsilon,
// o.Epsilon - epsilon_s.
func (sp *alsSpread) apply(o *PrivateOptions) {
	o.rulesWidth = sp.width
	o.Epsilon -= sp.eps
}

// report adds the spread release to rep, the route's report at epsilon -
// epsilon_s: its release first, the epsilons added (basic composition),
// and a note on the rule.
func (sp *alsSpread) report(rep *perturb.Report, o *PrivateOptions) {
	if rep == nil {
		return
	}
	rep.Releases = append([]perturb.Release{sp.rel}, rep.Releases...)
	rep.Epsilon += sp.eps
	// Released too: s^ and the width, stated in the note below.
	rep.Covered = append(rep.Covered, "rating spread")
	rep.Composition = fmt.Sprintf("the rating spread's release (epsilon %g) plus the route's (%s), basic", sp.eps, rep.Composition)
	W := o.ratingRange()
	how := "the range's, unchanged (the released spread fills it)"
	if sp.width < W {
		how = fmt.Sprintf("%g in place of the range %g (the ratings fill less of it than its width implies)", sp.width, W)
	}
	rep.Notes = append(rep.Notes, fmt.Sprintf("rating spread: the released standard deviation of the clamped ratings (its upper bound: the square root of the released variance plus %g standard deviations of its noise) is %.4g; the rules (clips, ridges, gates, the scale of the item-bias column) take the width 4s, s = min((r_max - r_min)/4, max(%g x %.4g, %g (r_max - r_min)/4)): %s", float64(ALSSpreadZ), sp.sd, ALSSpreadMargin, sp.sd, ALSSpreadFloor, how))
}
