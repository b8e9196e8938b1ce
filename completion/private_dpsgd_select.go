package completion

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/perturb"
)

// MINIBATCH DP-SGD, BILLBOARD MODEL: THE FREE COLUMNS CHOSEN ON SCORED
// RATINGS.
//
// Where the billboard rule holds (DPSGDBillboardNoise <= sigma <
// DPSGDFallbackNoise) the released item side is either the steps' item
// rows as trained, or the same rows with their last two columns replaced
// by private ALS's free columns (freeItemColumnsAt: the released item
// biases over s, then the standardised log(1 + n_i) of the public counts;
// post-processing). On validation parts the free columns gained
// 0.015-0.022 on both MovieLens logs at every sigma and lost up to 0.035
// on the joke-shaped ones (DPSGDBillboardNoise's table): which one wins is
// a property of the private log, so a private selection chooses:
//
//  1. A hash of each rating's position (its user, item and time indices,
//     public under the entry relation) marks DPSGDSelectHoldout of the
//     ratings as scored. They stay in the steps and the warm start.
//  2. After the steps, each user with ratings of both kinds is folded into
//     both candidates from their unscored ratings (the billboard solve,
//     BillboardFold) and scored on the others: l_0 and l_1, the mean
//     squared errors of the clamped predictions against the clamped
//     ratings. The released statistic is the sum over users of d_u =
//     clip(l_1 - l_0, -D, D), D = DPSGDSelectClip s^2, s = (r_max -
//     r_min)/4.
//  3. Given the released steps (the candidates are functions of them and
//     of public counts), a rating enters only its own user's d_u, through
//     their scores or their fold-in, and d_u stays in [-D, D]: the
//     statistic moves by at most 2D, for a change of the rating's value
//     and for its zero-out alike. Gaussian noise of sd sigma 2D, sigma the
//     steps' noise multiplier, so the selection costs exactly one more
//     full-batch step: sigma is solved for T + 1 of them. It needs q = 1
//     (at a smaller rate a step's RDP is the sampled Gaussian's and the
//     plan keeps its T steps with no selection). RDP composes adaptively,
//     so the selection's conditional law given the steps adds its curve;
//     for the value change it enters once, as the warm start does
//     (perturb.GroupTwoEpsilon's direct releases). The free columns are
//     taken when the noisy sum is negative.
//
// The scored ratings are in the item side's training data, so the scores
// lean towards the trained rows (in-sample for the item side, out of
// sample for the fold-in). Holding them out of the steps instead cost
// more than it bought: on validation parts at epsilon 3 / 10 (60 epochs),
// held out -> in the steps: MovieLens-100K 0.9401 / 0.9311 -> 0.9373 /
// 0.9300, Jester5k 4.1709 / 4.0645 -> 4.1618 / 4.0570, the
// MovieLens-shaped synth 0.8241 / 0.7656 -> 0.8227 / 0.7512. Against the
// trained rows alone (no selection, sigma for T steps): MovieLens-100K
// 0.9579 / 0.9489, Jester5k 4.1618 / 4.0567, the joke-shaped synth
// 1.6021 / 1.5632 (selection 1.6026 / 1.5640), the MovieLens-shaped synth
// 0.8219 / 0.7495: the one extra step costs at most 0.0017 where the
// trained rows stay, and the free columns gain 0.019-0.021 on
// MovieLens-100K (TestMovieLensDPSGDSweep with FOLD=1, NOSELECT=1 for no
// selection).
//
// The selection applies to CP models of rank at least 4 with biases at the
// default rate q = 1; elsewhere the billboard model keeps its trained rows.

// Public constants of the selection.
const (
	// DPSGDSelectHoldout is the share of ratings scored.
	DPSGDSelectHoldout = 0.1
	// DPSGDSelectClip sets D = DPSGDSelectClip s^2, the clip of a user's
	// loss difference.
	DPSGDSelectClip = 0.1
)

const streamDPSGDSelect = 19

// dpsgdSelectWhat names the selection's release in the report.
const dpsgdSelectWhat = "scored ratings' loss differences between the billboard model with and without the free columns (clipped per user, summed over users)"

// dpsgdSelectApplies reports whether the plan may run the selection
// (before sigma is known).
func (p *GradientPerturbation) dpsgdSelectApplies(train *data.Store, s *Settings, mb *minibatchPlan) bool {
	if r := p.o.dpsgdRules; r != nil && r.noSelect {
		return false
	}
	return s.hasBias && s.modelKind == decomposition.CP && s.modelRank >= 4 && mb.q >= 1 && p.o.Sigma == 0 && train.Order() <= 3
}

// dpsgdHeldOut returns, for each rating of train, whether the selection
// scores it (a fold-in from the user's others): a hash of its position
// only.
func dpsgdHeldOut(train *data.Store) []bool {
	out := make([]bool, train.NNZ())
	b := make([]byte, 4*train.Order())
	for e := range out {
		for k := range train.Order() {
			binary.LittleEndian.PutUint32(b[4*k:], uint32(train.Idx[k][e]))
		}
		h := fnv.New64a()
		h.Write(b)
		out[e] = h.Sum64()%1000 < uint64(1000*DPSGDSelectHoldout)
	}
	return out
}

// dpsgdSelectD is D of the selection for the options' range.
func dpsgdSelectD(o *PrivateOptions) float64 {
	s := o.ratingRange() / 4
	return DPSGDSelectClip * s * s
}

// DPSGDSelectSensitivity returns the selection's l2 sensitivity 2D for a
// rating range of width w: D = DPSGDSelectClip (w/4)^2.
func DPSGDSelectSensitivity(w float64) float64 {
	s := w / 4
	return 2 * DPSGDSelectClip * s * s
}

// dpsgdSelectRelease is the selection's release for the report at noise
// multiplier sigma.
func dpsgdSelectRelease(o *PrivateOptions, sigma float64) perturb.Release {
	d := DPSGDSelectSensitivity(o.ratingRange())
	return perturb.Release{What: dpsgdSelectWhat, Mechanism: perturb.MechGaussian, SensitivityNorm: "l2", Sensitivity: d,
		Derivation: fmt.Sprintf("given the released steps, one rating enters only its own user's loss difference (their scored ratings or their fold-in), each user's clipped to [-D, D], D = %g s^2 = %.4g: 2D for a value change and for a zero-out alike; the steps' noise multiplier, one more full-batch step (completion/private_dpsgd_select.go)", float64(DPSGDSelectClip), d/2),
		Scale:      sigma * d, Calibration: "sigma"}
}

// selectStat returns the selection's statistic before its noise, the sum
// over users of clip(l_1 - l_0, -D, D), and the number of users scored.
func selectStat(train *data.Store, held []bool, m0, m1 *decomposition.Model, o *PrivateOptions) (float64, int, error) {
	by := make([][]int, train.Dims[0])
	for e, u := range train.Idx[0] {
		by[u] = append(by[u], e)
	}
	D := dpsgdSelectD(o)
	order := train.Order()
	models := []*decomposition.Model{m0, m1}
	works := []*decomposition.Work{m0.NewWork(), m1.NewWork()}
	idx := make([]int32, order)
	pen := BillboardFold()
	sum, users := 0.0, 0
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
		items, times, ratings := foldInputs(train, fit, order)
		var l [2]float64
		for j, mj := range models {
			f, err := decomposition.FoldInUser(mj, items, times, ratings, pen)
			if err != nil {
				return 0, 0, fmt.Errorf("completion: minibatch DP-SGD: held-out fold-in: %w", err)
			}
			for _, e := range score {
				for k := range idx {
					idx[k] = train.Idx[k][e]
				}
				d := mj.PredictFoldedUser(f, idx, works[j]) - clampValue(train.Val[e], o.RatingMin, o.RatingMax)
				l[j] += d * d
			}
			l[j] /= float64(len(score))
		}
		sum += math.Max(-D, math.Min(D, l[1]-l[0]))
		users++
	}
	return sum, users, nil
}

// withFreeColumns returns a copy of m whose last two item columns are
// private ALS's free columns (and, at order 3, whose time rows are ones in
// them).
func withFreeColumns(m *decomposition.Model, o *PrivateOptions, counts []int) *decomposition.Model {
	c := *m
	c.Factors = make([][]float64, len(m.Factors))
	for i, f := range m.Factors {
		c.Factors[i] = slices.Clone(f)
	}
	R := m.Ranks[0]
	cnt := make([]float64, len(counts))
	for i, n := range counts {
		cnt[i] = float64(n)
	}
	freeItemColumnsAt(&c, o, cnt, R-2)
	for mo := 2; mo < c.Order(); mo++ {
		for i := 0; i < c.Dims[mo]; i++ {
			c.Factors[mo][i*R+R-2], c.Factors[mo][i*R+R-1] = 1, 1
		}
	}
	return &c
}

// selectFreeColumns runs the selection on the released billboard model m
// (user rows zero) and, when the free columns win, writes them into m.
func (p *GradientPerturbation) selectFreeColumns(m *decomposition.Model, train *data.Store) error {
	mb := p.mb
	counts := make([]int, train.Dims[1])
	for _, i := range train.Idx[1] {
		counts[i]++
	}
	m1 := withFreeColumns(m, &p.o, counts)
	stat, users, err := selectStat(train, mb.held, m, m1, &p.o)
	if err != nil {
		return err
	}
	g, err := perturb.NewGaussianSigma(DPSGDSelectSensitivity(p.o.ratingRange()), mb.noiseMult*DPSGDSelectSensitivity(p.o.ratingRange()))
	if err != nil {
		return fmt.Errorf("completion: minibatch DP-SGD: %w", err)
	}
	noisy := []float64{stat}
	g.AddTo(noisy, rand.New(p.o.source(streamDPSGDSelect)))
	p.o.observe(dpsgdSelectWhat, noisy, nil)
	mb.selected = noisy[0] < 0
	mb.selectUsers = users
	chosen := "the trained item rows"
	if mb.selected {
		copy(m.Factors[1], m1.Factors[1])
		for mo := 2; mo < m.Order(); mo++ {
			copy(m.Factors[mo], m1.Factors[mo])
		}
		chosen = "the free columns in the last two item columns"
	}
	p.report.Notes = append(p.report.Notes, fmt.Sprintf("billboard item side: chosen on scored ratings (a hash of each rating's position marks %g of them; they are in the steps too): each user is folded into the trained item rows and into the same rows with the last two columns replaced by the free columns (the released item biases over s, then the standardised log(1 + n_i) of the public counts; post-processing), folded in from their other ratings and scored on these; the sum over users of the loss differences, each clipped to [-D, D], D = %g s^2, released with Gaussian noise sd %.4g (the steps' noise multiplier at l2 sensitivity 2D; one more full-batch step in the accounting): %.4g; chosen: %s", DPSGDSelectHoldout, float64(DPSGDSelectClip), g.Sigma(), noisy[0], chosen))
	return nil
}
