package dprec

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/dprec/dprec/completion"
	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/models"
)

// Metric is the score a tuning run compares points by.
type Metric struct {
	// Name is rmse, ndcg, recall, map or precision.
	Name string
	// K is the cut-off of a ranking metric (ndcg@K...).
	K int
}

// String gives the metric as ParseMetric reads it.
func (m Metric) String() string {
	if m.Name == "rmse" {
		return "rmse"
	}
	return fmt.Sprintf("%s@%d", m.Name, m.K)
}

// Ranking reports whether the metric scores top-K lists (higher is
// better) rather than rating error (lower is better).
func (m Metric) Ranking() bool { return m.Name != "rmse" }

// ParseMetric parses "rmse", "ndcg@10", "recall@20", "map@10" or
// "precision@5" (a ranking metric without @K means @10).
func ParseMetric(s string) (Metric, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	name, k, hasK := strings.Cut(s, "@")
	switch name {
	case "rmse":
		if hasK {
			return Metric{}, fmt.Errorf("metric %q: rmse takes no @k", s)
		}
		return Metric{Name: "rmse"}, nil
	case "ndcg", "recall", "map", "precision":
	default:
		return Metric{}, fmt.Errorf("metric %q: want rmse, ndcg@k, recall@k, map@k or precision@k", s)
	}
	m := Metric{Name: name, K: 10}
	if hasK {
		v, err := strconv.Atoi(k)
		if err != nil || v <= 0 {
			return Metric{}, fmt.Errorf("metric %q: k must be a positive integer", s)
		}
		m.K = v
	}
	return m, nil
}

// of returns the metric's value in r.
func (m Metric) of(r *models.RankMetrics) float64 {
	switch m.Name {
	case "ndcg":
		return r.NDCG
	case "recall":
		return r.Recall
	case "map":
		return r.MAP
	}
	return r.Precision
}

// ImplicitGridNames are the grid parameters of the implicit objective
// (rank and reg are shared with the rating objective's grid, whose names
// completion.ParseGrid lists).
var ImplicitGridNames = []string{"rank", "reg", "alpha", "unobserved-weight", "confidence", "iterations"}

// EASEGridNames are the grid parameters of the EASE item-item model.
var EASEGridNames = []string{"lambda", "max-items"}

// ParseGrid parses "name=v1,v2 name=v3 ..." for the objective: the rating
// objective's names are completion.ParseGrid's, the implicit objective's
// ImplicitGridNames, EASE's EASEGridNames. Every value is checked.
func ParseGrid(s string, obj Objective) ([]completion.Param, error) {
	names := ImplicitGridNames
	switch obj {
	case ObjectiveImplicit:
	case ObjectiveEASE:
		names = EASEGridNames
	default:
		return completion.ParseGrid(s)
	}
	var out []completion.Param
	seen := map[string]bool{}
	for _, f := range strings.Fields(s) {
		name, vals, ok := strings.Cut(f, "=")
		if !ok || vals == "" {
			return nil, fmt.Errorf("grid term %q: want name=v1,v2 (values separated by commas)", f)
		}
		if !slices.Contains(names, name) {
			return nil, fmt.Errorf("grid: %q is not a parameter of the %s objective (want %s)", name, obj, strings.Join(names, ", "))
		}
		if seen[name] {
			return nil, fmt.Errorf("grid names %q twice", name)
		}
		seen[name] = true
		p := completion.Param{Name: name, Values: strings.Split(vals, ",")}
		for _, v := range p.Values {
			var o Options
			if err := applyImplicit(&o, name, v); err != nil {
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

// applyImplicit sets an implicit grid parameter in o.
func applyImplicit(o *Options, name, v string) error {
	num := func() (float64, error) {
		x, err := strconv.ParseFloat(v, 64)
		if err != nil || !(x > 0) || math.IsInf(x, 0) {
			return 0, fmt.Errorf("grid %s: %q is not a positive finite number", name, v)
		}
		return x, nil
	}
	integer := func() (int, error) {
		x, err := strconv.Atoi(v)
		if err != nil || x <= 0 {
			return 0, fmt.Errorf("grid %s: %q is not a positive integer", name, v)
		}
		return x, nil
	}
	var err error
	switch name {
	case "rank":
		o.Rank, err = integer()
	case "iterations":
		o.Implicit.Iterations, err = integer()
	case "reg":
		o.Implicit.Reg, err = num()
	case "alpha":
		o.Implicit.Alpha, err = num()
	case "unobserved-weight":
		o.Implicit.UnobservedWeight, err = num()
	case "confidence":
		o.Implicit.Confidence, err = completion.ParseConfidenceFunc(v)
	case "lambda":
		o.EASE.Lambda, err = num()
	case "max-items":
		o.EASE.MaxItems, err = integer()
	default:
		err = fmt.Errorf("grid: unknown parameter %q", name)
	}
	return err
}

// TuneOptions configure TuneRanking.
type TuneOptions struct {
	// Base is the run every point starts from (objective, kind, rank,
	// settings); its Validation, Privacy and Events are not used. Its
	// Check, when set, sees every point's plan, and a refusal ends the
	// tuning with that error.
	Base Options
	// Grid lists the parameters (ParseGrid); every combination is a point.
	Grid []completion.Param
	// Metric is the ranking metric (ParseMetric; rmse is completion.Tune's).
	Metric Metric
	// Fraction of each user's events held out for validation; 0 means 0.1.
	// Every user with at least two events holds out at least one; users
	// with one event stay in training.
	Fraction float64
	// Repeats is the number of independent per-user hold-outs each point
	// is scored on (their mean is the score); 0 means 1.
	Repeats int
	// Threshold is the relevance threshold: a held-out event is relevant
	// when its value is >= Threshold (0: every held-out event).
	Threshold float64
	// Random, when positive, scores that many points drawn at random.
	Random int
	// Progress, when set, is called after each point.
	Progress func(done, total int)
}

// TunePoint is one scored point of a ranking tune.
type TunePoint struct {
	Values map[string]string `json:"values"`
	// Score is the mean validation metric over the repeats, SD its
	// standard deviation (0 for one), Popularity the most-popular lists'
	// score on the same hold-outs.
	Score      float64 `json:"score"`
	SD         float64 `json:"score_sd"`
	Popularity float64 `json:"popularity"`
	// Err is set when training failed at this point (it then ranks last).
	Err string `json:"error,omitempty"`
}

// Options returns the run options of a point: o.Base with its values.
func (o *TuneOptions) Options(pt map[string]string) (Options, error) {
	r := o.Base
	if r.Objective == ObjectiveImplicit || r.Objective == ObjectiveEASE {
		for _, p := range o.Grid {
			if v, ok := pt[p.Name]; ok {
				if err := applyImplicit(&r, p.Name, v); err != nil {
					return r, err
				}
			}
		}
		return r, nil
	}
	rank := r.Rank
	if rank == 0 {
		rank = 10
	}
	cfg := completion.TuneConfig{Base: r.Settings, Rank: rank, Grid: o.Grid}
	s, rank, err := cfg.Settings(pt)
	if err != nil {
		return r, err
	}
	r.Settings, r.Rank = s, rank
	return r, nil
}

// TuneRanking scores every point of the grid by a ranking metric on
// per-user hold-outs carved from st (the same hold-outs for every point;
// no test data is involved): each point is trained through Train on the
// rest, with the base run's objective, and its top-K lists (the user's
// training items left out; a rating model's ranked as dprec eval and
// recommend rank them by default, defaultPredictor, so that the settings
// are chosen for the lists users get) are scored against the held-out
// events. The points come back best first. src draws the hold-outs, the
// random points and every run's seed.
func TuneRanking(ctx context.Context, st *data.Store, o *TuneOptions) ([]TunePoint, error) {
	if !o.Metric.Ranking() {
		return nil, optErr("TuneRanking scores ranking metrics; rmse is completion.Tune's")
	}
	frac := o.Fraction
	if frac == 0 {
		frac = 0.1
	}
	if !(frac > 0 && frac < 1) {
		return nil, optErr("hold-out fraction %g: want a fraction in (0, 1)", frac)
	}
	rng := rand.New(rand.NewPCG(o.Base.Seed, pcgStream))
	pts := gridPoints(o.Grid, o.Random, rng)
	repeats := max(1, o.Repeats)
	type part struct{ train, valid *data.Store }
	parts := make([]part, repeats)
	for r := range parts {
		tr, va, err := perUserHoldOut(st, frac, rng)
		if err != nil {
			return nil, err
		}
		parts[r] = part{tr, va}
	}
	seed := rng.Uint64()
	out := make([]TunePoint, len(pts))
	for i, pt := range pts {
		out[i] = TunePoint{Values: pt}
		var scores []float64
		pop := 0.0
		for r, p := range parts {
			opts, err := o.Options(pt)
			var refused error
			if check := o.Base.Check; check != nil {
				// The resource check refuses the whole tuning, not a point.
				opts.Check = func(p Plan) error {
					refused = check(p)
					return refused
				}
			}
			if err == nil {
				opts.Validation, opts.Privacy, opts.Events = -1, nil, Events{}
				opts.Seed, opts.Seeded = seed+uint64(r), true
				var res *Result
				if res, err = Train(ctx, p.train, "validation training part", &opts); err == nil {
					var ev *models.EvalResult
					ev, err = models.Evaluate(defaultPredictor(res.File()), p.valid, models.EvalOptions{K: o.Metric.K, Threshold: o.Threshold, Train: p.train, Threads: opts.Settings.Threads})
					if err == nil && ev.RankedUsers == 0 {
						err = fmt.Errorf("no held-out event is relevant at threshold %g", o.Threshold)
					}
					if err == nil {
						scores = append(scores, o.Metric.of(&ev.RankMetrics))
						if ev.Popularity != nil {
							pop += o.Metric.of(ev.Popularity)
						}
					}
				}
			}
			if err != nil {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				if refused != nil {
					return nil, refused
				}
				out[i].Err = err.Error()
				break
			}
		}
		if out[i].Err == "" {
			out[i].Score, out[i].SD = meanSD(scores)
			out[i].Popularity = pop / float64(len(parts))
		}
		if o.Progress != nil {
			o.Progress(i+1, len(pts))
		}
	}
	sort.SliceStable(out, func(a, b int) bool {
		if (out[a].Err == "") != (out[b].Err == "") {
			return out[a].Err == ""
		}
		return out[a].Score > out[b].Score
	})
	return out, nil
}

// perUserHoldOut holds out max(1, round(frac n)) of the n events of every
// user with at least two events (at most n-1), at random.
func perUserHoldOut(st *data.Store, frac float64, rng *rand.Rand) (train, valid *data.Store, err error) {
	users := make([][]int, st.Dims[0])
	for e, u := range st.Idx[0] {
		users[u] = append(users[u], e)
	}
	var tr, va []int
	for _, pos := range users {
		n := len(pos)
		if n < 2 {
			tr = append(tr, pos...)
			continue
		}
		h := min(n-1, max(1, int(math.Round(frac*float64(n)))))
		rng.Shuffle(n, func(i, j int) { pos[i], pos[j] = pos[j], pos[i] })
		va = append(va, pos[:h]...)
		tr = append(tr, pos[h:]...)
	}
	if len(va) == 0 {
		return nil, nil, optErr("no user has two events: nothing to hold out for validation")
	}
	slices.Sort(tr)
	slices.Sort(va)
	return st.Subset(tr), st.Subset(va), nil
}

// gridPoints lists every combination of the grid, or random of them.
func gridPoints(grid []completion.Param, random int, rng *rand.Rand) []map[string]string {
	pts := []map[string]string{{}}
	for _, p := range grid {
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
	if random > 0 && random < len(pts) {
		perm := rng.Perm(len(pts))[:random]
		slices.Sort(perm)
		sel := make([]map[string]string, len(perm))
		for i, j := range perm {
			sel[i] = pts[j]
		}
		pts = sel
	}
	return pts
}

func meanSD(x []float64) (mean, sd float64) {
	for _, v := range x {
		mean += v
	}
	mean /= float64(len(x))
	if len(x) > 1 {
		for _, v := range x {
			sd += (v - mean) * (v - mean)
		}
		sd = math.Sqrt(sd / float64(len(x)-1))
	}
	return mean, sd
}
