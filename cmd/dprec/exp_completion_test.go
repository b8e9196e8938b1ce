package main

import (
	"encoding/csv"
	"os"
	"path/filepath"
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
