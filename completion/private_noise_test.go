package completion

// NOISE OF EVERY RELEASED STATISTIC (issue 24). For every private mode and
// every statistic it releases, TestReleasedNoiseVariance draws the release
// over seeded runs (or many independent draws of one seeded stream),
// computes the statistic without noise from the data itself, and compares
// the mean of (noisy - true)^2 with the variance the report plans for that
// release: 2 b^2 for Laplace, sigma^2 for Gaussian, and d (d + 1) S^2 for
// the squared norm of l2-norm noise of radius scale S in d dimensions
// (its radius is Gamma(d, S)). A test that watched only one statistic let
// a bug through that released the user-unit item sums without noise.
// Its companion for sensitivities: every release has a neighbour test
// (TestBiasSensitivityNeighbours, TestUserSensitivityNeighbours,
// TestALSSensitivityAdversarial, TestALSUserSensitivityNeighbours,
// TestInputSensitivityEmpirical, TestInputResidualSensitivity,
// TestGradientSensitivityEmpirical, TestDPSGDSensitivityNeighbours,
// TestOutputSensitivityEmpirical, TestSelectItemsOnlyRatedCandidates).

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/internal/stattest"
	"github.com/dprec/dprec/perturb"
)

// noiseTally accumulates squared noise per release (keyed by its What).
type noiseTally struct {
	sq  map[string]float64
	n   map[string]int
	dim map[string]int // l2-norm releases: the dimension of one vector
}

func newNoiseTally() *noiseTally {
	return &noiseTally{sq: map[string]float64{}, n: map[string]int{}, dim: map[string]int{}}
}

// add records every coordinate of noisy - truth (coordinate-wise
// independent noise: Laplace, Gaussian).
func (nt *noiseTally) add(t *testing.T, what string, noisy, truth []float64) {
	t.Helper()
	if len(noisy) != len(truth) {
		t.Fatalf("%s: %d noisy values, %d true ones", what, len(noisy), len(truth))
	}
	for i := range noisy {
		d := noisy[i] - truth[i]
		nt.sq[what] += d * d
		nt.n[what]++
	}
}

// addVector records ||noisy - truth||^2 as one sample (l2-norm noise,
// whose coordinates share the radius).
func (nt *noiseTally) addVector(t *testing.T, what string, noisy, truth []float64) {
	t.Helper()
	if len(noisy) != len(truth) {
		t.Fatalf("%s: %d noisy values, %d true ones", what, len(noisy), len(truth))
	}
	var s float64
	for i := range noisy {
		d := noisy[i] - truth[i]
		s += d * d
	}
	nt.sq[what] += s
	nt.n[what]++
	nt.dim[what] = len(noisy)
}

// check compares the tally of every release of rep whose What starts with
// one of whats (all of them must be seen) with the variance its mechanism
// and scale plan, within 4.41717 standard errors (false rejection about
// 1e-5 each), and fails when the sample is too small for a variance off
// by a factor of 2 to fail (the tolerance must stay below 0.25 relative).
func (nt *noiseTally) check(t *testing.T, name string, rep *perturb.Report, whats ...string) {
	t.Helper()
	for _, w := range whats {
		var rel *perturb.Release
		for i := range rep.Releases {
			if strings.HasPrefix(rep.Releases[i].What, w) {
				rel = &rep.Releases[i]
				break
			}
		}
		if rel == nil {
			t.Errorf("%s: the report has no release %q", name, w)
			continue
		}
		n := nt.n[rel.What]
		if n == 0 {
			t.Errorf("%s: release %q never observed", name, rel.What)
			continue
		}
		var want, relVar float64
		switch rel.Mechanism {
		case perturb.MechLaplace:
			want, relVar = 2*rel.Scale*rel.Scale, 5 // E L^4 = 24 b^4 = 6 (2 b^2)^2
		case perturb.MechGaussian:
			want, relVar = rel.Scale*rel.Scale, 2
		case perturb.MechL2:
			d := float64(nt.dim[rel.What])
			want = d * (d + 1) * rel.Scale * rel.Scale // E r^2, r ~ Gamma(d, S)
			relVar = (d+2)*(d+3)/(d*(d+1)) - 1
		default:
			t.Fatalf("%s: release %q has mechanism %q", name, rel.What, rel.Mechanism)
		}
		tol := stattest.Z5 * math.Sqrt(relVar/float64(n))
		if tol > 0.25 {
			t.Fatalf("%s: %q: %d samples give a tolerance of %.2f relative: too few to fail a variance off by 2", name, rel.What, n, tol)
		}
		got := nt.sq[rel.What] / float64(n)
		t.Logf("%s: %q: noise variance / planned = %.4f (%d samples, tolerance %.3f)", name, rel.What, got/want, n, tol)
		if math.Abs(got/want-1) > tol {
			t.Errorf("%s: %q: noise variance %.6g over %d samples, the report plans %.6g (%s, scale %.6g; ratio %.3f, tolerance %.3f)", name, rel.What, got, n, want, rel.Mechanism, rel.Scale, got/want, tol)
		}
	}
}

// biasEntryTruth returns the true statistics of the entry-level bias
// releases given the released mean.
func biasEntryTruth(st *data.Store, o *PrivateOptions, mean float64) map[string][]float64 {
	total, _ := biasTotal(st, o)
	return map[string][]float64{
		"sum of the clamped ratings":             {total},
		"per-item sums of the clipped residuals": biasResidualSums(st, o, mean),
	}
}

// biasUserTruth returns the true statistics of the user-unit bias
// releases (names of userBiasReleases) given the released mean.
func biasUserTruth(st *data.Store, o *PrivateOptions, mean float64) map[string][]float64 {
	rels := userBiasReleases(o)
	mid := (o.RatingMin + o.RatingMax) / 2
	var total float64
	for _, v := range st.Val {
		total += clampValue(v, o.RatingMin, o.RatingMax) - mid
	}
	cnt := make([]float64, st.Dims[1])
	for _, i := range st.Idx[1] {
		cnt[i]++
	}
	return map[string][]float64{
		rels[0].what: {float64(usersWithRows(st.Idx[0], st.Dims[0]))},
		rels[1].what: {float64(st.NNZ())},
		rels[2].what: {total},
		rels[3].what: cnt,
		rels[4].what: biasResidualSums(st, o, mean),
	}
}

// probeInto returns a probe that records every noisy release of a run in
// got (copied).
func probeInto(got map[string][][]float64) *releaseProbe {
	return &releaseProbe{seen: func(what string, noisy, _ []float64) {
		got[what] = append(got[what], append([]float64(nil), noisy...))
	}}
}

// tallyBias adds the probed releases of one bias-mode run to nt against
// truth (keyed by a prefix of their What).
func tallyBias(t *testing.T, nt *noiseTally, got map[string][][]float64, truth map[string][]float64) {
	t.Helper()
	for what, vs := range got {
		var tr []float64
		for p, v := range truth {
			if strings.HasPrefix(what, p) {
				tr = v
			}
		}
		if tr == nil {
			t.Fatalf("release %q has no true value in the test", what)
		}
		for _, v := range vs {
			nt.add(t, what, v, tr)
		}
	}
}

// TestReleasedNoiseVariance: see the file comment. Each subtest names the
// mode, the unit and the mechanism; the nested bias releases of als, of
// input's residual release and fallback and of minibatch DP-SGD's warm
// start are checked to be exactly the bias mode's release with the options
// they derive (same noisy values for the same seed), whose noise the bias
// subtests measure.
func TestReleasedNoiseVariance(t *testing.T) {
	t.Parallel()
	entry := privStore([]int{40, 15, 3}, 500, 3)
	t.Run("bias entry laplace and gaussian", func(t *testing.T) {
		t.Parallel()
		for _, mech := range []string{perturb.MechLaplace, perturb.MechGaussian} {
			nt := newNoiseTally()
			var rep *perturb.Report
			for seed := uint64(0); seed < 2000; seed++ {
				o := baseOpts()
				o.Mechanism, o.Noise = mech, perturb.SeededNoise(seed)
				got := map[string][][]float64{}
				o.probe = probeInto(got)
				m := privModel(t, decomposition.CP, entry.Dims, 1, true, 1, 1)
				r, err := TrainPrivateBias(entry, m, &o)
				if err != nil {
					t.Fatal(err)
				}
				rep = r
				tallyBias(t, nt, got, biasEntryTruth(entry, &o, m.Mean))
			}
			nt.check(t, "bias entry "+mech, rep, "sum of the clamped ratings", "per-item sums of the clipped residuals")
		}
	})
	t.Run("bias user gaussian and laplace", func(t *testing.T) {
		t.Parallel()
		for _, mech := range []string{perturb.MechGaussian, perturb.MechLaplace} {
			o := userOpts(4)
			o.Mechanism = mech
			st, err := BoundForUnit(userStore([]int{60, 40}, 500, 2), &o)
			if err != nil {
				t.Fatal(err)
			}
			// The plan is a function of the public options: made once,
			// drawn for every seed (trainBiasUser = plan + draw).
			rels := userBiasReleases(&o)
			acc, err := planUserReleases(&o, rels)
			if err != nil {
				t.Fatal(err)
			}
			nt := newNoiseTally()
			var rep *perturb.Report
			src, err := newStoreUserBiasSource(st, &o)
			if err != nil {
				t.Fatal(err)
			}
			for seed := uint64(0); seed < 2000; seed++ {
				oo := o
				oo.Noise = perturb.SeededNoise(seed)
				got := map[string][][]float64{}
				oo.probe = probeInto(got)
				m := privModel(t, decomposition.CP, []int{1, st.Dims[1]}, 1, true, 1, 1)
				f, err := drawBiasUser(src, m, &oo, rels, acc)
				if err != nil {
					t.Fatal(err)
				}
				rep = f.report(m)
				tallyBias(t, nt, got, biasUserTruth(st, &oo, m.Mean))
			}
			var whats []string
			for _, r := range rels {
				whats = append(whats, r.what)
			}
			nt.check(t, "bias user "+mech, rep, whats...)
		}
	})
	t.Run("als entry and user", func(t *testing.T) {
		t.Parallel()
		uo := userOpts(6)
		ust, err := BoundForUnit(userStore([]int{60, 20}, 500, 4), &uo)
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name   string
			st     *data.Store
			o      PrivateOptions
			m0     int
			vector []string // bias releases measured here (the scalars: by identity)
		}{
			{"als entry", privStore([]int{30, 50, 3}, 600, 9), baseOpts(), 30, []string{"per-item sums"}},
			{"als user", ust, uo, 1, []string{"per-item rating counts", "per-item sums"}},
		} {
			const R = 2
			nt := newNoiseTally()
			var rep *perturb.Report
			by := alsUsers(tc.st)
			for seed := uint64(0); seed < 40; seed++ {
				o := tc.o
				o.Noise = perturb.SeededNoise(seed)
				got := map[string][][]float64{}
				var p alsPrivateParams
				dims := append([]int(nil), tc.st.Dims...)
				dims[0] = tc.m0
				m := privModel(t, decomposition.CP, dims, R, true, 1, 1)
				var steps, rows [][]float64
				o.probe = &releaseProbe{seen: func(what string, noisy, public []float64) {
					if what == alsStatsWhat {
						steps = append(steps, append([]float64(nil), noisy...))
						rows = append(rows, append([]float64(nil), public...))
						return
					}
					got[what] = append(got[what], append([]float64(nil), noisy...))
				}}
				// The learnability rule is off so that this small log runs
				// its item steps at every epsilon (it only zeroes rows and
				// skips steps on public counts); the constants are the
				// run's own.
				// The statistics route (the user unit's; the entry unit
				// takes the residual route by default, checked below).
				r, err := trainPrivateALS(tc.st, m, &o, func(q *alsPrivateParams) { q.gate, q.input = 0, false; p = *q })
				if err != nil {
					t.Fatal(err)
				}
				rep = r
				if len(steps) != p.steps || p.steps != ALSPrivateSteps {
					t.Fatalf("%s: %d item steps observed, want %d", tc.name, len(steps), ALSPrivateSteps)
				}
				ys := alsResiduals(tc.st, m.Mean, m.Bias[1], p, &o)
				byT := by
				if o.Unit == UnitUser {
					// The users held out for the ridge selection are in
					// no step (private_als_ridge.go).
					held := alsHeldOut(tc.st, by)
					byT = make([][]int, len(by))
					for u := range by {
						if !held[u] {
							byT[u] = by[u]
						}
					}
					if len(got[alsRidgeWhat]) != 1 {
						t.Fatalf("%s seed %d: %d ridge selections observed", tc.name, seed, len(got[alsRidgeWhat]))
					}
					delete(got, alsRidgeWhat)
				}
				for s := range steps {
					nt.add(t, alsStatsWhat, steps[s], alsItemStatsY(tc.st, byT, alsTermsOf(byT, p), ys, rows[s], R, p, nil))
				}
				// The bias part is the bias mode's release with the
				// options TrainPrivateALS derives: the same noisy values.
				bo := o
				bo.probe = nil
				bo.Epsilon = p.biasFrac * o.Epsilon
				if o.Unit != UnitUser {
					// After the rating spread's release (its noise:
					// TestALSSpreadNoise).
					bo.Epsilon = p.biasFrac * alsRouteEpsilon(o.Epsilon)
					tallySpread(t, nt, got, tc.st, &o)
				}
				bo.MeanFraction = 0
				if o.Unit != UnitUser {
					bo.Delta, bo.Mechanism = 0, perturb.MechLaplace
				} else {
					bo.Mechanism = perturb.MechGaussian
				}
				bgot := map[string][][]float64{}
				bo.probe = probeInto(bgot)
				bm := privModel(t, decomposition.CP, dims, 1, true, 1, 1)
				if _, err := fitPrivateBias(tc.st, bm, &bo); err != nil {
					t.Fatal(err)
				}
				if !probedEqual(got, bgot) || bm.Mean != m.Mean {
					t.Fatalf("%s seed %d: the bias releases differ from the bias mode's with the derived options (%d, %d releases; means %v, %v)", tc.name, seed, len(got), len(bgot), m.Mean, bm.Mean)
				}
				truth := biasEntryTruth(tc.st, &o, m.Mean)
				if o.Unit == UnitUser {
					truth = biasUserTruth(tc.st, &o, m.Mean)
				}
				vec := map[string][][]float64{}
				for what, v := range got {
					for _, p := range tc.vector {
						if strings.HasPrefix(what, p) {
							vec[what] = v
						}
					}
				}
				tallyBias(t, nt, vec, truth)
			}
			nt.check(t, tc.name, rep, append([]string{alsStatsWhat}, tc.vector...)...)
		}
	})
	t.Run("als entry residual route", func(t *testing.T) {
		t.Parallel()
		st := privStore([]int{30, 50, 3}, 600, 9)
		nt := newNoiseTally()
		var rep *perturb.Report
		for seed := uint64(0); seed < 40; seed++ {
			o := baseOpts()
			o.Epsilon = 20 // the route runs (no fallback) on this small log
			o.Noise = perturb.SeededNoise(seed)
			var noisy, warm []float64
			got := map[string][][]float64{}
			o.probe = &releaseProbe{seen: func(what string, v, public []float64) {
				if what == alsInputWhat {
					noisy, warm = append([]float64(nil), v...), append([]float64(nil), public...)
					return
				}
				got[what] = append(got[what], append([]float64(nil), v...))
			}}
			var p alsPrivateParams
			m := privModel(t, decomposition.CP, st.Dims, 2, true, 1, 1)
			r, err := trainPrivateALS(st, m, &o, func(q *alsPrivateParams) { p = *q })
			if err != nil {
				t.Fatal(err)
			}
			rep = r
			if noisy == nil {
				t.Fatalf("seed %d: no residual release observed (notes %q)", seed, r.Notes)
			}
			// The truth: the clipped residuals from the released mean and
			// item biases (warm[0], warm[1:]).
			wm := privModel(t, decomposition.CP, st.Dims, 1, true, 1, 1)
			wm.Mean = warm[0]
			copy(wm.Bias[1], warm[1:])
			truth := append([]float64(nil), st.Val...)
			clippedResiduals(truth, st, &o, wm, p.inputClip)
			nt.add(t, alsInputWhat, noisy, truth)
			// The bias releases are the bias mode's at f epsilon (of what
			// the spread release leaves; its noise: TestALSSpreadNoise).
			tallySpread(t, nt, got, st, &o)
			wo := o
			wo.Epsilon, wo.Mechanism, wo.MeanFraction, wo.Accounting = p.inputBiasFrac*alsRouteEpsilon(o.Epsilon), "", 0, perturb.Basic
			bgot := map[string][][]float64{}
			wo.probe = probeInto(bgot)
			bm := privModel(t, decomposition.CP, st.Dims, 1, true, 1, 1)
			if _, err := TrainPrivateBias(st, bm, &wo); err != nil {
				t.Fatal(err)
			}
			if !probedEqual(got, bgot) || bm.Mean != wm.Mean {
				t.Fatalf("seed %d: the bias releases differ from the bias mode's at f epsilon", seed)
			}
		}
		nt.check(t, "als entry residual route", rep, alsInputWhat)
	})
	t.Run("input", func(t *testing.T) {
		t.Parallel()
		// 5000 ratings, and epsilons where the noise of a value stays
		// below the rating spread: the models with biases do not fall
		// back (private_input_fallback.go).
		st := privStore([]int{100, 60, 5}, 5000, 1)
		for _, tc := range []struct {
			name     string
			mech     string
			bias     bool
			eps      float64
			fallback bool
		}{
			{"laplace", perturb.MechLaplace, false, 1, false},
			{"gaussian", perturb.MechGaussian, false, 1, false},
			{"gaussian with biases", perturb.MechGaussian, true, 30, false},
			{"residual release", perturb.MechLaplace, true, 10, false},
			{"bias-only fallback", perturb.MechLaplace, true, 0.05, true},
		} {
			nt := newNoiseTally()
			var rep *perturb.Report
			fallback := false
			for seed := uint64(0); seed < 3; seed++ {
				o := baseOpts()
				o.Mechanism, o.Epsilon, o.Noise = tc.mech, tc.eps, perturb.SeededNoise(seed)
				got := map[string][][]float64{}
				o.probe = probeInto(got)
				p, err := NewInputPerturbation(&o)
				if err != nil {
					t.Fatal(err)
				}
				if err := p.Plan(st, &Settings{Epochs: 5, hasBias: tc.bias}); err != nil {
					t.Fatal(err)
				}
				rep = p.Report()
				vals := append([]float64(nil), st.Val...)
				if err := p.PerturbInput(vals, st); err != nil {
					t.Fatal(err)
				}
				var warm *decomposition.Model
				switch {
				case p.fallback != nil:
					fallback, warm = true, p.fallback
				case p.res != nil:
					warm = p.res.warm
					truth := append([]float64(nil), st.Val...)
					clippedResiduals(truth, st, &p.o, warm, p.res.clip)
					for e := range truth {
						truth[e] += warm.Mean + warm.Bias[1][st.Idx[1][e]]
					}
					nt.add(t, rep.Releases[len(rep.Releases)-1].What, vals, truth)
				default:
					truth := make([]float64, len(st.Val))
					for e, v := range st.Val {
						truth[e] = clampValue(v, o.RatingMin, o.RatingMax)
					}
					nt.add(t, rep.Releases[0].What, vals, truth)
				}
				if warm != nil {
					// The bias release is the bias mode's (scratchBiasRelease).
					eps := o.Epsilon
					if p.res != nil {
						eps = p.res.biasEps
					}
					wo := o
					wo.Epsilon, wo.Mechanism, wo.MeanFraction, wo.Accounting = eps, "", 0, perturb.Basic
					bgot := map[string][][]float64{}
					wo.probe = probeInto(bgot)
					bm := privModel(t, decomposition.CP, st.Dims, 1, true, 1, 1)
					if _, err := TrainPrivateBias(st, bm, &wo); err != nil {
						t.Fatal(err)
					}
					if !probedEqual(got, bgot) || bm.Mean != warm.Mean {
						t.Fatalf("input %s seed %d: the bias release differs from the bias mode's", tc.name, seed)
					}
				} else if len(got) != 0 {
					t.Fatalf("input %s: unexpected bias releases %v", tc.name, len(got))
				}
			}
			if fallback != tc.fallback {
				t.Fatalf("input %s: fell back %v, want %v", tc.name, fallback, tc.fallback)
			}
			if fallback {
				continue // the bias mode's release, checked above
			}
			nt.check(t, "input "+tc.name, rep, rep.Releases[len(rep.Releases)-1].What)
		}
	})
	t.Run("gradient per-entry all and C", func(t *testing.T) {
		t.Parallel()
		st := privStore([]int{30, 20, 5}, 400, 2)
		m := privModel(t, decomposition.CP, st.Dims, 3, true, 7, 1)
		for _, protect := range []Protect{ProtectAll, ProtectC} {
			o := baseOpts()
			o.Protect, o.DPSGD, o.Noise = protect, DPSGDPerEntry, perturb.SeededNoise(5)
			p, err := NewGradientPerturbation(&o)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Plan(st, &Settings{Epochs: 3, hasBias: true}); err != nil {
				t.Fatal(err)
			}
			rep := p.Report()
			nt := newNoiseTally()
			if protect == ProtectAll {
				// The global mean: one draw per seed of its stream.
				meanWhat := "global mean of the clamped ratings"
				for seed := uint64(0); seed < 2000; seed++ {
					p.meanSet, p.o.Noise = false, perturb.SeededNoise(seed)
					vals := append([]float64(nil), st.Val...)
					if err := p.PerturbInput(vals, st); err != nil {
						t.Fatal(err)
					}
					nt.add(t, meanWhat, []float64{p.muT}, []float64{p.mu})
				}
				nt.check(t, "gradient all", rep, meanWhat)
			}
			// Per-entry gradients: many draws of one worker's stream.
			tr := p.GradientTransform(0)
			r := rand.New(rand.NewPCG(9, 9))
			what := rep.Releases[len(rep.Releases)-1].What
			for k := 0; k < 3000; k++ {
				idx := []int32{int32(r.IntN(st.Dims[0])), int32(r.IntN(st.Dims[1])), int32(r.IntN(st.Dims[2]))}
				x := 1 + 4*r.Float64()
				grad := func() *EntryGrad {
					w := m.NewWork()
					m.DataGrad(idx, x, w)
					return &EntryGrad{Idx: idx, Factor: w.Factor, Core: w.Core, Bias: w.Bias}
				}
				g0, g1 := grad(), grad()
				switch t0 := tr.(type) {
				case *clipNoiseAll:
					truth := append([]float64(nil), t0.preNoise(g0)...)
					t0.Transform(g1)
					var noisy []float64
					for _, f := range g1.Factor {
						noisy = append(noisy, f...)
					}
					noisy = append(append(noisy, g1.Core...), g1.Bias...)
					nt.add(t, what, noisy, truth)
				case *clipNoiseC:
					truth := append([]float64(nil), g0.Factor[t0.mode]...)
					clipVec(truth, o.Clip)
					t0.Transform(g1)
					nt.addVector(t, what, g1.Factor[t0.mode], truth)
				default:
					t.Fatalf("transform %T", tr)
				}
			}
			nt.check(t, "gradient "+string(protect), rep, what)
		}
	})
	t.Run("minibatch DP-SGD steps", func(t *testing.T) {
		t.Parallel()
		dims := []int{60, 50, 2}
		st := privStore(dims, 2000, 32)
		o := baseOpts()
		o.Noise = perturb.SeededNoise(6)
		p := planDPSGD(t, st, o, 6)
		m := privModel(t, decomposition.CP, dims, 2, true, 4, 0.5)
		m.Mean = p.mb.warm.Mean
		vals := make([]float64, len(st.Val))
		for e, v := range st.Val {
			vals[e] = clampValue(v, o.RatingMin, o.RatingMax)
		}
		d := newDPSGDState(m, p.mb, &Settings{})
		src := o.Noise.FastSource(streamDPSGD)
		nt := newNoiseTally()
		what := p.report.Releases[len(p.report.Releases)-1].What
		for s := 0; s < 20; s++ {
			d.noisySum(st, vals, src)
			noisy := append([]float64(nil), d.buf...)
			d.sumClipped(st, vals) // the same batch, without noise
			nt.add(t, what, noisy, d.buf)
		}
		nt.check(t, "minibatch DP-SGD", p.report, what)
		// The warm start is the bias mode's release (scratchBiasRelease).
		got, bgot := map[string][][]float64{}, map[string][][]float64{}
		o.probe = probeInto(got)
		pp := planDPSGD(t, st, o, 6)
		wo := o
		wo.Epsilon, wo.Mechanism, wo.MeanFraction, wo.Accounting = pp.mb.warmEps, "", 0, perturb.Basic
		wo.probe = probeInto(bgot)
		bm := privModel(t, decomposition.CP, dims, 1, true, 1, 1)
		if _, err := TrainPrivateBias(st, bm, &wo); err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || !probedEqual(got, bgot) || bm.Mean != pp.mb.warm.Mean {
			t.Fatal("the warm start differs from the bias mode's release")
		}
	})
	t.Run("output", func(t *testing.T) {
		t.Parallel()
		dims := []int{25, 20, 4}
		st := privStore(dims, 600, 6)
		nt := newNoiseTally()
		var rep *perturb.Report
		for seed := uint64(0); seed < 50; seed++ {
			o := baseOpts()
			o.ProtectMode, o.Noise = 2, perturb.SeededNoise(seed)
			p, err := NewOutputPerturbation(&o)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Plan(st, &Settings{Epochs: 1}); err != nil {
				t.Fatal(err)
			}
			base := privModel(t, decomposition.CP, dims, 3, true, 11, 0.8)
			want := cloneModel(base)
			vals := make([]float64, st.NNZ())
			for e, v := range st.Val {
				vals[e] = clampValue(v, o.RatingMin, o.RatingMax)
			}
			if err := RefitFactor(want, st, vals, 1, p.o.Lambda, p.o.Clip); err != nil {
				t.Fatal(err)
			}
			if err := p.PerturbOutput(base, st); err != nil {
				t.Fatal(err)
			}
			rep = p.Report()
			for i := 0; i < dims[1]; i++ {
				nt.addVector(t, rep.Releases[0].What, base.Row(1, i), want.Row(1, i))
			}
		}
		nt.check(t, "output", rep, rep.Releases[0].What)
	})
	t.Run("item selection", func(t *testing.T) {
		t.Parallel()
		// Only the set is released: the noise is measured through the
		// chance that an item of weight W is kept, 1 - Phi((tau - W)/sigma).
		// Every user rates one item (k = 1, weight 1 each), each of 40 items
		// by W users, W about tau - sigma (kept about 16% of the time; 31%
		// with twice the sigma, 2% with half).
		b := perturb.Budget{Epsilon: 2, Delta: 1e-5}
		g, err := perturb.NewGaussian(1, b.Epsilon, SelectionDeltaShare*b.Delta, perturb.Analytic)
		if err != nil {
			t.Fatal(err)
		}
		sigma := g.Sigma()
		tau := selectionThreshold(sigma, 1, (1-SelectionDeltaShare)*b.Delta)
		w := math.Round(tau - sigma)
		users, items := data.NewIntDict("user"), data.NewIntDict("item")
		st := &data.Store{Idx: make([][]int32, 2), Dicts: []*data.Dict{users, items}}
		const nItems = 40
		for i := 0; i < nItems; i++ {
			for u := 0; u < int(w); u++ {
				st.Idx[0] = append(st.Idx[0], users.InternInt(int64(i*1000+u)))
				st.Idx[1] = append(st.Idx[1], items.InternInt(int64(i)))
				st.Val = append(st.Val, 4)
			}
		}
		st.Dims = []int{users.Len(), items.Len()}
		kept, trials := 0, 0
		for seed := uint64(0); seed < 300; seed++ {
			sel, err := SelectItems(st, 1, b, perturb.SeededNoise(seed))
			if err == nil {
				kept += sel.Items.Len()
			}
			trials += nItems
		}
		want := 0.5 * math.Erfc((tau-w)/sigma/math.Sqrt2)
		got := float64(kept) / float64(trials)
		se := math.Sqrt(want * (1 - want) / float64(trials))
		if math.Abs(got-want) > stattest.Z5*se {
			t.Errorf("items of weight %g kept %.4f of the time, want 1 - Phi((tau - W)/sigma) = %.4f +- %.4f (tau %.4g, sigma %.4g)", w, got, want, stattest.Z5*se, tau, sigma)
		}
	})
}

// probedEqual reports whether two probe records hold the same releases
// with bit-identical values.
func probedEqual(a, b map[string][][]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, va := range a {
		vb := b[k]
		if len(va) != len(vb) {
			return false
		}
		for i := range va {
			if len(va[i]) != len(vb[i]) {
				return false
			}
			for j := range va[i] {
				if math.Float64bits(va[i][j]) != math.Float64bits(vb[i][j]) {
					return false
				}
			}
		}
	}
	return true
}
