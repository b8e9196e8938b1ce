package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func capeFreePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// capeProcessEnv builds dprec into a temporary directory and returns that
// directory and a runner for the binary with it as working directory, bound
// to a 3-minute context; it also writes the keyrings of S sites to keys/.
func capeProcessEnv(t *testing.T, sites int) (dir string, run func(args ...string) *exec.Cmd) {
	t.Helper()
	dir = t.TempDir()
	bin := filepath.Join(dir, "dprec")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	run = func(args ...string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Dir = dir
		return cmd
	}
	if out, err := run("cape", "keys", "--sites", fmt.Sprint(sites), "--dir", "keys").CombinedOutput(); err != nil {
		t.Fatalf("keys: %v\n%s", err, out)
	}
	return dir, run
}

// TestCapeProcessesMatchInProcess builds dprec, runs the aggregator, the
// noise generator and two sites as separate processes on loopback, and
// checks the result equals the in-process dprec pca run with the same
// seed; then checks that a missing site gives a clear error.
func TestCapeProcessesMatchInProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and starts processes; skipped under -short")
	}
	dir, run := capeProcessEnv(t, 2)
	for s := 1; s <= 2; s++ {
		var b strings.Builder
		b.WriteString("x,y,z\n")
		for i := 0; i < 50; i++ {
			fmt.Fprintf(&b, "%g,%g,%g\n", 0.3*float64((i*s)%7)/7, 0.5*float64((i+s)%5)/5, 0.1)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("s%d.csv", s)), []byte(b.String()), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	agg, noise := capeFreePort(t), capeFreePort(t)
	start := func(sites []int, timeout string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer, []*exec.Cmd) {
		var aout, aerr bytes.Buffer
		a := run("--seed", "11", "cape", "aggregate", "--keys", "keys/aggregator.json", "--listen", agg, "--sites", "2",
			"--dim", "3", "--k", "2", "--timeout", timeout, "--deadline", "60s", "--json")
		a.Stdout, a.Stderr = &aout, &aerr
		if err := a.Start(); err != nil {
			t.Fatal(err)
		}
		var others []*exec.Cmd
		n := run("--seed", "11", "cape", "noise", "--keys", "keys/noise.json", "--listen", noise, "--aggregator", "http://"+agg, "--deadline", "20s")
		others = append(others, n)
		for _, s := range sites {
			others = append(others, run("--seed", "11", "cape", "site", "--id", fmt.Sprint(s), "--keys", fmt.Sprintf("keys/site-%d.json", s),
				"--aggregator", "http://"+agg, "--noise", "http://"+noise, "--data", fmt.Sprintf("s%d.csv", s), "--epsilon", "1", "--delta", "1e-5", "--deadline", "20s"))
		}
		for _, c := range others {
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
		}
		return a, &aout, &aerr, others
	}
	a, aout, aerr, others := start([]int{1, 2}, "20s")
	if err := a.Wait(); err != nil {
		t.Fatalf("aggregator: %v\n%s", err, aerr)
	}
	for _, c := range others {
		if err := c.Wait(); err != nil {
			t.Fatalf("%v: %v", c.Args, err)
		}
	}
	var got struct{ Eigenvalues []float64 }
	if err := json.Unmarshal(aout.Bytes(), &got); err != nil {
		t.Fatalf("aggregator output: %v\n%s", err, aout)
	}
	out, err := run("--seed", "11", "pca", "--data", "s1.csv", "--data", "s2.csv", "--k", "2", "--epsilon", "1", "--delta", "1e-5", "--json").Output()
	if err != nil {
		t.Fatal(err)
	}
	var want struct{ Eigenvalues []float64 }
	if err := json.Unmarshal(out, &want); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got.Eigenvalues) != fmt.Sprint(want.Eigenvalues) {
		t.Errorf("multi-process eigenvalues %v, in-process %v", got.Eigenvalues, want.Eigenvalues)
	}

	// Site 2 missing: the aggregator names it.
	a, _, aerr, others = start([]int{1}, "2s")
	if err := a.Wait(); err == nil {
		t.Fatal("aggregator succeeded with a missing site")
	}
	if !strings.Contains(aerr.String(), "site/2") {
		t.Errorf("error does not name the missing site:\n%s", aerr)
	}
	for _, c := range others {
		_ = c.Process.Kill()
		_ = c.Wait()
	}
}
