package cape

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/dprec/dprec/otd"
	"github.com/dprec/dprec/perturb"
	"gonum.org/v1/gonum/mat"
)

// Series is one curve of an experiment table: mean and standard deviation
// over repetitions at each x.
type Series struct {
	Name string
	Y    []float64
	YErr []float64
}

// Table is one figure panel of an experiment.
type Table struct {
	Name           string // file stem, e.g. "pca_vs_epsilon"
	Title          string
	XLabel, YLabel string
	LogX           bool
	X              []float64
	Series         []Series
}

// ExperimentConfig configures the seed 002 experiments. Zero fields take
// the defaults noted.
type ExperimentConfig struct {
	// Quick shrinks grids, sizes and repetitions for a smoke run.
	Quick bool
	// Reps is the number of repetitions per point (default 10, as the
	// seed; 2 with Quick).
	Reps int
	// Seed seeds data and noise (the experiment is reproducible and NOT
	// private, as every experiment on synthetic data).
	Seed uint64
	// Progress, when set, is called after every point.
	Progress func(done, total int)
	// Real, when set, adds a capePCA-versus-epsilon table on these rows
	// (every row of norm <= 1; e.g. MovieLens users x item columns),
	// randomly split into 5 equal sites per repetition. RealName labels it.
	Real     *mat.Dense
	RealName string
	// RealOnly skips the synthetic tables of PCAExperiment.
	RealOnly bool
}

func (c ExperimentConfig) reps() int {
	switch {
	case c.Reps > 0:
		return c.Reps
	case c.Quick:
		return 2
	}
	return 10
}

type point struct {
	x    float64
	S, N int
	eps  float64
	del  float64
}

// methodFunc runs one method once and returns its metric.
type methodFunc func(sites []SiteInput, p point, rep int) (float64, error)

func runTable(t *Table, names []string, pts []point, reps int, data func(p point, rep int) ([]SiteInput, error), methods []methodFunc, tick func()) error {
	t.Series = make([]Series, len(names))
	for m := range names {
		t.Series[m] = Series{Name: names[m], Y: make([]float64, len(pts)), YErr: make([]float64, len(pts))}
	}
	for i, p := range pts {
		t.X = append(t.X, p.x)
		vals := make([][]float64, len(methods))
		for rep := 0; rep < reps; rep++ {
			sites, err := data(p, rep)
			if err != nil {
				return err
			}
			for m, f := range methods {
				v, err := f(sites, p, rep)
				if err != nil {
					return fmt.Errorf("%s, %s at x = %g: %w", t.Name, names[m], p.x, err)
				}
				vals[m] = append(vals[m], v)
			}
		}
		for m := range methods {
			mean, sd := meanSD(vals[m])
			t.Series[m].Y[i] = mean
			t.Series[m].YErr[i] = sd
		}
		tick()
	}
	return nil
}

func meanSD(v []float64) (float64, float64) {
	var s float64
	for _, x := range v {
		s += x
	}
	m := s / float64(len(v))
	var q float64
	for _, x := range v {
		q += (x - m) * (x - m)
	}
	if len(v) < 2 {
		return m, 0
	}
	return m, math.Sqrt(q / float64(len(v)-1))
}

func withBudget(sites []SiteInput, eps, del float64) []SiteInput {
	out := make([]SiteInput, len(sites))
	for i, s := range sites {
		out[i] = SiteInput{Data: s.Data, Epsilon: eps, Delta: del}
	}
	return out
}

// PCAExperiment reproduces seed 002 Fig. 2 on its synthetic set-up (D =
// 200, K = 50, S = 5 sites; q_CE of capePCA, conv, local and non-private
// pooled PCA versus epsilon, N_s and delta). Quick uses D = 50, K = 10.
func PCAExperiment(cfg ExperimentConfig) ([]Table, error) {
	D, K, S, N := 200, 50, 5, 1000
	epsGrid := []float64{0.1, 0.25, 0.5, 1, 2, 5}
	nGrid := []int{250, 500, 1000, 2000, 4000}
	delGrid := []float64{1e-5, 1e-4, 1e-3, 1e-2, 1e-1}
	if cfg.Quick {
		D, K, N = 50, 10, 500
		epsGrid = []float64{0.25, 1, 4}
		nGrid = []int{250, 1000}
		delGrid = []float64{1e-4, 1e-2}
	}
	const eps0, del0 = 1.0, 0.01
	reps := cfg.reps()
	var pv, pn, pd []point
	for _, e := range epsGrid {
		pv = append(pv, point{x: e, S: S, N: N, eps: e, del: del0})
	}
	for _, n := range nGrid {
		pn = append(pn, point{x: float64(n), S: S, N: n, eps: eps0, del: del0})
	}
	for _, d := range delGrid {
		pd = append(pd, point{x: d, S: S, N: N, eps: eps0, del: d})
	}
	total := len(pv) + len(pn) + len(pd)
	done := 0
	tick := func() {
		done++
		if cfg.Progress != nil {
			cfg.Progress(done, total)
		}
	}
	dataFn := func(p point, rep int) ([]SiteInput, error) {
		r := rand.New(perturb.StreamSource(cfg.Seed, uint64(1_000_000+p.N*100+rep)))
		rows, err := SyntheticPCA(p.S, p.N, D, r)
		if err != nil {
			return nil, err
		}
		sites := make([]SiteInput, len(rows))
		for i, x := range rows {
			sites[i] = SiteInput{Data: &SiteData{Rows: x}}
		}
		return sites, nil
	}
	pooled := func(sites []SiteInput) *mat.SymDense {
		rows := make([]*mat.Dense, len(sites))
		for i, s := range sites {
			rows[i] = s.Data.Rows
		}
		return SecondMoment(rows...)
	}
	noiseSeed := func(p point, rep, m int) uint64 {
		return cfg.Seed ^ uint64(rep)*0x9e3779b97f4a7c15 ^ math.Float64bits(p.x) ^ uint64(m)<<56
	}
	methods := []methodFunc{
		func(sites []SiteInput, p point, rep int) (float64, error) {
			res, _, err := CapePCA(context.Background(), K, withBudget(sites, p.eps, p.del), "", RunOptions{Seeded: true, Seed: noiseSeed(p, rep, 1)})
			if err != nil {
				return 0, err
			}
			return CapturedEnergy(res.V, pooled(sites)), nil
		},
		func(sites []SiteInput, p point, rep int) (float64, error) {
			res, err := ConvPCA(K, withBudget(sites, p.eps, p.del), "", false, rand.New(perturb.StreamSource(noiseSeed(p, rep, 2), 0)))
			if err != nil {
				return 0, err
			}
			return CapturedEnergy(res.V, pooled(sites)), nil
		},
		func(sites []SiteInput, p point, rep int) (float64, error) {
			res, err := LocalPCA(K, withBudget(sites, p.eps, p.del)[0], "", rand.New(perturb.StreamSource(noiseSeed(p, rep, 3), 0)))
			if err != nil {
				return 0, err
			}
			return CapturedEnergy(res.V, pooled(sites)), nil
		},
		func(sites []SiteInput, p point, rep int) (float64, error) {
			res, err := LocalPCA(K, pooledSite(sites, p.eps, p.del), "", rand.New(perturb.StreamSource(noiseSeed(p, rep, 4), 0)))
			if err != nil {
				return 0, err
			}
			return CapturedEnergy(res.V, pooled(sites)), nil
		},
		func(sites []SiteInput, p point, rep int) (float64, error) {
			res, err := NonPrivatePCA(K, sites)
			if err != nil {
				return 0, err
			}
			return CapturedEnergy(res.V, pooled(sites)), nil
		},
	}
	names := []string{"capePCA", "conv", "local", "pooled DP", "non-private pooled"}
	sub := fmt.Sprintf("D=%d, K=%d, S=%d", D, K, S)
	tables := []Table{
		{Name: "pca_vs_epsilon", Title: fmt.Sprintf("capePCA q_CE vs epsilon (%s, N_s=%d, delta=%g)", sub, N, del0), XLabel: "epsilon", YLabel: "q_CE", LogX: true},
		{Name: "pca_vs_ns", Title: fmt.Sprintf("capePCA q_CE vs N_s (%s, epsilon=%g, delta=%g)", sub, eps0, del0), XLabel: "N_s", YLabel: "q_CE", LogX: true},
		{Name: "pca_vs_delta", Title: fmt.Sprintf("capePCA q_CE vs delta (%s, N_s=%d, epsilon=%g)", sub, N, eps0), XLabel: "delta", YLabel: "q_CE", LogX: true},
	}
	if cfg.RealOnly {
		tables = nil
	}
	for i, pts := range [][]point{pv, pn, pd} {
		if cfg.RealOnly {
			break
		}
		if err := runTable(&tables[i], names, pts, reps, dataFn, methods, tick); err != nil {
			return nil, err
		}
	}
	if cfg.Real != nil {
		n, d := cfg.Real.Dims()
		kr := 10
		if kr > d {
			kr = d
		}
		K = kr
		realFn := func(p point, rep int) ([]SiteInput, error) {
			perm := rand.New(perturb.StreamSource(cfg.Seed, uint64(3_000_000+rep))).Perm(n)
			sites := make([]SiteInput, S)
			per := n / S
			for s := range sites {
				x := mat.NewDense(per, d, nil)
				for i := 0; i < per; i++ {
					x.SetRow(i, cfg.Real.RawRowView(perm[s*per+i]))
				}
				sites[s] = SiteInput{Data: &SiteData{Rows: x}}
			}
			return sites, nil
		}
		var pr []point
		for _, e := range epsGrid {
			pr = append(pr, point{x: e, S: S, N: n / S, eps: e, del: del0})
		}
		t := Table{Name: "pca_real_vs_epsilon", Title: fmt.Sprintf("capePCA q_CE vs epsilon (%s: D=%d, K=%d, S=%d, N_s=%d, delta=%g)", cfg.RealName, d, K, S, n/S, del0), XLabel: "epsilon", YLabel: "q_CE", LogX: true}
		if err := runTable(&t, names, pr, reps, realFn, methods, func() {}); err != nil {
			return nil, err
		}
		tables = append(tables, t)
	}
	return tables, nil
}

// AGNExperiment reproduces seed 002 Fig. 3 (Gaussian mixture, sigma^2 =
// 0.05, S = 5, delta = 0.01, uniform weights, means of norm 1): e_comp of
// capeAGN, conv, local and non-private pooled versus epsilon and N_s, for
// D = 10, K = 5 and D = 50, K = 10 (Quick: the first only, smaller grids).
// Each site's budget is split equally between M2 and M3 (the seed's
// choice). Data are divided by their largest row norm (otd.SyntheticMoG)
// and e_comp is measured against the equally scaled true means.
func AGNExperiment(cfg ExperimentConfig) ([]Table, error) {
	type setup struct{ D, K, N int }
	setups := []setup{{10, 5, 2000}, {50, 10, 2000}}
	epsGrid := []float64{0.1, 0.25, 0.5, 1, 2, 5}
	nGrid := []int{500, 1000, 2000, 5000, 10000}
	if cfg.Quick {
		setups = setups[:1]
		epsGrid = []float64{0.25, 1, 4}
		nGrid = []int{500, 2000}
	}
	const S, del0, eps0, sigma2 = 5, 0.01, 1.0, 0.05
	reps := cfg.reps()
	total := len(setups) * (len(epsGrid) + len(nGrid))
	done := 0
	tick := func() {
		done++
		if cfg.Progress != nil {
			cfg.Progress(done, total)
		}
	}
	var tables []Table
	for _, su := range setups {
		su := su
		var truth *mat.Dense
		var s2 float64
		dataFn := func(p point, rep int) ([]SiteInput, error) {
			syn, scale, err := otd.SyntheticMoG(su.D, su.K, p.S*p.N, sigma2, 1, perturb.StreamSource(cfg.Seed, uint64(2_000_000+su.D*1_000_000+p.N*100+rep)))
			if err != nil {
				return nil, err
			}
			truth, s2 = syn.A, sigma2/(scale*scale)
			X := syn.Input.Rows
			sites := make([]SiteInput, p.S)
			for s := range sites {
				sites[s] = SiteInput{Data: &SiteData{Rows: mat.DenseCopyOf(X.Slice(s*p.N, (s+1)*p.N, 0, su.D))}}
			}
			return sites, nil
		}
		job := func() Job { return Job{Kind: JobAGN, D: su.D, K: su.K, Model: ModelMOG, Sigma2: s2} }
		seedOf := func(p point, rep, m int) uint64 {
			return cfg.Seed ^ uint64(rep)*0x9e3779b97f4a7c15 ^ math.Float64bits(p.x) ^ uint64(m)<<56 ^ uint64(su.D)<<48
		}
		tpm := otd.TPMOptions{}
		methods := []methodFunc{
			func(sites []SiteInput, p point, rep int) (float64, error) {
				res, _, err := CapeAGN(context.Background(), job(), withBudget(sites, p.eps, p.del), RunOptions{Seeded: true, Seed: seedOf(p, rep, 1)}, tpm, perturb.StreamSource(seedOf(p, rep, 1), 9))
				if err != nil {
					return 0, err
				}
				return otd.ECompRaw(truth, res.A), nil
			},
			func(sites []SiteInput, p point, rep int) (float64, error) {
				res, err := ConvAGN(job(), withBudget(sites, p.eps, p.del), rand.New(perturb.StreamSource(seedOf(p, rep, 2), 0)), tpm, perturb.StreamSource(seedOf(p, rep, 2), 9))
				if err != nil {
					return 0, err
				}
				return otd.ECompRaw(truth, res.A), nil
			},
			func(sites []SiteInput, p point, rep int) (float64, error) {
				res, err := LocalAGN(job(), withBudget(sites, p.eps, p.del)[0], rand.New(perturb.StreamSource(seedOf(p, rep, 3), 0)), tpm, perturb.StreamSource(seedOf(p, rep, 3), 9))
				if err != nil {
					return 0, err
				}
				return otd.ECompRaw(truth, res.A), nil
			},
			func(sites []SiteInput, p point, rep int) (float64, error) {
				res, err := LocalAGN(job(), pooledSite(sites, p.eps, p.del), rand.New(perturb.StreamSource(seedOf(p, rep, 5), 0)), tpm, perturb.StreamSource(seedOf(p, rep, 5), 9))
				if err != nil {
					return 0, err
				}
				return otd.ECompRaw(truth, res.A), nil
			},
			func(sites []SiteInput, p point, rep int) (float64, error) {
				res, err := NonPrivateAGN(job(), sites, tpm, perturb.StreamSource(seedOf(p, rep, 4), 9))
				if err != nil {
					return 0, err
				}
				return otd.ECompRaw(truth, res.A), nil
			},
		}
		names := []string{"capeAGN", "conv", "local", "pooled DP", "non-private pooled"}
		var pv, pn []point
		for _, e := range epsGrid {
			pv = append(pv, point{x: e, S: S, N: su.N, eps: e, del: del0})
		}
		for _, n := range nGrid {
			pn = append(pn, point{x: float64(n), S: S, N: n, eps: eps0, del: del0})
		}
		sub := fmt.Sprintf("MoG D=%d, K=%d, S=%d, sigma^2=%g, delta=%g", su.D, su.K, S, sigma2, del0)
		tv := Table{Name: fmt.Sprintf("agn_d%d_vs_epsilon", su.D), Title: fmt.Sprintf("capeAGN e_comp vs epsilon (%s, N_s=%d)", sub, su.N), XLabel: "epsilon", YLabel: "e_comp", LogX: true}
		tn := Table{Name: fmt.Sprintf("agn_d%d_vs_ns", su.D), Title: fmt.Sprintf("capeAGN e_comp vs N_s (%s, epsilon=%g)", sub, eps0), XLabel: "N_s", YLabel: "e_comp", LogX: true}
		if err := runTable(&tv, names, pv, reps, dataFn, methods, tick); err != nil {
			return nil, err
		}
		if err := runTable(&tn, names, pn, reps, dataFn, methods, tick); err != nil {
			return nil, err
		}
		tables = append(tables, tv, tn)
	}
	return tables, nil
}

// pooledSite stacks every site's rows into one site: the pooled-data
// private baseline (the accuracy CAPE aims to match, Lemma 1).
func pooledSite(sites []SiteInput, eps, del float64) SiteInput {
	var rows []*mat.Dense
	var n, d int
	for _, s := range sites {
		r, c := s.Data.Rows.Dims()
		n += r
		d = c
		rows = append(rows, s.Data.Rows)
	}
	x := mat.NewDense(n, d, nil)
	off := 0
	for _, r := range rows {
		k, _ := r.Dims()
		x.Slice(off, off+k, 0, d).(*mat.Dense).Copy(r)
		off += k
	}
	return SiteInput{Data: &SiteData{Rows: x}, Epsilon: eps, Delta: del}
}
