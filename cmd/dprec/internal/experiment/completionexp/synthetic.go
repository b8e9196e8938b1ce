package completionexp

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/dprec/dprec/completion"
	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
)

// SyntheticConfig configures CompletionSynthetic, the synthetic experiment
// of Wei et al. 2021: a 20 x 20 x 20 tensor of rank 3 built from standard-normal
// factors (CP) or standard-normal factors and core (Tucker), plus Gaussian
// noise at signal-to-noise ratio 1, observed at a fraction of its cells.
// Zero fields take the defaults noted.
type SyntheticConfig struct {
	// Kind of the ground truth and of the fitted model; empty means CP.
	Kind decomposition.Kind
	// Dims of the tensor; nil means 20 x 20 x 20.
	Dims []int
	// Rank of the truth and of the model (CP rank, or every Tucker rank);
	// zero means 3.
	Rank int
	// Fractions of cells observed; nil means 0.1, 0.2, ..., 0.9.
	Fractions []float64
	// Seeds is the number of repetitions per fraction; zero means 5.
	Seeds int
	// SNR is the signal-to-noise ratio mean(X^2) / sigma^2; zero means 1.
	SNR float64
	// Settings train the model (no bias terms: the truth has none). Zero
	// fields take SyntheticSettings' values, then Train's defaults.
	Settings completion.Settings
}

// SyntheticSettings are the training settings CompletionSynthetic uses
// unless overridden: tuned on the 20^3 set-up (values standardised to unit RMS before training).
var SyntheticSettings = completion.Settings{Solver: completion.SolverSGD, Epochs: 300, LearningRate: 0.02, Decay: 0.01, Reg: 0.01, RegCore: 0.0005, InitScale: 0.5, Patience: 20, Threads: 1}

// SyntheticRow is one run of CompletionSynthetic.
type SyntheticRow struct {
	Kind     string  `json:"kind"`
	Fraction float64 `json:"fraction"`
	Seed     int     `json:"seed"`
	// Observed is the number of observed cells (training plus validation).
	Observed int `json:"observed"`
	// TestRMSE is the RMSE on the noisy held-out cells (the noise floor is
	// sigma = sqrt(mean(X^2) / SNR)).
	TestRMSE float64 `json:"test_rmse"`
	// Sigma is the noise standard deviation.
	Sigma float64 `json:"sigma"`
	// Recovery is the relative error |Xhat - X|_F / |X|_F against the
	// noiseless tensor over all cells.
	Recovery float64 `json:"recovery"`
	Epochs   int     `json:"epochs"`
}

// CompletionSynthetic runs the Wei et al. 2021 synthetic experiment: for every
// observed fraction and seed it draws a ground truth, adds noise, observes a
// random subset of cells (10% of them held back for early stopping), fits
// the model by Train and measures the test RMSE on the unobserved cells and
// the recovery error against the noiseless tensor.
func CompletionSynthetic(cfg SyntheticConfig, src rand.Source, progress func(SyntheticRow)) ([]SyntheticRow, error) {
	if cfg.Kind == "" {
		cfg.Kind = decomposition.CP
	}
	if cfg.Dims == nil {
		cfg.Dims = []int{20, 20, 20}
	}
	if cfg.Rank == 0 {
		cfg.Rank = 3
	}
	if cfg.Fractions == nil {
		cfg.Fractions = []float64{0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9}
	}
	if cfg.Seeds == 0 {
		cfg.Seeds = 5
	}
	if cfg.SNR == 0 {
		cfg.SNR = 1
	}
	if cfg.Kind != decomposition.CP && cfg.Kind != decomposition.Tucker {
		return nil, fmt.Errorf("completion: unknown model kind %q", cfg.Kind)
	}
	if len(cfg.Dims) < 2 || len(cfg.Dims) > 3 || cfg.Rank < 0 || cfg.Seeds < 0 || !(cfg.SNR > 0) || math.IsInf(cfg.SNR, 0) {
		return nil, fmt.Errorf("completion: synthetic config dims %v rank %d seeds %d SNR %g is invalid", cfg.Dims, cfg.Rank, cfg.Seeds, cfg.SNR)
	}
	for _, f := range cfg.Fractions {
		if !(f > 0 && f < 1) {
			return nil, fmt.Errorf("completion: observed fraction %g must lie in (0, 1)", f)
		}
	}
	s := mergeSettings(cfg.Settings, SyntheticSettings)
	rng := rand.New(src)
	var out []SyntheticRow
	for _, frac := range cfg.Fractions {
		for seed := 0; seed < cfg.Seeds; seed++ {
			row, err := syntheticRun(cfg, s, frac, rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64())))
			if err != nil {
				return nil, fmt.Errorf("completion: synthetic fraction %g seed %d: %w", frac, seed, err)
			}
			row.Seed = seed
			out = append(out, row)
			if progress != nil {
				progress(row)
			}
		}
	}
	return out, nil
}

// mergeSettings fills the zero fields of s from def.
func mergeSettings(s, def completion.Settings) completion.Settings {
	pick := func(a, b float64) float64 {
		if a == 0 {
			return b
		}
		return a
	}
	if s.Solver == completion.SolverDefault {
		s.Solver = def.Solver
	}
	if s.Epochs == 0 {
		s.Epochs = def.Epochs
	}
	if s.Threads == 0 {
		s.Threads = def.Threads
	}
	if s.Patience == 0 {
		s.Patience = def.Patience
	}
	s.LearningRate = pick(s.LearningRate, def.LearningRate)
	s.CoreLearningRate = pick(s.CoreLearningRate, def.CoreLearningRate)
	s.Decay = pick(s.Decay, def.Decay)
	s.Reg = pick(s.Reg, def.Reg)
	s.RegCore = pick(s.RegCore, def.RegCore)
	s.RegBias = pick(s.RegBias, def.RegBias)
	s.InitScale = pick(s.InitScale, def.InitScale)
	return s
}

// truthTensor returns the dense noiseless tensor (last mode fastest).
func truthTensor(kind decomposition.Kind, dims []int, rank int, rng *rand.Rand) ([]float64, error) {
	ranks := make([]int, len(dims))
	for i := range ranks {
		ranks[i] = rank
	}
	m, err := decomposition.NewModel(kind, dims, ranks, false)
	if err != nil {
		return nil, err
	}
	for _, f := range m.Factors {
		for i := range f {
			f[i] = rng.NormFloat64()
		}
	}
	for i := range m.Core {
		m.Core[i] = rng.NormFloat64()
	}
	n := 1
	for _, d := range dims {
		n *= d
	}
	x := make([]float64, n)
	idx := make([]int32, len(dims))
	for c := range x {
		cellIndex(c, dims, idx)
		x[c] = m.Raw(idx)
	}
	return x, nil
}

// cellIndex writes the multi-index of linear cell c (last mode fastest).
func cellIndex(c int, dims []int, idx []int32) {
	for m := len(dims) - 1; m >= 0; m-- {
		idx[m] = int32(c % dims[m])
		c /= dims[m]
	}
}

func syntheticRun(cfg SyntheticConfig, s completion.Settings, frac float64, rng *rand.Rand) (SyntheticRow, error) {
	row := SyntheticRow{Kind: string(cfg.Kind), Fraction: frac}
	x, err := truthTensor(cfg.Kind, cfg.Dims, cfg.Rank, rng)
	if err != nil {
		return row, err
	}
	power := 0.0
	for _, v := range x {
		power += v * v
	}
	row.Sigma = math.Sqrt(power / float64(len(x)) / cfg.SNR)
	noisy := make([]float64, len(x))
	for c, v := range x {
		noisy[c] = v + row.Sigma*rng.NormFloat64()
	}
	perm := rng.Perm(len(x))
	nObs := int(math.Round(frac * float64(len(x))))
	nValid := nObs / 10
	if nObs-nValid < 1 || nObs >= len(x) {
		return row, fmt.Errorf("fraction %g observes %d of %d cells", frac, nObs, len(x))
	}
	row.Observed = nObs
	mk := func(cells []int) *data.Store {
		st := &data.Store{Dims: append([]int(nil), cfg.Dims...), Idx: make([][]int32, len(cfg.Dims)), Val: make([]float64, len(cells))}
		for m := range st.Idx {
			st.Idx[m] = make([]int32, len(cells))
		}
		idx := make([]int32, len(cfg.Dims))
		for e, c := range cells {
			cellIndex(c, cfg.Dims, idx)
			for m := range idx {
				st.Idx[m][e] = idx[m]
			}
			st.Val[e] = noisy[c]
		}
		return st
	}
	valid, train, test := mk(perm[:nValid]), mk(perm[nValid:nObs]), mk(perm[nObs:])
	// Train on values standardised by their root mean square (the scale of
	// a Tucker truth with a standard-normal core is ~sqrt(27) times that of
	// a CP one, too much for one step size), then undo it on the model:
	// the prediction is linear in the first factor.
	sc := 0.0
	for _, v := range train.Val {
		sc += v * v
	}
	sc = math.Sqrt(sc / float64(train.NNZ()))
	for _, st := range []*data.Store{train, valid} {
		for e := range st.Val {
			st.Val[e] /= sc
		}
	}
	ranks := make([]int, len(cfg.Dims))
	for i := range ranks {
		ranks[i] = cfg.Rank
	}
	m, err := decomposition.NewModel(cfg.Kind, cfg.Dims, ranks, false)
	if err != nil {
		return row, err
	}
	res, err := completion.Train(train, valid, m, &s, rand.NewPCG(rng.Uint64(), rng.Uint64()), nil)
	if err != nil {
		return row, err
	}
	row.Epochs = len(res.History)
	for i := range m.Factors[0] {
		m.Factors[0][i] *= sc
	}
	row.TestRMSE = completion.RMSE(m, test, 1)
	idx := make([]int32, len(cfg.Dims))
	d2 := 0.0
	for c, v := range x {
		cellIndex(c, cfg.Dims, idx)
		d := m.Predict(idx) - v
		d2 += d * d
	}
	row.Recovery = math.Sqrt(d2 / power)
	return row, nil
}

// SyntheticSummary is the mean and standard deviation over seeds of the
// CompletionSynthetic rows of one kind and fraction.
type SyntheticSummary struct {
	Kind       string  `json:"kind"`
	Fraction   float64 `json:"fraction"`
	Runs       int     `json:"runs"`
	TestRMSE   float64 `json:"test_rmse"`
	TestRMSESD float64 `json:"test_rmse_sd"`
	Recovery   float64 `json:"recovery"`
	RecoverySD float64 `json:"recovery_sd"`
	Sigma      float64 `json:"sigma"`
}

// SummarizeSynthetic groups rows by kind and fraction, in first-seen order.
func SummarizeSynthetic(rows []SyntheticRow) []SyntheticSummary {
	type key struct {
		k string
		f float64
	}
	var order []key
	groups := map[key][]SyntheticRow{}
	for _, r := range rows {
		k := key{r.Kind, r.Fraction}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	meanSD := func(v []float64) (float64, float64) {
		m := 0.0
		for _, x := range v {
			m += x
		}
		m /= float64(len(v))
		if len(v) < 2 {
			return m, 0
		}
		s := 0.0
		for _, x := range v {
			s += (x - m) * (x - m)
		}
		return m, math.Sqrt(s / float64(len(v)-1))
	}
	var out []SyntheticSummary
	for _, k := range order {
		g := groups[k]
		var t, r, sg []float64
		for _, x := range g {
			t = append(t, x.TestRMSE)
			r = append(r, x.Recovery)
			sg = append(sg, x.Sigma)
		}
		s := SyntheticSummary{Kind: k.k, Fraction: k.f, Runs: len(g)}
		s.TestRMSE, s.TestRMSESD = meanSD(t)
		s.Recovery, s.RecoverySD = meanSD(r)
		s.Sigma, _ = meanSD(sg)
		out = append(out, s)
	}
	return out
}
