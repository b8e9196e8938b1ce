package pipeline

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dprec/dprec/completion"
	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/perturb"
)

// memALSSource is completion.ALSSource over an in-memory store, written
// from the exported kernels only (BiasClamp, BiasResidual, ALSResidual,
// the plan's mechanism, settings and initial source): with noise drawn in
// storage order from o.Noise.Source(plan.NoiseStream) it is
// completion.TrainPrivateALS's own store source (checked bit for bit), so
// with noise off it is the single-machine reference for the pipelines.
type memALSSource struct {
	st       *data.Store
	noiseOff bool
	sweeps   int
}

func (s memALSSource) Counts(*completion.PrivateOptions) ([]int, map[int]int, error) {
	items := make([]int, s.st.Dims[1])
	per := make([]int, s.st.Dims[0])
	for e := range s.st.Val {
		items[s.st.Idx[1][e]]++
		per[s.st.Idx[0][e]]++
	}
	users := map[int]int{}
	for _, n := range per {
		if n > 0 {
			users[n]++
		}
	}
	return items, users, nil
}

func (s memALSSource) Totals(o *completion.PrivateOptions) (int, float64, []int, error) {
	items, _, _ := s.Counts(o)
	total := 0.0
	for _, v := range s.st.Val {
		total += completion.BiasClamp(v, o.RatingMin, o.RatingMax)
	}
	return s.st.NNZ(), total, items, nil
}

func (s memALSSource) SquareSum(o *completion.PrivateOptions) (float64, error) {
	q, mid := 0.0, (o.RatingMin+o.RatingMax)/2
	for _, v := range s.st.Val {
		d := completion.BiasClamp(v, o.RatingMin, o.RatingMax) - mid
		q += d * d
	}
	return q, nil
}

func (s memALSSource) ResidualSums(o *completion.PrivateOptions, mu float64) ([]float64, error) {
	sums := make([]float64, s.st.Dims[1])
	for e, v := range s.st.Val {
		sums[s.st.Idx[1][e]] += completion.BiasResidual(v, mu, o.RatingMin, o.RatingMax)
	}
	return sums, nil
}

func (s memALSSource) FitResiduals(o *completion.PrivateOptions, plan *completion.ALSInputPlan, bias *decomposition.Model) (*decomposition.Model, error) {
	vals := make([]float64, s.st.NNZ())
	for e, v := range s.st.Val {
		vals[e] = completion.ALSResidual(v, bias.Mean, bias.Bias[1][s.st.Idx[1][e]], plan.Clip, o.RatingMin, o.RatingMax)
	}
	if !s.noiseOff {
		lap, err := plan.Laplace()
		if err != nil {
			return nil, err
		}
		lap.AddTo(vals, rand.New(o.Noise.Source(plan.NoiseStream)))
	}
	ns := &data.Store{Dims: s.st.Dims[:2], Idx: s.st.Idx[:2], Val: vals}
	mm, err := decomposition.NewModel(decomposition.CP, ns.Dims, []int{plan.Rank}, true)
	if err != nil {
		return nil, err
	}
	set := plan.Settings()
	if s.sweeps > 0 {
		set.Epochs = s.sweeps
	}
	_, err = completion.Train(ns, nil, mm, set, plan.InitSource(), nil)
	return mm, err
}

// writeCatalogue writes the store's items, in its order, as a catalogue
// (with a header row).
func writeCatalogue(t testing.TB, dir string, st *data.Store) string {
	t.Helper()
	cat := filepath.Join(dir, "items.csv")
	ids := []string{"itemId"}
	for i := 0; i < st.Dicts[1].Len(); i++ {
		ids = append(ids, st.Dicts[1].String(int32(i)))
	}
	if err := os.WriteFile(cat, []byte(strings.Join(ids, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return cat
}

func reportJSON(t testing.TB, r *perturb.Report) string {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestPrivateALSMatchesSingleMachine: on the synthetic log (two shards)
// with seeded noise, dprec-beam's private ALS (entry unit) gives
// completion.TrainPrivateALS's privacy report on the concatenated log,
// field by field (relation, releases with their sensitivities and scales,
// composition, coverage, rules and notes), on the residual route (epsilon
// 20) and on its fallback to the bias mode (epsilon 1). The pipelines'
// noise is drawn in their DoFns (per-rating streams), so the models are
// compared with the residual noise switched off on both sides (the test
// hook noiseOff; 3 sweeps of the fit instead of the plan's 60): to 1e-9
// relative, the bias release's seeded noise being the same draws. The
// reference is memALSSource, first checked bit for bit against
// completion.TrainPrivateALS with the noise on.
func TestPrivateALSMatchesSingleMachine(t *testing.T) {
	dir := t.TempDir()
	shards, whole := writeSynth(t, dir)
	st := loadTSV(t, whole)
	cat := writeCatalogue(t, t.TempDir(), st)
	const rank = 3
	for _, tc := range []struct {
		eps      float64
		lo, hi   float64
		fallback bool
	}{{20, 0.5, 5, false}, {1, 0.5, 5, true}, {20, -2, 8, false}} {
		// The pipelines have no positions stage: the single machine
		// without it. On [-2, 8] the released rating spread narrows the
		// rules' width (private_als_spread.go): the pipelines' sum of
		// squares, summed per item, must plan the same route.
		po := completion.PrivateOptions{Epsilon: tc.eps, Delta: 1e-5, RatingMin: tc.lo, RatingMax: tc.hi, Noise: perturb.SeededNoise(17), ALSPositions: completion.ALSPositionsOff}
		newModel := func(users int) *decomposition.Model {
			m, err := decomposition.NewModel(decomposition.CP, []int{users, st.Dims[1]}, []int{rank}, true)
			if err != nil {
				t.Fatal(err)
			}
			return m
		}
		// The single machine, and memALSSource with the same noise.
		want := newModel(st.Dims[0])
		wantRep, err := completion.TrainPrivateALS(st, want, &po)
		if err != nil {
			t.Fatal(err)
		}
		mem := newModel(st.Dims[0])
		memRep, err := completion.TrainPrivateALSFrom(memALSSource{st: st}, mem, &po)
		if err != nil {
			t.Fatal(err)
		}
		if reportJSON(t, memRep) != reportJSON(t, wantRep) || mem.Mean != want.Mean ||
			!slices.Equal(mem.Bias[1], want.Bias[1]) || !slices.Equal(mem.Factors[1], want.Factors[1]) {
			t.Fatalf("epsilon %g: the in-memory reference source is not TrainPrivateALS", tc.eps)
		}
		// Noise off on both sides.
		ref := newModel(st.Dims[0])
		if _, err := completion.TrainPrivateALSFrom(memALSSource{st: st, noiseOff: true, sweeps: 3}, ref, &po); err != nil {
			t.Fatal(err)
		}
		res, err := TrainPrivateALS(context.Background(), PrivateALSOptions{Data: shards, Items: cat, Rank: rank, Privacy: po,
			Work: t.TempDir(), Out: filepath.Join(t.TempDir(), "m.arrow"), noiseOff: true, sweeps: 3})
		if err != nil {
			t.Fatal(err)
		}
		got := res.File
		if int(res.Ratings) != st.NNZ() || res.Dropped != 0 || res.Users != st.Dims[0] {
			t.Fatalf("epsilon %g: %d ratings (%d dropped) of %d users; log has %d of %d", tc.eps, res.Ratings, res.Dropped, res.Users, st.NNZ(), st.Dims[0])
		}
		if (res.Plan == nil) != tc.fallback {
			t.Fatalf("epsilon %g: plan %+v, want fallback %v", tc.eps, res.Plan, tc.fallback)
		}
		if narrowed := strings.Contains(reportJSON(t, wantRep), "in place of the range"); narrowed != (tc.lo == -2) {
			t.Fatalf("[%g, %g]: the rules' width narrowed %v", tc.lo, tc.hi, narrowed)
		}
		if a, b := reportJSON(t, got.Privacy), reportJSON(t, wantRep); a != b {
			t.Fatalf("epsilon %g: report differs from the single machine's:\n%s\n%s", tc.eps, a, b)
		}
		if prov, _ := got.Privacy.Provenance(); prov != perturb.ProvenanceSeeded {
			t.Fatalf("epsilon %g: seeded run's report says provenance %q", tc.eps, prov)
		}
		if !closeTo(got.Model.Mean, ref.Mean, 1e-9) {
			t.Fatalf("epsilon %g: mean %v, single machine %v", tc.eps, got.Model.Mean, ref.Mean)
		}
		for i := range ref.Bias[1] {
			if !closeTo(got.Model.Bias[1][i], ref.Bias[1][i], 1e-9) {
				t.Fatalf("epsilon %g: item %d bias %v, single machine %v", tc.eps, i, got.Model.Bias[1][i], ref.Bias[1][i])
			}
		}
		nonzero := 0
		for k := range ref.Factors[1] {
			if !closeTo(got.Model.Factors[1][k], ref.Factors[1][k], 1e-9) {
				t.Fatalf("epsilon %g: item row entry %d %v, single machine %v", tc.eps, k, got.Model.Factors[1][k], ref.Factors[1][k])
			}
			if ref.Factors[1][k] != 0 && k%rank > 1 {
				nonzero++
			}
		}
		if !tc.fallback && nonzero == 0 {
			t.Fatalf("epsilon %g: no fitted item-row entry beyond the first two columns", tc.eps)
		}
		if tc.fallback {
			// The fallback's rows are the free columns (the released item
			// biases over s and the standardised log counts), then at rank
			// 3 one curve column: the second squared, over the first's
			// deviation, centred and scaled to ALSCurveColumnScale times it.
			I := len(ref.Factors[1]) / rank
			c0, sq := make([]float64, I), make([]float64, I)
			for i := range I {
				c0[i] = ref.Factors[1][i*rank]
			}
			_, sd := popMeanSD(c0)
			for i := range I {
				v := ref.Factors[1][i*rank+1] / sd
				sq[i] = v * v
			}
			mq, sdq := popMeanSD(sq)
			for i := range I {
				want := completion.ALSCurveColumnScale * sd * (sq[i] - mq) / sdq
				if got := ref.Factors[1][i*rank+2]; !closeTo(got, want, 1e-9) {
					t.Fatalf("epsilon %g: item %d column 3 %v, want the curve column %v", tc.eps, i, got, want)
				}
			}
		}
		if got.Model.Dims[0] != 1 || got.Dicts[0].String(0) != NoUser {
			t.Fatalf("epsilon %g: user mode %v, want the one placeholder", tc.eps, got.Model.Dims)
		}
	}
	if _, err := TrainPrivateALS(context.Background(), PrivateALSOptions{Data: shards, Items: cat,
		Privacy: completion.PrivateOptions{Epsilon: 1, Delta: 1e-5, RatingMin: 0.5, RatingMax: 5, Unit: completion.UnitUser, MaxRatingsPerUser: 5}}); err == nil {
		t.Fatal("user unit: no error")
	}
}

// popMeanSD returns the mean and the population standard deviation of x.
func popMeanSD(x []float64) (mean, sd float64) {
	for _, v := range x {
		mean += v
	}
	mean /= float64(len(x))
	for _, v := range x {
		sd += (v - mean) * (v - mean)
	}
	return mean, math.Sqrt(sd / float64(len(x)))
}
