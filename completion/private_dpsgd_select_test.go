package completion

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/perturb"
)

// selectTestModels returns a billboard model of rank 6 for train (random
// item rows, biases and mean, user terms zero) and its copy with the free
// columns (the selection's two candidates).
func selectTestModels(t *testing.T, train *data.Store, o *PrivateOptions) (m0, m1 *decomposition.Model) {
	t.Helper()
	m0, err := decomposition.NewModel(decomposition.CP, train.Dims, []int{6}, true)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(7, 8))
	for i := range m0.Factors[1] {
		m0.Factors[1][i] = r.NormFloat64() * 0.5
	}
	for i := range m0.Bias[1] {
		m0.Bias[1][i] = r.NormFloat64() * 0.4
	}
	clear(m0.Factors[0])
	m0.Mean = 3.4
	m0.SetClamp(o.RatingMin, o.RatingMax)
	counts := make([]int, train.Dims[1])
	for _, i := range train.Idx[1] {
		counts[i]++
	}
	return m0, withFreeColumns(m0, o, counts)
}

// TestDPSGDSelectSensitivity checks the selection's statistic on
// neighbouring logs (one rating's value changed, far outside the range
// too, and one rating removed: the zero-out neighbour) against its l2
// sensitivity 2D, with the candidates fixed (they are the released
// steps' and public counts' functions).
func TestDPSGDSelectSensitivity(t *testing.T) {
	train, _, err := data.Synth(data.SynthOptions{Users: 400, Items: 60, Ratings: 8000, Rank: 3, Bias: true, Mean: 3.5, Noise: 0.5, Skew: 0.3}, rand.NewPCG(3, 4))
	if err != nil {
		t.Fatal(err)
	}
	o := &PrivateOptions{Epsilon: 3, Delta: 1e-5, RatingMin: plantedLo, RatingMax: plantedHi}
	m0, m1 := selectTestModels(t, train, o)
	// The own-rows candidate: m0 with random user rows and biases.
	own := cloneModel(m0)
	r0 := rand.New(rand.NewPCG(11, 12))
	for i := range own.Factors[0] {
		own.Factors[0][i] = r0.NormFloat64() * 0.5
	}
	for i := range own.Bias[0] {
		own.Bias[0][i] = r0.NormFloat64() * 0.3
	}
	held := dpsgdHeldOut(train, DPSGDSelectHoldout)
	for _, c := range []struct {
		name   string
		models []*decomposition.Model
		own    bool
	}{{"billboard (J = 2)", []*decomposition.Model{m0, m1}, false}, {"own rows (J = 3)", []*decomposition.Model{own, m0, m1}, true}} {
		t.Run(c.name, func(t *testing.T) { checkSelectNeighbours(t, train, held, c.models, c.own, o) })
	}
}

func checkSelectNeighbours(t *testing.T, train *data.Store, held []bool, models []*decomposition.Model, own bool, o *PrivateOptions) {
	base, users, err := selectStat(train, held, models, own, o)
	if err != nil {
		t.Fatal(err)
	}
	if users < train.Dims[0]/2 {
		t.Fatalf("only %d of %d users scored", users, train.Dims[0])
	}
	J := len(models)
	bound := DPSGDSelectSensitivity(o.ratingRange(), J)
	// A value moved to the range's other end, or far outside, can take one
	// user's clipped differences from -D to D: the bound is attained.
	if want := 2 * dpsgdSelectD(o) * math.Sqrt(float64(J-1)); math.Abs(bound-want) > 1e-12 {
		t.Fatalf("sensitivity %v, want 2D sqrt(J - 1) = %v", bound, want)
	}
	all := make([]int, train.NNZ())
	for x := range all {
		all[x] = x
	}
	r := rand.New(rand.NewPCG(9, 10))
	worst := 0.0
	for k := 0; k < 90; k++ {
		e := r.IntN(train.NNZ())
		var nb *data.Store
		var nh []bool
		if k%3 == 2 {
			// Zero-out: the rating removed; the others keep their marks
			// (a hash of their positions).
			keep := make([]int, 0, train.NNZ()-1)
			for x := range train.NNZ() {
				if x != e {
					keep = append(keep, x)
				}
			}
			nb = train.Subset(keep)
			nh = dpsgdHeldOut(nb, DPSGDSelectHoldout)
		} else {
			nb = train.Subset(all)
			nb.Val[e] = []float64{-50, 50, plantedLo, plantedHi}[k%4]
			nh = held
		}
		got, _, err := selectStat(nb, nh, models, own, o)
		if err != nil {
			t.Fatal(err)
		}
		d2 := 0.0
		for j := range got {
			d2 += (got[j] - base[j]) * (got[j] - base[j])
		}
		worst = math.Max(worst, math.Sqrt(d2))
	}
	t.Logf("largest move %.4g, bound 2D = %.4g", worst, bound)
	if worst > bound*(1+1e-9) {
		t.Errorf("a neighbouring log moved the statistic by %.4g > 2D = %.4g", worst, bound)
	}
	if worst < bound/5 {
		t.Errorf("largest move %.4g: the neighbours did not exercise the statistic (bound %.4g)", worst, bound)
	}
}

// TestDPSGDSelectNoise checks the selection's released noise: sd sigma
// 2D sqrt(J - 1) on each coordinate over repeated draws (the statistic
// computed here from the data), for the billboard regime (J = 2) and the
// own rows' (J = 3), and that the smallest noisy sum's candidate is taken.
func TestDPSGDSelectNoise(t *testing.T) {
	if raceEnabled {
		t.Skip("tens of seconds under the race detector; .ci/run runs it without (the accuracy-target step)")
	}
	train, _, err := data.Synth(data.SynthOptions{Users: 150, Items: 40, Ratings: 3000, Rank: 3, Bias: true, Mean: 3.5, Noise: 0.5}, rand.NewPCG(5, 6))
	if err != nil {
		t.Fatal(err)
	}
	const sigma = 6.0
	o0 := PrivateOptions{Epsilon: 3, Delta: 1e-5, RatingMin: plantedLo, RatingMax: plantedHi}
	m0, _ := selectTestModels(t, train, &o0)
	r := rand.New(rand.NewPCG(13, 14))
	for i := range m0.Factors[0] {
		m0.Factors[0][i] = r.NormFloat64() * 0.5
	}
	held := dpsgdHeldOut(train, DPSGDSelectHoldout)
	for _, own := range []bool{false, true} {
		mb0 := &minibatchPlan{noiseMult: sigma, held: held, selectOwn: own}
		cands := mb0.candidates()
		J := len(cands)
		// The statistic, computed as selectModel builds its candidates.
		ref := cloneModel(m0)
		if !own {
			clear(ref.Factors[0])
			clear(ref.Bias[0])
		}
		counts := make([]int, train.Dims[1])
		for _, i := range train.Idx[1] {
			counts[i]++
		}
		models := []*decomposition.Model{billboardCopy(ref), withFreeColumns(ref, &o0, counts)}
		if own {
			models = append([]*decomposition.Model{ref}, models...)
		}
		stat, _, err := selectStat(train, held, models, own, &o0)
		if err != nil {
			t.Fatal(err)
		}
		var ss float64
		n := 0
		for seed := range uint64(400) {
			o := o0
			o.Noise = perturb.SeededNoise(seed)
			var got []float64
			o.probe = &releaseProbe{seen: func(what string, noisy, _ []float64) {
				if what == dpsgdSelectWhat {
					got = slices.Clone(noisy)
				}
			}}
			mb := *mb0
			p := &GradientPerturbation{o: o, mb: &mb, report: &perturb.Report{Covered: []string{"A (users)", "B (items)", "biases", "global mean"}}}
			mc := cloneModel(ref)
			if err := p.selectModel(mc, train); err != nil {
				t.Fatal(err)
			}
			// The chosen model: own rows untouched; a billboard choice has
			// zero user terms, no user coverage and, for the free
			// columns, the free columns' item rows.
			zero := !slices.ContainsFunc(mc.Factors[0], func(x float64) bool { return x != 0 })
			switch mb.chosen {
			case candOwn:
				if !slices.Equal(mc.Factors[0], ref.Factors[0]) || p.report.Billboard {
					t.Fatalf("seed %d: own rows chosen, but the model or report changed", seed)
				}
			case candTrained, candFree:
				// (At sigma >= 3 PerturbOutput made the billboard report
				// before the selection.)
				if !zero || (own && (slices.Contains(p.report.Covered, "A (users)") || !p.report.Billboard)) {
					t.Fatalf("seed %d: %v chosen: user rows zero %v, covered %q, billboard %v", seed, mb.chosen, zero, p.report.Covered, p.report.Billboard)
				}
				want := models[len(models)-2]
				if mb.chosen == candFree {
					want = models[len(models)-1]
				}
				if !slices.Equal(mc.Factors[1], want.Factors[1]) {
					t.Fatalf("seed %d: %v chosen, item rows differ from the candidate's", seed, mb.chosen)
				}
			}
			if seed == 0 {
				// The same seed draws the same sums.
				var again []float64
				o2 := o
				o2.probe = &releaseProbe{seen: func(what string, noisy, _ []float64) { again = slices.Clone(noisy) }}
				mb2 := *mb0
				p2 := &GradientPerturbation{o: o2, mb: &mb2, report: &perturb.Report{}}
				if err := p2.selectModel(cloneModel(ref), train); err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(again, got) {
					t.Fatalf("seed 0 twice: %v and %v", got, again)
				}
			}
			if len(got) != J-1 {
				t.Fatalf("J = %d: %d noisy sums", J, len(got))
			}
			best, bv := 0, 0.0
			for j, v := range got {
				ss += (v - stat[j]) * (v - stat[j])
				n++
				if v < bv {
					best, bv = j+1, v
				}
			}
			if mb.chosen != cands[best] {
				t.Fatalf("J = %d, seed %d: noisy sums %v, chose %v", J, seed, got, mb.chosen)
			}
		}
		want := sigma * DPSGDSelectSensitivity(plantedHi-plantedLo, J)
		sd := math.Sqrt(ss / float64(n))
		t.Logf("J = %d: noise sd %.4g, want %.4g", J, sd, want)
		if math.Abs(sd/want-1) > 0.1 {
			t.Errorf("J = %d: noise sd %.4g, want %.4g", J, sd, want)
		}
	}
}

// TestDPSGDSelectPlan checks where the selection runs and its accounting:
// a CP model of rank 6 at sigma in the billboard range runs it as one
// more full-batch step (a larger sigma than without it, the total within
// the budget, its release in the report); rank 3, a sampling rate below 1
// and the sweeps' switch do not.
func TestDPSGDSelectPlan(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode")
	}
	train, test := plantedConvergenceLog(t)
	var runAt func(eps float64, rank int, q float64, noSelect bool) (*GradientPerturbation, *decomposition.Model)
	run := func(rank int, q float64, noSelect bool) (*GradientPerturbation, *decomposition.Model) {
		return runAt(3, rank, q, noSelect)
	}
	runAt = func(eps float64, rank int, q float64, noSelect bool) (*GradientPerturbation, *decomposition.Model) {
		t.Helper()
		o := &PrivateOptions{Epsilon: eps, Delta: 1e-5, RatingMin: plantedLo, RatingMax: plantedHi, Noise: perturb.SeededNoise(2), SampleRate: q}
		if noSelect {
			o.dpsgdRules = &dpsgdRules{noSelect: true}
		}
		p, err := NewGradientPerturbation(o)
		if err != nil {
			t.Fatal(err)
		}
		m, err := decomposition.NewModel(decomposition.CP, train.Dims, []int{rank}, true)
		if err != nil {
			t.Fatal(err)
		}
		m.ClampLo, m.ClampHi = plantedLo, plantedHi
		if _, err := Train(train, nil, m, &Settings{Threads: 2, Solver: SolverSGD, Epochs: 10, Patience: -1, Privacy: p}, rand.NewPCG(1, 1), nil); err != nil {
			t.Fatal(err)
		}
		return p, m
	}
	p, m := run(6, 0, false)
	rep := p.Report()
	if p.mb.held == nil || !rep.Billboard {
		t.Fatalf("rank 6, sigma %.4g: no selection (billboard %v)", p.mb.noiseMult, rep.Billboard)
	}
	var found bool
	for _, r := range rep.Releases {
		if r.What == dpsgdSelectWhat {
			found = true
			if want := DPSGDSelectSensitivity(plantedHi-plantedLo, 2); r.Sensitivity != want || math.Abs(r.Scale-p.mb.noiseMult*want) > 1e-9*r.Scale {
				t.Errorf("selection release: sensitivity %v scale %v, want %v and %v", r.Sensitivity, r.Scale, want, p.mb.noiseMult*want)
			}
		}
	}
	if !found {
		t.Errorf("no selection release in the report: %+v", rep.Releases)
	}
	if rep.Epsilon > 3+1e-9 || rep.ValueChangeEpsilon <= rep.Epsilon {
		t.Errorf("epsilon %v (value change %v) for a budget of 3", rep.Epsilon, rep.ValueChangeEpsilon)
	}
	// The value-change epsilon has the selection in it, once (the direct
	// releases of GroupTwoEpsilon, with the warm start).
	var single, direct, directNoSel perturb.Accountant
	for _, r := range rep.Releases {
		var err error
		switch {
		case strings.HasPrefix(r.What, "sum of the clipped per-rating gradients"):
			err = single.Add(r, r.Count)
		case r.What == dpsgdSelectWhat:
			err = direct.Add(r, r.Count)
		default:
			if err = direct.Add(r, r.Count); err == nil {
				err = directNoSel.Add(r, r.Count)
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	withSel, _, ok1 := perturb.GroupTwoEpsilon(&single, &direct, rep.Delta)
	noSel, _, ok2 := perturb.GroupTwoEpsilon(&single, &directNoSel, rep.Delta)
	if !ok1 || !ok2 || math.Abs(withSel-rep.ValueChangeEpsilon) > 1e-9*withSel || noSel >= withSel {
		t.Errorf("value-change epsilon %v; recomputed with the selection %v, without %v", rep.ValueChangeEpsilon, withSel, noSel)
	}
	if !slices.ContainsFunc(rep.Notes, func(n string) bool {
		return strings.HasPrefix(n, "released model chosen on scored ratings among 2 candidates")
	}) {
		t.Errorf("no note on the selection's outcome: %q", rep.Notes)
	}
	if p.mb.selectUsers < train.Dims[0]/2 {
		t.Errorf("only %d users scored", p.mb.selectUsers)
	}
	if _, err := FoldInRMSE(m, train, test, BillboardFoldFor(rep)); err != nil {
		t.Fatal(err)
	}
	off, _ := run(6, 0, true)
	if off.mb.held != nil || off.mb.noiseMult >= p.mb.noiseMult {
		t.Errorf("switched off: selection %v, sigma %.6g against %.6g with it", off.mb.held != nil, off.mb.noiseMult, p.mb.noiseMult)
	}
	// Below DPSGDBillboardNoise: three candidates, the own rows first.
	p, m = runAt(100, 6, 0, false)
	rep = p.Report()
	if p.mb.held == nil || !p.mb.selectOwn || p.mb.noiseMult >= DPSGDBillboardNoise {
		t.Fatalf("epsilon 100: selection %v, own rows %v, sigma %.4g", p.mb.held != nil, p.mb.selectOwn, p.mb.noiseMult)
	}
	found = false
	for _, r := range rep.Releases {
		if r.What == dpsgdSelectWhat {
			found = true
			if want := DPSGDSelectSensitivity(plantedHi-plantedLo, 3); math.Abs(r.Sensitivity-want) > 1e-12 {
				t.Errorf("epsilon 100: selection sensitivity %v, want %v", r.Sensitivity, want)
			}
		}
	}
	if !found {
		t.Errorf("epsilon 100: no selection release")
	}
	if rep.Billboard != (p.mb.chosen != candOwn) {
		t.Errorf("epsilon 100: chose %v, billboard %v", p.mb.chosen, rep.Billboard)
	}
	if _, err := FoldInRMSE(m, train, test, BillboardFoldFor(rep)); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		rank int
		q    float64
	}{{3, 0}, {6, 0.5}} {
		p, _ := run(c.rank, c.q, false)
		if p.mb.held != nil {
			t.Errorf("rank %d, rate %g: selection ran", c.rank, c.q)
		}
		for _, r := range p.Report().Releases {
			if r.What == dpsgdSelectWhat {
				t.Errorf("rank %d, rate %g: selection release in the report", c.rank, c.q)
			}
		}
	}
}

// TestDPSGDSelectOwnRowsOutOfSample checks that below DPSGDBillboardNoise
// a scored rating's clipped gradient reaches its item row and not its
// user row (so that the own rows are scored out of sample), and that an
// unscored rating's reaches both.
func TestDPSGDSelectOwnRowsOutOfSample(t *testing.T) {
	train, _ := plantedConvergenceLog(t)
	p, err := NewGradientPerturbation(&PrivateOptions{Epsilon: 100, Delta: 1e-5, RatingMin: plantedLo, RatingMax: plantedHi, Noise: perturb.SeededNoise(1)})
	if err != nil {
		t.Fatal(err)
	}
	for _, order := range []int{2, 3} {
		st := train
		if order == 3 {
			st = train.Subset(allEntries(train))
			st.Idx = append(st.Idx, make([]int32, st.NNZ()))
			st.Dims = append(st.Dims, 1)
		}
		p, _ := NewGradientPerturbation(&p.o)
		m, err := decomposition.NewModel(decomposition.CP, st.Dims, []int{6}, true)
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(1, 2))
		for _, f := range m.Factors {
			for i := range f {
				f[i] = 0.3 + 0.2*r.Float64()
			}
		}
		s := (&Settings{Threads: 1, Solver: SolverSGD, Epochs: 60, Patience: -1, Privacy: p}).resolvedForModel(m)
		s.hasBias, s.modelKind, s.modelRank = true, decomposition.CP, 6
		if err := p.Plan(st, &s); err != nil {
			t.Fatal(err)
		}
		if !p.mb.selectOwn {
			t.Fatalf("order %d: sigma %.4g: no own-rows selection", order, p.mb.noiseMult)
		}
		d := newDPSGDState(m, p.mb, &s)
		R := m.Ranks[0]
		var scored, plain int = -1, -1
		for e := range st.NNZ() {
			u, i := st.Idx[0][e], st.Idx[1][e]
			if d.off[0][u] < 0 || d.off[1][i] < 0 {
				continue
			}
			if p.mb.held[e] && scored < 0 {
				scored = e
			}
			if !p.mb.held[e] && plain < 0 {
				plain = e
			}
		}
		if scored < 0 || plain < 0 {
			t.Fatal("no scored or unscored rating with trained rows")
		}
		for _, e := range []int{scored, plain} {
			clear(d.buf)
			d.addBatch(st, st.Val, []int{e})
			uo, io := d.off[0][st.Idx[0][e]], d.off[1][st.Idx[1][e]]
			user, item := d.buf[uo:int(uo)+R+1], d.buf[io:int(io)+R+1]
			nz := func(v []float64) bool { return slices.ContainsFunc(v, func(x float64) bool { return x != 0 }) }
			if !nz(item) {
				t.Errorf("order %d, rating %d (scored %v): no item gradient", order, e, p.mb.held[e])
			}
			if nz(user) == p.mb.held[e] {
				t.Errorf("order %d, rating %d (scored %v): user gradient %v", order, e, p.mb.held[e], user)
			}
		}
	}
}

// allEntries returns 0..nnz-1.
func allEntries(st *data.Store) []int {
	all := make([]int, st.NNZ())
	for i := range all {
		all[i] = i
	}
	return all
}
