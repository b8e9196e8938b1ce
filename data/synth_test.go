package data

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func synthSmall() SynthOptions {
	return SynthOptions{Users: 60, Items: 80, Times: 30, Ratings: 3000, Rank: 3, Bias: true, Noise: 0.5, Scale: "0.5-5", Skew: 0.8}
}

func TestSynthDeterministic(t *testing.T) {
	a, ta, err := Synth(synthSmall(), rand.NewPCG(7, 7))
	if err != nil {
		t.Fatal(err)
	}
	b, tb, err := Synth(synthSmall(), rand.NewPCG(7, 7))
	if err != nil {
		t.Fatal(err)
	}
	arrowStoresEqual(t, "same seed", a, b)
	if !slices.Equal(ta.Clean, tb.Clean) || !slices.Equal(ta.Factors[0], tb.Factors[0]) {
		t.Error("truths differ for the same seed")
	}
	c, _, err := Synth(synthSmall(), rand.NewPCG(8, 7))
	if err != nil {
		t.Fatal(err)
	}
	if slices.Equal(a.Val, c.Val) {
		t.Error("different seeds gave the same values")
	}
}

func TestSynthStructure(t *testing.T) {
	for _, o := range []SynthOptions{
		synthSmall(),
		{Users: 20, Items: 30, Ratings: 500, Kind: "tucker", Noise: 0.1},                       // order 2
		{Users: 10, Items: 10, Times: 4, Ratings: 300, Kind: "tucker", TimeUnit: TimeMonth},    // dense path
		{Users: 50, Items: 40, Times: 10, Ratings: 900, TimeUnit: TimeWeek, Start: -86400 * 9}, // before 1970
	} {
		t.Run(fmt.Sprintf("%s-%dx%dx%d", o.Kind, o.Users, o.Items, o.Times), func(t *testing.T) {
			s, tr, err := Synth(o, rand.NewPCG(1, 2))
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Validate(); err != nil {
				t.Fatal(err)
			}
			if s.NNZ() != o.Ratings {
				t.Fatalf("nnz %d want %d", s.NNZ(), o.Ratings)
			}
			// Distinct cells.
			seen := map[[3]int32]bool{}
			idx := make([]int32, 3)
			for e := range s.Val {
				s.Entry(e, idx[:s.Order()])
				k := [3]int32{idx[0], idx[1], idx[2]}
				if seen[k] {
					t.Fatalf("cell %v repeats", k)
				}
				seen[k] = true
			}
			// Dictionaries are 1..n in order of first appearance.
			for m := 0; m < 2; m++ {
				next := int32(0)
				for _, k := range s.Idx[m] {
					if k > next {
						t.Fatalf("mode %d: index %d appears before %d", m, k, next)
					}
					if k == next {
						next++
					}
				}
				for i, id := range s.Dicts[m].Ints() {
					if id != int64(i)+1 {
						t.Fatalf("mode %d: ID %d at index %d", m, id, i)
					}
				}
			}
			// Time stamps lie in their buckets; first and last bucket used.
			if s.Order() == 3 {
				var lo, hi bool
				for e, k := range s.Idx[2] {
					if b, _ := s.Time.Bucket(s.Timestamps[e]); b != k {
						t.Fatalf("time stamp %d in bucket %d, stored %d", s.Timestamps[e], b, k)
					}
					lo = lo || k == 0
					hi = hi || int(k) == s.Dims[2]-1
				}
				if !lo || !hi {
					t.Error("first or last bucket unused")
				}
			}
			// The truth is indexed like the store.
			if !slices.Equal(tr.Dims, s.Dims) {
				t.Fatalf("truth dims %v, store %v", tr.Dims, s.Dims)
			}
			for e := range s.Val {
				s.Entry(e, idx[:s.Order()])
				if v := tr.Value(idx[:s.Order()]); v != tr.Clean[e] {
					t.Fatalf("observation %d: Value %v, Clean %v", e, v, tr.Clean[e])
				}
			}
		})
	}
}

// TestSynthNoise checks that values are Clean plus N(0, Noise^2) before
// rounding, and exactly the rounded Clean without noise.
func TestSynthNoise(t *testing.T) {
	o := SynthOptions{Users: 300, Items: 300, Times: 10, Ratings: 40_000, Bias: true}
	s, tr, err := Synth(o, rand.NewPCG(3, 3))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.Val, tr.Clean) {
		t.Error("noise 0, no scale: values differ from Clean")
	}
	o.Scale = "1-5"
	s, tr, _ = Synth(o, rand.NewPCG(3, 3))
	for e, v := range s.Val {
		if v != min(max(math.Round(tr.Clean[e]), 1), 5) {
			t.Fatalf("observation %d: %v is not round(%v)", e, v, tr.Clean[e])
		}
	}
	o.Scale, o.Noise = "", 0.7
	s, tr, _ = Synth(o, rand.NewPCG(3, 3))
	var sum, sq float64
	for e, v := range s.Val {
		d := v - tr.Clean[e]
		sum += d
		sq += d * d
	}
	n := float64(len(s.Val))
	mean, sd := sum/n, math.Sqrt(sq/n-(sum/n)*(sum/n))
	// Standard errors: 0.7/sqrt(40000) = 0.0035 for the mean and about
	// 0.7/sqrt(80000) = 0.0025 for the sd; 5 standard errors (false reject
	// about 6e-7) give these tolerances.
	if math.Abs(mean) > 0.0175 || math.Abs(sd-0.7) > 0.0125 {
		t.Errorf("noise mean %v sd %v, want 0 and 0.7", mean, sd)
	}
}

// TestDefaultSynthStatistics checks that the default log looks like
// MovieLens: mean near 3.5, sd near 1, half stars in [0.5, 5].
func TestDefaultSynthStatistics(t *testing.T) {
	s, tr, err := DefaultSynth()
	if err != nil {
		t.Fatal(err)
	}
	if s.NNZ() != 100_000 || s.Order() != 3 || tr.Kind != "cp" || tr.Ranks[0] != 5 {
		t.Fatalf("nnz %d order %d kind %s", s.NNZ(), s.Order(), tr.Kind)
	}
	var sum, sq float64
	for _, v := range s.Val {
		if v < 0.5 || v > 5 || v*2 != math.Round(v*2) {
			t.Fatalf("value %v is not a half star", v)
		}
		sum += v
		sq += v * v
	}
	n := float64(s.NNZ())
	mean, sd := sum/n, math.Sqrt(sq/n-(sum/n)*(sum/n))
	// The model's mean is 3.5 and its sd about 1.04 before clamping; biases
	// and factors are random draws, so allow a generous band.
	if math.Abs(mean-3.5) > 0.2 || sd < 0.8 || sd > 1.25 {
		t.Errorf("mean %v sd %v, want about 3.5 and 1", mean, sd)
	}
}

func TestSynthTuckerSuperdiagonalIsCP(t *testing.T) {
	_, cp, err := Synth(SynthOptions{Users: 30, Items: 40, Times: 8, Ratings: 500, Rank: 4, Bias: true}, rand.NewPCG(5, 5))
	if err != nil {
		t.Fatal(err)
	}
	tk := *cp
	tk.Kind = "tucker"
	tk.Core = make([]float64, 4*4*4)
	for r := 0; r < 4; r++ {
		tk.Core[(r*4+r)*4+r] = 1
	}
	idx := make([]int32, 3)
	for u := 0; u < cp.Dims[0]; u += 3 {
		for i := 0; i < cp.Dims[1]; i += 5 {
			for k := 0; k < cp.Dims[2]; k++ {
				idx[0], idx[1], idx[2] = int32(u), int32(i), int32(k)
				a, b := cp.Value(idx), tk.Value(idx)
				if math.Abs(a-b) > 1e-12 {
					t.Fatalf("cell %v: CP %v, Tucker %v", idx, a, b)
				}
			}
		}
	}
}

func TestSynthTruthJSON(t *testing.T) {
	_, tr, err := Synth(SynthOptions{Users: 10, Items: 12, Times: 3, Ratings: 100, Kind: "tucker", Bias: true}, rand.NewPCG(1, 1))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteSynthTruth(&buf, tr); err != nil {
		t.Fatal(err)
	}
	got, err := ReadSynthTruth(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if got.Kind != tr.Kind || !slices.Equal(got.Core, tr.Core) || !slices.Equal(got.Factors[2], tr.Factors[2]) || !slices.Equal(got.Bias[1], tr.Bias[1]) {
		t.Error("truth changed in JSON round trip")
	}
	bad := strings.Replace(buf.String(), `"kind":"tucker"`, `"kind":"cp"`, 1)
	if _, err := ReadSynthTruth(strings.NewReader(bad)); err == nil {
		t.Error("a CP truth with a core was accepted")
	}
	if _, err := ReadSynthTruth(strings.NewReader(`{"kind":"cp","dims":[2,2],"ranks":[1,1],"factors":[[1],[1,1]]}`)); err == nil {
		t.Error("short factor accepted")
	}
}

func TestSynthInvalidOptions(t *testing.T) {
	for _, o := range []SynthOptions{
		{Users: 0, Items: 5, Ratings: 1},
		{Users: 5, Items: 5, Ratings: 0},
		{Users: 2, Items: 2, Times: 2, Ratings: 9},
		{Users: 5, Items: 5, Ratings: 3, Kind: "nmf"},
		{Users: 5, Items: 5, Ratings: 3, Scale: "1-10"},
		{Users: 5, Items: 5, Ratings: 3, Noise: -1},
		{Users: 5, Items: 5, Ratings: 3, Noise: math.NaN()},
		{Users: 5, Items: 5, Ratings: 3, Skew: -1},
		{Users: 5, Items: 5, Times: 2, Ratings: 3, TimeUnit: TimeNone},
		{Users: 5, Items: 5, Times: 2, Ratings: 3, TimeUnit: "fortnight"},
	} {
		if _, _, err := Synth(o, rand.NewPCG(1, 1)); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
}

// TestSynthReloads checks that a synthetic log written to a file loads
// back as the same store (dictionaries, buckets, values, time stamps).
func TestSynthReloads(t *testing.T) {
	s, _, err := Synth(synthSmall(), rand.NewPCG(9, 9))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, ext := range []string{".parquet", ".arrow", ".csv"} {
		p := filepath.Join(dir, "synth"+ext)
		if err := Save(p, s, WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		got, _, err := Load(p, LoadOptions{Builder: BuilderOptions{KeepTimestamps: true}})
		if err != nil {
			t.Fatal(err)
		}
		arrowStoresEqual(t, p, s, got)
	}
}

func ExampleSynth() {
	s, truth, err := Synth(SynthOptions{Users: 100, Items: 50, Times: 10, Ratings: 1000, Rank: 3, Noise: 0.5, Scale: "1-5"},
		rand.NewPCG(1, 1))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(s.NNZ(), s.Order(), truth.Kind, truth.Ranks)
	// Output: 1000 3 cp [3 3 3]
}
