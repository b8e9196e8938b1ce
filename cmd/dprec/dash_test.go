package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dprec/dprec/data"
)

// TestDashIsTheCommands: "-" as an output path is the command's business
// (the library refuses it, data.ErrNotAFile): data synth --truth - and a
// data split part named "-" go to the output stream, called through their
// run functions; train and tune refuse --out - before reading anything.
func TestDashIsTheCommands(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	quiet := globalOptions{Quiet: true}
	log := filepath.Join(dir, "r.csv")

	so := data.DefaultSynthOptions()
	so.Users, so.Items, so.Times, so.Ratings = 10, 8, 0, 40
	s, out, _ := testStreams()
	if err := datasynthRun(&datasynthOptions{globalOptions: quiet, Synth: so, Seed: 2, Out: log, Truth: "-"}, s); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(strings.TrimSpace(out.String()), "{") {
		t.Errorf("synth --truth -: output %.200q, want the truth JSON", out)
	}

	s, out, _ = testStreams()
	err := datasplitRun(&datasplitOptions{globalOptions: quiet, File: log, Method: "random", Fraction: 0.25,
		Train: filepath.Join(dir, "train.csv"), Test: "-", Seed: 1, SeedGiven: true}, s)
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(out.String(), "\n"); !strings.HasPrefix(out.String(), "userId,movieId,rating\n") || lines < 10 {
		t.Errorf("split --test -: %d lines on the output stream: %.200q", lines, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "-")); err == nil {
		t.Error(`a file named "-" was written`)
	}

	for _, cmd := range [][]string{
		{"train", "--data", log, "--out", "-"},
		{"tune", "--data", log, "--grid", "reg=0.1", "--out", "-"},
	} {
		_, errs, code := cliRun(t, cmd...)
		if code != exitUsage || !strings.Contains(errs, "--out -: a model file is written to a file") {
			t.Errorf("%v: exit %d, %q", cmd, code, errs)
		}
	}
}
