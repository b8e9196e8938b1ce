package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestSpectralRefinesByDefault: without --refine a non-private lda or stm
// run refines its spectral topics by spectralDefaultRefine sweeps and says
// so on stderr; --refine 0 keeps the spectral topics alone; a private run
// (and a mixture) is not refined, and a private lda or stm run says why
// (issue 23: before, the default was no refinement).
func TestSpectralRefinesByDefault(t *testing.T) {
	dir := t.TempDir()
	corpus := spectralTwoThemes(t, dir)
	vocab := filepath.Join(dir, "vocab.txt")
	base := []string{"spectral", "--corpus", corpus, "--topics", "2", "--seed", "1", "--json"}
	const note = "refined with 20 sweeps of variational EM"
	for _, tc := range []struct {
		name       string
		args       []string
		wantRefine int
		wantErr    string // on stderr ("" : neither note)
	}{
		{"lda default", []string{"--model", "lda"}, spectralDefaultRefine, note},
		{"stm default", []string{"--model", "stm"}, spectralDefaultRefine, note},
		{"lda --refine 0", []string{"--model", "lda", "--refine", "0"}, 0, ""},
		{"lda --refine 3", []string{"--model", "lda", "--refine", "3"}, 3, ""},
		{"private stm", []string{"--model", "stm", "--method", "agn", "--epsilon", "1", "--delta", "1e-6", "--vocab", vocab, "--public-vocab"}, 0, "not refined: a private run"},
	} {
		out, errOut, err := trainTestRun(t, append(append([]string{}, base...), tc.args...)...)
		if err != nil {
			t.Fatalf("%s: %v\n%s", tc.name, err, errOut)
		}
		var o spectralOutput
		if err := json.Unmarshal([]byte(out), &o); err != nil {
			t.Fatalf("%s: %v\n%s", tc.name, err, out)
		}
		if o.Refine != tc.wantRefine {
			t.Errorf("%s: refined by %d sweeps, want %d", tc.name, o.Refine, tc.wantRefine)
		}
		hasNote := strings.Contains(errOut, "refined with") || strings.Contains(errOut, "not refined")
		if tc.wantErr == "" && hasNote {
			t.Errorf("%s: unexpected refinement note on stderr:\n%s", tc.name, errOut)
		}
		if tc.wantErr != "" && !strings.Contains(errOut, tc.wantErr) {
			t.Errorf("%s: stderr lacks %q:\n%s", tc.name, tc.wantErr, errOut)
		}
	}
	// The text output's first line says it too; a mixture is never refined.
	out, _, err := trainTestRun(t, "-q", "spectral", "--corpus", corpus, "--topics", "2", "--seed", "1")
	if first, _, _ := strings.Cut(out, "\n"); err != nil || !strings.Contains(first, "refined by 20 variational EM sweeps") {
		t.Errorf("text output: %v\n%s", err, out)
	}
	// The help states the default.
	if out, _, err := trainTestRun(t, "spectral", "--help"); err != nil || !strings.Contains(out, fmt.Sprintf("by %d sweeps", spectralDefaultRefine)) ||
		!strings.Contains(out, fmt.Sprintf("default: %d for non-private", spectralDefaultRefine)) {
		t.Errorf("help does not state the default refinement: %v\n%s", err, out)
	}
	out, errOut, err := trainTestRun(t, "spectral", "--corpus", spectralFix+"rows.csv", "--model", "mog", "--topics", "1", "--sigma2", "0.01", "--seed", "1")
	if err != nil || strings.Contains(out, "refined") || strings.Contains(errOut, "refined") {
		t.Errorf("mog: %v\n%s\n%s", err, out, errOut)
	}
}
