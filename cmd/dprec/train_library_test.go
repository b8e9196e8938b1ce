package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/dprec/dprec"
	"github.com/dprec/dprec/completion"
	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/models"
)

// TestTrainEqualsLibrary: "dprec train" and the library's one entry
// (dprec.Fit) give the same model for the same seed and settings on the
// real MovieLens log (ml-latest-small; skipped without it), at the rating
// objective with its hold-out and refit, and privately (--privacy bias,
// seeded). Every factor, bias, clamp bound and dictionary must be equal
// bit for bit: the command is flag parsing plus the library call.
func TestTrainEqualsLibrary(t *testing.T) {
	path := filepath.Join("..", "..", "..", "shared", "data", "ml-latest-small", "ratings.csv")
	if _, err := os.Stat(path); err != nil {
		t.Skipf("ml-latest-small not found: %v", err)
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		opts dprec.Options
	}{
		{"als with hold-out and refit", []string{"--solver", "als", "--epochs", "3", "--rank", "4", "--time-unit", "week"},
			dprec.Options{Rank: 4, TimeUnit: data.TimeWeek, Settings: completion.Settings{Solver: completion.SolverALS, Epochs: 3, Threads: 2}}},
		// --lists ratings: the rating path under test (the lists of the
		// positions are tested by TestPrivateListsPositions; their closed
		// form over 2,500 items would take minutes under -race).
		{"private bias", []string{"--privacy", "bias", "--epsilon", "1", "--time-unit", "none", "--lists", "ratings"},
			dprec.Options{TimeUnit: data.TimeNone, Settings: completion.Settings{Threads: 2}, Privacy: &dprec.Privacy{Mode: dprec.PrivacyBias, Lists: dprec.ListsRatings,
				PrivateOptions: completion.PrivateOptions{Epsilon: 1, RatingMin: 0.5, RatingMax: 5, Mechanism: "laplace", Accounting: ""}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, tc.name+".arrow")
			args := append([]string{"-q", "train", "--data", path, "--seed", "7", "--threads", "2", "--out", out}, tc.args...)
			if _, errOut, err := trainTestRun(t, args...); err != nil {
				t.Fatalf("%v: %v\n%s", args, err, errOut)
			}
			cli, err := models.Load(out)
			if err != nil {
				t.Fatal(err)
			}
			o := tc.opts
			o.Seed, o.Seeded = 7, true
			res, err := dprec.Fit(context.Background(), path, &o)
			if err != nil {
				t.Fatal(err)
			}
			lib := res.File()
			a, b := cli.Model, lib.Model
			if a.Kind != b.Kind || !equalInts(a.Dims, b.Dims) || !equalInts(a.Ranks, b.Ranks) || a.ClampLo != b.ClampLo || a.ClampHi != b.ClampHi {
				t.Fatalf("shape or clamp differ: cli %v %v %v [%g,%g], library %v %v %v [%g,%g]", a.Kind, a.Dims, a.Ranks, a.ClampLo, a.ClampHi, b.Kind, b.Dims, b.Ranks, b.ClampLo, b.ClampHi)
			}
			if len(a.Factors) != len(b.Factors) || a.Mean != b.Mean {
				t.Fatalf("factors %d vs %d, mean %g vs %g", len(a.Factors), len(b.Factors), a.Mean, b.Mean)
			}
			for n := range a.Factors {
				if !equalFloats(a.Factors[n], b.Factors[n]) {
					t.Errorf("factor %d differs", n)
				}
			}
			for n := range a.Bias {
				if !equalFloats(a.Bias[n], b.Bias[n]) {
					t.Errorf("bias %d differs", n)
				}
			}
			for n := range cli.Dicts {
				if (cli.Dicts[n] == nil) != (lib.Dicts[n] == nil) || cli.Dicts[n] != nil && !cli.Dicts[n].Equal(lib.Dicts[n]) {
					t.Errorf("dictionary %d differs", n)
				}
			}
			if (cli.Privacy == nil) != (lib.Privacy == nil) || cli.Privacy != nil && (cli.Privacy.Epsilon != lib.Privacy.Epsilon || cli.Privacy.Mode != lib.Privacy.Mode) {
				t.Errorf("privacy reports differ: %+v vs %+v", cli.Privacy, lib.Privacy)
			}
		})
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func equalFloats(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
