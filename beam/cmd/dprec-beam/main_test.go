package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dprec/dprec"
	"github.com/dprec/dprec/beam/pipeline"
	"github.com/dprec/dprec/completion"
	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/models"
)

// The test binary doubles as dprec-beam: with DPREC_BEAM_MAIN=1 it runs
// main (the job server, or a command submitted to it) instead of the tests.
func TestMain(m *testing.M) {
	if os.Getenv("DPREC_BEAM_MAIN") == "1" {
		os.Args = append([]string{"dprec-beam"}, os.Args[1:]...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func command(args ...string) *exec.Cmd {
	c := exec.Command(os.Args[0], args...)
	c.Env = append(os.Environ(), "DPREC_BEAM_MAIN=1")
	return c
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// writeLog writes a small CSV rating log with a header (integer IDs).
func writeLog(t *testing.T) string {
	r := rand.New(rand.NewPCG(3, 4))
	var b strings.Builder
	b.WriteString("userId,movieId,rating,timestamp\n")
	for u := 1; u <= 40; u++ {
		for j := 1; j <= 30; j++ {
			if r.Float64() < 0.35 {
				v := min(5, max(0.5, float64(int((3+float64(u%3-1)+0.7*r.NormFloat64())*2+0.5))/2))
				fmt.Fprintf(&b, "%d,%d,%g,%d\n", u*7, 100+j, v, 1e9+r.IntN(1e6))
			}
		}
	}
	p := filepath.Join(t.TempDir(), "ratings.csv")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestUniversalRunnerJobServer runs stats and train through Prism started
// as a separate job-server process on loopback, with --runner universal
// (the path of a Flink or Spark job server): the counts are the loader's
// and the model is completion's ALS model, bit for bit.
func TestUniversalRunnerJobServer(t *testing.T) {
	port := freePort(t)
	srv := command("job-server", "--job_port", fmt.Sprint(port))
	out, err := srv.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	srv.Stderr = os.Stderr
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		srv.Process.Kill()
		srv.Wait()
	}()
	ready := make(chan bool)
	go func() {
		sc := bufio.NewScanner(out)
		ok := sc.Scan() && strings.Contains(sc.Text(), "listening")
		ready <- ok
		for sc.Scan() {
		}
	}()
	select {
	case ok := <-ready:
		if !ok {
			t.Fatal("job server did not start")
		}
	case <-time.After(60 * time.Second):
		t.Fatal("job server did not start in 60 s")
	}
	endpoint := fmt.Sprintf("localhost:%d", port)
	universal := []string{"--runner", "universal", "--endpoint", endpoint, "--environment_type", "LOOPBACK"}
	log := writeLog(t)
	st, _, err := data.Load(log, data.LoadOptions{Builder: data.BuilderOptions{TimeUnit: data.TimeNone}})
	if err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	c := command(append([]string{"stats", "--data", log, "--out", filepath.Join(dir, "stats"), "--json"}, universal...)...)
	c.Stderr = os.Stderr
	b, err := c.Output()
	if err != nil {
		t.Fatalf("stats: %v", err)
	}
	var counts pipeline.Counts
	if err := json.Unmarshal(b, &counts); err != nil {
		t.Fatalf("stats output %q: %v", b, err)
	}
	if int(counts.Ratings) != st.NNZ() || int(counts.Users) != st.Dims[0] || int(counts.Items) != st.Dims[1] {
		t.Fatalf("stats: %d ratings %d users %d items, loader %d %d %d", counts.Ratings, counts.Users, counts.Items, st.NNZ(), st.Dims[0], st.Dims[1])
	}

	model := filepath.Join(dir, "m.arrow")
	c = command(append([]string{"train", "--data", log, "--out", model, "--rank", "4", "--seed", "21", "--epochs", "2"}, universal...)...)
	c.Stderr = os.Stderr
	if err := c.Run(); err != nil {
		t.Fatalf("train: %v", err)
	}
	f, err := models.Load(model)
	if err != nil {
		t.Fatal(err)
	}
	m, err := decomposition.NewModel(decomposition.CP, st.Dims, []int{4}, true)
	if err != nil {
		t.Fatal(err)
	}
	s := completion.Settings{Solver: completion.SolverALS, Epochs: 2}
	if _, err := completion.Train(st, nil, m, &s, rand.NewPCG(21, pipeline.SeedStream), nil); err != nil {
		t.Fatal(err)
	}
	for k := range m.Factors {
		for i, v := range m.Factors[k] {
			if f.Model.Factors[k][i] != v {
				t.Fatalf("mode %d factor %d: %v, single machine %v", k, i, f.Model.Factors[k][i], v)
			}
		}
		for i, v := range m.Bias[k] {
			if f.Model.Bias[k][i] != v {
				t.Fatalf("mode %d bias %d: %v, single machine %v", k, i, f.Model.Bias[k][i], v)
			}
		}
	}
	if f.Model.Mean != m.Mean {
		t.Fatalf("mean %v, single machine %v", f.Model.Mean, m.Mean)
	}
}

// TestCommandsInProcess: eval and recommend through the CLI on Prism
// in-process (the default runner).
func TestCommandsInProcess(t *testing.T) {
	log := writeLog(t)
	dir := t.TempDir()
	model := filepath.Join(dir, "m.arrow")
	steps := [][]string{
		{"train", "--data", log, "--out", model, "--rank", "3", "--epochs", "1", "--json"},
		{"eval", "--model", model, "--data", log, "--json"},
		{"recommend", "--all-users", "--model", model, "--out", filepath.Join(dir, "recs"), "--n", "3"},
	}
	for _, args := range steps {
		c := command(args...)
		c.Stderr = os.Stderr
		if b, err := c.Output(); err != nil {
			t.Fatalf("%s: %v\n%s", args[0], err, b)
		}
	}
	cat := filepath.Join(dir, "items.csv")
	var ids strings.Builder
	ids.WriteString("movieId\n")
	for j := 101; j <= 130; j++ {
		fmt.Fprintf(&ids, "%d\n", j)
	}
	if err := os.WriteFile(cat, []byte(ids.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	c := command("train", "--privacy", "bias", "--items", cat, "--epsilon", "1", "--data", log, "--out", filepath.Join(dir, "bias.arrow"), "--json")
	c.Stderr = os.Stderr
	b, err := c.Output()
	if err != nil {
		t.Fatalf("train --privacy bias: %v\n%s", err, b)
	}
	bf, err := models.Load(filepath.Join(dir, "bias.arrow"))
	if err != nil {
		t.Fatal(err)
	}
	if !bf.Privacy.Private() || bf.Model.Dims[1] != 30 {
		t.Fatalf("bias model: private %v, %d items (catalogue 30)", bf.Privacy.Private(), bf.Model.Dims[1])
	}
	if err := command("train", "--privacy", "bias", "--data", log, "--out", filepath.Join(dir, "b2.arrow")).Run(); err == nil {
		t.Fatal("train --privacy bias without --items succeeded")
	}
	// Private ALS (residual route): a billboard model dprec eval --train
	// scores as it scores dprec train's (each user folded in from their own
	// training ratings with the report's penalties).
	alsPath := filepath.Join(dir, "als.arrow")
	c = command("train", "--privacy", "als", "--items", cat, "--epsilon", "50", "--delta", "1e-6", "--rank", "2", "--data", log, "--out", alsPath, "--json")
	c.Stderr = os.Stderr
	if b, err = c.Output(); err != nil {
		t.Fatalf("train --privacy als: %v\n%s", err, b)
	}
	af, err := models.Load(alsPath)
	if err != nil {
		t.Fatal(err)
	}
	if !af.Privacy.Private() || af.Privacy.Mode != "als" || af.Privacy.FoldPerRating == 0 || af.Model.Dims[1] != 30 || !af.Billboard() {
		t.Fatalf("als model: private %v, mode %s, fold %v, %d items (catalogue 30)", af.Privacy.Private(), af.Privacy.Mode, af.Privacy.FoldPerRating, af.Model.Dims[1])
	}
	st, _, err := data.Load(log, data.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fold := completion.BillboardFoldFor(af.Privacy)
	ev, err := models.Evaluate(models.NewPredictor(af), st, models.EvalOptions{Fold: &fold, Train: st})
	if err != nil || !(ev.RMSE > 0 && ev.RMSE < 1.5) {
		t.Fatalf("eval --train of the private ALS model: RMSE %v, %v", ev, err)
	}
	for _, args := range [][]string{
		{"--privacy", "als", "--epsilon", "5", "--delta", "1e-6"},                                            // no --items
		{"--privacy", "als", "--items", cat, "--epsilon", "5"},                                               // no --delta
		{"--privacy", "als", "--items", cat, "--epsilon", "5", "--delta", "1e-6", "--mechanism", "gaussian"}, // not its mechanism
	} {
		c := command(append([]string{"train", "--data", log, "--out", filepath.Join(dir, "a2.arrow")}, args...)...)
		if err := c.Run(); err == nil || c.ProcessState.ExitCode() != 2 {
			t.Fatalf("train %v: %v, want a usage error (exit 2)", args, err)
		}
	}
	if parts, _ := filepath.Glob(filepath.Join(dir, "recs", "part-*.parquet")); len(parts) != 4 {
		t.Fatalf("recommend wrote %d files, want 4", len(parts))
	}
	if err := command("train", "--data", log).Run(); err == nil {
		t.Fatal("train without --out succeeded")
	}
	for _, args := range [][]string{
		{"eval", "--model", model, "--data", log, "--ranking", "popular"},
		{"recommend", "--all-users", "--model", model, "--out", filepath.Join(dir, "recs2"), "--ranking", "Relevance"},
		{"eval", "--model", model, "--data", log, "--shrinkage", "-1"},
	} {
		c := command(args...)
		if err := c.Run(); err == nil || c.ProcessState.ExitCode() != 2 {
			t.Fatalf("%v: %v, want a usage error (exit 2)", args, err)
		}
	}
	c = command("eval", "--model", model, "--data", log, "--ranking", "credibility")
	if b, err := c.Output(); err != nil || !strings.Contains(string(b), "ranking credibility over") {
		t.Fatalf("eval --ranking credibility: %v\n%s", err, b)
	}
}

// TestTrainUserUnit: train --privacy bias --privacy-unit user writes a
// user-level billboard model (one placeholder user, the catalogue's
// items, a report of the user unit with k), and the flags that do not go
// together are usage errors (exit 2) before any pipeline runs: the user
// unit with --privacy als ("user level: bias only in dprec-beam") or
// without a privacy mode, --max-ratings-per-user without the user unit,
// the user unit without k, without --items, or with Gaussian noise and no
// delta, and an unknown unit.
func TestTrainUserUnit(t *testing.T) {
	dir := t.TempDir()
	log := writeLog(t)
	cat := filepath.Join(dir, "items.csv")
	var ids strings.Builder
	ids.WriteString("movieId\n")
	for j := 101; j <= 130; j++ {
		fmt.Fprintf(&ids, "%d\n", j)
	}
	if err := os.WriteFile(cat, []byte(ids.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "user.arrow")
	c := command("train", "--privacy", "bias", "--privacy-unit", "user", "--max-ratings-per-user", "5", "--items", cat,
		"--epsilon", "1", "--delta", "1e-5", "--data", log, "--out", out, "--json")
	c.Stderr = os.Stderr
	b, err := c.Output()
	if err != nil {
		t.Fatalf("train --privacy-unit user: %v\n%s", err, b)
	}
	var res struct {
		Ratings, Users, Bounded int64
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	f, err := models.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if !f.Privacy.Private() || f.Privacy.Unit != "user" || f.Model.Dims[0] != 1 || f.Model.Dims[1] != 30 || f.Dicts[0].String(0) != dprec.NoUserID {
		t.Fatalf("user-level model: private %v, unit %q, dims %v, user %q", f.Privacy.Private(), f.Privacy.Unit, f.Model.Dims, f.Dicts[0].String(0))
	}
	if res.Ratings > 5*res.Users || res.Bounded == 0 {
		t.Fatalf("%d ratings of %d users (%d dropped by the bound): more than k = 5 a user, or nothing bounded", res.Ratings, res.Users, res.Bounded)
	}
	base := []string{"train", "--data", log, "--out", filepath.Join(dir, "x.arrow"), "--epsilon", "1", "--delta", "1e-5"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--privacy", "als", "--privacy-unit", "user", "--max-ratings-per-user", "5", "--items", cat}, "user level: bias only in dprec-beam"},
		{[]string{"--privacy", "none", "--privacy-unit", "user", "--max-ratings-per-user", "5", "--items", cat}, "user level: bias only in dprec-beam"},
		{[]string{"--privacy", "bias", "--max-ratings-per-user", "5", "--items", cat}, "--max-ratings-per-user applies to --privacy-unit user only"},
		{[]string{"--privacy", "bias", "--privacy-unit", "entry", "--max-ratings-per-user", "5", "--items", cat}, "--max-ratings-per-user applies to --privacy-unit user only"},
		{[]string{"--privacy", "bias", "--privacy-unit", "user", "--items", cat}, "needs --max-ratings-per-user"},
		{[]string{"--privacy", "bias", "--privacy-unit", "user", "--max-ratings-per-user", "5"}, "needs --items"},
		{[]string{"--privacy", "bias", "--privacy-unit", "user", "--max-ratings-per-user", "5", "--items", cat, "--delta", "0"}, "needs --delta > 0"},
		{[]string{"--privacy", "bias", "--privacy-unit", "users", "--max-ratings-per-user", "5", "--items", cat}, "want entry or user"},
	} {
		c := command(append(base, tc.args...)...)
		var stderr strings.Builder
		c.Stderr = &stderr
		if err := c.Run(); err == nil || c.ProcessState.ExitCode() != 2 {
			t.Fatalf("train %v: %v, want a usage error (exit 2)", tc.args, err)
		}
		if !strings.Contains(stderr.String(), tc.want) {
			t.Fatalf("train %v: %q, want it to say %q", tc.args, stderr.String(), tc.want)
		}
	}
}
