package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/dprec/dprec"
	"github.com/dprec/dprec/completion"
	"github.com/dprec/dprec/models"
	"github.com/dprec/dprec/perturb"

	"github.com/urfave/cli/v2"
)

// TestTrainPrivateModelFile trains private models end to end and checks
// what the saved file releases: the privacy report, no data-derived
// fingerprint or statistics, no training losses computed from raw ratings
// (gradient and output modes), and the coverage warning printed by inspect
// and predict when not every parameter is covered.
func TestTrainPrivateModelFile(t *testing.T) {
	dir := t.TempDir()
	train, _ := trainTestLog(t, dir)
	cases := []struct {
		name        string
		args        []string
		mode        string
		covered     bool
		keepsLosses bool
	}{
		{"gradient-all", []string{"--privacy", "gradient", "--protect", "all", "--epsilon", "2", "--delta", "1e-5"}, "gradient", true, false},
		{"gradient-C", []string{"--privacy", "gradient", "--protect", "C", "--epsilon", "2"}, "gradient", false, false},
		{"output", []string{"--privacy", "output", "--epsilon", "2"}, "output", false, false},
		// Input perturbation trains on noisy values (here the residual
		// release, completion/private_input_residual.go): its losses are
		// post-processing and are kept.
		{"input", []string{"--privacy", "input", "--epsilon", "10"}, "input", true, true},
		// At epsilon 0.2 on this 340-rating log it falls back to the
		// bias-only release (completion/private_input_fallback.go):
		// nothing is trained, so the history is empty.
		{"input-fallback", []string{"--privacy", "input", "--epsilon", "0.2"}, "input", true, false},
	}
	for _, tc := range cases {
		out := filepath.Join(dir, tc.name+".arrow")
		args := append([]string{"--quiet", "train", "--data", train, "--validation", "0", "--epochs", "3", "--out", out}, tc.args...)
		if _, stderr, err := trainTestRun(t, args...); err != nil {
			t.Fatalf("%s: %v\n%s", tc.name, err, stderr)
		}
		f, err := models.Load(out)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		eps, _ := strconv.ParseFloat(tc.args[slices.Index(tc.args, "--epsilon")+1], 64)
		if f.Privacy == nil || f.Privacy.Mode != tc.mode || f.Privacy.Epsilon <= 0 || f.Privacy.Epsilon > eps+1e-9 {
			t.Errorf("%s: privacy report %+v", tc.name, f.Privacy)
		}
		if f.PrivacyCheck != nil {
			t.Errorf("%s: a freshly trained report does not check: %v", tc.name, f.PrivacyCheck)
		}
		if got := f.Privacy.FullyCovered(); got != tc.covered {
			t.Errorf("%s: fully covered %v, want %v (not covered: %v)", tc.name, got, tc.covered, f.Privacy.NotCovered)
		}
		if f.Header.Data.HasStats() {
			t.Errorf("%s: private model file carries the data fingerprint %+v", tc.name, f.Header.Data)
		}
		var hist []completion.EpochRecord
		if err := json.Unmarshal(f.Header.History, &hist); err != nil || (len(hist) == 0) != (tc.name == "input-fallback") {
			t.Fatalf("%s: history %s: %v", tc.name, f.Header.History, err)
		}
		fellBack := false
		for _, n := range f.Privacy.Notes {
			fellBack = fellBack || strings.Contains(n, "fell back to the bias-only release")
		}
		if fellBack != (tc.name == "input-fallback") {
			t.Errorf("%s: fell back %v (notes %q)", tc.name, fellBack, f.Privacy.Notes)
		}
		for _, h := range hist {
			if has := h.TrainLoss != 0 || h.TrainRMSE != 0; has != tc.keepsLosses {
				t.Errorf("%s: history record %+v (losses kept: %v, want %v)", tc.name, h, has, tc.keepsLosses)
			}
			if h.Seconds != 0 {
				t.Errorf("%s: the private model file keeps a wall time (a timing channel): %+v", tc.name, h)
			}
		}
		stdout, stderr, err := trainTestRun(t, "inspect", out)
		if err != nil {
			t.Fatalf("%s: inspect: %v", tc.name, err)
		}
		if headline := strings.Contains(stdout, "covers NO released parameter"); headline == tc.covered {
			t.Errorf("%s: inspect headline says no coverage: %v, want %v:\n%s", tc.name, headline, !tc.covered, stdout)
		}
		warned := strings.Contains(strings.ToLower(stdout+stderr), "not covered")
		if warned == tc.covered {
			t.Errorf("%s: inspect coverage warning %v, want %v:\n%s%s", tc.name, warned, !tc.covered, stdout, stderr)
		}
	}
}

// TestTrainPrivateBiasModelFile: --privacy bias and als (without
// --validation, which they imply to be 0), and input at an epsilon where
// it falls back to the bias-only release, write a model whose user biases
// and user rows are all zero (never released), whose report covers
// everything it releases, that eval scores by folding users in, and that
// predict folds a new user into.
func TestTrainPrivateBiasModelFile(t *testing.T) {
	for _, mode := range []string{"bias", "als", "input"} {
		t.Run(mode, func(t *testing.T) { trainPrivateStatsFile(t, mode) })
	}
}

func trainPrivateStatsFile(t *testing.T, mode string) {
	dir := t.TempDir()
	train, test := trainTestLog(t, dir)
	out := filepath.Join(dir, mode+".arrow")
	eps := "1"
	if mode == "input" {
		eps = "0.5" // falls back to the bias-only release on this small log (private_input_fallback.go)
	}
	if _, stderr, err := trainTestRun(t, "--quiet", "train", "--data", train, "--out", out, "--privacy", mode, "--epsilon", eps, "--delta", "1e-5"); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	f, err := models.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if f.Privacy == nil || f.Privacy.Mode != mode || !f.Privacy.FullyCovered() || f.Privacy.Epsilon > 1+1e-9 || f.PrivacyCheck != nil {
		t.Fatalf("report %+v (check: %v)", f.Privacy, f.PrivacyCheck)
	}
	for _, x := range f.Model.Bias[0] {
		if x != 0 {
			t.Fatalf("user bias %v in the file", x)
		}
	}
	for _, x := range f.Model.Factors[0] {
		if x != 0 {
			t.Fatalf("user factor entry %v in the file", x)
		}
	}
	if f.Header.Data.HasStats() {
		t.Errorf("private model file carries the data fingerprint")
	}
	if strings.Contains(string(f.Header.Settings), "LearningRate") {
		t.Errorf("billboard model records SGD settings it never used: %s", f.Header.Settings)
	}
	// eval folds every test user in from their own --train ratings, and
	// refuses (usage) without --train instead of scoring zero user terms.
	if _, _, err := trainTestRun(t, "eval", "-m", out, "--data", test); err == nil {
		t.Errorf("eval of a billboard model without --train accepted")
	} else if ec, ok := err.(cli.ExitCoder); !ok || ec.ExitCode() != exitUsage {
		t.Errorf("eval without --train: %v, want a usage error", err)
	}
	stdout, stderr, err := trainTestRun(t, "eval", "-m", out, "--data", test, "--train", train, "--json")
	if err != nil {
		t.Fatalf("eval --train: %v\n%s", err, stderr)
	}
	var ev struct {
		RMSE      float64        `json:"rmse"`
		Fallbacks map[string]int `json:"fallbacks"`
	}
	if err := json.Unmarshal([]byte(stdout), &ev); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	if ev.Fallbacks["none"] == 0 || !(ev.RMSE > 0 && ev.RMSE < 1.5) {
		t.Errorf("eval of a billboard model: %s", stdout)
	}
	item := f.Dicts[1].String(0)
	rat := filepath.Join(dir, "mine.csv")
	if err := os.WriteFile(rat, []byte("item,rating\n"+item+",5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, err = trainTestRun(t, "predict", "-m", out, "--ratings", rat, "--item", item)
	if err != nil || !strings.Contains(stdout, "folded-in") {
		t.Fatalf("predict --ratings: %v\n%s%s", err, stdout, stderr)
	}
	pen := completion.BillboardFoldFor(f.Privacy)
	if !strings.Contains(stderr, fmt.Sprintf("lambda %g", pen.Row+pen.PerRating)) || (mode != "als" && pen.PerRating > 0) {
		t.Errorf("fold-in did not use the mode's user penalty %+v: %s", pen, stderr)
	}
	// A rating beyond the public scale is clamped to it (and said), so it
	// predicts as the top of the scale does.
	big := filepath.Join(dir, "big.csv")
	if err := os.WriteFile(big, []byte("item,rating\n"+item+",50\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout2, stderr2, err := trainTestRun(t, "predict", "-m", out, "--ratings", big, "--item", item)
	if err != nil || !strings.Contains(stderr2, "1 ratings outside the model's range [0.5, 5] clamped") || stdout2 != stdout {
		t.Errorf("predict --ratings with a rating of 50: %v\n%s%s (want the output of a 5: %s)", err, stdout2, stderr2, stdout)
	}
	// With times, the fold-in adds the user's bias on each rated bucket: a
	// prediction on the day of the user's ratings (two 5s, a 1 the next
	// day) exceeds one on a day without ratings by exactly
	// completion.BillboardFold's closed form b_t = (Y_t - s_t'a)/(n_t + lambda_t).
	if f.Time == nil || f.Time.Count < 3 {
		t.Fatalf("model has no time mode with 3 buckets: %+v", f.Time)
	}
	day, next, other := f.Time.Start(0), f.Time.Start(1), f.Time.Start(int32(f.Time.Count-1))
	item2 := f.Dicts[1].String(1)
	log := fmt.Sprintf("item,rating,time\n%s,5,%d\n%s,5,%d\n%s,1,%d\n", item, day, item2, day, item, next)
	if err := os.WriteFile(rat, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	score := func(at int64) float64 {
		t.Helper()
		stdout, stderr, err := trainTestRun(t, "predict", "-m", out, "--ratings", rat, "--item", item, "--time", fmt.Sprint(at), "--json")
		if err != nil || !strings.Contains(stderr, "with the user's biases on 2 time buckets") {
			t.Fatalf("predict --ratings with times: %v\n%s%s", err, stdout, stderr)
		}
		var v struct{ Prediction float64 }
		if err := json.Unmarshal([]byte(stdout), &v); err != nil {
			t.Fatalf("%v: %s", err, stdout)
		}
		return v.Prediction
	}
	if on, off := score(day), score(other); !(on > off) {
		t.Errorf("prediction on the user's 5-star day %g not above a day without ratings %g", on, off)
	}
	if on, off := score(next), score(other); !(on < off) {
		t.Errorf("prediction on the user's 1-star day %g not below a day without ratings %g", on, off)
	}
}

// TestEditedReportFlagged is the audit's edit: a report whose epsilon was
// lowered through the library and re-saved (Laplace scale 4.5 at
// sensitivity 4.5 relabelled epsilon 0.01) is flagged by Load and inspect.
func TestEditedReportFlagged(t *testing.T) {
	dir := t.TempDir()
	train, _ := trainTestLog(t, dir)
	out := filepath.Join(dir, "input.arrow")
	if _, stderr, err := trainTestRun(t, "--quiet", "train", "--data", train, "--epochs", "2", "--out", out, "--privacy", "input", "--epsilon", "1"); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	f, err := models.Load(out)
	if err != nil || f.PrivacyCheck != nil {
		t.Fatalf("load: %v, check %v", err, f.PrivacyCheck)
	}
	f.Privacy.Epsilon = 0.01
	f.Privacy.Releases[0].Epsilon = 0.01
	if err := models.Save(out, f, true); err != nil {
		t.Fatal(err)
	}
	g, err := models.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.PrivacyCheck) == 0 {
		t.Fatal("Load did not flag the edited report")
	}
	stdout, stderr, err := trainTestRun(t, "inspect", out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout+stderr, "does not check out") {
		t.Errorf("inspect did not flag the edited report:\n%s%s", stdout, stderr)
	}
}

// TestTrainReleasedHistory: what a model file keeps of the training
// history. Non-private: everything. Input perturbation: the losses
// (post-processing of perturbed values) but no wall time. Every other
// private mode: the epoch and step size only.
func TestTrainReleasedHistory(t *testing.T) {
	h := []completion.EpochRecord{{Epoch: 1, LearningRate: 0.01, TrainLoss: 3, TrainRMSE: 0.9, ValidRMSE: 0.95, Seconds: 0.25}}
	for _, tc := range []struct {
		name string
		r    *perturb.Report
		want completion.EpochRecord
	}{
		{"none", nil, h[0]},
		{"input", &perturb.Report{Mode: "input"}, completion.EpochRecord{Epoch: 1, LearningRate: 0.01, TrainLoss: 3, TrainRMSE: 0.9, ValidRMSE: 0.95}},
		{"gradient", &perturb.Report{Mode: "gradient"}, completion.EpochRecord{Epoch: 1, LearningRate: 0.01}},
		{"output", &perturb.Report{Mode: "output"}, completion.EpochRecord{Epoch: 1, LearningRate: 0.01}},
	} {
		got := dprec.ReleasedHistory(h, tc.r)
		if len(got) != 1 || got[0] != tc.want {
			t.Errorf("%s: released %+v, want %+v", tc.name, got, tc.want)
		}
	}
	if h[0].Seconds != 0.25 {
		t.Error("the caller's history was modified")
	}
}

// TestTrainPrivateRMSELabel: a private run's summary says what its train
// RMSE is measured against: the noisy values for input perturbation, the
// raw ratings (for the operator only) for the other modes; a non-private
// run prints it bare.
func TestTrainPrivateRMSELabel(t *testing.T) {
	dir := t.TempDir()
	train, _ := trainTestLog(t, dir)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"input", []string{"--privacy", "input", "--epsilon", "20"}, "(against the noisy values"},
		{"gradient", []string{"--privacy", "gradient", "--protect", "all", "--epsilon", "2", "--delta", "1e-5"}, "(raw ratings: for you only"},
		{"none", nil, ""},
	} {
		args := append([]string{"train", "--data", train, "--validation", "0", "--epochs", "3", "--out", filepath.Join(dir, tc.name+".arrow")}, tc.args...)
		stdout, stderr, err := trainTestRun(t, args...)
		if err != nil {
			t.Fatalf("%s: %v\n%s", tc.name, err, stderr)
		}
		var line string
		for _, l := range strings.Split(stdout, "\n") {
			if strings.HasPrefix(l, "train RMSE") {
				line = l
			}
		}
		if line == "" || (tc.want != "" && !strings.Contains(line, tc.want)) || (tc.want == "" && strings.Contains(line, "(")) {
			t.Errorf("%s: train RMSE line %q, want %q", tc.name, line, tc.want)
		}
		// The DP-SGD steps have no per-release epsilon: the summary gives
		// their noise multiplier, not "(0, 0)", and the notes their
		// sampling rate (q = 1 by default since issue 25: every rating in
		// every step, so the release carries no Poisson rate).
		if tc.name == "gradient" && (strings.Contains(stdout, "(0, 0)") || !strings.Contains(stdout, "noise multiplier z = ") || !strings.Contains(stdout, "Poisson sampling rate q = 1 (DefaultDPSGDRate)")) {
			t.Errorf("gradient: release lines\n%s", stdout)
		}
	}
}

// TestTrainPrivateUndeclaredScale: a private run on the documented default
// scale [0.5, 5] refuses a log whose ratings leave it (a joke log on
// [-10, 10] would be clamped to the wrong scale without a word), names the
// file and the flags, saves nothing; with the scale declared it trains,
// and a log inside the default scale needs no declaration.
func TestTrainPrivateUndeclaredScale(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("userId,itemId,rating\n")
	rng := rand.New(rand.NewPCG(5, 5))
	for u := 0; u < 30; u++ {
		for i := 0; i < 10; i++ {
			fmt.Fprintf(&b, "%d,%d,%.2f\n", u, i, -10+20*rng.Float64())
		}
	}
	joke := filepath.Join(dir, "joke.csv")
	if err := os.WriteFile(joke, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "m.dprec")
	for _, mode := range []string{"bias", "als"} {
		args := []string{"-q", "train", "--data", joke, "--out", out, "--privacy", mode, "--epsilon", "1", "--delta", "1e-6", "--seed", "1"}
		_, _, err := trainTestRun(t, args...)
		if ec, ok := err.(cli.ExitCoder); !ok || ec.ExitCode() != exitUsage || !strings.Contains(err.Error(), "joke.csv") || !strings.Contains(err.Error(), "--rating-min") {
			t.Fatalf("%s on [-10, 10] without a declared scale: %v, want a usage error naming the file and --rating-min", mode, err)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Fatalf("%s: a refused run left %s", mode, out)
		}
		if _, _, err := trainTestRun(t, append(args, "--rating-min", "-10", "--rating-max", "10", "--force")...); err != nil {
			t.Fatalf("%s with --rating-min -10 --rating-max 10: %v", mode, err)
		}
		os.Remove(out)
	}
	// The experiment refuses the same log, and runs with the scale declared.
	exp := []string{"-q", "experiment", "completion-privacy", "--ratings", joke, "--datasets", "ratings", "--modes", "bias", "--epsilons", "1", "--seeds", "1", "--epochs", "2", "--time-unit", "none", "--out", filepath.Join(dir, "exp")}
	if _, _, err := trainTestRun(t, exp...); !isUsage(err) || !strings.Contains(err.Error(), "joke.csv") {
		t.Fatalf("experiment on [-10, 10] without a declared scale: %v, want a usage error naming the file", err)
	}
	if _, _, err := trainTestRun(t, append(exp, "--rating-min", "-10", "--rating-max", "10")...); err != nil {
		t.Fatalf("experiment with the scale declared: %v", err)
	}
	train, _ := trainTestLog(t, dir)
	if _, _, err := trainTestRun(t, "-q", "train", "--data", train, "--out", out, "--privacy", "bias", "--epsilon", "1", "--seed", "1"); err != nil {
		t.Fatalf("a 1-5 log on the default scale: %v", err)
	}
}

func isUsage(err error) bool {
	ec, ok := err.(cli.ExitCoder)
	return ok && ec.ExitCode() == exitUsage
}
