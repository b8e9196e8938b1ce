// Package capeexp holds the experiments of Imtiaz and Sarwate, "Distributed
// Differentially Private Algorithms for Matrix and Tensor Factorization"
// (IEEE JSTSP 2018): capePCA and capeAGN against the conventional, local
// and pooled baselines on synthetic (and optionally real) data. The
// experiments use seeded noise: they measure utility and are NOT private.
// `dprec experiment cape` writes their tables as CSV and plots them.
package capeexp

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"

	"github.com/dprec/dprec/otd"
	"github.com/dprec/dprec/otd/cape"
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

// Config configures the experiments. Zero fields take
// the defaults noted.
type Config struct {
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
	// RealOnly skips the synthetic tables of PCA.
	RealOnly bool
}

func (c Config) reps() int {
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
type methodFunc func(sites []cape.SiteInput, p point, rep int) (float64, error)

func runTable(t *Table, names []string, pts []point, reps int, data func(p point, rep int) ([]cape.SiteInput, error), methods []methodFunc, tick func()) error {
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

func withBudget(sites []cape.SiteInput, eps, del float64) []cape.SiteInput {
	out := make([]cape.SiteInput, len(sites))
	for i, s := range sites {
		out[i] = cape.SiteInput{Data: s.Data, Epsilon: eps, Delta: del}
	}
	return out
}

// PCA reproduces Imtiaz and Sarwate 2018b Fig. 2 on its synthetic set-up (D =
// 200, K = 50, S = 5 sites; q_CE of capePCA, conv, local and non-private
// pooled PCA versus epsilon, N_s and delta). Quick uses D = 50, K = 10.
func PCA(cfg Config) ([]Table, error) {
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
	dataFn := func(p point, rep int) ([]cape.SiteInput, error) {
		r := rand.New(perturb.StreamSource(cfg.Seed, uint64(1_000_000+p.N*100+rep)))
		rows, err := cape.SyntheticPCA(p.S, p.N, D, r)
		if err != nil {
			return nil, err
		}
		sites := make([]cape.SiteInput, len(rows))
		for i, x := range rows {
			sites[i] = cape.SiteInput{Data: &cape.SiteData{Rows: x}}
		}
		return sites, nil
	}
	noiseSeed := func(p point, rep, m int) uint64 {
		return cfg.Seed ^ uint64(rep)*0x9e3779b97f4a7c15 ^ math.Float64bits(p.x) ^ uint64(m)<<56
	}
	methods := pcaMethods(K, noiseSeed)
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
		t, err := pcaRealTable(cfg, names, epsGrid, S, del0, reps, noiseSeed)
		if err != nil {
			return nil, err
		}
		tables = append(tables, t)
	}
	return tables, nil
}

// pcaMethods are the PCA methods of a table, in the order of their names:
// capePCA, conv, local (site 1 alone), pooled DP and non-private pooled,
// each scored by its captured energy q_CE on the pooled data. noiseSeed
// gives the seed of method m's noise at point p, repetition rep.
func pcaMethods(K int, noiseSeed func(p point, rep, m int) uint64) []methodFunc {
	return []methodFunc{
		func(sites []cape.SiteInput, p point, rep int) (float64, error) {
			res, _, err := cape.CapePCA(context.Background(), K, withBudget(sites, p.eps, p.del), "", cape.RunOptions{Seeded: true, Seed: noiseSeed(p, rep, 1)})
			if err != nil {
				return 0, err
			}
			return cape.CapturedEnergy(res.V, pooled(sites)), nil
		},
		func(sites []cape.SiteInput, p point, rep int) (float64, error) {
			res, err := cape.ConvPCA(K, withBudget(sites, p.eps, p.del), "", false, rand.New(perturb.StreamSource(noiseSeed(p, rep, 2), 0)))
			if err != nil {
				return 0, err
			}
			return cape.CapturedEnergy(res.V, pooled(sites)), nil
		},
		func(sites []cape.SiteInput, p point, rep int) (float64, error) {
			res, err := cape.LocalPCA(K, withBudget(sites, p.eps, p.del)[0], "", rand.New(perturb.StreamSource(noiseSeed(p, rep, 3), 0)))
			if err != nil {
				return 0, err
			}
			return cape.CapturedEnergy(res.V, pooled(sites)), nil
		},
		func(sites []cape.SiteInput, p point, rep int) (float64, error) {
			res, err := cape.LocalPCA(K, pooledSite(sites, p.eps, p.del), "", rand.New(perturb.StreamSource(noiseSeed(p, rep, 4), 0)))
			if err != nil {
				return 0, err
			}
			return cape.CapturedEnergy(res.V, pooled(sites)), nil
		},
		func(sites []cape.SiteInput, p point, rep int) (float64, error) {
			res, err := cape.NonPrivatePCA(K, sites)
			if err != nil {
				return 0, err
			}
			return cape.CapturedEnergy(res.V, pooled(sites)), nil
		},
	}
}

// pooled is the second moment of every site's rows together.
func pooled(sites []cape.SiteInput) *mat.SymDense {
	rows := make([]*mat.Dense, len(sites))
	for i, s := range sites {
		rows[i] = s.Data.Rows
	}
	return cape.SecondMoment(rows...)
}

// pcaRealTable is the capePCA-versus-epsilon table on cfg.Real, split at
// random into S equal sites per repetition, at K = min(10, D).
func pcaRealTable(cfg Config, names []string, epsGrid []float64, S int, del0 float64, reps int, noiseSeed func(p point, rep, m int) uint64) (Table, error) {
	n, d := cfg.Real.Dims()
	K := min(10, d)
	realFn := func(p point, rep int) ([]cape.SiteInput, error) {
		perm := rand.New(perturb.StreamSource(cfg.Seed, uint64(3_000_000+rep))).Perm(n)
		sites := make([]cape.SiteInput, S)
		per := n / S
		for s := range sites {
			x := mat.NewDense(per, d, nil)
			for i := 0; i < per; i++ {
				x.SetRow(i, cfg.Real.RawRowView(perm[s*per+i]))
			}
			sites[s] = cape.SiteInput{Data: &cape.SiteData{Rows: x}}
		}
		return sites, nil
	}
	var pr []point
	for _, e := range epsGrid {
		pr = append(pr, point{x: e, S: S, N: n / S, eps: e, del: del0})
	}
	t := Table{Name: "pca_real_vs_epsilon", Title: fmt.Sprintf("capePCA q_CE vs epsilon (%s: D=%d, K=%d, S=%d, N_s=%d, delta=%g)", cfg.RealName, d, K, S, n/S, del0), XLabel: "epsilon", YLabel: "q_CE", LogX: true}
	err := runTable(&t, names, pr, reps, realFn, pcaMethods(K, noiseSeed), func() {})
	return t, err
}

// AGN reproduces Imtiaz and Sarwate 2018b Fig. 3 (Gaussian mixture, sigma^2 =
// 0.05, S = 5, delta = 0.01, uniform weights, means of norm 1): e_comp of
// capeAGN, conv, local and non-private pooled versus epsilon and N_s, for
// D = 10, K = 5 and D = 50, K = 10 (Quick: the first only, smaller grids).
// Each site's budget is split equally between M2 and M3 (the seed's
// choice). Data are divided by their largest row norm (otd.SyntheticMoG)
// and e_comp is measured against the equally scaled true means.
func AGN(cfg Config) ([]Table, error) {
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
		ar := &agnRun{D: su.D, K: su.K, seed: cfg.Seed}
		dataFn := func(p point, rep int) ([]cape.SiteInput, error) {
			syn, scale, err := otd.SyntheticMoG(su.D, su.K, p.S*p.N, sigma2, 1, perturb.StreamSource(cfg.Seed, uint64(2_000_000+su.D*1_000_000+p.N*100+rep)))
			if err != nil {
				return nil, err
			}
			ar.truth, ar.s2 = syn.A, sigma2/(scale*scale)
			X := syn.Input.Rows
			sites := make([]cape.SiteInput, p.S)
			for s := range sites {
				sites[s] = cape.SiteInput{Data: &cape.SiteData{Rows: mat.DenseCopyOf(X.Slice(s*p.N, (s+1)*p.N, 0, su.D))}}
			}
			return sites, nil
		}
		methods := ar.methods()
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

// agnRun is one (D, K) set-up of AGN. Its data function sets the true
// means and the scaled noise variance of the current repetition, which
// the methods read.
type agnRun struct {
	D, K  int
	seed  uint64
	truth *mat.Dense
	s2    float64
}

func (ar *agnRun) job() cape.Job {
	return cape.Job{Kind: cape.JobAGN, D: ar.D, K: ar.K, Model: cape.ModelMOG, Sigma2: ar.s2}
}

// seedOf is the seed of method m's noise at point p, repetition rep.
func (ar *agnRun) seedOf(p point, rep, m int) uint64 {
	return ar.seed ^ uint64(rep)*0x9e3779b97f4a7c15 ^ math.Float64bits(p.x) ^ uint64(m)<<56 ^ uint64(ar.D)<<48
}

// methods are the AGN methods, in the order of their names: capeAGN,
// conv, local (site 1 alone), pooled DP and non-private pooled, each
// scored by e_comp against the (equally scaled) true means.
func (ar *agnRun) methods() []methodFunc {
	return []methodFunc{
		func(sites []cape.SiteInput, p point, rep int) (float64, error) {
			res, _, err := cape.CapeAGN(context.Background(), ar.job(), withBudget(sites, p.eps, p.del), cape.RunOptions{Seeded: true, Seed: ar.seedOf(p, rep, 1)}, otd.TPMOptions{}, perturb.StreamSource(ar.seedOf(p, rep, 1), 9))
			if err != nil {
				return 0, err
			}
			return otd.ECompRaw(ar.truth, res.A), nil
		},
		func(sites []cape.SiteInput, p point, rep int) (float64, error) {
			res, err := cape.ConvAGN(ar.job(), withBudget(sites, p.eps, p.del), rand.New(perturb.StreamSource(ar.seedOf(p, rep, 2), 0)), otd.TPMOptions{}, perturb.StreamSource(ar.seedOf(p, rep, 2), 9))
			if err != nil {
				return 0, err
			}
			return otd.ECompRaw(ar.truth, res.A), nil
		},
		func(sites []cape.SiteInput, p point, rep int) (float64, error) {
			res, err := cape.LocalAGN(ar.job(), withBudget(sites, p.eps, p.del)[0], rand.New(perturb.StreamSource(ar.seedOf(p, rep, 3), 0)), otd.TPMOptions{}, perturb.StreamSource(ar.seedOf(p, rep, 3), 9))
			if err != nil {
				return 0, err
			}
			return otd.ECompRaw(ar.truth, res.A), nil
		},
		func(sites []cape.SiteInput, p point, rep int) (float64, error) {
			res, err := cape.LocalAGN(ar.job(), pooledSite(sites, p.eps, p.del), rand.New(perturb.StreamSource(ar.seedOf(p, rep, 5), 0)), otd.TPMOptions{}, perturb.StreamSource(ar.seedOf(p, rep, 5), 9))
			if err != nil {
				return 0, err
			}
			return otd.ECompRaw(ar.truth, res.A), nil
		},
		func(sites []cape.SiteInput, p point, rep int) (float64, error) {
			res, err := cape.NonPrivateAGN(ar.job(), sites, otd.TPMOptions{}, perturb.StreamSource(ar.seedOf(p, rep, 4), 9))
			if err != nil {
				return 0, err
			}
			return otd.ECompRaw(ar.truth, res.A), nil
		},
	}
}

// pooledSite stacks every site's rows into one site: the pooled-data
// private baseline (the accuracy CAPE aims to match, Lemma 1).
func pooledSite(sites []cape.SiteInput, eps, del float64) cape.SiteInput {
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
	return cape.SiteInput{Data: &cape.SiteData{Rows: x}, Epsilon: eps, Delta: del}
}

// RatingRows reads a ratings CSV (header, then user,item,rating,...)
// into a users x D matrix over the D most-rated items, each rating divided
// by 5 sqrt(D) (ratings are at most 5: a public bound) so every row has
// norm <= 1.
func RatingRows(path string, d int) (*mat.Dense, error) {
	if d < 2 {
		return nil, fmt.Errorf("capeexp: %d item columns, want at least 2", d)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cr := csv.NewReader(f)
	cr.FieldsPerRecord = -1
	type rating struct {
		u, i string
		r    float64
	}
	var all []rating
	count := map[string]int{}
	for line := 1; ; line++ {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(rec) < 3 {
			return nil, fmt.Errorf("%s: line %d: %d fields, want user,item,rating", path, line, len(rec))
		}
		r, err := strconv.ParseFloat(rec[2], 64)
		if err != nil {
			if line == 1 {
				continue // header
			}
			return nil, fmt.Errorf("%s: line %d: rating %q: %v", path, line, rec[2], err)
		}
		if !(r >= 0 && r <= 5) {
			return nil, fmt.Errorf("%s: line %d: rating %v outside [0, 5]", path, line, r)
		}
		all = append(all, rating{rec[0], rec[1], r})
		count[rec[1]]++
	}
	items := make([]string, 0, len(count))
	for it := range count {
		items = append(items, it)
	}
	sort.Slice(items, func(a, b int) bool {
		if count[items[a]] != count[items[b]] {
			return count[items[a]] > count[items[b]]
		}
		return items[a] < items[b]
	})
	if len(items) < d {
		return nil, fmt.Errorf("%s: only %d items, %d columns asked for", path, len(items), d)
	}
	col := map[string]int{}
	for j, it := range items[:d] {
		col[it] = j
	}
	row := map[string]int{}
	for _, r := range all {
		if _, ok := row[r.u]; !ok {
			row[r.u] = len(row)
		}
	}
	x := mat.NewDense(len(row), d, nil)
	scale := 5 * math.Sqrt(float64(d))
	for _, r := range all {
		if j, ok := col[r.i]; ok {
			x.Set(row[r.u], j, r.r/scale)
		}
	}
	return x, nil
}
