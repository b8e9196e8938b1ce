package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/otd"
)

// TestLoadLimitFlags: --max-line, --max-memory and the time-mode limit
// reach the loaders from every command that reads a rating log (issue 14
// cases 4, 5 and 6), and bad values are usage errors.
func TestLoadLimitFlags(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "r.csv")
	if err := os.WriteFile(in, []byte(dataTestCSV+"3,20,"+strings.Repeat("1", 200)+",1000000000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	far := filepath.Join(dir, "far.csv")
	if err := os.WriteFile(far, []byte("userId,movieId,rating,timestamp\n1,1,4,0\n2,2,3,900000000000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want error
	}{
		{[]string{"data", "stats", in, "--max-line", "100"}, data.ErrLineTooLong},
		{[]string{"data", "stats", in, "--max-memory", "1KiB"}, data.ErrMemoryLimit},
		{[]string{"train", "--data", far, "--rank", "1", "--out", filepath.Join(dir, "m.arrow")}, data.ErrTimeSpan},
		{[]string{"data", "stats", far}, data.ErrTimeSpan},
	} {
		_, err := dataTestRun(t, tc.args...)
		if !errors.Is(err, tc.want) {
			t.Errorf("%v: got %v, want %v", tc.args, err, tc.want)
		}
	}
	for _, args := range [][]string{
		{"data", "stats", in, "--max-line", "100", "--skip-invalid"},
		{"data", "stats", in, "--max-memory", "none"},
		{"data", "stats", in, "--max-memory", "64MiB"},
		{"data", "stats", far, "--time-unit", "none"},
	} {
		if _, err := dataTestRun(t, args...); err != nil {
			t.Errorf("%v: %v", args, err)
		}
	}
	for _, args := range [][]string{
		{"data", "stats", in, "--max-memory", "12XB"},
		{"data", "stats", in, "--max-memory", "-5"},
		{"data", "stats", in, "--max-line", "0"},
	} {
		_, err := dataTestRun(t, args...)
		var ec interface{ ExitCode() int }
		if !errors.As(err, &ec) || ec.ExitCode() != exitUsage {
			t.Errorf("%v: got %v, want a usage error", args, err)
		}
	}
	for s, want := range map[string]int64{"1048576": 1 << 20, "512KiB": 512 << 10, "8GiB": 8 << 30, "2 GB": 2e9, "3m": 3 << 20} {
		if got, err := dataParseBytes(s); err != nil || got != want {
			t.Errorf("dataParseBytes(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
}

// TestSpectralMemoryLimit: a 2,000,000-word vocabulary (issue 14 case 11:
// a tiny file ran 7 minutes at 1.5 GB) is refused before any moment is
// computed when the estimate exceeds --max-memory, with the estimate.
func TestSpectralMemoryLimit(t *testing.T) {
	dir := t.TempDir()
	dw := filepath.Join(dir, "docword.txt")
	if err := os.WriteFile(dw, []byte("3\n2000000\n9\n1 1 1\n1 2 1\n1 1999999 2\n2 1 1\n2 5 3\n2 7 1\n3 2 2\n3 3 1\n3 2000000 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := dataTestRun(t, "spectral", "--corpus", dw, "-k", "2", "--seed", "1", "--max-memory", "512MiB")
	if !errors.Is(err, data.ErrMemoryLimit) || !strings.Contains(err.Error(), "2000000 dimensions") || !strings.Contains(err.Error(), "--max-memory") {
		t.Fatalf("got %v, want ErrMemoryLimit with the estimate", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("refusal took %v", d)
	}
	t.Log(err)
	// 2,000,000 x 12 x 64 bytes = 1.4 GiB: a 2 GiB limit lets the estimate
	// pass (the fit itself is not run here); a small vocabulary passes.
	if err := spectralMemCheck(&otd.Input{Corpus: &data.Corpus{Vocab: make([]string, 2000000)}}, 2, 2<<30); err != nil {
		t.Errorf("2 GiB: %v", err)
	}
	// A 40-byte docword naming word id 2^31-1 used to crash the reader.
	tiny := filepath.Join(dir, "tiny.txt")
	os.WriteFile(tiny, []byte("1\n2147483647\n3\n1 2147483647 1\n1 1 1\n1 2 1\n"), 0o644)
	if _, err := dataTestRun(t, "spectral", "--corpus", tiny, "-k", "2", "--seed", "1"); !errors.Is(err, data.ErrMemoryLimit) {
		t.Errorf("word id 2^31-1: got %v, want ErrMemoryLimit", err)
	}
	if _, err := dataTestRun(t, "spectral", "--corpus", "../../data/testdata/corpus/docword.txt", "-k", "2", "--seed", "1", "--max-memory", "64MiB"); err != nil {
		t.Errorf("small corpus: %v", err)
	}
}
