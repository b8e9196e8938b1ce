package cape

import (
	"context"
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/dprec/dprec/perturb"
	"gonum.org/v1/gonum/mat"
)

// unitRows returns n x d rows drawn uniformly in the unit ball's cube
// corner and scaled to norm <= 1.
func unitRows(n, d int, r *rand.Rand) *mat.Dense {
	x := mat.NewDense(n, d, nil)
	for i := 0; i < n; i++ {
		var s float64
		for j := 0; j < d; j++ {
			v := r.NormFloat64()
			x.Set(i, j, v)
			s += v * v
		}
		s = math.Sqrt(s) * (1 + r.Float64()) // norm in (0.5, 1]
		for j := 0; j < d; j++ {
			x.Set(i, j, x.At(i, j)/s)
		}
	}
	return x
}

type siteCfg struct {
	n        int
	eps, del float64
	drop     int
}

func makeSites(cfg []siteCfg, d int, seed uint64) []SiteInput {
	r := rand.New(rand.NewPCG(seed, 7))
	out := make([]SiteInput, len(cfg))
	for i, c := range cfg {
		out[i] = SiteInput{Data: &SiteData{Rows: unitRows(c.n, d, r)}, Epsilon: c.eps, Delta: c.del, DropStage: c.drop}
	}
	return out
}

// views collects, per trial, what the aggregator and colluders can compute
// about each site's noise.
type views struct {
	mu       sync.Mutex
	e, f, rl map[int][]float64
}

func (v *views) tap(m *Message) {
	v.mu.Lock()
	defer v.mu.Unlock()
	var id int
	switch {
	case m.Kind == KindE:
		id = siteID(m.To)
		v.e[id] = m.Values
	case m.Kind == KindF:
		id = siteID(m.To)
		v.f[id] = m.Values
	case m.Kind == KindRelease:
		id = siteID(m.From)
		v.rl[id] = m.Values
	}
}

func siteID(role Role) int {
	var s int
	for _, c := range role[len("site/"):] {
		s = s*10 + int(c-'0')
	}
	return s
}

// moments accumulates sums for a variance estimate around a known mean.
type moments struct{ n, s2 float64 }

func (m *moments) add(x float64) { m.n++; m.s2 += x * x }
func (m *moments) v() float64    { return m.s2 / m.n }

// checkVar asserts that the mean-square of n zero-mean Gaussian draws is
// within 5 standard errors (sqrt(2/n) relative) of want: a false reject has
// probability about 6e-7 per check.
func checkVar(t *testing.T, name string, m moments, want float64) {
	t.Helper()
	se := math.Sqrt(2 / m.n)
	if rel := m.v()/want - 1; math.Abs(rel) > 5*se {
		t.Errorf("%s: variance %.6g, want %.6g (relative error %.4f > 5 SE = %.4f, n = %.0f)", name, m.v(), want, rel, 5*se, m.n)
	}
}

func runTrials(t *testing.T, cfg []siteCfg, d, trials int, check func(trial int, run *Run, v *views, sites []SiteInput)) {
	t.Helper()
	sites := makeSites(cfg, d, 1)
	job := Job{Kind: JobMean, D: d}
	for tr := 0; tr < trials; tr++ {
		v := &views{e: map[int][]float64{}, f: map[int][]float64{}, rl: map[int][]float64{}}
		run, err := runLocal(context.Background(), job, sites, RunOptions{Seeded: true, Seed: uint64(1000 + tr)}, v.tap)
		if err != nil {
			t.Fatal(err)
		}
		check(tr, run, v, sites)
	}
}

func weightedMean(sites []SiteInput, mu []float64, ids []int) []float64 {
	var out []float64
	var msum float64
	for i, s := range ids {
		m := rowMean(sites[s-1].Data.Rows)
		if out == nil {
			out = make([]float64, len(m))
		}
		for k := range m {
			out[k] += mu[i] * m[k]
		}
		msum += mu[i]
	}
	for k := range out {
		out[k] /= msum
	}
	return out
}

func testLemma1(t *testing.T, cfg []siteCfg) {
	const d, trials = 40, 150 // 6000 draws per variance: 5 SE = 9%
	var resid moments
	agg := make([]moments, len(cfg))
	coll := make([]moments, len(cfg))
	coal := make([]moments, len(cfg))
	joint := make([]moments, len(cfg))
	var plan *Plan
	var maxZero float64
	runTrials(t, cfg, d, trials, func(_ int, run *Run, v *views, sites []SiteInput) {
		st := run.Outcome.Stages[0]
		plan = st.Plan
		if len(st.Dropped) != 0 {
			t.Fatalf("unexpected drop-outs %v", st.Dropped)
		}
		truth := weightedMean(sites, plan.Mu, st.Sites)
		for k, x := range st.Estimate {
			resid.add(x - truth[k])
		}
		means := make([][]float64, len(st.Sites))
		for j, t2 := range st.Sites {
			means[j] = rowMean(sites[t2-1].Data.Rows)
		}
		for i, s := range st.Sites {
			a := means[i]
			for k := range a {
				// Aggregator: knows f_s.
				agg[i].add(v.rl[s][k] - v.f[s][k] - a[k])
				// Colluding other sites: know e_t for t != s, hence e_s.
				var others float64
				for j, t2 := range st.Sites {
					if t2 != s {
						others += plan.Mu[j] * v.e[t2][k]
					}
				}
				es := -others / plan.Mu[i]
				coll[i].add(v.rl[s][k] - es - a[k])
			}
		}
		// The coalition of all other sites: they know their own a_t and
		// g_t = a^_t - e_t - f_t - a_t (up to the site's snapping of a_t,
		// about tau 2^-40) and see the aggregate: what is left of site s
		// is a_s + g_s (Plan.CollusionVar with every other site known).
		for i, s := range st.Sites {
			for k := 0; k < d; k++ {
				x := st.Estimate[k]
				for j, t2 := range st.Sites {
					if t2 != s {
						x -= plan.Mu[j] * (v.rl[t2][k] - v.e[t2][k] - v.f[t2][k])
					}
				}
				coal[i].add(x/plan.Mu[i] - means[i][k])
			}
		}
		// The aggregator's best use of every release (doc.go caveat 1).
		for i := range st.Sites {
			u, _ := plan.JointWeights(i)
			for k := 0; k < d; k++ {
				var x float64
				for j, t2 := range st.Sites {
					x += u[j] * (v.rl[t2][k] - v.f[t2][k] - means[j][k])
				}
				joint[i].add(x)
			}
		}
		for k := 0; k < d; k++ {
			var z float64
			for i, s := range st.Sites {
				z += plan.Mu[i] * v.e[s][k]
			}
			maxZero = math.Max(maxZero, math.Abs(z))
		}
	})
	if err := plan.Check(); err != nil {
		t.Fatal(err)
	}
	checkVar(t, "aggregate residual (Lemma 1)", resid, plan.TauC2)
	for i := range agg {
		// The aggregator's view of site i is a_s + e_s + g_s, the colluders'
		// a_s + f_s + g_s: both must be at least tau_s^2.
		checkVar(t, "aggregator view", agg[i], plan.EVar(i)+plan.TauG2[i])
		checkVar(t, "colluders view", coll[i], plan.TauF2[i]+plan.TauG2[i])
		checkVar(t, "aggregator joint view", joint[i], plan.JointVar(i))
		others := make([]bool, plan.S())
		for j := range others {
			others[j] = j != i
		}
		checkVar(t, "coalition of the other sites", coal[i], plan.CollusionVar(i, others))
		if w := plan.CollusionVar(i, others); math.Abs(w/plan.TauG2[i]-1) > 1e-12 {
			t.Errorf("site %d: coalition variance %g, want tau_g,s^2 = %g", i+1, w, plan.TauG2[i])
		}
		if w := plan.EVar(i) + plan.TauG2[i]; w < plan.Tau2[i]*(1-1e-12) {
			t.Errorf("site %d: aggregator-view variance %g < tau_s^2 %g", i+1, w, plan.Tau2[i])
		}
	}
	if plan.Equal {
		if maxZero != 0 {
			t.Errorf("equal weights: max |sum_s mu_s e_s| = %g, want exactly 0", maxZero)
		}
	} else if g := perturb.Granularity(math.Sqrt(plan.ZeroSumSigma2)); maxZero > g*(1+1e-9) {
		// Unequal weights: e_s = w_s/mu_s is snapped to the grid g, so the
		// residual is at most g/2 plus rounding (zerosum.go).
		t.Errorf("unequal weights: max |sum_s mu_s e_s| = %g, above the grid step %g of sigma_z", maxZero, g)
	}
	t.Logf("max |sum mu_s e_s| = %g (sigma_z = %g)", maxZero, math.Sqrt(plan.ZeroSumSigma2))
}

func TestLemma1Equal(t *testing.T) {
	cfg := []siteCfg{{200, 1, 1e-3, 0}, {200, 1, 1e-3, 0}, {200, 1, 1e-3, 0}, {200, 1, 1e-3, 0}}
	testLemma1(t, cfg)
}

func TestLemma1Unequal(t *testing.T) {
	cfg := []siteCfg{{50, 0.5, 1e-3, 0}, {100, 1, 1e-3, 0}, {200, 1, 1e-4, 0}, {400, 2, 1e-3, 0}}
	testLemma1(t, cfg)
}

func TestDropOut(t *testing.T) {
	const d, trials = 40, 150
	cfg := []siteCfg{{200, 1, 1e-3, 0}, {200, 1, 1e-3, 1}, {200, 1, 1e-3, 0}, {200, 1, 1e-3, 0}}
	var resid moments
	var st StageResult
	runTrials(t, cfg, d, trials, func(_ int, run *Run, v *views, sites []SiteInput) {
		st = run.Outcome.Stages[0]
		if len(st.Dropped) != 1 || st.Dropped[0] != 2 {
			t.Fatalf("dropped = %v, want [2]", st.Dropped)
		}
		truth := weightedMean(sites, st.Plan.Mu, []int{1, 3, 4})
		for k, x := range st.Estimate {
			resid.add(x - truth[k])
		}
	})
	checkVar(t, "residual after drop-out", resid, st.Variance)
	if !(st.Variance > st.TargetVariance && st.Variance <= st.ConvVariance) {
		t.Errorf("drop-out variance %g not in (tau_c^2 %g, conv %g]", st.Variance, st.TargetVariance, st.ConvVariance)
	}
}
