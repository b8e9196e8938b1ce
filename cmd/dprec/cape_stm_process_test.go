package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCapeProcessesSTM runs capeAGN for the single-topic model with the
// aggregator, the noise generator and two sites (each reading its own UCI
// docword file over a shared vocabulary) as separate processes on loopback,
// and checks that the two planted topics are recovered at a large epsilon;
// then that a site given both rows and documents is refused.
func TestCapeProcessesSTM(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and starts processes; skipped under -short")
	}
	dir, run := capeProcessEnv(t, 2)
	// Topic 0 puts its mass on words 1-3, topic 1 on words 4-6 (1-based).
	vocab := "alpha\nbeta\ngamma\ndelta\nepsilon\nzeta\n"
	if err := os.WriteFile(filepath.Join(dir, "vocab.txt"), []byte(vocab), 0o600); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(21, 22))
	const docs, words = 2000, 6
	for s := 1; s <= 2; s++ {
		var lines []string
		nnz := 0
		for d := 1; d <= docs; d++ {
			base := 1 + 3*(d%2)
			counts := map[int]int{}
			for w := 0; w < words; w++ {
				counts[base+r.IntN(3)]++
			}
			for id := 1; id <= 6; id++ {
				if n := counts[id]; n > 0 {
					lines = append(lines, fmt.Sprintf("%d %d %d", d, id, n))
					nnz++
				}
			}
		}
		body := fmt.Sprintf("%d\n6\n%d\n%s\n", docs, nnz, strings.Join(lines, "\n"))
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("docword%d.txt", s)), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	agg, noise := capeFreePort(t), capeFreePort(t)
	var aout, aerr bytes.Buffer
	a := run("--seed", "5", "cape", "aggregate", "--keys", "keys/aggregator.json", "--listen", agg, "--sites", "2",
		"--job", "agn", "--model", "stm", "--dim", "6", "--k", "2", "--timeout", "30s", "--deadline", "90s", "--json", "--out", "topics.csv")
	a.Stdout, a.Stderr = &aout, &aerr
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	others := []*exec.Cmd{run("--seed", "5", "cape", "noise", "--keys", "keys/noise.json", "--listen", noise, "--aggregator", "http://"+agg, "--deadline", "60s")}
	for s := 1; s <= 2; s++ {
		others = append(others, run("--seed", "5", "cape", "site", "--id", fmt.Sprint(s), "--keys", fmt.Sprintf("keys/site-%d.json", s),
			"--aggregator", "http://"+agg, "--noise", "http://"+noise, "--corpus", fmt.Sprintf("docword%d.txt", s), "--vocab", "vocab.txt",
			"--epsilon", "100", "--delta", "1e-5", "--deadline", "60s"))
	}
	for _, c := range others {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Wait(); err != nil {
		t.Fatalf("aggregator: %v\n%s", err, aerr.String())
	}
	for _, c := range others {
		if err := c.Wait(); err != nil {
			t.Fatalf("%v: %v", c.Args, err)
		}
	}
	var got struct {
		Weights []float64
		Privacy struct{ Mode string }
	}
	if err := json.Unmarshal(aout.Bytes(), &got); err != nil {
		t.Fatalf("aggregator output: %v\n%s", err, aout.String())
	}
	if len(got.Weights) != 2 {
		t.Fatalf("weights %v, want 2 (output %s)", got.Weights, aout.String())
	}
	for _, w := range got.Weights {
		if w < 0.35 || w > 0.65 {
			t.Errorf("weights %v, want about 0.5 each", got.Weights)
		}
	}
	if got.Privacy.Mode != "cape-agn" {
		t.Errorf("privacy mode %q", got.Privacy.Mode)
	}
	// topics.csv: D = 6 rows (words) x K = 2 columns (topics). Each topic
	// must put at least 80% of its positive mass on one planted word group,
	// and the two topics on different groups.
	raw, err := os.ReadFile(filepath.Join(dir, "topics.csv"))
	if err != nil {
		t.Fatal(err)
	}
	var rows [][]float64
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var a, b float64
		if _, err := fmt.Sscanf(strings.ReplaceAll(line, ",", " "), "%g %g", &a, &b); err != nil {
			continue // header
		}
		rows = append(rows, []float64{a, b})
	}
	if len(rows) != 6 {
		t.Fatalf("topics.csv has %d numeric rows, want 6:\n%s", len(rows), raw)
	}
	group := func(k int) int {
		var g [2]float64
		for w, r := range rows {
			g[w/3] += max(r[k], 0)
		}
		switch {
		case g[0] >= 0.8*(g[0]+g[1]):
			return 0
		case g[1] >= 0.8*(g[0]+g[1]):
			return 1
		}
		return -1
	}
	if g0, g1 := group(0), group(1); g0 < 0 || g1 < 0 || g0 == g1 {
		t.Errorf("topics not recovered (groups %d, %d):\n%s", g0, g1, raw)
	}

	// Rows and documents at once are refused before any network traffic.
	out, err := run("cape", "site", "--id", "1", "--keys", "keys/site-1.json", "--data", "x.csv", "--corpus", "docword1.txt", "--epsilon", "1").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "not both") {
		t.Errorf("site with --data and --corpus: %v\n%s", err, out)
	}
}
