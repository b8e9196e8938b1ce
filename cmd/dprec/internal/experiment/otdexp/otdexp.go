// Package otdexp holds the spectral experiment behind `dprec experiment
// spectral`: the e_comp of the private tensor methods (AGN, AVN, DP-TPM),
// the non-private method and random vectors against epsilon and N, on the
// single-topic model of Wang and Anandkumar, "Online and Differentially-
// Private Tensor Decomposition" (NeurIPS 2016) and the Gaussian mixture of
// Imtiaz and Sarwate (IEEE JSTSP 2018). It returns tables; the CLI writes
// them as CSV and plots them. Every run uses seeded noise: the experiment
// measures utility and is NOT private.
package otdexp

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/dprec/dprec/otd"
	"github.com/dprec/dprec/perturb"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// Experiment method names: the private methods plus the non-private
// reference and the data-free baseline of Imtiaz and Sarwate 2018a sec. 4.
const (
	ExpNonPrivate            = otd.MethodNonPrivate
	ExpRandom     otd.Method = "random"
)

// Setting is one (D, K) problem size.
type Setting struct{ D, K int }

// Config configures Spectral. Zero fields take
// the documented defaults (the Imtiaz and Sarwate 2018a set-up).
type Config struct {
	// Model is "stm" (single-topic model, Imtiaz and Sarwate 2018a sec. 4) or "mog"
	// (spherical Gaussian mixture, Imtiaz and Sarwate 2018b fig. 3). Default "stm".
	Model otd.Model
	// Settings are the (D, K) sizes (default D=10,K=5 and D=50,K=10).
	Settings []Setting
	// Epsilons is the grid of the error-versus-epsilon tables (default
	// 0.1, 0.2, 0.5, 1, 2, 5, 10), run at N = FixedN (default 20,000).
	// A nil grid means the default; an empty non-nil grid skips the
	// tables (same for Ns).
	Epsilons []float64
	FixedN   int
	// Ns is the grid of the error-versus-N tables (default 1e3, 3e3, 1e4,
	// 3e4, 1e5), run at epsilon = FixedEpsilon (default 1).
	Ns           []int
	FixedEpsilon float64
	// Delta is the total delta (default 0.01, Imtiaz and Sarwate 2018b sec. V).
	Delta float64
	// Runs is the number of independent repetitions, each with a fresh
	// model, data set and noise (default 10, as in the seeds).
	Runs int
	// Methods (default nonprivate, agn, avn, dptpm, random).
	Methods []otd.Method
	// DocLen is the number of words per synthetic document (stm; default 3,
	// the Imtiaz and Sarwate 2018a model t1, t2, t3).
	DocLen int
	// Sigma2 is the mixture's noise variance before scaling (mog; default
	// 0.05, Imtiaz and Sarwate 2018b fig. 3).
	Sigma2 float64
	// Budget split and calibration (zero: equal split, analytic Gaussian).
	Split       float64
	Calibration perturb.Calibration
	// TPM and DPTPM options (zero: package defaults).
	TPM   otd.TPMOptions
	DPTPM otd.DPTPMOptions
	// Seed makes the whole experiment reproducible (experiments always use
	// seeded, NOT private, noise).
	Seed uint64
	// Progress, when set, is called after every (setting, x, run) cell.
	Progress func(done, total int)
}

func (c *Config) defaults() error {
	if c.Model == "" {
		c.Model = otd.ModelSTM
	}
	if c.Model != otd.ModelSTM && c.Model != otd.ModelMoG {
		return fmt.Errorf("otd: experiment model %q (want stm or mog)", c.Model)
	}
	if len(c.Settings) == 0 {
		c.Settings = []Setting{{10, 5}, {50, 10}}
	}
	if c.Epsilons == nil {
		c.Epsilons = []float64{0.1, 0.2, 0.5, 1, 2, 5, 10}
	}
	if c.FixedN == 0 {
		c.FixedN = 20000
	}
	if c.Ns == nil {
		c.Ns = []int{1000, 3000, 10000, 30000, 100000}
	}
	if c.FixedEpsilon == 0 {
		c.FixedEpsilon = 1
	}
	if c.Delta == 0 {
		c.Delta = 0.01
	}
	if c.Runs == 0 {
		c.Runs = 10
	}
	if len(c.Methods) == 0 {
		c.Methods = []otd.Method{ExpNonPrivate, otd.MethodAGN, otd.MethodAVN, otd.MethodDPTPM, ExpRandom}
	}
	if c.DocLen == 0 {
		c.DocLen = 3
	}
	if c.Sigma2 == 0 {
		c.Sigma2 = 0.05
	}
	for _, m := range c.Methods {
		switch m {
		case ExpNonPrivate, otd.MethodAGN, otd.MethodAVN, otd.MethodDPTPM, ExpRandom:
		default:
			return fmt.Errorf("otd: experiment method %q (want nonprivate, agn, avn, dptpm or random)", m)
		}
	}
	for _, s := range c.Settings {
		if s.K < 1 || s.D < s.K {
			return fmt.Errorf("otd: experiment setting D=%d K=%d needs 1 <= K <= D", s.D, s.K)
		}
	}
	if c.Runs < 1 || c.FixedN < 3 || c.DocLen < 3 {
		return fmt.Errorf("otd: experiment needs runs >= 1 (%d), N >= 3 (%d), doc length >= 3 (%d)", c.Runs, c.FixedN, c.DocLen)
	}
	for _, n := range c.Ns {
		if n < 3 {
			return fmt.Errorf("otd: experiment N = %d must be at least 3", n)
		}
	}
	if err := perturb.CheckPositiveDelta(c.Delta); err != nil {
		return err
	}
	return nil
}

// Table is one panel of the experiment: e_comp of every method
// (rows of Mean/Std/Fail) along X (epsilon or N) for one model and size.
type Table struct {
	Name    string // e.g. "stm_D10_K5_vs_epsilon"
	Model   otd.Model
	D, K    int
	Vary    string  // "epsilon" or "n"
	Fixed   float64 // the other parameter's value (N or epsilon)
	Delta   float64
	X       []float64
	Methods []otd.Method
	// Mean and Std are e_comp over the successful runs, Mean[m][x];
	// Fail counts runs where the method returned an error (for example a
	// rank-deficient noisy M2); NaN when every run failed.
	Mean, Std [][]float64
	Fail      [][]int
	Runs      int
}

// Spectral reproduces the e_comp comparison of Imtiaz and Sarwate 2018a sec. 4
// (model "stm") or Imtiaz and Sarwate 2018b fig. 3 (model "mog", centralised AGN/AVN in
// place of CAPE): for every setting, e_comp versus epsilon at N = FixedN
// and versus N at epsilon = FixedEpsilon for each method, averaged over
// Runs. Each run draws a fresh model (uniform weights; stm: Dirichlet(1)
// topics; mog: means uniform in the unit ball) and data; all methods of a
// run share the data. Estimated topic vectors have negative entries zeroed
// and are renormalised to sum 1 before e_comp (Imtiaz and Sarwate 2018a sec. 4); mixture
// means are brought back to the units of the unscaled data and, by the
// analogous post-processing, projected onto the unit ball (the model has
// ||a_k|| <= 1), so one wild estimate cannot dominate the mean. All randomness derives from Seed (NOT private: experiments
// measure utility).
func Spectral(cfg Config) ([]Table, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	total := len(cfg.Settings) * (len(cfg.Epsilons) + len(cfg.Ns)) * cfg.Runs
	done := 0
	var out []Table
	for si, s := range cfg.Settings {
		for vi, vary := range []string{"epsilon", "n"} {
			xs := cfg.Epsilons
			fixed := float64(cfg.FixedN)
			if vary == "n" {
				xs = make([]float64, len(cfg.Ns))
				for i, n := range cfg.Ns {
					xs[i] = float64(n)
				}
				fixed = cfg.FixedEpsilon
			}
			if len(xs) == 0 {
				continue
			}
			tab := Table{
				Name:  fmt.Sprintf("%s_D%d_K%d_vs_%s", cfg.Model, s.D, s.K, vary),
				Model: cfg.Model, D: s.D, K: s.K, Vary: vary, Fixed: fixed, Delta: cfg.Delta,
				X: xs, Methods: cfg.Methods, Runs: cfg.Runs,
			}
			vals := make([][][]float64, len(cfg.Methods)) // [m][x][]runs
			tab.Fail = make([][]int, len(cfg.Methods))
			for m := range vals {
				vals[m] = make([][]float64, len(xs))
				tab.Fail[m] = make([]int, len(xs))
			}
			for run := 0; run < cfg.Runs; run++ {
				// One stream per (setting, table, run): tables and runs are
				// independent and reproducible on their own.
				stream := uint64(si)<<40 | uint64(vi)<<32 | uint64(run)
				var shared *expProblem
				for xi, x := range xs {
					n, eps := cfg.FixedN, cfg.FixedEpsilon
					if vary == "epsilon" {
						eps = x
					} else {
						n = int(x)
					}
					r := rand.New(perturb.StreamSource(cfg.Seed, stream<<8|uint64(xi)))
					// The model is drawn from the run's own stream so that
					// every x of a run uses the same true model.
					mr := rand.New(perturb.StreamSource(cfg.Seed^0x9e3779b97f4a7c15, stream))
					p := shared
					if p == nil || vary == "n" {
						var err error
						p, err = newExpProblem(&cfg, s, n, mr, r)
						if err != nil {
							return nil, err
						}
						if vary == "epsilon" {
							shared = p
						}
					}
					for mi, m := range cfg.Methods {
						e, err := p.run(&cfg, m, eps, r)
						if err != nil || math.IsNaN(e) {
							tab.Fail[mi][xi]++
							continue
						}
						vals[mi][xi] = append(vals[mi][xi], e)
					}
				}
				done += len(xs)
				if cfg.Progress != nil {
					cfg.Progress(done, total)
				}
			}
			tab.Mean = make([][]float64, len(cfg.Methods))
			tab.Std = make([][]float64, len(cfg.Methods))
			for mi := range cfg.Methods {
				tab.Mean[mi] = make([]float64, len(xs))
				tab.Std[mi] = make([]float64, len(xs))
				for xi := range xs {
					tab.Mean[mi][xi], tab.Std[mi][xi] = meanStd(vals[mi][xi])
				}
			}
			out = append(out, tab)
		}
	}
	return out, nil
}

func meanStd(v []float64) (float64, float64) {
	if len(v) == 0 {
		return math.NaN(), math.NaN()
	}
	m := floats.Sum(v) / float64(len(v))
	if len(v) == 1 {
		return m, 0
	}
	var s float64
	for _, x := range v {
		s += (x - m) * (x - m)
	}
	return m, math.Sqrt(s / float64(len(v)-1))
}

// expProblem is one synthetic data set with its true components.
type expProblem struct {
	A     *mat.Dense // D x K true components (columns)
	scale float64    // data were divided by scale (mog)
	prob  otd.MomentProblem
	stm   bool
}

// newExpProblem draws a model from mr and n records from r, and builds
// the moments and sensitivities.
func newExpProblem(cfg *Config, s Setting, n int, mr, r *rand.Rand) (*expProblem, error) {
	if cfg.Model == otd.ModelSTM {
		// SyntheticSTM draws the topics first, so every N of a run (same
		// stream mr) shares the model.
		syn, err := otd.SyntheticSTM(s.D, s.K, n, cfg.DocLen, 1, nil, mr)
		if err != nil {
			return nil, err
		}
		A := syn.A
		M2, M3, err := otd.STMMoments(syn.Input.Corpus, otd.AllTriples)
		if err != nil {
			return nil, err
		}
		sens, err := otd.STMSensitivities(n)
		if err != nil {
			return nil, err
		}
		return &expProblem{A: A, scale: 1, stm: true, prob: otd.MomentProblem{M2: M2, M3: M3, K: s.K, Sens: sens,
			TPMSens: func(W *mat.Dense) otd.DPTPMSensitivity { return otd.STMDPTPMSensitivity(W, n) }}}, nil
	}
	A := randomBallColumns(s.D, s.K, mr)
	X, zeta := syntheticMOGRows(A, n, cfg.Sigma2, mr)
	s2 := cfg.Sigma2 / (zeta * zeta)
	M2, M3, err := otd.MoGMoments(X, s2)
	if err != nil {
		return nil, err
	}
	sens, err := otd.MOGSensitivities(n, s.D, s2)
	if err != nil {
		return nil, err
	}
	return &expProblem{A: A, scale: zeta, prob: otd.MomentProblem{M2: M2, M3: M3, K: s.K, Sens: sens,
		TPMSens: func(W *mat.Dense) otd.DPTPMSensitivity { return otd.MOGDPTPMSensitivity(W, n, s2) }}}, nil
}

// run returns e_comp of method m on p at privacy level eps.
func (p *expProblem) run(cfg *Config, m otd.Method, eps float64, r *rand.Rand) (float64, error) {
	d, k := p.A.Dims()
	var est *mat.Dense
	switch m {
	case ExpRandom:
		if p.stm {
			est = otd.RandomTopics(r, d, k, 1)
		} else {
			est = randomBallColumns(d, k, r)
		}
	case ExpNonPrivate:
		W, err := otd.Whiten(p.prob.M2, k)
		if err != nil {
			return 0, err
		}
		lam, V, err := otd.PowerIteration(p.prob.M3.Multilinear(W), k, cfg.TPM, r)
		if err != nil {
			return 0, err
		}
		est, _ = otd.Unwhiten(W, lam, V)
	default:
		b := otd.PrivacyBudget{Epsilon: eps, Delta: cfg.Delta, Split: cfg.Split, Calibration: cfg.Calibration}
		var err error
		if est, _, err = otd.FitMoments(m, &p.prob, b, cfg.TPM, cfg.DPTPM, r); err != nil {
			return 0, err
		}
	}
	if p.stm {
		return otd.EComp(p.A, est), nil // zero negatives, renormalise, e_comp
	}
	est.Scale(p.scale, est) // back to the units of the unscaled data
	clipColumns(est, 1)     // the means are known to satisfy ||a_k|| <= 1
	return otd.ECompRaw(p.A, est), nil
}

// clipColumns scales every column of A whose l2 norm exceeds r down to
// norm r (projection onto the ball of radius r).
func clipColumns(A *mat.Dense, r float64) {
	d, k := A.Dims()
	col := make([]float64, d)
	for c := 0; c < k; c++ {
		mat.Col(col, c, A)
		if n := floats.Norm(col, 2); n > r {
			floats.Scale(r/n, col)
			A.SetCol(c, col)
		}
	}
}

// randomBallColumns returns k columns drawn uniformly from the unit ball
// of R^d (so ||a_k|| <= 1, Imtiaz and Sarwate 2018b sec. V).
func randomBallColumns(d, k int, r *rand.Rand) *mat.Dense {
	A := mat.NewDense(d, k, nil)
	for c := 0; c < k; c++ {
		u := randomUnit(r, d)
		rad := math.Pow(r.Float64(), 1/float64(d))
		for i := range u {
			A.Set(i, c, u[i]*rad)
		}
	}
	return A
}

// syntheticMOGRows draws n rows t = a_h + z, h uniform, z ~ N(0, sigma2
// I), from the mixture with mean columns A, then divides
// every row by the public constant zeta = 1 + sqrt(sigma2) (sqrt(D) + 3)
// (Imtiaz and Sarwate 2018b app. C: "divide the samples by a constant zeta such that
// ||t_n|| <= 1") and clips the rare row still longer than 1 to the unit
// sphere. It returns the rows and zeta; the scaled data have means a_k/zeta
// and variance sigma2/zeta^2.
// (SyntheticMoG divides by the largest row norm instead, which depends on
// the data; a public zeta keeps the experiment's scaling data-free.)
func syntheticMOGRows(A *mat.Dense, n int, sigma2 float64, r *rand.Rand) (*mat.Dense, float64) {
	d, k := A.Dims()
	sd := math.Sqrt(sigma2)
	zeta := 1 + sd*(math.Sqrt(float64(d))+3)
	X := mat.NewDense(n, d, nil)
	for i := 0; i < n; i++ {
		h := r.IntN(k)
		x := X.RawRowView(i)
		for j := range x {
			x[j] = (A.At(j, h) + sd*r.NormFloat64()) / zeta
		}
		if nr := floats.Norm(x, 2); nr > 1 {
			floats.Scale(1/nr, x)
		}
	}
	return X, zeta
}

// randomUnit draws a uniformly random unit vector of R^d.
func randomUnit(r *rand.Rand, d int) []float64 {
	u := make([]float64, d)
	for {
		for j := range u {
			u[j] = r.NormFloat64()
		}
		if n := floats.Norm(u, 2); n > 0 {
			floats.Scale(1/n, u)
			return u
		}
	}
}
