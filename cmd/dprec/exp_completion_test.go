package main

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

func expCompletionReadCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func TestExpCompletionSynthetic(t *testing.T) {
	dir := t.TempDir()
	out, plot := filepath.Join(dir, "syn.csv"), filepath.Join(dir, "syn.svg")
	args := []string{"dprec", "--quiet", "experiment", "completion-synthetic", "--kind", "both", "--fractions", "0.3,0.7",
		"--seeds", "1", "--size", "8", "--rank", "2", "--out", out, "--plot", plot}
	if code := run(args); code != exitOK {
		t.Fatalf("exit code %d", code)
	}
	rows := expCompletionReadCSV(t, out)
	if len(rows) != 1+2*2 || rows[0][6] != "recovery" || rows[1][0] != "cp" || rows[4][0] != "tucker" {
		t.Errorf("rows %v", rows)
	}
	if _, err := os.Stat(plot); err != nil {
		t.Error(err)
	}
	if code := run(args); code == exitOK {
		t.Error("overwrote the CSV without --force")
	}
	for _, bad := range [][]string{{"--kind", "svd"}, {"--fractions", "1.5"}, {"--seeds", "0"}} {
		a := append([]string{"dprec", "--quiet", "experiment", "completion-synthetic", "--out", filepath.Join(dir, "x.csv")}, bad...)
		if code := run(a); code == exitOK {
			t.Errorf("%v accepted", bad)
		}
	}
}

func TestExpCompletionSpeed(t *testing.T) {
	out := filepath.Join(t.TempDir(), "speed.csv")
	if code := run([]string{"dprec", "--quiet", "experiment", "completion-speed", "--sizes", "30x20x10:2000,40x30:1000",
		"--threads", "1,2", "--epochs", "2", "--out", out}); code != exitOK {
		t.Fatalf("exit code %d", code)
	}
	rows := expCompletionReadCSV(t, out)
	if len(rows) != 1+4 || rows[0][7] != "seconds_per_epoch" || rows[3][1] != "40x30" {
		t.Errorf("rows %v", rows)
	}
	if code := run([]string{"dprec", "--quiet", "experiment", "completion-speed", "--sizes", "30x20:abc"}); code == exitOK {
		t.Error("bad --sizes accepted")
	}
}

// TestExpCompletionPrivacyNDCG: on a rating log given with --ratings (read
// with the input flags) every row of the CSV has an NDCG in (0, 1], the
// most-popular reference rows are there, and the NDCG plot is written.
func TestExpCompletionPrivacyNDCG(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "log.csv")
	if code := run([]string{"dprec", "--quiet", "data", "synth", "--users", "200", "--items", "80", "--ratings", "5000", "--times", "0", "--seed", "4", "--out", log}); code != exitOK {
		t.Fatalf("data synth: exit code %d", code)
	}
	out := filepath.Join(dir, "res")
	args := []string{"dprec", "--quiet", "experiment", "completion-privacy", "--ratings", log, "--time-unit", "none", "--datasets", "ratings",
		"--modes", "none,bias", "--epsilons", "1,10", "--seeds", "1", "--epochs", "5", "--rank", "3", "--threshold", "4", "--out", out}
	if code := run(args); code != exitOK {
		t.Fatalf("exit code %d", code)
	}
	rows := expCompletionReadCSV(t, filepath.Join(out, "completion_privacy.csv"))
	if len(rows) != 1+7 || rows[0][7] != "ndcg" {
		t.Fatalf("rows %v", rows)
	}
	modes := map[string]int{}
	for _, r := range rows[1:] {
		v, err := strconv.ParseFloat(r[7], 64)
		if err != nil || !(v > 0 && v <= 1) {
			t.Errorf("row %v: ndcg %q", r, r[7])
		}
		modes[r[2]]++
	}
	if modes["most-popular"] != 1 || modes["lists-positions"] != 1 || modes["most-popular-private"] != 2 || modes["none"] != 1 || modes["bias"] != 2 {
		t.Errorf("modes %v", modes)
	}
	for _, f := range []string{"completion_privacy_ratings.png", "completion_privacy_ndcg_ratings.png"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	if code := run(append(args, "--force", "--threshold", "NaN")); code == exitOK {
		t.Error("--threshold NaN accepted")
	}
	// The user unit: bias rows at unit "user"; a mode without one is a
	// usage error.
	if code := run(append(args, "--force", "--max-ratings-per-user", "20")); code != exitOK {
		t.Fatalf("--max-ratings-per-user 20: exit code %d", code)
	}
	rows = expCompletionReadCSV(t, filepath.Join(out, "completion_privacy.csv"))
	for _, r := range rows[1:] {
		if r[2] == "bias" && r[12] != "user" {
			t.Errorf("row %v: unit %q, want user", r, r[12])
		}
	}
	if code := run(append(args, "--force", "--max-ratings-per-user", "20", "--modes", "bias,input")); code != exitUsage {
		t.Errorf("--max-ratings-per-user with input: exit code %d, want %d", code, exitUsage)
	}
}
