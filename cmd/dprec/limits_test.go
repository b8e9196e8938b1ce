package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dprec/dprec/data"
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
