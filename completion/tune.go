package completion

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
)

// Param is one hyperparameter of a tuning grid and the values to try.
// Names: rank, solver, epochs, lr, decay, reg, reg-bias, reg-core,
// reg-time, reg-pair, init-scale, item-periods, burn-in, time-biases.
type Param struct {
	Name   string
	Values []string
}

// ParseGrid parses "name=v1,v2 name=v3 ..." into a grid, checking every
// name and value.
func ParseGrid(s string) ([]Param, error) {
	var out []Param
	seen := map[string]bool{}
	for _, f := range strings.Fields(s) {
		name, vals, ok := strings.Cut(f, "=")
		if !ok || vals == "" {
			return nil, fmt.Errorf("grid term %q: want name=v1,v2 (values separated by commas)", f)
		}
		if seen[name] {
			return nil, fmt.Errorf("grid names %q twice", name)
		}
		seen[name] = true
		p := Param{Name: name, Values: strings.Split(vals, ",")}
		for _, v := range p.Values {
			var st Settings
			var rank int
			if err := p.apply(v, &st, &rank); err != nil {
				return nil, err
			}
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("empty grid")
	}
	return out, nil
}

// apply sets the parameter to value v in s (or rank).
func (p Param) apply(v string, s *Settings, rank *int) error {
	num := func() (float64, error) {
		x, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return 0, fmt.Errorf("grid %s: %q is not a finite number", p.Name, v)
		}
		return x, nil
	}
	integer := func() (int, error) {
		x, err := strconv.Atoi(v)
		if err != nil || x <= 0 {
			return 0, fmt.Errorf("grid %s: %q is not a positive integer", p.Name, v)
		}
		return x, nil
	}
	var err error
	switch p.Name {
	case "rank":
		*rank, err = integer()
	case "epochs":
		s.Epochs, err = integer()
	case "item-periods":
		s.ItemPeriods, err = integer()
	case "burn-in":
		s.BurnIn, err = integer()
	case "solver":
		s.Solver, err = ParseSolver(v)
	case "time-biases":
		err = s.TimeBiases.UnmarshalText([]byte(v))
	case "lr":
		s.LearningRate, err = num()
	case "decay":
		s.Decay, err = num()
	case "reg":
		s.Reg, err = num()
	case "reg-bias":
		s.RegBias, err = num()
	case "reg-core":
		s.RegCore, err = num()
	case "reg-time":
		s.RegTime, err = num()
	case "reg-pair":
		s.RegPair, err = num()
	case "init-scale":
		s.InitScale, err = num()
	default:
		return fmt.Errorf("grid: unknown parameter %q (want rank, solver, epochs, lr, decay, reg, reg-bias, reg-core, reg-time, reg-pair, init-scale, item-periods, burn-in or time-biases)", p.Name)
	}
	if err != nil {
		return fmt.Errorf("grid %s: %w", p.Name, err)
	}
	return nil
}

// TuneConfig configures Tune.
type TuneConfig struct {
	// Kind, Rank and Bias shape the model (Rank is overridden by a "rank"
	// grid parameter). [ClampLo, ClampHi] is the prediction range as
	// decomposition.ClampRange stores it (a one-point range clamps to its
	// value; the zero value does not clamp).
	Kind             decomposition.Kind
	Rank             int
	Bias             bool
	ClampLo, ClampHi float64
	// Base are the settings every point starts from.
	Base Settings
	// Grid lists the parameters; every combination is a point.
	Grid []Param
	// Random, when positive, scores that many points drawn at random
	// (without replacement) from the grid instead of all of them.
	Random int
	// Folds > 1 scores each point by k-fold cross-validation over the
	// training store; otherwise one random hold-out of Fraction (default
	// 0.1) is the validation part. Folds and hold-out are carved from the
	// store given to Tune: no test data is involved.
	Folds    int
	Fraction float64
}

// TunePoint is one scored point of the grid.
type TunePoint struct {
	// Values maps each grid parameter to its value at this point.
	Values map[string]string `json:"values"`
	// RMSE is the mean validation RMSE over the folds, SD its standard
	// deviation across folds (0 for one hold-out).
	RMSE float64 `json:"rmse"`
	SD   float64 `json:"rmse_sd"`
	// Epochs is the mean best epoch (early stopping) over the folds.
	Epochs float64 `json:"epochs"`
	// Err is set when training failed at this point (it then ranks last).
	Err string `json:"error,omitempty"`
}

// MaxGridPoints is the most points Tune scores: a grid whose combinations
// (or Random) exceed it is refused before its points are listed.
const MaxGridPoints = 100_000

// GridPoints returns the number of combinations of the grid (as a float64:
// a product of value counts can exceed any int).
func (c *TuneConfig) GridPoints() float64 {
	n := 1.0
	for _, p := range c.Grid {
		n *= float64(len(p.Values))
	}
	return n
}

// Points returns the number of points Tune scores: every combination, or
// Random of them when Random is below that.
func (c *TuneConfig) Points() float64 {
	n := c.GridPoints()
	if c.Random > 0 && float64(c.Random) < n {
		return float64(c.Random)
	}
	return n
}

// Runs returns the number of training runs of Tune: a run per point and
// fold (one hold-out when Folds <= 1).
func (c *TuneConfig) Runs() float64 { return c.Points() * float64(max(1, c.Folds)) }

// EachPoint calls fn with the settings and rank of every combination of
// the grid (Random is not applied), stopping at fn's first error; a grid
// above MaxGridPoints combinations is refused first. It lets a caller
// estimate the grid's cost before Tune (completion.EstimateTrain).
func (c *TuneConfig) EachPoint(fn func(s Settings, rank int) error) error {
	if n := c.GridPoints(); n > MaxGridPoints {
		return &SettingsError{Field: "Grid", Value: n, Rule: fmt.Sprintf("has too many combinations: at most %d", MaxGridPoints)}
	}
	var walk func(i int, s Settings, rank int) error
	walk = func(i int, s Settings, rank int) error {
		if i == len(c.Grid) {
			return fn(s, rank)
		}
		for _, v := range c.Grid[i].Values {
			s2, r2 := s, rank
			if err := c.Grid[i].apply(v, &s2, &r2); err != nil {
				return err
			}
			if err := walk(i+1, s2, r2); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(0, c.Base, c.Rank)
}

// checkSize refuses, before any point is listed or trained, a grid of more
// than MaxGridPoints combinations (Random draws from the listed
// combinations) and more folds than st has ratings (every fold must
// validate on at least one).
func (c *TuneConfig) checkSize(st *data.Store) error {
	if n := c.GridPoints(); n > MaxGridPoints {
		return &SettingsError{Field: "Grid", Value: n, Rule: fmt.Sprintf("has too many combinations: at most %d", MaxGridPoints)}
	}
	if c.Folds > st.NNZ() {
		return &SettingsError{Field: "Folds", Value: float64(c.Folds), Rule: fmt.Sprintf("must be at most the number of ratings, %d (every fold validates on at least one)", st.NNZ())}
	}
	return nil
}

// points returns the grid's points (every combination, in order, or Random
// of them drawn by src).
func (c *TuneConfig) points(src rand.Source) []map[string]string {
	pts := []map[string]string{{}}
	for _, p := range c.Grid {
		var next []map[string]string
		for _, pt := range pts {
			for _, v := range p.Values {
				q := make(map[string]string, len(pt)+1)
				for k, x := range pt {
					q[k] = x
				}
				q[p.Name] = v
				next = append(next, q)
			}
		}
		pts = next
	}
	if c.Random > 0 && c.Random < len(pts) {
		perm := rand.New(src).Perm(len(pts))[:c.Random]
		slices.Sort(perm)
		sel := make([]map[string]string, len(perm))
		for i, j := range perm {
			sel[i] = pts[j]
		}
		pts = sel
	}
	return pts
}

// Settings returns the settings and rank of a point.
func (c *TuneConfig) Settings(pt map[string]string) (Settings, int, error) {
	s, rank := c.Base, c.Rank
	for _, p := range c.Grid {
		if v, ok := pt[p.Name]; ok {
			if err := p.apply(v, &s, &rank); err != nil {
				return s, 0, err
			}
		}
	}
	return s, rank, nil
}

// Tune scores every point of the grid on validation data carved from st
// (k folds or one hold-out, the same cuts for every point) and returns the
// points sorted by validation RMSE, best first. src draws the cuts, the
// random points and every training run's seed.
func Tune(st *data.Store, c *TuneConfig, src rand.Source, progress func(done, total int)) ([]TunePoint, error) {
	if c.Rank <= 0 {
		return nil, &SettingsError{Field: "Rank", Value: float64(c.Rank), Rule: "must be positive"}
	}
	if st.NNZ() < 10 {
		return nil, ErrEmpty
	}
	if err := c.checkSize(st); err != nil {
		return nil, err
	}
	rng := rand.New(src)
	pts := c.points(rng)
	folds := foldsOf(st.NNZ(), c.Folds, c.Fraction, rng)
	seed := rng.Uint64()
	out := make([]TunePoint, len(pts))
	for i, pt := range pts {
		out[i] = c.score(st, pt, folds, seed)
		if progress != nil {
			progress(i+1, len(pts))
		}
	}
	sort.SliceStable(out, func(a, b int) bool {
		if (out[a].Err == "") != (out[b].Err == "") {
			return out[a].Err == ""
		}
		return out[a].RMSE < out[b].RMSE
	})
	return out, nil
}

// foldsOf returns the validation positions of each fold.
func foldsOf(n, k int, frac float64, rng *rand.Rand) [][]int {
	perm := rng.Perm(n)
	if k <= 1 {
		if frac <= 0 || frac >= 1 {
			frac = 0.1
		}
		nv := max(1, int(math.Round(frac*float64(n))))
		v := slices.Clone(perm[:nv])
		slices.Sort(v)
		return [][]int{v}
	}
	out := make([][]int, k)
	for f := 0; f < k; f++ {
		v := slices.Clone(perm[f*n/k : (f+1)*n/k])
		slices.Sort(v)
		out[f] = v
	}
	return out
}

func (c *TuneConfig) score(st *data.Store, pt map[string]string, folds [][]int, seed uint64) TunePoint {
	res := TunePoint{Values: pt}
	s, rank, err := c.Settings(pt)
	if err != nil {
		res.Err = err.Error()
		return res
	}
	var rmses []float64
	epochs := 0.0
	in := make([]bool, st.NNZ())
	for fi, v := range folds {
		clear(in)
		for _, e := range v {
			in[e] = true
		}
		tr := make([]int, 0, st.NNZ()-len(v))
		for e := range in {
			if !in[e] {
				tr = append(tr, e)
			}
		}
		train, valid := st.Subset(tr), st.Subset(v)
		m, err := decomposition.NewModel(c.Kind, st.Dims, repeatRank(rank, st.Order()), c.Bias)
		if err != nil {
			res.Err = err.Error()
			return res
		}
		m.ClampLo, m.ClampHi = c.ClampLo, c.ClampHi
		r, err := Train(train, valid, m, &s, rand.NewPCG(seed, uint64(fi)), nil)
		if err != nil {
			res.Err = err.Error()
			return res
		}
		rm := r.History[r.BestEpoch-1].ValidRMSE
		if r.Settings.Solver == SolverGibbs {
			rm = RMSE(m, valid, s.Threads) // the returned model, not the running average
		}
		rmses = append(rmses, rm)
		epochs += float64(r.BestEpoch)
	}
	mean := 0.0
	for _, v := range rmses {
		mean += v
	}
	mean /= float64(len(rmses))
	sd := 0.0
	if len(rmses) > 1 {
		for _, v := range rmses {
			sd += (v - mean) * (v - mean)
		}
		sd = math.Sqrt(sd / float64(len(rmses)-1))
	}
	res.RMSE, res.SD, res.Epochs = mean, sd, epochs/float64(len(folds))
	return res
}

// repeatRank is the rank list of a model of the given order with rank r in
// every mode.
func repeatRank(r, order int) []int {
	out := make([]int, order)
	for i := range out {
		out[i] = r
	}
	return out
}
