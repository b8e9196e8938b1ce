package main

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/dprec/dprec/data"
)

func datasynthTestRun(args ...string) error {
	s, _, _ := testStreams()
	app := newApp(s)
	return app.Run(append([]string{"dprec", "-q"}, args...))
}

func TestDataSynthCommand(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "log.parquet")
	args := []string{"data", "synth", "--out", p, "--users", "50", "--items", "40", "--times", "10", "--ratings", "600",
		"--kind", "tucker", "--ranks", "3,2,2", "--scale", "1-5", "--seed", "11"}
	if err := datasynthTestRun(args...); err != nil {
		t.Fatal(err)
	}
	s, _, err := data.Load(p, data.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.NNZ() != 600 || s.Order() != 3 {
		t.Fatalf("nnz %d order %d", s.NNZ(), s.Order())
	}
	for _, v := range s.Val {
		if v != float64(int(v)) || v < 1 || v > 5 {
			t.Fatalf("rating %v is not a whole star", v)
		}
	}
	f, err := os.Open(p + ".truth.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	truth, err := data.ReadSynthTruth(f)
	if err != nil {
		t.Fatal(err)
	}
	if truth.Kind != "tucker" || !slices.Equal(truth.Ranks, []int{3, 2, 2}) || !slices.Equal(truth.Dims, s.Dims) {
		t.Errorf("truth kind %s ranks %v dims %v (store %v)", truth.Kind, truth.Ranks, truth.Dims, s.Dims)
	}
	// Refuses to overwrite; with --force the same seed gives the same log.
	if err := datasynthTestRun(args...); !errors.Is(err, data.ErrExists) {
		t.Errorf("second run without --force: %v", err)
	}
	if err := datasynthTestRun(append(args, "--force")...); err != nil {
		t.Fatal(err)
	}
	again, _, err := data.Load(p, data.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(again.Val, s.Val) || !again.Dicts[1].Equal(s.Dicts[1]) {
		t.Error("same seed, different log")
	}
}

// TestDataSynthDefault checks that the default flags reproduce DefaultSynth.
func TestDataSynthDefault(t *testing.T) {
	p := filepath.Join(t.TempDir(), "default.csv")
	if err := datasynthTestRun("data", "synth", "--out", p); err != nil {
		t.Fatal(err)
	}
	got, _, err := data.Load(p, data.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want, _, err := data.DefaultSynth()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Val, want.Val) || !slices.Equal(got.Dims, want.Dims) || !slices.Equal(got.Idx[2], want.Idx[2]) {
		t.Error("data synth with default flags differs from DefaultSynth")
	}
}

func TestDataSynthBadFlags(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"--ranks", "3,x"},
		{"--scale", "1-10"},
		{"--kind", "nmf"},
		{"--time-unit", "fortnight"},
		{"--start", "yesterday"},
		{"--ratings", "0"},
		{"--noise", "-1"},
	} {
		err := datasynthTestRun(append([]string{"data", "synth", "--out", filepath.Join(dir, "x.csv")}, args...)...)
		if err == nil {
			t.Errorf("%v accepted", args)
		}
		if _, serr := os.Stat(filepath.Join(dir, "x.csv")); serr == nil {
			t.Errorf("%v wrote a file", args)
		}
	}
}
