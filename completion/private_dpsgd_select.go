package completion

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/perturb"
)

// MINIBATCH DP-SGD: THE RELEASED MODEL CHOSEN ON SCORED RATINGS.
//
// Below DPSGDFallbackNoise the steps run, and three post-processings of
// their output compete: the model's own user rows (candOwn), a billboard
// model whose users fold in to the trained item rows (candTrained), and
// the same with the last two item columns replaced by private ALS's free
// columns (candFree; freeItemColumnsAt: the released item biases over s,
// then the standardised log(1 + n_i) of the public counts). Which wins is
// a property of the private log: on validation parts the free columns
// gained 0.015-0.022 on both MovieLens logs at every sigma and lost up to
// 0.035 on the joke-shaped ones (docs/privacy.md, "DP-SGD at small
// epsilon", tried and not kept in session 18), and below sigma 3 folding
// in gained 0.07 on Jester5k and lost 0.07-0.09 on a planted log
// (DPSGDBillboardNoise's table). So a private selection chooses, among candTrained and
// candFree at sigma >= DPSGDBillboardNoise (the user rows are not
// released there) and among all three below:
//
//  1. A hash of each rating's position (its user, item and time indices,
//     public under the entry relation) marks DPSGDSelectHoldout of the
//     ratings as scored. They stay in the steps and the warm start; below
//     DPSGDBillboardNoise their clipped gradients leave out the user's row
//     and bias (rowOff), so the own rows are scored out of sample.
//  2. After the steps, each user with ratings of both kinds is folded into
//     the billboard candidates from their unscored ratings (the billboard
//     solve, BillboardFold) or predicted by their own row, and scored on
//     the others: l_j, the mean squared error of candidate j's clamped
//     predictions against the clamped ratings. The released statistic is,
//     for each j >= 1, the sum over users of d_uj = clip(l_j - l_0, -D, D),
//     D = DPSGDSelectClip s^2, s = (r_max - r_min)/4.
//  3. Given the released steps (the candidates are functions of them and
//     of public counts), a rating enters only its own user's d_u, through
//     their scores or their fold-in, and each d_uj stays in [-D, D]: the
//     statistic moves by at most 2D sqrt(J - 1) in l2 (J candidates), for
//     a change of the rating's value and for its zero-out alike. Gaussian
//     noise of sd sigma 2D sqrt(J - 1), sigma the steps' noise
//     multiplier, so the selection costs exactly one more full-batch step:
//     sigma is solved for T + 1 of them. It needs q = 1 (at a smaller rate
//     a step's RDP is the sampled Gaussian's and the plan keeps its T
//     steps with no selection). RDP composes adaptively, so the
//     selection's conditional law given the steps adds its curve; for the
//     value change it enters once, as the warm start does
//     (perturb.GroupTwoEpsilon's direct releases). The candidate with the
//     smallest noisy sum is taken (the first at 0).
//
// The scored ratings are in the item side's training data, so the scores
// lean towards the trained rows (in-sample for the item side, out of
// sample for the users). Holding them out of the steps instead cost more
// than it bought at sigma >= 3: on validation parts at epsilon 3 / 10 (60
// epochs), held out -> in the steps: MovieLens-100K 0.9401 / 0.9311 ->
// 0.9373 / 0.9300, Jester5k 4.1709 / 4.0645 -> 4.1618 / 4.0570, the
// MovieLens-shaped synth 0.8241 / 0.7656 -> 0.8227 / 0.7512. Below sigma
// 3 the item rows have also fitted the scored ratings through the own
// rows, which favours candOwn: on MovieLens-100K at epsilon 100 it was
// chosen at 0.9321 where candFree scored 0.9259.
//
// Validation parts, 60 epochs (TestMovieLensDPSGDSweep with FOLD=1;
// NOSELECT=1 for none), no selection -> selection, epsilon 3 / 10 / 30 /
// 100 (sigma 12.4 / 4.4 / 1.87 / 0.81):
//
//	MovieLens-100K          0.9579 / 0.9489 / 0.9332 / 0.9307 -> 0.9373 / 0.9300 / 0.9203 / 0.9321
//	ml-latest-small (weeks) 0.8547 / 0.8481 / 0.8504 / 0.8463 -> 0.8397 / 0.8330 / 0.8297 / 0.8297
//	Jester5k                4.1618 / 4.0567 / 4.1620 / 4.1750 -> 4.1618 / 4.0570 / 4.0780 / 4.0901
//	joke-shaped synth       1.6021 / 1.5632 / 1.5376 / 1.5447 -> 1.6026 / 1.5640 / 1.5287 / 1.5276
//	MovieLens-shaped synth  0.8219 / 0.7495 / 0.6272 / 0.6016 -> 0.8227 / 0.7512 / 0.6314 / 0.6047
//
// Where a log keeps the trained rows or its own rows it pays for the
// extra step and, below sigma 3, for own rows trained without a tenth of
// their ratings: at most 0.0042; elsewhere it gains up to 0.085 (and on
// MovieLens-100K at epsilon 100 it lost 0.0014, the own rows chosen).
//
// The selection applies to CP models of rank at least 4 with biases at the
// default rate q = 1; elsewhere the rules of sigma alone decide.

// Public constants of the selection.
const (
	// DPSGDSelectHoldout is the share of ratings scored.
	DPSGDSelectHoldout = 0.1
	// DPSGDSelectOwnHoldout is the share of ratings scored below
	// DPSGDBillboardNoise, where they do not train the user rows. At 0.05
	// the own rows cost half as much where they are chosen (the
	// MovieLens-shaped synth at epsilon 30 / 100: 0.6293 / 0.6030, against
	// 0.6314 / 0.6047 at 0.1 and 0.6272 / 0.6016 with no selection), but
	// MovieLens-100K at epsilon 30 chose the trained rows at 0.9311 where
	// 0.1 chose the free columns at 0.9203.
	DPSGDSelectOwnHoldout = 0.1
	// DPSGDSelectClip sets D = DPSGDSelectClip s^2, the clip of a user's
	// loss difference.
	DPSGDSelectClip = 0.1
)

const streamDPSGDSelect = 19

// dpsgdSelectWhat names the selection's release in the report.
const dpsgdSelectWhat = "scored ratings' loss differences between the candidate models (clipped per user, summed over users)"

// dpsgdCandidate is a model the selection chooses among.
type dpsgdCandidate uint8

const (
	// candTrained: users folded into the trained item rows (billboard).
	candTrained dpsgdCandidate = iota
	// candFree: users folded into the item rows with the free columns in
	// the last two columns (billboard).
	candFree
	// candOwn: the model's own user rows (below DPSGDBillboardNoise).
	candOwn
)

func (c dpsgdCandidate) String() string {
	switch c {
	case candTrained:
		return "the trained item rows, users folded in"
	case candFree:
		return "the free columns in the last two item columns, users folded in"
	case candOwn:
		return "the model's own user rows"
	}
	return "unknown"
}

// candidates returns the selection's candidates, the reference first.
func (mb *minibatchPlan) candidates() []dpsgdCandidate {
	if mb.selectOwn {
		return []dpsgdCandidate{candOwn, candTrained, candFree}
	}
	return []dpsgdCandidate{candTrained, candFree}
}

// dpsgdSelectApplies reports whether the plan may run the selection
// (before sigma is known).
// It needs biases (the free columns are built from the item biases), a
// CP model of rank at least 4 (two free columns and two trained ones at
// least), q = 1 (one more step at the steps' own RDP) and no fixed sigma.
func (p *GradientPerturbation) dpsgdSelectApplies(train *data.Store, s *Settings, mb *minibatchPlan) bool {
	if r := p.o.dpsgdRules; r != nil && r.noSelect {
		return false
	}
	return s.hasBias && s.modelKind == decomposition.CP && s.modelRank >= 4 && mb.q >= 1 && p.o.Sigma == 0 && train.Order() <= 3
}

// dpsgdHeldOut returns, for each rating of train, whether the selection
// scores it: a hash of its position only.
func dpsgdHeldOut(train *data.Store, share float64) []bool {
	out := make([]bool, train.NNZ())
	b := make([]byte, 4*train.Order())
	h := fnv.New64a()
	for e := range out {
		for k := range train.Order() {
			binary.LittleEndian.PutUint32(b[4*k:], uint32(train.Idx[k][e]))
		}
		h.Reset()
		h.Write(b)
		out[e] = h.Sum64()%1000 < uint64(math.Round(1000*share))
	}
	return out
}

// ownHoldout is DPSGDSelectOwnHoldout or the sweeps' override.
func (p *GradientPerturbation) ownHoldout() float64 {
	if r := p.o.dpsgdRules; r != nil && r.ownHoldout > 0 {
		return r.ownHoldout
	}
	return DPSGDSelectOwnHoldout
}

// dpsgdSelectD is D of the selection for the options' range.
func dpsgdSelectD(o *PrivateOptions) float64 {
	s := o.ratingRange() / 4
	return DPSGDSelectClip * s * s
}

// DPSGDSelectSensitivity returns the selection's l2 sensitivity 2D
// sqrt(J - 1) for J candidates and a rating range of width w: D =
// DPSGDSelectClip (w/4)^2.
func DPSGDSelectSensitivity(w float64, J int) float64 {
	s := w / 4
	return 2 * DPSGDSelectClip * s * s * math.Sqrt(float64(J-1))
}

// dpsgdSelectRelease is the selection's release for the report at noise
// multiplier sigma.
func dpsgdSelectRelease(o *PrivateOptions, sigma float64, cands []dpsgdCandidate) perturb.Release {
	J := len(cands)
	d := DPSGDSelectSensitivity(o.ratingRange(), J)
	return perturb.Release{What: dpsgdSelectWhat, Mechanism: perturb.MechGaussian, SensitivityNorm: "l2", Sensitivity: d,
		Derivation: fmt.Sprintf("%d candidates, %d loss differences from the first; given the released steps, one rating enters only its own user's differences (their scored ratings or their fold-in; the user rows of the first candidate, when they are the model's own, are trained without the scored ratings), each clipped to [-D, D], D = %g s^2 = %.4g: 2D sqrt(%d) for a value change and for a zero-out alike; the steps' noise multiplier, one more full-batch step (completion/private_dpsgd_select.go)", J, J-1, float64(DPSGDSelectClip), dpsgdSelectD(o), J-1),
		Scale:      sigma * d, Calibration: "sigma"}
}

// selectStat returns the selection's statistic before its noise: for
// each candidate model j >= 1, the sum over users of clip(l_j - l_0, -D,
// D), and the number of users scored. own says that models[0] predicts
// with its own user rows; every other model folds each user in from their
// unscored ratings.
func selectStat(train *data.Store, held []bool, models []*decomposition.Model, own bool, o *PrivateOptions) ([]float64, int, error) {
	by := make([][]int, train.Dims[0])
	for e, u := range train.Idx[0] {
		by[u] = append(by[u], e)
	}
	D := dpsgdSelectD(o)
	order := train.Order()
	J := len(models)
	works := make([]*decomposition.Work, J)
	for j, mj := range models {
		works[j] = mj.NewWork()
	}
	idx := make([]int32, order)
	pen := BillboardFold()
	sum := make([]float64, J-1)
	l := make([]float64, J)
	users := 0
	var fit, score []int
	for _, es := range by {
		fit, score = fit[:0], score[:0]
		for _, e := range es {
			if held[e] {
				score = append(score, e)
			} else {
				fit = append(fit, e)
			}
		}
		if len(fit) == 0 || len(score) == 0 {
			continue
		}
		// The user's raw ratings, as a user is folded in at prediction
		// time (the scores clamp; each d_uj is clipped whatever the
		// values).
		items, times, ratings := foldInputs(train, fit, order)
		for j, mj := range models {
			l[j] = 0
			if own && j == 0 {
				// The model's own user row.
				for _, e := range score {
					for k := range idx {
						idx[k] = train.Idx[k][e]
					}
					d := mj.Predict(idx) - clampValue(train.Val[e], o.RatingMin, o.RatingMax)
					l[j] += d * d
				}
			} else if err := addFoldedLoss(&l[j], train, mj, items, times, ratings, score, pen, o, works[j], idx); err != nil {
				return nil, 0, fmt.Errorf("completion: minibatch DP-SGD: scored fold-in: %w", err)
			}
			l[j] /= float64(len(score))
		}
		for j := 1; j < J; j++ {
			sum[j-1] += math.Max(-D, math.Min(D, l[j]-l[0]))
		}
		users++
	}
	return sum, users, nil
}

// withFreeColumns returns a copy of m whose last two item columns are
// private ALS's free columns (and, at order 3, whose time rows are ones in
// them).
func withFreeColumns(m *decomposition.Model, o *PrivateOptions, counts []int) *decomposition.Model {
	c := billboardCopy(m)
	R := m.Ranks[0]
	cnt := make([]float64, len(counts))
	for i, n := range counts {
		cnt[i] = float64(n)
	}
	freeItemColumnsAt(c, o, cnt, R-2)
	for mo := 2; mo < c.Order(); mo++ {
		for i := 0; i < c.Dims[mo]; i++ {
			c.Factors[mo][i*R+R-2], c.Factors[mo][i*R+R-1] = 1, 1
		}
	}
	return c
}

// billboardCopy returns a copy of m with its user rows and biases zero.
func billboardCopy(m *decomposition.Model) *decomposition.Model {
	c := *m
	c.Factors = make([][]float64, len(m.Factors))
	for i, f := range m.Factors {
		c.Factors[i] = slices.Clone(f)
	}
	clear(c.Factors[0])
	if m.HasBias {
		c.Bias = make([][]float64, len(m.Bias))
		for i, b := range m.Bias {
			c.Bias[i] = slices.Clone(b)
		}
		clear(c.Bias[0])
	}
	return &c
}

// selectModel runs the selection on the released model m (own user rows
// when mb.selectOwn, else a billboard model with zero user terms) and
// writes the chosen candidate into m and the report.
func (p *GradientPerturbation) selectModel(m *decomposition.Model, train *data.Store) error {
	mb := p.mb
	counts := make([]int, train.Dims[1])
	for _, i := range train.Idx[1] {
		counts[i]++
	}
	cands := mb.candidates()
	models := make([]*decomposition.Model, len(cands))
	for j, c := range cands {
		switch c {
		case candOwn:
			models[j] = m
		case candTrained:
			if mb.selectOwn {
				models[j] = billboardCopy(m)
			} else {
				models[j] = m
			}
		case candFree:
			models[j] = withFreeColumns(m, &p.o, counts)
		}
	}
	stat, users, err := selectStat(train, mb.held, models, mb.selectOwn, &p.o)
	if err != nil {
		return err
	}
	sens := DPSGDSelectSensitivity(p.o.ratingRange(), len(cands))
	g, err := perturb.NewGaussianSigma(sens, mb.noiseMult*sens)
	if err != nil {
		return fmt.Errorf("completion: minibatch DP-SGD: %w", err)
	}
	noisy := slices.Clone(stat)
	g.AddTo(noisy, rand.New(p.o.source(streamDPSGDSelect)))
	p.o.observe(dpsgdSelectWhat, noisy, nil)
	best, bestV := 0, 0.0
	for j, v := range noisy {
		if v < bestV {
			best, bestV = j+1, v
		}
	}
	mb.chosen, mb.selectUsers = cands[best], users
	parts := make([]string, len(noisy))
	for j, v := range noisy {
		parts[j] = fmt.Sprintf("%s: %.4g", cands[j+1], v)
	}
	p.report.Notes = append(p.report.Notes, fmt.Sprintf("released model chosen on scored ratings among %d candidates (%s first; a hash of each rating's position marks %g of the ratings, which stay in the steps; when the model's own user rows are a candidate the scored ratings do not train them): each user is folded in from their other ratings (the billboard solve) or predicted by their own row, and scored on the marked ones; the sums over users of the loss differences from the first candidate, each clipped to [-D, D], D = %g s^2, released with Gaussian noise sd %.4g (the steps' noise multiplier at l2 sensitivity 2D sqrt(J - 1); one more full-batch step in the accounting): %s; chosen: %s", len(cands), cands[0], mb.selectShare, float64(DPSGDSelectClip), g.Sigma(), strings.Join(parts, ", "), mb.chosen))
	if mb.chosen == candOwn {
		return nil
	}
	if mb.selectOwn {
		dpsgdBillboard(m, p.report, "the selection above chose a billboard model")
	}
	if mb.chosen == candFree {
		f := models[best]
		for mo := 1; mo < m.Order(); mo++ {
			copy(m.Factors[mo], f.Factors[mo])
		}
	}
	return nil
}
