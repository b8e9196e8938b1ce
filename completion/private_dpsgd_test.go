package completion

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/internal/stattest"
	"github.com/dprec/dprec/perturb"
)

// planDPSGD plans minibatch DP-SGD on st for a model with biases.
func planDPSGD(t *testing.T, st *data.Store, o PrivateOptions, epochs int) *GradientPerturbation {
	t.Helper()
	o.Protect = ProtectAll
	p, err := NewGradientPerturbation(&o)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Plan(st, &Settings{Epochs: epochs, hasBias: true}); err != nil {
		t.Fatal(err)
	}
	if p.mb == nil {
		t.Fatal("minibatch DP-SGD is not the default of --protect all")
	}
	return p
}

// isDPSGDStep reports whether r is the release of minibatch DP-SGD's steps.
func isDPSGDStep(r perturb.Release) bool {
	return strings.HasPrefix(r.What, "sum of the clipped per-rating gradients")
}

// summedClipped returns the sum of the clipped per-rating gradients of
// every rating of st except skip (-1: none), at the model's parameters.
func summedClipped(d *dpsgdState, st *data.Store, skip int) []float64 {
	clear(d.buf)
	for e := range st.Val {
		if e != skip {
			d.addClipped(st, st.Val, e)
		}
	}
	return append([]float64(nil), d.buf...)
}

func l2dist(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += (a[i] - b[i]) * (a[i] - b[i])
	}
	return math.Sqrt(s)
}

// TestDPSGDSensitivityNeighbours checks the sensitivity of a step on
// neighbouring logs at the same (released) parameters: zeroing out one
// rating moves the summed clipped gradient by at most C (the zero-out
// relation of the report), changing one rating's value by at most 2C (two
// zero-out steps), and every per-rating clipped vector has norm <= C. The
// model is scaled up so most raw gradients are far above C.
func TestDPSGDSensitivityNeighbours(t *testing.T) {
	t.Parallel()
	for _, kind := range []decomposition.Kind{decomposition.CP, decomposition.Tucker} {
		dims := []int{15, 12, 3}
		st := privStore(dims, 300, 31)
		o := baseOpts()
		o.Epsilon = 50 // little noise, so almost every row is trained
		p := planDPSGD(t, st, o, 4)
		m := privModel(t, kind, dims, 3, true, 4, 1.5)
		d := newDPSGDState(m, p.mb, &Settings{})
		C := p.mb.clip
		for e := range st.Val {
			clear(d.buf)
			d.addClipped(st, st.Val, e)
			if n := l2dist(d.buf, make([]float64, len(d.buf))); n > C*(1+1e-12) {
				t.Fatalf("%s: rating %d: clipped norm %v > C = %v", kind, e, n, C)
			}
		}
		full := summedClipped(d, st, -1)
		worstZero, worstChange := 0.0, 0.0
		for e := range st.Val {
			worstZero = math.Max(worstZero, l2dist(full, summedClipped(d, st, e)))
			for _, v := range []float64{o.RatingMin, o.RatingMax} {
				st2 := *st
				st2.Val = append([]float64(nil), st.Val...)
				st2.Val[e] = v
				worstChange = math.Max(worstChange, l2dist(full, summedClipped(d, &st2, -1)))
			}
		}
		if worstZero > C*(1+1e-9) || worstChange > 2*C*(1+1e-9) {
			t.Errorf("%s: zero-out moves the sum by %v (C = %v), a value change by %v (2C = %v)", kind, worstZero, C, worstChange, 2*C)
		}
		if worstZero < 0.9*C {
			t.Errorf("%s: largest zero-out change %v well below C = %v: the test has no power", kind, worstZero, C)
		}
	}
}

// TestDPSGDNoiseStatistics: on ratings the model predicts exactly (zero
// gradients) the released noisy sum of a step is pure noise; its
// coordinates have mean 0 and variance (sigma C)^2 within 4.41717
// standard errors (false rejection about 1e-5 each), and the batch size
// averages q N.
func TestDPSGDNoiseStatistics(t *testing.T) {
	t.Parallel()
	dims := []int{60, 50, 2}
	st := privStore(dims, 2000, 32)
	o := baseOpts()
	p := planDPSGD(t, st, o, 3)
	m := privModel(t, decomposition.CP, dims, 2, true, 4, 0)
	for _, f := range m.Factors {
		clear(f)
	}
	for _, b := range m.Bias {
		clear(b)
	}
	m.Mean = 0
	vals := make([]float64, len(st.Val)) // every residual is 0
	d := newDPSGDState(m, p.mb, &Settings{})
	if d.trained() == 0 {
		t.Fatal("no coordinate trained")
	}
	r := perturb.SeededNoise(5).FastSource(streamDPSGD)
	var sum, sq float64
	var n, batch int
	steps := 200
	for s := 0; s < steps; s++ {
		_, k := d.noisySum(st, vals, r)
		batch += k
		for _, v := range d.buf {
			sum += v
			sq += v * v
			n++
		}
	}
	sd := p.mb.noiseMult * p.mb.clip
	mean := sum / float64(n)
	vr := sq/float64(n) - mean*mean
	if math.Abs(mean) > stattest.Z5*sd/math.Sqrt(float64(n)) {
		t.Errorf("noise mean %v (sd %v, n %d)", mean, sd, n)
	}
	if math.Abs(vr-sd*sd) > stattest.Z5*math.Sqrt2*sd*sd/math.Sqrt(float64(n)) {
		t.Errorf("noise variance %v, want (sigma C)^2 = %v", vr, sd*sd)
	}
	// Batch size: Binomial(N, q) per step, summed over steps.
	want := p.mb.q * float64(len(vals)*steps)
	if se := math.Sqrt(want * (1 - p.mb.q)); math.Abs(float64(batch)-want) > stattest.Z5*se {
		t.Errorf("sampled %d ratings over %d steps, want %v +- %v", batch, steps, want, stattest.Z5*se)
	}
}

// TestDPSGDPlan checks the plan and report: the composed epsilon fits the
// budget and is tight (a 0.1% smaller noise multiplier does not fit), the
// report recomputes (Report.Check), records the sampling rate and steps,
// covers every parameter, and a fixed noise multiplier that is too small
// is refused; the user unit and non-RDP accounting are refused.
func TestDPSGDPlan(t *testing.T) {
	t.Parallel()
	dims := []int{30, 25, 4}
	st := privStore(dims, 900, 33)
	o := baseOpts()
	p := planDPSGD(t, st, o, 5)
	rep := p.Report()
	if rep.Epsilon > o.Epsilon*(1+1e-9) || rep.Delta > o.Delta {
		t.Errorf("report (%v, %v) over budget", rep.Epsilon, rep.Delta)
	}
	if bad := rep.Check(); bad != nil {
		t.Errorf("report does not recompute: %v", bad)
	}
	var step *perturb.Release
	for i := range rep.Releases {
		if isDPSGDStep(rep.Releases[i]) {
			step = &rep.Releases[i]
		}
	}
	if step == nil || p.mb.q != DefaultDPSGDRate || step.SampleRate != 0 || step.Count != p.mb.steps || p.mb.steps != 5 || step.Sensitivity != p.mb.clip {
		t.Fatalf("step release %+v (q %v, steps %d)", step, p.mb.q, p.mb.steps)
	}
	o2 := o
	o2.SampleRate = 0.25
	pq := planDPSGD(t, st, o2, 5)
	for _, r := range pq.Report().Releases {
		if isDPSGDStep(r) && (r.SampleRate != 0.25 || r.Count != 20) {
			t.Errorf("q = 0.25: step release %+v", r)
		}
	}
	var acc perturb.Accountant
	for _, r := range rep.Releases {
		if isDPSGDStep(r) {
			r.Scale *= 1 - 1e-3
		}
		if err := acc.Add(r, r.Count); err != nil {
			t.Fatal(err)
		}
	}
	if e, _, _ := acc.Total(o.Delta); !(e > o.Epsilon) {
		t.Errorf("sigma not minimal: 0.1%% less noise still gives epsilon %v <= %v", e, o.Epsilon)
	}
	o.Protect = ProtectAll
	p2, _ := NewGradientPerturbation(&o) // a plug-in plans one run only
	m := privModel(t, decomposition.CP, dims, 2, true, 1, 0.1)
	res, err := Train(st, nil, m, &Settings{Epochs: 5, Threads: 1, Privacy: p2}, rand.NewPCG(1, 1), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Privacy.FullyCovered() || len(res.History) != 5 {
		t.Errorf("covered %v, not %v, %d epochs", res.Privacy.Covered, res.Privacy.NotCovered, len(res.History))
	}
	for _, mod := range []func(*PrivateOptions){
		func(o *PrivateOptions) { o.Sigma = 0.4 },
		func(o *PrivateOptions) { o.Unit, o.MaxRatingsPerUser = UnitUser, 1000 },
		func(o *PrivateOptions) { o.Accounting = perturb.Advanced },
		func(o *PrivateOptions) { o.Delta = 0 },
	} {
		o := baseOpts()
		o.Protect = ProtectAll
		mod(&o)
		p, err := NewGradientPerturbation(&o)
		if err == nil {
			err = p.Plan(st, &Settings{Epochs: 5, hasBias: true})
		}
		if err == nil {
			t.Errorf("%+v: planned", o)
		}
	}
	o.Sigma = 0.4
	p, _ = NewGradientPerturbation(&o)
	if err := p.Plan(st, &Settings{Epochs: 5, hasBias: true}); !errors.Is(err, perturb.ErrBudget) {
		t.Errorf("under-noised: %v, want ErrBudget", err)
	}
}

// TestDPSGDReproducibleAndFrozen: seeded noise gives bit-identical models
// and another seed a different one; secure noise is labelled secure; rows
// the rule freezes keep their initial values exactly.
func TestDPSGDReproducibleAndFrozen(t *testing.T) {
	t.Parallel()
	dims := []int{40, 30, 3}
	st := privStore(dims, 700, 34)
	run := func(noise perturb.Noise) (*decomposition.Model, *decomposition.Model, *GradientPerturbation, *Result) {
		o := baseOpts()
		o.Protect, o.Noise, o.Epsilon = ProtectAll, noise, 0.3
		o.dpsgdRules = &dpsgdRules{fallbackNoise: -1} // the steps, not the fallback
		p, err := NewGradientPerturbation(&o)
		if err != nil {
			t.Fatal(err)
		}
		m := privModel(t, decomposition.CP, dims, 2, true, 1, 0.1)
		init := privModel(t, decomposition.CP, dims, 2, true, 1, 0.1)
		res, err := Train(st, nil, m, &Settings{Epochs: 4, Threads: 1, Privacy: p, InitScale: 0.1}, rand.NewPCG(1, 1), nil)
		if err != nil {
			t.Fatal(err)
		}
		// Train's own initialisation, reproduced for the frozen-row check.
		initModel(init, st.Val, &res.Settings, rand.New(rand.NewPCG(1, 1)))
		return m, init, p, res
	}
	a, init, p, res := run(perturb.SeededNoise(1))
	b, _, _, _ := run(perturb.SeededNoise(1))
	c, _, _, _ := run(perturb.SeededNoise(2))
	if !modelsIdentical(a, b) {
		t.Error("same noise seed gave different models")
	}
	if modelsIdentical(a, c) {
		t.Error("different noise seeds gave identical models")
	}
	d := newDPSGDState(a, p.mb, &res.Settings)
	frozen, moved := 0, 0
	if !res.Privacy.Billboard {
		t.Fatalf("epsilon 0.3 (noise multiplier %g): not a billboard model", p.mb.noiseMult)
	}
	for mo, offs := range d.off {
		for i, off := range offs {
			got, was := a.Row(mo, i), init.Row(mo, i)
			if mo == 0 {
				// Billboard (DPSGDBillboardNoise): user rows withheld.
				for _, x := range got {
					if x != 0 {
						t.Fatalf("user row %d released: %v", i, got)
					}
				}
				continue
			}
			same := true
			for k := range got {
				same = same && got[k] == was[k]
			}
			if off < 0 {
				frozen++
				if !same {
					t.Fatalf("frozen row %d of mode %d changed", i, mo)
				}
			} else if !same {
				moved++
			}
		}
	}
	if frozen == 0 || moved == 0 {
		t.Errorf("%d frozen and %d moved rows: the test has no power", frozen, moved)
	}
	_, _, _, sres := run(perturb.SecureNoise())
	if sres.Privacy.Randomness != perturb.LabelSecure {
		t.Errorf("secure run labelled %q", sres.Privacy.Randomness)
	}
}

// TestInputFallback: when the public noise scale says nothing can be
// learnt from the noisy values, input perturbation releases the bias-only
// model instead (mean and item biases from noisy sums, zero user rows, the
// free columns as item rows, time rows of ones), and
// the report composes to the budget; with little noise it does not.
func TestInputFallback(t *testing.T) {
	t.Parallel()
	dims := []int{30, 25, 3}
	st := privStore(dims, 900, 35)
	for _, tc := range []struct {
		eps  float64
		want bool
	}{{0.1, true}, {100, false}} {
		o := baseOpts()
		o.Epsilon = tc.eps
		p, err := NewInputPerturbation(&o)
		if err != nil {
			t.Fatal(err)
		}
		m := privModel(t, decomposition.CP, dims, 2, true, 1, 0.1)
		res, err := Train(st, nil, m, &Settings{Epochs: 2, Threads: 1, Privacy: p}, rand.NewPCG(1, 1), nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.fallback != nil; got != tc.want {
			t.Fatalf("epsilon %v: fallback %v, want %v", tc.eps, got, tc.want)
		}
		// The fallback releases no user terms: readers must fold users
		// in, as for the bias mode (models.File.Billboard reads this).
		if res.Privacy.Billboard != tc.want {
			t.Errorf("epsilon %v: report Billboard = %v, want %v", tc.eps, res.Privacy.Billboard, tc.want)
		}
		if bad := res.Privacy.Check(); bad != nil || res.Privacy.Epsilon > tc.eps*(1+1e-9) || !res.Privacy.FullyCovered() {
			t.Errorf("epsilon %v: report %+v (%v)", tc.eps, res.Privacy, bad)
		}
		if !tc.want {
			continue
		}
		// User rows zero, item rows the free columns, time rows ones.
		for k, v := range m.Factors[0] {
			if v != 0 {
				t.Fatalf("fallback released user row entry %d = %v", k, v)
			}
		}
		checkFreeColumns(t, m, &o, res.Privacy.ItemCounts, 0, false)
		for k, v := range m.Factors[2] {
			if v != 1 {
				t.Fatalf("fallback time row entry %d = %v, want 1", k, v)
			}
		}
		if m.Mean < o.RatingMin || m.Mean > o.RatingMax {
			t.Errorf("fallback mean %v", m.Mean)
		}
	}
}

// TestDPSGDFastPathMatchesGeneric: the fused order-3 CP path adds the same
// clipped vectors as the generic path (decomposition's DataGrad).
func TestDPSGDFastPathMatchesGeneric(t *testing.T) {
	t.Parallel()
	dims := []int{15, 12, 3}
	st := privStore(dims, 300, 36)
	o := baseOpts()
	o.Epsilon = 3
	p := planDPSGD(t, st, o, 4)
	m := privModel(t, decomposition.CP, dims, 3, true, 4, 1.2)
	d := newDPSGDState(m, p.mb, &Settings{})
	if d.trained() == 0 {
		t.Fatal("no coordinate trained: the test has no power")
	}
	fast := summedClipped(d, st, -1)
	clear(d.buf)
	for e := range st.Val {
		for mo := range d.idx {
			d.idx[mo] = st.Idx[mo][e]
		}
		m.DataGrad(d.idx, st.Val[e], d.work)
		s := d.preClip(d.work)
		c := math.Min(1, p.mb.clip/math.Sqrt(s))
		for mo, i := range d.idx {
			if o := d.off[mo][i]; o >= 0 {
				for r, v := range d.work.Factor[mo] {
					d.buf[int(o)+r] += c * v
				}
				d.buf[int(o)+len(d.work.Factor[mo])] += c * d.work.Bias[mo]
			}
		}
	}
	if dist := l2dist(fast, d.buf); dist > 1e-9 {
		t.Errorf("fast and generic sums differ by %v", dist)
	}
}

// TestDPSGDNoBias: minibatch DP-SGD on a model without biases (no warm
// start, no mean) trains, stays finite and fits the budget.
func TestDPSGDNoBias(t *testing.T) {
	t.Parallel()
	dims := []int{20, 15, 3}
	st := privStore(dims, 400, 37)
	for _, kind := range []decomposition.Kind{decomposition.CP, decomposition.Tucker} {
		o := baseOpts()
		o.Protect, o.Epsilon = ProtectAll, 20
		p, err := NewGradientPerturbation(&o)
		if err != nil {
			t.Fatal(err)
		}
		m := privModel(t, kind, dims, 2, false, 1, 0.1)
		res, err := Train(st, nil, m, &Settings{Epochs: 3, Threads: 1, Privacy: p}, rand.NewPCG(1, 1), nil)
		if err != nil {
			t.Fatal(err)
		}
		if !modelFinite(m) || res.Privacy.Epsilon > o.Epsilon*(1+1e-9) || res.Privacy.Check() != nil {
			t.Errorf("%s: finite %v, report %+v", kind, modelFinite(m), res.Privacy)
		}
	}
}

// TestDPSGDValueChangeReported: the minibatch report's headline is for
// zero-out, and it states the value-change guarantee (group size 2) as
// numbers in its Relation and notes; the figure is GroupTwoEpsilon of the
// report's own releases (the sampled steps as the one-step part, the warm
// start once), above the zero-out epsilon and at most about twice it plus
// the RDP slack (2.05 at epsilon 1 on the default plan).
func TestDPSGDValueChangeReported(t *testing.T) {
	t.Parallel()
	st := privStore([]int{30, 25, 4}, 900, 33)
	for _, eps := range []float64{0.5, 1, 4} {
		o := baseOpts()
		o.Epsilon, o.RatingMin, o.RatingMax = eps, 0.5, 5
		o.dpsgdRules = &dpsgdRules{fallbackNoise: -1} // the steps, at every epsilon
		p := planDPSGD(t, st, o, 60)
		rep := p.Report()
		var single, direct perturb.Accountant
		for _, r := range rep.Releases {
			a := &direct
			if isDPSGDStep(r) {
				a = &single
			}
			if err := a.Add(r, r.Count); err != nil {
				t.Fatal(err)
			}
		}
		want, _, ok := perturb.GroupTwoEpsilon(&single, &direct, rep.Delta)
		if !ok || math.Abs(want-p.mb.vcEps) > 1e-12*want {
			t.Fatalf("epsilon %v: value-change epsilon %v, recomputed %v", eps, p.mb.vcEps, want)
		}
		if !(want > rep.Epsilon) || want > 2.3*rep.Epsilon {
			t.Errorf("epsilon %v: value-change epsilon %v against zero-out %v", eps, want, rep.Epsilon)
		}
		num := fmt.Sprintf("epsilon %.4g at delta %.3g", want, rep.Delta)
		found := false
		for _, n := range rep.Notes {
			found = found || (strings.HasPrefix(n, "value change of one rating") && strings.Contains(n, num))
		}
		if !found || !strings.Contains(rep.Relation, num) || !strings.HasPrefix(rep.Relation, "zero-out") {
			t.Errorf("epsilon %v: the report does not state the value change (%s): relation %q, notes %q", eps, num, rep.Relation, rep.Notes)
		}
	}
	o := baseOpts()
	o.RatingMin, o.RatingMax = 0.5, 5
	o.dpsgdRules = &dpsgdRules{fallbackNoise: -1}
	if v := planDPSGD(t, st, o, 60).mb.vcEps; math.Abs(v-2.05) > 0.01 {
		t.Errorf("the steps' plan at epsilon 1 (60 epochs): value change %v, the docs say 2.05", v)
	}
	// The default plan at epsilon 1 is the bias-only fallback
	// (DPSGDFallbackNoise), whose relation is the value change itself.
	o.dpsgdRules = nil
	p := planDPSGD(t, st, o, 60)
	if p.mb.fallback == nil || p.report.RelationKind != perturb.RelationValueChange || p.report.Epsilon > 1+1e-9 {
		t.Errorf("default plan at epsilon 1 (sigma %v): fallback %v, relation %q, epsilon %v", p.mb.noiseMult, p.mb.fallback != nil, p.report.RelationKind, p.report.Epsilon)
	}
}

// TestDPSGDThreads: with p workers a seeded run is reproducible (same seed,
// same p: the same model bit for bit), and runs with different p differ
// only by the rounding of the summed clipped gradients (every parameter
// within 1e-6 of the one-worker run), for CP (fused path) and Tucker
// (generic path).
func TestDPSGDThreads(t *testing.T) {
	t.Parallel()
	dims := []int{40, 30, 3}
	st := privStore(dims, 1500, 37)
	for _, kind := range []decomposition.Kind{decomposition.CP, decomposition.Tucker} {
		run := func(threads int) *decomposition.Model {
			o := baseOpts()
			o.Protect = ProtectAll
			p, err := NewGradientPerturbation(&o)
			if err != nil {
				t.Fatal(err)
			}
			m := privModel(t, kind, dims, 3, true, 1, 0.1)
			if _, err := Train(st, nil, m, &Settings{Epochs: 3, Threads: threads, Privacy: p, InitScale: 0.1}, rand.NewPCG(1, 1), nil); err != nil {
				t.Fatal(err)
			}
			return m
		}
		one := run(1)
		moved := 0
		for _, mo := range []int{0, 2} { // the warm start sets the item biases
			for _, v := range one.Bias[mo] {
				if v != 0 {
					moved++
				}
			}
		}
		if moved == 0 {
			t.Fatalf("%s: no bias trained: the test has no power", kind)
		}
		for _, p := range []int{2, 3} {
			a, b := run(p), run(p)
			if !modelsIdentical(a, b) {
				t.Errorf("%s, %d workers: two seeded runs differ", kind, p)
			}
			worst := 0.0
			for mo := range a.Factors {
				for i, v := range a.Factors[mo] {
					worst = math.Max(worst, math.Abs(v-one.Factors[mo][i]))
				}
			}
			for i, v := range a.Core {
				worst = math.Max(worst, math.Abs(v-one.Core[i]))
			}
			if worst > 1e-6 {
				t.Errorf("%s, %d workers: parameters differ from the one-worker run by up to %v", kind, p, worst)
			}
		}
	}
}

// TestPoissonBatch: the bit-sliced sampler keeps exactly the indices whose
// m-bit number u (assembled lane by lane from m words, the first word the
// most significant bit) is below k, where floor(q 2^16) = k 2^(16-m) with
// k odd (the rule it implements, written index by index here), appends to
// what dst holds, and keeps a fraction near q.
func TestPoissonBatch(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		n int
		q float64
	}{{0, 0.25}, {1, 0.25}, {7, 0.5}, {10001, 0.25}, {10001, 1.0 / 16}, {9999, 0.9}, {9999, 0.3}, {64, 0.5}, {130, 0.75}, {5000, 0.01}, {100, 1}} {
		rA := rand.New(rand.NewPCG(3, 4))
		got := poissonBatch(tc.n, tc.q, rA, []int{-1})
		var want []int
		r := rand.New(rand.NewPCG(3, 4))
		switch {
		case tc.q >= 1:
			for e := 0; e < tc.n; e++ {
				want = append(want, e)
			}
		case tc.q >= 1.0/16:
			th := uint64(tc.q * 0x1p16)
			m := 16
			for th%2 == 0 {
				th /= 2
				m--
			}
			for base := 0; base < tc.n; base += 64 {
				ws := make([]uint64, m)
				for b := range ws {
					ws[b] = r.Uint64()
				}
				for l := 0; l < 64 && base+l < tc.n; l++ {
					var u uint64
					for _, w := range ws {
						u = u<<1 | w>>l&1
					}
					if u < th {
						want = append(want, base+l)
					}
				}
			}
		default:
			want = poissonBatch(tc.n, tc.q, r, nil) // geometric gaps: checked by the fraction only
		}
		// Both consumed the same number of words (the step's noise starts
		// right after the batch in the stream).
		if a, b := rA.Uint64(), r.Uint64(); a != b {
			t.Errorf("n %d q %v: the sampler and the reference consumed different numbers of words", tc.n, tc.q)
		}
		if got[0] != -1 || !slices.Equal(got[1:], want) {
			t.Fatalf("n %d q %v: batch %v, want %v", tc.n, tc.q, got[1:min(len(got), 10)], want[:min(len(want), 9)])
		}
		if tc.n >= 5000 {
			k := float64(len(want))
			if sd := math.Sqrt(float64(tc.n) * tc.q * (1 - tc.q)); math.Abs(k-float64(tc.n)*tc.q) > stattest.Z5*sd {
				t.Errorf("n %d q %v: kept %v, expected %v", tc.n, tc.q, k, float64(tc.n)*tc.q)
			}
		}
	}
}

// TestDPSGDClipBoost: the default clip is DPSGDClipFactor sigma_r
// sqrt(order) while the noise multiplier is at least DPSGDClipNoise, grows
// as sqrt(DPSGDClipNoise/sigma) below that, without bound (beyond the old
// cap of 3 at epsilon 200), and is what the step release's sensitivity
// records; a clip the caller sets is kept.
func TestDPSGDClipBoost(t *testing.T) {
	t.Parallel()
	st := privStore([]int{30, 25, 4}, 900, 33)
	base := DPSGDClipFactor * 4.5 / 4 * math.Sqrt(3)
	for _, eps := range []float64{0.5, 4, 10, 40, 200} {
		o := baseOpts()
		o.Epsilon, o.RatingMin, o.RatingMax = eps, 0.5, 5
		o.dpsgdRules = &dpsgdRules{fallbackNoise: -1} // the steps, at every epsilon
		p := planDPSGD(t, st, o, 20)
		boost := math.Max(1, math.Sqrt(DPSGDClipNoise/p.mb.noiseMult))
		if want := base * boost; math.Abs(p.mb.clip-want) > 1e-12*want {
			t.Errorf("epsilon %v (sigma %v): clip %v, want %v", eps, p.mb.noiseMult, p.mb.clip, want)
		}
		var step *perturb.Release
		for i, r := range p.Report().Releases {
			if isDPSGDStep(r) {
				step = &p.Report().Releases[i]
			}
		}
		if step == nil || step.Sensitivity != p.mb.clip {
			t.Errorf("epsilon %v: step release %+v, clip %v", eps, step, p.mb.clip)
		}
		switch {
		case eps == 0.5 && boost != 1, eps == 200 && boost <= 3:
			t.Errorf("epsilon %v: boost %v (sigma %v)", eps, boost, p.mb.noiseMult)
		}
		o.Clip = 0.7
		if c := planDPSGD(t, st, o, 20).mb.clip; c != 0.7 {
			t.Errorf("epsilon %v: a set clip became %v", eps, c)
		}
	}
}

// TestDPSGDCurvature: the diagonal Gauss-Newton curvature the steps divide
// by is, for every trained factor (and Tucker core) coordinate, the sum
// over every rating of its row of the squared derivative of the
// prediction, computed from the public positions and the released state;
// at q = 1 the gradient pass accumulates it (fused) and it must equal the
// separate pass, for order-3 CP (fast path), order-2 CP and Tucker
// (generic paths), with one and two workers.
func TestDPSGDCurvature(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		kind decomposition.Kind
		dims []int
	}{{decomposition.CP, []int{20, 15, 3}}, {decomposition.CP, []int{40, 30}}, {decomposition.Tucker, []int{20, 15, 3}}} {
		st := privStore(tc.dims, 400, 38)
		o := baseOpts()
		o.Epsilon = 50
		p := planDPSGD(t, st, o, 6)
		if p.mb.q != 1 {
			t.Fatalf("default q %v, the test assumes 1", p.mb.q)
		}
		for _, threads := range []int{1, 2} {
			m := privModel(t, tc.kind, tc.dims, 3, true, 4, 0.7)
			d := newDPSGDState(m, p.mb, &Settings{Threads: threads})
			if !d.fuse || d.trained() == 0 {
				t.Fatalf("%s %v: fused %v, %d trained coordinates", tc.kind, tc.dims, d.fuse, d.trained())
			}
			d.batch = poissonBatch(st.NNZ(), 1, nil, d.batch[:0])
			d.sumClipped(st, st.Val)
			fused := append([]float64(nil), d.curv...)
			d.sumCurvature(st)
			// Direct: every rating, every trained row, from Partial.
			want := make([]float64, len(d.curv))
			w := m.NewWork()
			idx := make([]int32, st.Order())
			for e := range st.Val {
				for mo := range idx {
					idx[mo] = st.Idx[mo][e]
				}
				m.Partial(idx, w)
				for mo, i := range idx {
					if off := d.off[mo][i]; off >= 0 {
						for r, v := range w.Factor[mo] {
							want[int(off)+r] += v * v
						}
					}
				}
				if d.coreOff >= 0 {
					for r, v := range w.Core {
						want[d.coreOff+r] += v * v
					}
				}
			}
			if dist := l2dist(fused, d.curv); dist > 1e-9*(1+l2dist(want, make([]float64, len(want)))) {
				t.Errorf("%s %v, %d workers: fused and separate curvature differ by %v", tc.kind, tc.dims, threads, dist)
			}
			if dist := l2dist(want, d.curv); dist > 1e-9*(1+l2dist(want, make([]float64, len(want)))) {
				t.Errorf("%s %v, %d workers: curvature differs from the direct sum by %v", tc.kind, tc.dims, threads, dist)
			}
		}
	}
}
