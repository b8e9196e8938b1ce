package completion

import (
	"cmp"
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

// PRIVATE ALS, USER UNIT: THE ITEM RIDGE CHOSEN ON HELD-OUT USERS.
//
// The last item step's ridge sets the scale of the released item rows and
// so the effective penalty of every user's fold-in, and the right one
// depends on how much of the ratings' spread the factors explain, which
// is private: on validation parts at epsilon 100 (k = 50), a last ridge
// of 0.03 per term scored 0.5803 on a wide planted log (20,000 users,
// 1,000 items) against 0.6564 at the fixed 0.3 (non-private ALS 0.6349),
// while the joke-shaped logs want 0.3 (Jester5k 4.2131 at 0.03 against
// 4.0992). So the user unit chooses it:
//
//  1. A public function of each user's own (bounded) ratings, a hash of
//     their item and value list, holds out ALSRidgeHoldout of the users.
//     Held-out users are in the bias releases and the selection below,
//     not in the item steps; removing any user changes only their own
//     part, so every release keeps its sensitivity.
//  2. The item steps run on the other users. The last step's released
//     statistics are solved once for each candidate ridge of
//     ALSRidgeCandidates (post-processing): one set of item rows each,
//     with the free columns after them as always.
//  3. Each held-out user is scored by alsRidgeFolds-fold cross-validation
//     of their own ratings against each candidate (fold-in, the billboard
//     solve, from the others; the squared errors of the clamped
//     predictions): l_j, their mean. The released statistic is
//     d_j = clip(l_j - l_0, -D, D) (l_0 the first candidate's) summed over the held-out users, one
//     entry for each candidate after the first; removing a user moves it
//     by at most D sqrt(J - 1) in l2 (J candidates), D = ALSRidgeClip
//     c^2, c the residual clip. Gaussian noise; the chosen ridge is the
//     candidate with the smallest noisy sum (0 for the first).
//
// Budget: the selection's Gaussian and the item steps share the steps'
// part of the budget, ALSRidgeShare of the two's mu^2 together (Gaussian
// composition) to the selection; everything composes sequentially in the
// report. The item solves' t_i are the bias release's noisy counts, which
// include the held-out users: the per-term ridges are relative to them.

// Public constants of the ridge selection.
const (
	// ALSRidgeHoldout is the share of users held out for the selection.
	ALSRidgeHoldout = 0.1
	// ALSRidgeShare is the selection's share of the steps' and its own
	// mu^2 together.
	ALSRidgeShare = 0.1
	// ALSRidgeClip sets D = ALSRidgeClip c^2, the clip of a held-out
	// user's loss differences.
	ALSRidgeClip = 0.1
)

// ALSRidgeCandidates are the item ridges per term the selection chooses
// among; the first is ALSPrivateItemReg, the default before. None is
// larger: with 1 among them the selection chose 1 on Jester5k, which a
// validation part of the training log confirmed (4.0832 against 4.0992
// at epsilon 100) but its test part and two other splits did not (0.3
// better by 0.011-0.02 on per-user splits): the held-out users' criterion
// (a fold-in from 80% of a user's ratings) leans towards larger ridges,
// so only a smaller one, which it leans against, is trusted.
func ALSRidgeCandidates() []float64 { return []float64{ALSPrivateItemReg, 0.1, 0.03} }

const streamALSRidge = 16

// alsRidgeFolds is F, the folds of a held-out user's ratings. With two
// (fold-in from half of them) the selection preferred larger ridges than
// the full fold-in wants: on a joke-shaped log with exposure-biased
// positions it chose 1 where 0.3 scored better on the validation part
// (4.0644 against 4.0256 at epsilon 100).
const alsRidgeFolds = 5

// alsRidgeWhat names the selection's release in the report.
const alsRidgeWhat = "held-out users' fold-in loss differences between the candidate item ridges (clipped, summed over the held-out users)"

// alsHeldOut returns, for each user index of train (by lists its rows),
// whether the user is held out: a hash of the user's own item and value
// list (in item order), so that whether a user is held out depends on
// their ratings only.
func alsHeldOut(train *data.Store, by [][]int) []bool {
	out := make([]bool, len(by))
	type iv struct {
		i int32
		v float64
	}
	var buf []iv
	b := make([]byte, 12)
	for u, es := range by {
		if len(es) == 0 {
			continue
		}
		buf = buf[:0]
		for _, e := range es {
			buf = append(buf, iv{train.Idx[1][e], train.Val[e]})
		}
		slices.SortFunc(buf, func(a, b iv) int {
			if c := cmp.Compare(a.i, b.i); c != 0 {
				return c
			}
			return cmp.Compare(a.v, b.v)
		})
		h := fnv.New64a()
		for _, x := range buf {
			binary.LittleEndian.PutUint32(b, uint32(x.i))
			binary.LittleEndian.PutUint64(b[4:], math.Float64bits(x.v))
			h.Write(b)
		}
		out[u] = h.Sum64()%1000 < uint64(1000*ALSRidgeHoldout)
	}
	return out
}

// alsRidgeSensitivity is the selection's l2 sensitivity at J candidates
// and residual clip c: D sqrt(J - 1), D = ALSRidgeClip c^2.
func alsRidgeSensitivity(J int, c float64) float64 {
	return ALSRidgeClip * c * c * math.Sqrt(float64(J-1))
}

// alsRidgeRelease is the selection's release for the report at noise
// sigma.
func alsRidgeRelease(J int, c, sigma float64) perturb.Release {
	return perturb.Release{What: alsRidgeWhat, Mechanism: perturb.MechGaussian, SensitivityNorm: "l2", Sensitivity: alsRidgeSensitivity(J, c),
		Derivation: fmt.Sprintf("a held-out user adds one vector of %d loss differences, each clipped to [-D, D], D = %g c^2 = %.4g; other users are not in it, and a held-out user is in no item step: l2 D sqrt(J - 1) (completion/private_als_ridge.go)", J-1, ALSRidgeClip, ALSRidgeClip*c*c),
		Scale:      sigma, Calibration: "sigma"}
}

// heldOutLossDiffs returns the selection's statistic before its noise:
// for each candidate j >= 1 (rows[j] the released item rows of a model
// like m), the sum over held-out users of clip(l_j - l_0, -D, D), and the
// number of users scored. l_j is a held-out user's mean squared error by
// alsRidgeFolds-fold cross-validation over their item-ordered list (the
// ratings at positions f, f + F, ... scored after a fold-in from the
// others), so that each fold-in uses most of the user's ratings, as a
// user's fold-in from all of them does (users with fewer than two
// ratings are skipped).
func heldOutLossDiffs(train *data.Store, by [][]int, held []bool, m *decomposition.Model, rows [][]float64, o *PrivateOptions, pen decomposition.FoldPenalties, D float64) ([]float64, int, error) {
	J := len(rows)
	models := make([]*decomposition.Model, J)
	for j := range models {
		mj := *m
		mj.Factors = slices.Clone(m.Factors)
		mj.Factors[1] = rows[j]
		if m.Order() == 3 {
			ones := make([]float64, len(m.Factors[2]))
			for i := range ones {
				ones[i] = 1
			}
			mj.Factors[2] = ones
		}
		mj.SetClamp(o.RatingMin, o.RatingMax)
		models[j] = &mj
	}
	sum := make([]float64, J-1)
	loss := make([]float64, J)
	users := 0
	order := m.Order()
	idx := make([]int32, order)
	work := make([]*decomposition.Work, J)
	for j, mj := range models {
		work[j] = mj.NewWork()
	}
	for u, es := range by {
		if !held[u] || len(es) < 2 {
			continue
		}
		es = slices.Clone(es)
		slices.SortFunc(es, func(a, b int) int { return int(train.Idx[1][a]) - int(train.Idx[1][b]) })
		folds := min(alsRidgeFolds, len(es))
		clear(loss)
		for f := 0; f < folds; f++ {
			var fit, score []int
			for k, e := range es {
				if k%folds == f {
					score = append(score, e)
				} else {
					fit = append(fit, e)
				}
			}
			items, times, ratings := foldInputs(train, fit, order)
			for j, mj := range models {
				if err := addFoldedLoss(&loss[j], train, mj, items, times, ratings, score, pen, o, work[j], idx); err != nil {
					return nil, 0, fmt.Errorf("completion: private ALS: held-out fold-in: %w", err)
				}
			}
		}
		for j := range loss {
			loss[j] /= float64(len(es))
		}
		for j := 1; j < J; j++ {
			sum[j-1] += math.Max(-D, math.Min(D, loss[j]-loss[0]))
		}
		users++
	}
	return sum, users, nil
}

// addFoldedLoss folds a user into m from their ratings (items, times,
// ratings; decomposition.FoldInUser with penalties pen) and adds to *loss,
// in order, the squared error of m's clamped prediction at each rating of
// train in score against its value clamped to the options' range. w and
// idx are scratch for m.
func addFoldedLoss(loss *float64, train *data.Store, m *decomposition.Model, items, times []int32, ratings []float64, score []int, pen decomposition.FoldPenalties, o *PrivateOptions, w *decomposition.Work, idx []int32) error {
	fo, err := decomposition.FoldInUser(m, items, times, ratings, pen)
	if err != nil {
		return err
	}
	for _, e := range score {
		for k := range idx {
			idx[k] = train.Idx[k][e]
		}
		d := m.PredictFoldedUser(fo, idx, w) - clampValue(train.Val[e], o.RatingMin, o.RatingMax)
		*loss += d * d
	}
	return nil
}

// chooseRidge releases the selection's statistic with Gaussian noise
// sigma and returns the index of the chosen candidate and a note.
func chooseRidge(stat []float64, cands []float64, sigma float64, o *PrivateOptions, c float64) (int, string, error) {
	g, err := perturb.NewGaussianSigma(alsRidgeSensitivity(len(cands), c), sigma)
	if err != nil {
		return 0, "", fmt.Errorf("completion: private ALS: %w", err)
	}
	noisy := slices.Clone(stat)
	g.AddTo(noisy, rand.New(o.source(streamALSRidge)))
	o.observe(alsRidgeWhat, noisy, nil)
	best, bestV := 0, 0.0
	for j, v := range noisy {
		if v < bestV {
			best, bestV = j+1, v
		}
	}
	parts := make([]string, len(noisy))
	for j, v := range noisy {
		parts[j] = fmt.Sprintf("%g: %.4g", cands[j+1], v)
	}
	note := fmt.Sprintf("item ridge (user unit): chosen on held-out users (a hash of each user's own ratings holds out %g of them; they are in the bias releases and this selection only, not in the item steps): the last item step's released statistics solved at each candidate ridge per term %v (post-processing), each held-out user is scored by %d-fold cross-validation of their own ratings (fold-in from the others); the sums over the held-out users of their loss differences from the first candidate, clipped to [-D, D], D = %g c^2, released with Gaussian noise sigma %.4g at l2 sensitivity D sqrt(J - 1) = %.4g (%g of the steps' and the selection's mu^2 together; the number of held-out users is not released): %s; chosen %g", ALSRidgeHoldout, cands, alsRidgeFolds, ALSRidgeClip, sigma, alsRidgeSensitivity(len(cands), c), ALSRidgeShare, strings.Join(parts, ", "), cands[best])
	return best, note, nil
}
