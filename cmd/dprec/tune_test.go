package main

import (
	"encoding/json"
	"errors"
	"github.com/urfave/cli/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dprec/dprec/models"
)

// TestTune: the table is sorted by validation RMSE, --json is one document
// listing every grid point, --out saves the best point retrained on the
// whole log, and bad grids are usage errors before any file is read.
func TestTune(t *testing.T) {
	dir := t.TempDir()
	train, _ := trainTestLog(t, dir)
	out := filepath.Join(dir, "best.arrow")
	stdout, stderr, err := trainTestRun(t, "tune", "--data", train, "--grid", "rank=1,4 reg=0.05,0.5 solver=als",
		"--folds", "2", "--seed", "3", "--time-unit", "none", "--json", "--out", out)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	var sum tuneSummary
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
		t.Fatalf("--json is not one JSON document: %v\n%s", err, stdout)
	}
	if len(sum.Points) != 4 || sum.Best == nil || sum.Folds != 2 {
		t.Fatalf("%d points, best %v, folds %d", len(sum.Points), sum.Best, sum.Folds)
	}
	for i := 1; i < len(sum.Points); i++ {
		if sum.Points[i].RMSE < sum.Points[i-1].RMSE {
			t.Errorf("points not sorted: %v", sum.Points)
		}
	}
	f, err := models.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if want := sum.Best.Values["rank"]; want != "" && f.Model.Ranks[0] != map[string]int{"1": 1, "4": 4}[want] {
		t.Errorf("saved rank %d, best point %v", f.Model.Ranks[0], sum.Best.Values)
	}
	// Text output names the best point.
	stdout, _, err = trainTestRun(t, "tune", "--data", train, "--grid", "reg=0.1,0.2", "--seed", "1", "--time-unit", "none")
	if err != nil || !strings.Contains(stdout, "best: reg=") {
		t.Errorf("text output: %v\n%s", err, stdout)
	}
	for _, grid := range []string{"rnak=3", "rank=0", "reg=x", "reg=0.1 reg=0.2", ""} {
		_, _, err := trainTestRun(t, "tune", "--data", filepath.Join(dir, "missing.csv"), "--grid", grid)
		if code := tuneExitCode(err); code != exitUsage {
			t.Errorf("--grid %q: exit %d (%v), want %d", grid, code, err, exitUsage)
		}
	}
}

func tuneExitCode(err error) int {
	var ec cli.ExitCoder
	if errors.As(err, &ec) {
		return ec.ExitCode()
	}
	if err != nil {
		return exitError
	}
	return exitOK
}
