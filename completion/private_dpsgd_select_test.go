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
	train, _ := plantedConvergenceLog(t)
	o := &PrivateOptions{Epsilon: 3, Delta: 1e-5, RatingMin: plantedLo, RatingMax: plantedHi}
	m0, m1 := selectTestModels(t, train, o)
	held := dpsgdHeldOut(train)
	base, users, err := selectStat(train, held, m0, m1, o)
	if err != nil {
		t.Fatal(err)
	}
	if users < train.Dims[0]/2 {
		t.Fatalf("only %d of %d users scored", users, train.Dims[0])
	}
	bound := DPSGDSelectSensitivity(o.ratingRange())
	if want := 2 * dpsgdSelectD(o); bound != want {
		t.Fatalf("sensitivity %v, want 2D = %v", bound, want)
	}
	all := make([]int, train.NNZ())
	for x := range all {
		all[x] = x
	}
	r := rand.New(rand.NewPCG(9, 10))
	worst := 0.0
	for k := 0; k < 150; k++ {
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
			nh = dpsgdHeldOut(nb)
		} else {
			nb = train.Subset(all)
			nb.Val[e] = []float64{-50, 50, plantedLo, plantedHi}[k%4]
			nh = held
		}
		got, _, err := selectStat(nb, nh, m0, m1, o)
		if err != nil {
			t.Fatal(err)
		}
		worst = math.Max(worst, math.Abs(got-base))
	}
	t.Logf("largest move %.4g, bound 2D = %.4g", worst, bound)
	if worst > bound*(1+1e-9) {
		t.Errorf("a neighbouring log moved the statistic by %.4g > 2D = %.4g", worst, bound)
	}
	if worst < bound/10 {
		t.Errorf("largest move %.4g: the neighbours did not exercise the statistic (bound %.4g)", worst, bound)
	}
}

// TestDPSGDSelectNoise checks the selection's released noise: sd sigma 2D
// over repeated draws (the statistic computed here from the data).
func TestDPSGDSelectNoise(t *testing.T) {
	train, _, err := data.Synth(data.SynthOptions{Users: 150, Items: 40, Ratings: 3000, Rank: 3, Bias: true, Mean: 3.5, Noise: 0.5}, rand.NewPCG(5, 6))
	if err != nil {
		t.Fatal(err)
	}
	const sigma = 6.0
	o0 := PrivateOptions{Epsilon: 3, Delta: 1e-5, RatingMin: plantedLo, RatingMax: plantedHi}
	m0, m1 := selectTestModels(t, train, &o0)
	held := dpsgdHeldOut(train)
	stat, _, err := selectStat(train, held, m0, m1, &o0)
	if err != nil {
		t.Fatal(err)
	}
	var noise []float64
	for seed := range uint64(600) {
		o := o0
		o.Noise = perturb.SeededNoise(seed)
		m0 := cloneModel(m0)
		var got float64
		o.probe = &releaseProbe{seen: func(what string, noisy, _ []float64) {
			if what == dpsgdSelectWhat {
				got = noisy[0]
			}
		}}
		p := &GradientPerturbation{o: o, mb: &minibatchPlan{noiseMult: sigma, held: held}, report: &perturb.Report{}}
		if err := p.selectFreeColumns(m0, train); err != nil {
			t.Fatal(err)
		}
		noise = append(noise, got-stat)
		if p.mb.selected != (got < 0) {
			t.Fatalf("seed %d: noisy sum %v, free columns taken %v", seed, got, p.mb.selected)
		}
		if p.mb.selected && !slices.Equal(m0.Factors[1], m1.Factors[1]) {
			t.Fatalf("seed %d: free columns chosen but not written", seed)
		}
	}
	want := sigma * DPSGDSelectSensitivity(plantedHi-plantedLo)
	var ss float64
	for _, x := range noise {
		ss += x * x
	}
	sd := math.Sqrt(ss / float64(len(noise)))
	t.Logf("noise sd %.4g, want %.4g", sd, want)
	// 600 draws: the sample sd is within 10% with overwhelming probability.
	if math.Abs(sd/want-1) > 0.1 {
		t.Errorf("noise sd %.4g, want %.4g", sd, want)
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
	run := func(rank int, q float64, noSelect bool) (*GradientPerturbation, *decomposition.Model) {
		t.Helper()
		o := &PrivateOptions{Epsilon: 3, Delta: 1e-5, RatingMin: plantedLo, RatingMax: plantedHi, Noise: perturb.SeededNoise(2), SampleRate: q}
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
			if want := DPSGDSelectSensitivity(plantedHi - plantedLo); r.Sensitivity != want || math.Abs(r.Scale-p.mb.noiseMult*want) > 1e-9*r.Scale {
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
	if !slices.ContainsFunc(rep.Notes, func(n string) bool { return strings.HasPrefix(n, "billboard item side: chosen") }) {
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
