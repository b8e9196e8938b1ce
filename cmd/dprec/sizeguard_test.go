package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/dprec/dprec/completion"
	"github.com/dprec/dprec/decomposition"
)

// TestSizeGuard is the table of the size guard (sizeguard.go; issue 24
// items 6, 7 and 9 and their generalisation): every numeric flag that sizes
// work or memory is refused with exit 2, naming the flag and the figure,
// when it cannot run on this machine (before the data is read when the
// figure alone decides it, else after loading and before training), and
// figures that do fit are accepted. Memory cases give --max-memory so the
// outcome does not depend on the machine; time cases give --threads 1.
// Nothing here trains beyond a few epochs on the small test log.
func TestSizeGuard(t *testing.T) {
	dir := t.TempDir()
	log, _ := trainTestLog(t, dir) // 40 users x 25 items x 30 days, order 3
	_, model, _ := outputTestModel(t)
	out := func(name string) string { return filepath.Join(dir, name) }
	big := "rank=1,2,3,4,5,6,7,8,9,10 reg=1,2,3,4,5,6,7,8,9,10 lr=0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9,0.01 decay=1,2,3,4,5,6,7,8,9,10 init-scale=1,2,3,4,5,6,7,8,9,10 reg-bias=1,2,3,4,5,6,7,8,9,10"
	for _, tc := range []struct {
		name string
		args []string
		code int
		want []string // substrings of stderr
	}{
		// --threads: at most completion.MaxThreads on every command
		// (5,000 panicked in the SGD layout; 100,000 hung DP-SGD).
		{"train threads 5000", []string{"train", "--data", log, "--solver", "sgd", "--threads", "5000", "-o", out("a.arrow")}, exitUsage, []string{"--threads 5000: at most 1024"}},
		{"gradient threads 100000", []string{"train", "--data", log, "--privacy", "gradient", "--epsilon", "1", "--delta", "1e-6", "--threads", "100000", "-o", out("b.arrow")}, exitUsage, []string{"--threads 100000: at most 1024"}},
		{"eval threads", []string{"eval", "-m", model, "--data", log, "--threads", "2000"}, exitUsage, []string{"--threads 2000: at most 1024"}},
		{"recommend threads", []string{"recommend", "-m", model, "--all-users", "--threads", "1025"}, exitUsage, []string{"--threads 1025: at most 1024"}},
		{"data stats threads", []string{"data", "stats", log, "--threads", "99999"}, exitUsage, []string{"--threads 99999: at most 1024"}},
		// SGD threads by memory: 16 p^3 bytes on any log (before
		// reading), 16 p^4 on this order-3 log (after loading).
		{"sgd threads any log", []string{"train", "--data", log, "--solver", "sgd", "--threads", "600", "--max-memory", "1GiB", "-o", out("c.arrow")}, exitUsage,
			[]string{"--threads 600", "SGD stratification", "whatever the log", "--max-memory limit of 1.0 GiB", "could fit"}},
		{"sgd threads this log", []string{"train", "--data", log, "--solver", "sgd", "--threads", "200", "--max-memory", "1GiB", "-o", out("d.arrow")}, exitUsage,
			[]string{"--threads 200", "200^3", "at most 89 threads fit"}},
		{"sgd threads fit", []string{"train", "--data", log, "--solver", "sgd", "--threads", "40", "--epochs", "1", "--max-memory", "1GiB", "-o", out("e.arrow")}, exitOK, nil},
		// --rank / --ranks: the rank-squared systems of Gibbs and ALS,
		// the Tucker core, the time of a Gibbs run.
		{"rank 100000 gibbs", []string{"train", "--data", log, "--rank", "100000", "--max-memory", "8GiB", "-o", out("f.arrow")}, exitUsage,
			[]string{"--rank 100000", "normal equations", "whatever the log"}},
		{"ranks tucker", []string{"train", "--data", log, "--model", "tucker", "--ranks", "3000,3000,3000", "--solver", "als", "--max-memory", "8GiB", "-o", out("g.arrow")}, exitUsage,
			[]string{"--ranks 3000,3000,3000"}},
		{"rank 5000 gibbs time", []string{"train", "--data", log, "--rank", "5000", "--threads", "1", "--max-memory", "8GiB", "-o", out("h.arrow")}, exitUsage,
			[]string{"--rank 5000", "floating-point operations", "days", "at most rank"}},
		{"rank 100000 implicit", []string{"train", "--data", log, "--objective", "implicit", "--rank", "100000", "--max-memory", "8GiB", "-o", out("i.arrow")}, exitUsage,
			[]string{"--rank 100000", "normal equations"}},
		// --epochs, --iterations: at most completion.MaxEpochs.
		{"epochs", []string{"train", "--data", log, "--epochs", "2000000", "-o", out("j.arrow")}, exitUsage, []string{"--epochs 2000000: at most 1000000"}},
		{"iterations", []string{"train", "--data", log, "--objective", "implicit", "--iterations", "2000000", "-o", out("k.arrow")}, exitUsage, []string{"--iterations 2000000: at most 1000000"}},
		// tune: --folds above the ratings (after loading), the runs,
		// --random, the grid's combinations, a grid point's memory, the
		// grid's time.
		{"tune folds above ratings", []string{"tune", "--data", log, "--grid", "rank=2", "--folds", "5000"}, exitUsage, []string{"--folds 5000: more than the log's", "ratings"}},
		{"tune folds", []string{"tune", "--data", log, "--grid", "rank=2", "--folds", "200000"}, exitUsage, []string{"--folds 200000: at most 100000"}},
		{"tune runs", []string{"tune", "--data", log, "--grid", "rank=1,2,3", "--folds", "50000"}, exitUsage, []string{"--folds 50000 x 3 grid points = 150000 training runs"}},
		{"tune random", []string{"tune", "--data", log, "--grid", "rank=2", "--random", "200000"}, exitUsage, []string{"--random 200000: at most 100000"}},
		{"tune grid size", []string{"tune", "--data", log, "--grid", big}, exitUsage, []string{"--grid: 1e+06 combinations, at most 100000"}},
		{"tune grid rank", []string{"tune", "--data", log, "--grid", "rank=2,100000", "--max-memory", "8GiB"}, exitUsage, []string{"--grid rank=100000", "normal equations"}},
		{"tune grid time", []string{"tune", "--data", log, "--grid", "rank=3000,3001", "--folds", "10", "--threads", "1"}, exitUsage, []string{"2 grid points x 10 folds: roughly", "days"}},
		// data split --k, the experiments' --seeds, data synth's sizes.
		{"split k", []string{"data", "split", log, "--method", "kfold", "--k", "5000", "--out-dir", out("folds")}, exitUsage, []string{"--k 5000: at most 1000"}},
		{"experiment seeds", []string{"experiment", "completion-synthetic", "--seeds", "20000", "--out", out("x.csv")}, exitUsage, []string{"--seeds 20000: at most 10000"}},
		{"synth ratings", []string{"data", "synth", "--ratings", "1000000000000", "--users", "10000000", "--items", "1000000", "--out", out("s.csv")}, exitUsage, []string{"--ratings 1000000000000", "more than half the physical memory"}},
		// top-N and eval's k cost nothing above the catalogue (the heaps
		// hold at most the items): accepted.
		{"recommend top", []string{"recommend", "-m", model, "--user", "1003", "--top", "1000000000000"}, exitOK, nil},
		{"eval k", []string{"eval", "-m", model, "--data", log, "--k", "1000000000000", "--threads", "3"}, exitOK, nil},
	} {
		_, stderr, code := cliRun(t, append([]string{"--quiet"}, tc.args...)...)
		if code != tc.code {
			t.Errorf("%s: exit %d, want %d\n%s", tc.name, code, tc.code, stderr)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("%s: stderr lacks %q:\n%s", tc.name, w, stderr)
			}
		}
	}
}

// TestSizeGuardNotes: a run that fits but is long gets a note with its
// time estimate (rank 2000 under Gibbs ran for minutes with none), a short
// one none, one beyond sizeRefuseAfter a refusal naming the figure.
func TestSizeGuardNotes(t *testing.T) {
	job := func(rank, epochs int) sizeJob {
		j := sizeJob{rankFlag: "--rank", w: completion.Workload{Kind: decomposition.CP, Dims: []int{600, 900, 100}, Ranks: []int{rank, rank, rank},
			NNZ: 5000, Settings: completion.Settings{Solver: completion.SolverGibbs, Threads: 1, Epochs: epochs}}}
		j.what = j.rankText()
		return j
	}
	if note, err := job(10, 200).check(0); note != "" || err != nil {
		t.Errorf("rank 10: note %q, error %v", note, err)
	}
	if note, err := job(500, 200).check(0); err != nil || !strings.Contains(note, "--rank 500: about") || !strings.Contains(note, "hours") {
		t.Errorf("rank 500: note %q, error %v", note, err)
	}
	_, err := job(2000, 200).check(0)
	if err == nil || !strings.HasPrefix(err.Error(), "--rank 2000: ") || !strings.Contains(err.Error(), "at most rank") {
		t.Errorf("rank 2000: %v", err)
	}
	// With the rank fixed, fewer sweeps would fit: the epochs are named
	// when the rank alone cannot be lowered (no rank flag, as for a grid
	// given elsewhere).
	j := job(2000, 200)
	j.rankFlag, j.what = "", "this run"
	if _, err := j.check(0); err == nil || !strings.HasPrefix(err.Error(), "--epochs 200: ") {
		t.Errorf("rank 2000 without a rank flag: %v", err)
	}
}
