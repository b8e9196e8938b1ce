package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dprec/dprec/models"
	"github.com/urfave/cli/v2"
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
		if *sum.Points[i].RMSE < *sum.Points[i-1].RMSE {
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

// TestTuneFailedPoints: a grid point whose training fails carries its
// error and no rmse, rmse_sd or epochs in --json (it printed "rmse": 0, the
// lowest of all), the best point is one that trained, and a grid whose
// every point fails exits 1 after printing them, saving nothing (issue 24
// item 12).
func TestTuneFailedPoints(t *testing.T) {
	dir := t.TempDir()
	train, _ := trainTestLog(t, dir)
	tune := []string{"tune", "--data", train, "--seed", "1", "--time-unit", "none", "--json"}
	stdout, stderr, err := trainTestRun(t, append(tune, "--grid", "solver=sgd lr=0.01,1e6 epochs=3")...)
	if err != nil {
		t.Fatalf("one point trains: %v\n%s", err, stderr)
	}
	var sum struct {
		Points []map[string]any `json:"points"`
		Best   map[string]any   `json:"best"`
		Failed int              `json:"failed"`
	}
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	if len(sum.Points) != 2 || sum.Failed != 1 || sum.Best["error"] != nil || sum.Best["rmse"] == nil {
		t.Fatalf("points %v, best %v, failed %d", sum.Points, sum.Best, sum.Failed)
	}
	for _, p := range sum.Points {
		if _, failed := p["error"]; failed {
			for _, k := range []string{"rmse", "rmse_sd", "epochs"} {
				if v, ok := p[k]; ok {
					t.Errorf("failed point %v has %s %v", p["values"], k, v)
				}
			}
		}
	}

	out := filepath.Join(dir, "none.arrow")
	for _, asJSON := range []bool{true, false} {
		args := append(tune, "--grid", "solver=sgd lr=1e6,2e6 epochs=3", "--out", out)
		if !asJSON {
			args = slices.DeleteFunc(args, func(a string) bool { return a == "--json" })
		}
		stdout, _, err = trainTestRun(t, args...)
		if code := tuneExitCode(err); code != exitError || !strings.Contains(fmt.Sprint(err), "all 2 grid points failed") {
			t.Errorf("json %v: every point failed: exit %d (%v), want %d", asJSON, code, err, exitError)
		}
		if strings.Count(stdout, "LearningRate") != 2 {
			t.Errorf("json %v: the failed points are not printed:\n%s", asJSON, stdout)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("json %v: a model was saved", asJSON)
		}
	}
}

// TestTuneRankingMetric: tune --metric ndcg@10 --objective implicit on a
// planted-structure click log (three groups of users, each clicking its
// own thirty items) scores every point on a per-user hold-out, sorts them
// best first, and the best point beats the most-popular lists by far (a
// ranking that degraded to popularity would not); --out saves the best
// point, and usage errors are refused.
func TestTuneRankingMetric(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "clicks.csv")
	r := rand.New(rand.NewPCG(5, 6))
	var b strings.Builder
	b.WriteString("user,item\n")
	for u := 1; u <= 90; u++ {
		for range 12 {
			fmt.Fprintf(&b, "%d,%d\n", u, (u%3)*30+1+r.IntN(30))
		}
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "best.arrow")
	stdout, errOut, err := trainTestRun(t, "-q", "tune", "--data", path, "--columns", "user,item", "--objective", "implicit",
		"--metric", "ndcg@10", "--grid", "rank=2,8 alpha=1,5", "--seed", "3", "--out", out, "--json")
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	var sum tuneSummary
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Metric != "ndcg@10" || len(sum.Points) != 4 || sum.Best == nil || *sum.Threshold != 0 {
		t.Fatalf("summary %+v", sum)
	}
	for i := 1; i < len(sum.Points); i++ {
		if *sum.Points[i].Score > *sum.Points[i-1].Score {
			t.Errorf("points not best first: %v", sum.Points)
		}
	}
	if best, pop := *sum.Best.Score, *sum.Best.Popularity; !(best > 3*pop && best > 0.1) {
		t.Errorf("best ndcg@10 %.4f vs most popular %.4f: the ranking did not learn the groups", best, pop)
	}
	f, err := models.Load(out)
	if err != nil || f.Header.Objective != models.ObjectiveImplicit {
		t.Fatalf("saved best point: %v %+v", err, f)
	}
	// The EASE family is searched the same way.
	stdout, errOut, err = trainTestRun(t, "-q", "tune", "--data", path, "--objective", "ease", "--metric", "ndcg@10", "--grid", "lambda=1,30", "--seed", "3", "--json")
	if err != nil {
		t.Fatalf("ease: %v\n%s", err, errOut)
	}
	var es tuneSummary
	if err := json.Unmarshal([]byte(stdout), &es); err != nil || len(es.Points) != 2 || es.Best == nil || !(*es.Best.Score > 3**es.Best.Popularity) {
		t.Errorf("ease tune: %v %s", err, stdout)
	}
	for _, bad := range [][]string{
		{"--objective", "ease", "--metric", "ndcg@10", "--grid", "rank=2"},
		{"--objective", "implicit", "--metric", "rmse", "--grid", "rank=2"},
		{"--metric", "ndcg@0", "--grid", "rank=2"},
		{"--objective", "implicit", "--metric", "ndcg@10", "--grid", "lr=0.1"},
		{"--metric", "rmse", "--threshold", "3", "--grid", "rank=2"},
	} {
		_, _, err := trainTestRun(t, append([]string{"-q", "tune", "--data", path, "--columns", "user,item"}, bad...)...)
		var ec cli.ExitCoder
		if !errors.As(err, &ec) || ec.ExitCode() != exitUsage {
			t.Errorf("%v: %v, want a usage error", bad, err)
		}
	}
}
