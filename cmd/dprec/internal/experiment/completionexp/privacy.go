package completionexp

// The completion-privacy experiment (issue 4): test RMSE versus epsilon for
// the three private modes and non-private training, on the seed-001
// synthetic set-ups and on a rating log; on a rating log also NDCG@k of
// the lists each released model gives (issue 25), beside the non-private
// and the private most-popular lists. The CLI (`dprec experiment
// completion-privacy`) writes the rows as CSV and plots them.

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/dprec/dprec/completion"
	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/itemitem"
	"github.com/dprec/dprec/models"
	"github.com/dprec/dprec/perturb"
)

// Experiment modes.
const (
	ExpNone = "none"
	// ExpNoneALS is non-private ALS (the solver family of the als mode):
	// the reference its convergence is checked against.
	ExpNoneALS     = "none-als"
	ExpInput       = "input"
	ExpGradientC   = "gradient-C"
	ExpGradientAll = "gradient-all"
	ExpOutput      = "output"
	// ExpBias and ExpALS are the billboard modes (TrainPrivateBias,
	// TrainPrivateALS), scored by folding each test user in from their own
	// training ratings (FoldInRMSE with the penalties BillboardFoldFor
	// reads from each run's report).
	ExpBias = "bias"
	ExpALS  = "als"
	// ExpPopular and ExpPopularPrivate are the reference lists of a
	// dataset with ranking metrics (not modes one asks for): every user
	// gets the items with the most training users (non-private, one row
	// per seed) or with the most released item counts of the bias mode's
	// run at each epsilon (perturb.Report.ItemCounts; a row per bias run).
	// Their RMSE is NaN.
	ExpPopular        = "most-popular"
	ExpPopularPrivate = "most-popular-private"
	// ExpPositions is the lists a private bias or als model gives at the
	// entry unit by default (dprec.ListsPositions): EASE of the training
	// positions, public under the value-change relation, so the same at
	// every epsilon.
	ExpPositions = "lists-positions"
	// ExpImplicit is the implicit objective's private mode
	// (TrainPrivateImplicit: weighted ALS at the user unit, needs
	// MaxRatingsPerUser) and ExpNoneImplicit non-private weighted ALS with
	// the same settings, its reference. Both score lists only: every
	// event a positive, users folded in from their training events (the
	// private one) or with their own rows; their RMSE is NaN.
	ExpImplicit     = "implicit"
	ExpNoneImplicit = "none-implicit"
)

// Ranking configures the ranking metrics of a dataset's runs: the lists
// `dprec recommend` gives from each released model, scored as `dprec eval
// --train` scores them (models.Evaluate with the training part as Train:
// the users' training items left out of their lists, and the users of a
// billboard model folded in from their own training ratings).
type Ranking struct {
	// K is the cut-off of NDCG@k (0: 10).
	K int
	// Threshold is the relevance threshold: a test item is relevant to its
	// user when its test rating is >= Threshold.
	Threshold float64
	// Shrinkage selects the rankings (models.Predictor.WithShrinkage):
	// > 0 ranks by relevance, as eval does by default (it is the
	// credibility constant of a model without a rating range); 0 ranks by
	// the prediction.
	Shrinkage float64
	// Threads of the ranking (0: GOMAXPROCS).
	Threads int
}

// DefaultThreshold is the default relevance threshold on a public rating
// range [lo, hi]: the top quarter of the range, hi - (hi-lo)/4 (4 on a 1-5
// scale, as `dprec eval --threshold`'s default; 3.875 on 0.5-5, so that
// ratings of 4 and above are relevant on a half-star scale).
func DefaultThreshold(lo, hi float64) float64 { return hi - (hi-lo)/4 }

// PrivacyExpDataset is one train/test pair with its model and public
// rating range.
type PrivacyExpDataset struct {
	Name        string
	Train, Test *data.Store
	// RatingMin, RatingMax: the public range declared for the data source.
	RatingMin, RatingMax float64
	Kind                 decomposition.Kind
	Rank                 int
	Bias                 bool
	// Settings of training (Privacy is set per run; Patience is forced to
	// -1 so every run trains the same number of epochs).
	Settings completion.Settings
	// PrivateSettings, when non-nil, gives the settings of the private
	// modes at a privacy budget epsilon (noisy training wants a smaller
	// step and a larger penalty the smaller epsilon is; a schedule that
	// depends only on epsilon and public constants costs no privacy).
	PrivateSettings func(epsilon float64) completion.Settings
	// Ranking, when non-nil, adds NDCG@k to every run and the most-popular
	// reference rows. It needs stores with user and item dictionaries (a
	// loaded rating log; the synthetic set-ups have none).
	Ranking *Ranking
}

// PrivacyExpRow is one training run.
type PrivacyExpRow struct {
	Dataset string  `json:"dataset"`
	Kind    string  `json:"kind"`
	Mode    string  `json:"mode"`
	Epsilon float64 `json:"epsilon"` // 0 for non-private
	Delta   float64 `json:"delta"`
	Seed    uint64  `json:"seed"`
	RMSE    float64 `json:"rmse"`
	// NDCG is NDCG@k of the run's lists on the test part (NaN when the
	// dataset has no Ranking).
	NDCG float64 `json:"ndcg"`
	// Note says what a reference row stands for.
	Note string `json:"note,omitempty"`
	// Unit is the privacy unit of a private run ("entry" or "user"; empty
	// for the reference rows).
	Unit string `json:"unit,omitempty"`
	// Covered says whether the guarantee covers every released parameter.
	Covered bool    `json:"covered"`
	Seconds float64 `json:"seconds"`
	// Err is non-empty when the run failed (e.g. diverged); RMSE and NDCG
	// are NaN then.
	Err string `json:"error,omitempty"`
}

// PrivacyExpConfig configures RunPrivacyExperiment.
type PrivacyExpConfig struct {
	Datasets []PrivacyExpDataset
	Modes    []string
	Epsilons []float64
	Seeds    []uint64
	// Delta of the modes that need one (gradient-all).
	Delta float64
	// Clip is the gradient clipping norm (0: default).
	Clip float64
	// MaxRatingsPerUser k > 0 runs the bias and als modes at the user
	// unit (add or remove one user with all their ratings, each user
	// bounded to k, one per item; delta Delta): the relation is
	// add-remove and the item counts are released with noise. The other
	// private modes have no user unit and are refused.
	MaxRatingsPerUser int
}

// RunPrivacyExperiment trains every (dataset, mode, epsilon, seed)
// combination (non-private runs once per seed) and returns the test RMSE of
// each, and for a dataset with Ranking its NDCG@k and the most-popular
// reference rows (ExpPopular once per seed, ExpPopularPrivate after each
// bias run). Noise is seeded (StreamSource), so results are reproducible
// and NOT private: this is a utility study. progress, if non-nil, is
// called after each training run.
func RunPrivacyExperiment(cfg PrivacyExpConfig, progress func(PrivacyExpRow)) ([]PrivacyExpRow, error) {
	for _, mode := range cfg.Modes {
		if cfg.MaxRatingsPerUser > 0 && !NonPrivate(mode) && mode != ExpBias && mode != ExpALS && mode != ExpImplicit {
			return nil, fmt.Errorf("completion: experiment mode %q has no user unit (MaxRatingsPerUser): only bias, als and implicit do", mode)
		}
		if cfg.MaxRatingsPerUser <= 0 && mode == ExpImplicit {
			return nil, fmt.Errorf("completion: experiment mode %q is private at the user unit only: set MaxRatingsPerUser", mode)
		}
	}
	var rows []PrivacyExpRow
	for _, ds := range cfg.Datasets {
		for _, seed := range cfg.Seeds {
			if ds.Ranking != nil {
				row, err := popularityRow(ds, seed)
				if err != nil {
					return rows, err
				}
				rows = append(rows, row)
				if row, err = positionsRow(ds, seed); err != nil {
					return rows, err
				}
				rows = append(rows, row)
			}
			for _, mode := range cfg.Modes {
				eps := cfg.Epsilons
				if NonPrivate(mode) {
					eps = []float64{0}
				}
				for _, e := range eps {
					out, err := privacyExpRun(ds, mode, e, cfg.Delta, cfg.Clip, cfg.MaxRatingsPerUser, seed)
					if err != nil {
						return rows, err
					}
					rows = append(rows, out...)
					if progress != nil {
						progress(out[0])
					}
				}
			}
		}
	}
	return rows, nil
}

// NonPrivate reports whether mode is a non-private reference mode (run
// once per seed, no epsilon).
func NonPrivate(mode string) bool {
	return mode == ExpNone || mode == ExpNoneALS || mode == ExpNoneImplicit
}

// privacyExpRun trains one run and returns its row, followed (bias mode
// on a dataset with ranking) by the private most-popular row of its
// release.
func privacyExpRun(ds PrivacyExpDataset, mode string, eps, delta, clip float64, userK int, seed uint64) ([]PrivacyExpRow, error) {
	row := PrivacyExpRow{Dataset: ds.Name, Kind: string(ds.Kind), Mode: mode, Epsilon: eps, Seed: seed, NDCG: math.NaN(), Unit: string(completion.UnitEntry)}
	if NonPrivate(mode) {
		row.Unit = ""
	}
	o := &completion.PrivateOptions{Epsilon: eps, RatingMin: ds.RatingMin, RatingMax: ds.RatingMax, Noise: perturb.SeededNoise(seed ^ 0x5eed), Clip: clip}
	if userK > 0 && (mode == ExpBias || mode == ExpALS) {
		o.Unit, o.MaxRatingsPerUser, o.Delta = completion.UnitUser, userK, delta
		row.Unit, row.Delta = string(completion.UnitUser), delta
	}
	var p completion.Privacy = completion.NoPrivacy{}
	var err error
	switch mode {
	case ExpImplicit, ExpNoneImplicit:
		return implicitExpRun(ds, row, delta, userK)
	case ExpNone, ExpNoneALS:
	case ExpInput:
		p, err = completion.NewInputPerturbation(o)
	case ExpGradientC:
		o.Accounting, o.Protect = perturb.Basic, completion.ProtectC
		p, err = completion.NewGradientPerturbation(o)
	case ExpGradientAll:
		o.Delta, o.Protect = delta, completion.ProtectAll
		p, err = completion.NewGradientPerturbation(o)
	case ExpOutput:
		o.Clip = 0
		p, err = completion.NewOutputPerturbation(o)
	case ExpBias:
		o.Clip = 0
		return statsExpRun(ds, row, o, completion.TrainPrivateBias)
	case ExpALS:
		o.Clip, o.Delta = 0, delta
		row.Delta = delta
		return statsExpRun(ds, row, o, completion.TrainPrivateALS)
	default:
		return nil, fmt.Errorf("completion: unknown experiment mode %q", mode)
	}
	if err != nil {
		return nil, err
	}
	row.Delta = o.Delta
	ranks := []int{ds.Rank}
	if ds.Kind == decomposition.Tucker {
		ranks = make([]int, ds.Train.Order())
		for i := range ranks {
			ranks[i] = ds.Rank
		}
	}
	m, err := decomposition.NewModel(ds.Kind, ds.Train.Dims, ranks, ds.Bias)
	if err != nil {
		return nil, err
	}
	m.ClampLo, m.ClampHi = ds.RatingMin, ds.RatingMax
	s := ds.Settings
	if !NonPrivate(mode) && ds.PrivateSettings != nil {
		s = ds.PrivateSettings(eps)
	}
	if mode == ExpNoneALS {
		s.Solver = completion.SolverALS
	}
	s.Privacy = p
	s.Patience = -1
	t0 := time.Now()
	res, err := completion.Train(ds.Train, nil, m, &s, rand.NewPCG(seed, 7), nil)
	row.Seconds = time.Since(t0).Seconds()
	if err != nil {
		row.RMSE, row.Err = math.NaN(), err.Error()
		return []PrivacyExpRow{row}, nil
	}
	row.RMSE = completion.RMSE(m, ds.Test, s.Threads)
	if res.Privacy != nil && res.Privacy.Billboard {
		// Input's bias-only fallback releases no user terms: its users are
		// served by folding them in, as the bias mode's are.
		if row.RMSE, err = completion.FoldInRMSE(m, ds.Train, ds.Test, completion.BillboardFoldFor(res.Privacy)); err != nil {
			return nil, err
		}
	}
	row.Covered = NonPrivate(mode) || res.Privacy.FullyCovered()
	if ds.Ranking != nil {
		rep := res.Privacy
		if NonPrivate(mode) {
			rep = nil
		}
		ev, err := rankEval(ds, m, rep, nil)
		if err != nil {
			return nil, err
		}
		row.NDCG = ev.NDCG
	}
	return []PrivacyExpRow{row}, nil
}

// rankEval scores the lists of a released model m with privacy report rep
// (nil: non-private) on ds.Test as `dprec eval --train` does: the model is
// wrapped in a models.File as `dprec train` saves it (a non-private one
// with its seen items), ranked with ds.Ranking's shrinkage, the users'
// training items left out and, for a billboard model, every test user
// folded in from their own training ratings. popCounts, if non-nil, ranks
// the most-popular baseline of the result (EvalOptions.PopularityCounts).
func rankEval(ds PrivacyExpDataset, m *decomposition.Model, rep *perturb.Report, popCounts []float64) (*models.EvalResult, error) {
	r := ds.Ranking
	tr := ds.Train
	if len(tr.Dicts) < 2 || tr.Dicts[0] == nil || tr.Dicts[1] == nil {
		return nil, fmt.Errorf("completion: dataset %s: ranking metrics need a log with user and item ids", ds.Name)
	}
	dicts := make([]*data.Dict, m.Order())
	copy(dicts, tr.Dicts)
	f := &models.File{Model: m, Dicts: dicts, Time: tr.Time, Privacy: rep}
	if !rep.Private() {
		f.Privacy = nil
		seen, err := models.SeenFromStore(tr, m.Dims[0], m.Dims[1])
		if err != nil {
			return nil, err
		}
		f.Seen = seen
	}
	p := models.NewPredictor(f).WithShrinkage(r.Shrinkage)
	eo := models.EvalOptions{K: r.K, Threshold: r.Threshold, Train: tr, Threads: r.Threads, PopularityCounts: popCounts}
	if f.Billboard() {
		fold := completion.BillboardFoldFor(rep)
		eo.Fold = &fold
	}
	res, err := models.Evaluate(p, ds.Test, eo)
	if err != nil {
		return nil, fmt.Errorf("completion: dataset %s: %w", ds.Name, err)
	}
	return res, nil
}

// popularityRow is the non-private most-popular list of a dataset with
// ranking: items by their number of training ratings (the counts the bias
// mode's release carries; `dprec eval` counts distinct training users,
// the same on a log with one rating per user and item), scored on the
// test part.
func popularityRow(ds PrivacyExpDataset, seed uint64) (PrivacyExpRow, error) {
	row := PrivacyExpRow{Dataset: ds.Name, Kind: "popularity", Mode: ExpPopular, Seed: seed, RMSE: math.NaN(), NDCG: math.NaN(), Covered: false,
		Note: "non-private: items by number of training ratings"}
	m, err := decomposition.NewModel(decomposition.CP, ds.Train.Dims, []int{1}, true)
	if err != nil {
		return row, err
	}
	m.ClampLo, m.ClampHi = ds.RatingMin, ds.RatingMax
	counts := make([]float64, ds.Train.Dims[1])
	for _, j := range ds.Train.Idx[1] {
		counts[j]++
	}
	t0 := time.Now()
	ev, err := rankEval(ds, m, nil, counts)
	if err != nil {
		return row, err
	}
	row.Seconds = time.Since(t0).Seconds()
	if ev.Popularity != nil {
		row.NDCG = ev.Popularity.NDCG
	}
	return row, nil
}

// positionsRow scores the lists of the positions (ExpPositions): EASE
// (itemitem.Train, lambda chosen on a validation part of the training
// positions, seeded by seed) on the training part, as a private bias or
// als run at the entry unit stores them (dprec.ListsPositions), each test
// user ranked from their own training items.
func positionsRow(ds PrivacyExpDataset, seed uint64) (PrivacyExpRow, error) {
	row := PrivacyExpRow{Dataset: ds.Name, Kind: "positions", Mode: ExpPositions, Seed: seed, RMSE: math.NaN(), NDCG: math.NaN(), Covered: true,
		Note: "the default lists of bias and als at the entry unit: EASE of the training positions (public under value-change; no budget, the same at every epsilon)"}
	t0 := time.Now()
	r, err := itemitem.Train(context.Background(), ds.Train, itemitem.Settings{Seed: seed, Threads: ds.Ranking.Threads})
	if err != nil {
		return row, fmt.Errorf("completion: dataset %s: lists of the positions: %w", ds.Name, err)
	}
	f, err := r.File(ds.Train)
	if err != nil {
		return row, err
	}
	res, err := models.Evaluate(models.NewPredictor(f), ds.Test, models.EvalOptions{K: ds.Ranking.K, Threshold: ds.Ranking.Threshold, Train: ds.Train, Threads: ds.Ranking.Threads})
	if err != nil {
		return row, fmt.Errorf("completion: dataset %s: %w", ds.Name, err)
	}
	row.NDCG = res.NDCG
	row.Seconds = time.Since(t0).Seconds()
	return row, nil
}

// SyntheticSeed001 returns the seed-001 synthetic set-up: a dims-shaped
// tensor X = [[A, B, C]] (CP) or [[G; A, B, C]] (Tucker) with N(0, 1)
// factors (and core) of rank `rank`, plus Gaussian noise at signal-to-noise
// ratio snr (noise variance = signal variance / snr, the signal variance
// being that of the generating law: rank for CP, rank^3 for Tucker), with
// a fraction `observed` of the cells in the training store and `test` in a
// disjoint test store. It also returns the public range declared for it,
// +-4 standard deviations of the noisy entries' law (a property of the
// generator, not of the sample).
func SyntheticSeed001(kind decomposition.Kind, dims []int, rank int, snr, observed, test float64, src rand.Source) (train, testSt *data.Store, lo, hi float64, err error) {
	if len(dims) != 3 || rank < 1 || !(snr > 0) || !(observed > 0) || !(test > 0) || observed+test > 1 {
		return nil, nil, 0, 0, fmt.Errorf("completion: SyntheticSeed001(dims %v, rank %d, snr %g, observed %g, test %g): bad arguments", dims, rank, snr, observed, test)
	}
	rng := rand.New(src)
	f := make([][]float64, 3)
	for m, d := range dims {
		f[m] = make([]float64, d*rank)
		for i := range f[m] {
			f[m][i] = rng.NormFloat64()
		}
	}
	var core []float64
	sigVar := float64(rank)
	if kind == decomposition.Tucker {
		core = make([]float64, rank*rank*rank)
		for i := range core {
			core[i] = rng.NormFloat64()
		}
		sigVar = float64(rank * rank * rank)
	}
	noiseSD := math.Sqrt(sigVar / snr)
	bound := 4 * math.Sqrt(sigVar+noiseSD*noiseSD)
	value := func(i, j, k int) float64 {
		a, b, c := f[0][i*rank:(i+1)*rank], f[1][j*rank:(j+1)*rank], f[2][k*rank:(k+1)*rank]
		v := 0.0
		if core == nil {
			for r := 0; r < rank; r++ {
				v += a[r] * b[r] * c[r]
			}
		} else {
			for p := 0; p < rank; p++ {
				for q := 0; q < rank; q++ {
					for t := 0; t < rank; t++ {
						v += core[(p*rank+q)*rank+t] * a[p] * b[q] * c[t]
					}
				}
			}
		}
		return v + noiseSD*rng.NormFloat64()
	}
	n := dims[0] * dims[1] * dims[2]
	perm := rng.Perm(n)
	nTrain, nTest := int(observed*float64(n)), int(test*float64(n))
	mk := func(cells []int) *data.Store {
		s := &data.Store{Dims: append([]int(nil), dims...), Idx: make([][]int32, 3), Val: make([]float64, len(cells))}
		for m := range s.Idx {
			s.Idx[m] = make([]int32, len(cells))
		}
		for e, c := range cells {
			i, j, k := c/(dims[1]*dims[2]), (c/dims[2])%dims[1], c%dims[2]
			s.Idx[0][e], s.Idx[1][e], s.Idx[2][e] = int32(i), int32(j), int32(k)
			s.Val[e] = value(i, j, k)
		}
		return s
	}
	return mk(perm[:nTrain]), mk(perm[nTrain : nTrain+nTest]), -bound, bound, nil
}

// SplitStore splits st at random into a training and a test store, with a
// fraction testFrac of the observations in the test store.
func SplitStore(st *data.Store, testFrac float64, src rand.Source) (train, test *data.Store) {
	perm := rand.New(src).Perm(st.NNZ())
	nt := int(testFrac * float64(st.NNZ()))
	return st.Subset(perm[nt:]), st.Subset(perm[:nt])
}

// BiasBaselineRMSE fits the bias-only model mu + b_u + b_i (ridge penalty
// reg on the biases, 20 alternating exact updates) on train and returns its
// RMSE on test, with predictions clamped to [lo, hi]: the baseline a
// recommender must beat.
func BiasBaselineRMSE(train, test *data.Store, reg, lo, hi float64) float64 {
	mu := 0.0
	for _, v := range train.Val {
		mu += v
	}
	mu /= float64(train.NNZ())
	bu, bi := make([]float64, train.Dims[0]), make([]float64, train.Dims[1])
	cu, ci := make([]float64, train.Dims[0]), make([]float64, train.Dims[1])
	for _, u := range train.Idx[0] {
		cu[u]++
	}
	for _, i := range train.Idx[1] {
		ci[i]++
	}
	su, si := make([]float64, len(bu)), make([]float64, len(bi))
	for it := 0; it < 20; it++ {
		clear(si)
		for e, v := range train.Val {
			si[train.Idx[1][e]] += v - mu - bu[train.Idx[0][e]]
		}
		for i := range bi {
			bi[i] = si[i] / (ci[i] + reg)
		}
		clear(su)
		for e, v := range train.Val {
			su[train.Idx[0][e]] += v - mu - bi[train.Idx[1][e]]
		}
		for u := range bu {
			bu[u] = su[u] / (cu[u] + reg)
		}
	}
	s := 0.0
	for e, v := range test.Val {
		p := math.Min(hi, math.Max(lo, mu+bu[test.Idx[0][e]]+bi[test.Idx[1][e]]))
		s += (v - p) * (v - p)
	}
	return math.Sqrt(s / float64(test.NNZ()))
}

// statsExpRun runs a billboard mode (CP with biases at the dataset's rank)
// and scores it by fold-in; with ranking, a bias run is followed by the
// private most-popular row of its released item counts.
func statsExpRun(ds PrivacyExpDataset, row PrivacyExpRow, o *completion.PrivateOptions, fit func(*data.Store, *decomposition.Model, *completion.PrivateOptions) (*perturb.Report, error)) ([]PrivacyExpRow, error) {
	row.Kind = string(decomposition.CP)
	m, err := decomposition.NewModel(decomposition.CP, ds.Train.Dims, []int{ds.Rank}, true)
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	train := ds.Train
	if o.Unit == completion.UnitUser {
		// Each user bounded to k ratings (a public pseudo-random choice
		// per user); users still fold in from all their ratings below.
		if train, _, err = completion.BoundUserContributions(ds.Train, o.MaxRatingsPerUser, rand.NewPCG(row.Seed, 0xb0d)); err != nil {
			return nil, err
		}
	}
	if o.Unit == completion.UnitUser {
		// The weighted item counts and sums, and private ALS's
		// co-occurrence, read every rating of each user, as dprec train
		// hands it over (completion.PrivateOptions.Unbounded).
		oo := *o
		oo.Unbounded = ds.Train
		o = &oo
	}
	rep, err := fit(train, m, o)
	if err != nil {
		row.RMSE, row.Err = math.NaN(), err.Error()
		return []PrivacyExpRow{row}, nil
	}
	row.RMSE, err = completion.FoldInRMSE(m, ds.Train, ds.Test, completion.BillboardFoldFor(rep))
	row.Seconds = time.Since(t0).Seconds()
	if err != nil {
		return nil, err
	}
	row.Covered = rep.FullyCovered()
	if ds.Ranking == nil {
		return []PrivacyExpRow{row}, nil
	}
	var counts []float64
	popular := row.Mode == ExpBias && len(rep.ItemCounts) == m.Dims[1]
	if popular {
		counts = rep.ItemCounts
	}
	ev, err := rankEval(ds, m, rep, counts)
	if err != nil {
		return nil, err
	}
	row.NDCG = ev.NDCG
	out := []PrivacyExpRow{row}
	if popular && ev.Popularity != nil {
		pr := PrivacyExpRow{Dataset: row.Dataset, Kind: "popularity", Mode: ExpPopularPrivate, Epsilon: row.Epsilon, Delta: row.Delta,
			Seed: row.Seed, RMSE: math.NaN(), NDCG: ev.Popularity.NDCG, Unit: row.Unit, Covered: row.Covered, Note: popularNote(rep)}
		out = append(out, pr)
	}
	return out, nil
}

// implicitExpRun trains the implicit objective at the private mode's
// defaults, privately (ExpImplicit: every event, a user with more than k
// items weighted, user unit, delta) or not (ExpNoneImplicit), and scores its lists.
func implicitExpRun(ds PrivacyExpDataset, row PrivacyExpRow, delta float64, k int) ([]PrivacyExpRow, error) {
	row.Kind, row.RMSE = string(decomposition.CP), math.NaN()
	tr := ds.Train
	R := min(completion.DefaultPrivateImplicitRank, tr.Dims[1])
	m, err := decomposition.NewModel(decomposition.CP, tr.Dims[:2], []int{R}, false)
	if err != nil {
		return nil, err
	}
	s := completion.PrivateImplicitSettings(&completion.ImplicitSettings{Threads: 2})
	var rep *perturb.Report
	t0 := time.Now()
	if row.Mode == ExpImplicit {
		row.Unit, row.Delta = string(completion.UnitUser), delta
		// Every event: users with more than k items are weighted (as
		// dprec train hands the log over).
		o := &completion.PrivateOptions{Epsilon: row.Epsilon, Delta: delta, Unit: completion.UnitUser, MaxRatingsPerUser: k, Noise: perturb.SeededNoise(row.Seed ^ 0x5eed)}
		if rep, err = completion.TrainPrivateImplicit(tr, m, &s, o); err != nil {
			row.Err = err.Error()
			return []PrivacyExpRow{row}, nil
		}
		row.Covered = rep.FullyCovered()
	} else {
		s.Iterations = completion.DefaultImplicitIterations // to convergence
		if _, err := completion.TrainImplicit(tr, m, &s, rand.NewPCG(row.Seed, 7), nil); err != nil {
			row.Err = err.Error()
			return []PrivacyExpRow{row}, nil
		}
		row.Covered = true
	}
	row.Seconds = time.Since(t0).Seconds()
	if ds.Ranking == nil {
		return []PrivacyExpRow{row}, nil
	}
	settings, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	f := &models.File{Header: models.Header{Objective: models.ObjectiveImplicit, Settings: settings}, Model: m, Dicts: tr.Dicts[:2], Privacy: rep}
	r := ds.Ranking
	eo := models.EvalOptions{K: r.K, Threshold: r.Threshold, Train: tr, Threads: r.Threads}
	if rep == nil {
		if f.Seen, err = models.SeenFromStore(tr, m.Dims[0], m.Dims[1]); err != nil {
			return nil, err
		}
	} else {
		eo.Fold = &decomposition.FoldPenalties{}
		eo.FoldRow = func(items []int32, values []float64) (models.Row, error) {
			x, err := completion.ImplicitFoldIn(m.Factors[1], R, items, values, &s)
			return models.Row{Factor: x}, err
		}
	}
	ev, err := models.Evaluate(models.NewPredictor(f), ds.Test, eo)
	if err != nil {
		return nil, fmt.Errorf("completion: dataset %s: %w", ds.Name, err)
	}
	row.NDCG = ev.NDCG
	return []PrivacyExpRow{row}, nil
}

// popularNote says what the private most-popular list ranks by.
func popularNote(rep *perturb.Report) string {
	if rep.RelationKind == perturb.RelationAddRemove {
		return "items by the bias release's noisy item counts (add-remove relation: the counts are released with noise, part of the budget)"
	}
	return "items by the bias release's item counts: under the value-change relation (entry level) positions, hence counts, are public, so this list is the non-private most-popular one"
}

// PrivateSchedule returns the settings of the private modes at budget
// epsilon: base with the learning rate times min(1, lrScale epsilon) and,
// when reg > 0, the penalty max(base's, reg/epsilon^2) (the ridge optimum
// grows like the noise variance). Zero rates in base mean the trainer's
// defaults. The schedule depends only on epsilon and public constants, so
// it costs no privacy.
func PrivateSchedule(base completion.Settings, lrScale, reg float64) func(epsilon float64) completion.Settings {
	lr := base.LearningRate
	if lr == 0 {
		lr = completion.DefaultLearningRate
	}
	baseReg := base.Reg
	if baseReg == 0 {
		baseReg = completion.DefaultReg
	}
	return func(eps float64) completion.Settings {
		ps := base
		ps.LearningRate = lr * math.Min(1, lrScale*eps)
		if reg > 0 {
			ps.Reg = math.Max(baseReg, reg/(eps*eps))
		}
		return ps
	}
}

// PrivacySummary is the test RMSE and NDCG@k over the seeds of one
// (dataset, mode, epsilon) point.
type PrivacySummary struct {
	Dataset, Mode string
	Epsilon       float64
	// Mean and SD of the RMSE are over the runs that did not fail and
	// have one (NaN if none; the most-popular rows have none).
	Mean, SD float64
	// NDCGMean and NDCGSD are likewise over the runs with an NDCG (NaN if
	// none: a dataset without ranking).
	NDCGMean, NDCGSD float64
	// Runs counts every run, Failed the failed (diverged) ones.
	Runs, Failed int
	// Note is the note of the point's rows (reference rows).
	Note string
}

// SummarizePrivacy averages RMSE and NDCG over seeds per (dataset, mode,
// epsilon), sorted by dataset, mode and epsilon; failed runs (Err set) are
// counted and excluded from the means.
func SummarizePrivacy(rows []PrivacyExpRow) []PrivacySummary {
	type key struct {
		ds, mode string
		eps      float64
	}
	type acc struct {
		rmse, ndcg []float64
		failed     int
		note       string
	}
	accs := map[key]*acc{}
	var keys []key
	for _, r := range rows {
		k := key{r.Dataset, r.Mode, r.Epsilon}
		a := accs[k]
		if a == nil {
			a = &acc{note: r.Note}
			accs[k] = a
			keys = append(keys, k)
		}
		if r.Err != "" {
			a.failed++
			continue
		}
		if !math.IsNaN(r.RMSE) {
			a.rmse = append(a.rmse, r.RMSE)
		}
		if !math.IsNaN(r.NDCG) {
			a.ndcg = append(a.ndcg, r.NDCG)
		}
	}
	sort.SliceStable(keys, func(i, j int) bool {
		if keys[i].ds != keys[j].ds {
			return keys[i].ds < keys[j].ds
		}
		if keys[i].mode != keys[j].mode {
			return keys[i].mode < keys[j].mode
		}
		return keys[i].eps < keys[j].eps
	})
	var out []PrivacySummary
	for _, k := range keys {
		a := accs[k]
		p := PrivacySummary{Dataset: k.ds, Mode: k.mode, Epsilon: k.eps, Failed: a.failed, Note: a.note}
		p.Mean, p.SD = meanSD(a.rmse)
		p.NDCGMean, p.NDCGSD = meanSD(a.ndcg)
		p.Runs = a.failed + max(len(a.rmse), len(a.ndcg))
		out = append(out, p)
	}
	return out
}

// meanSD returns the mean and sample standard deviation of v (NaN, NaN
// when empty; SD 0 for one value).
func meanSD(v []float64) (mean, sd float64) {
	if len(v) == 0 {
		return math.NaN(), math.NaN()
	}
	for _, x := range v {
		mean += x
	}
	mean /= float64(len(v))
	if len(v) == 1 {
		return mean, 0
	}
	ss := 0.0
	for _, x := range v {
		ss += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(ss / float64(len(v)-1))
}
