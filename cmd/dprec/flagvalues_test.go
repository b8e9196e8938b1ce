package main

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// TestSilentFlagValues: values that used to be dropped silently are usage
// errors: a negative or NaN --shrinkage (it meant "no shrinkage") and a
// public rating scale given to train without --privacy (nothing used it).
func TestSilentFlagValues(t *testing.T) {
	dir := t.TempDir()
	train, _ := trainTestLog(t, dir)
	model := filepath.Join(dir, "m.arrow")
	if _, errOut, err := trainTestRun(t, "-q", "train", "--data", train, "--solver", "als", "--epochs", "2", "--seed", "1", "--out", model); err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"recommend", "-m", model, "--user", "1", "--shrinkage", "-5"}, "--shrinkage -5"},
		{[]string{"recommend", "-m", model, "--user", "1", "--shrinkage", "NaN"}, "--shrinkage NaN"},
		{[]string{"eval", "-m", model, "--data", train, "--shrinkage", "-1"}, "--shrinkage -1"},
		{[]string{"train", "--data", train, "--rating-min", "1", "--out", filepath.Join(dir, "x.arrow")}, "--rating-min needs --privacy"},
		{[]string{"train", "--data", train, "--rating-max", "10", "--out", filepath.Join(dir, "x.arrow")}, "--rating-max needs --privacy"},
	} {
		_, _, err := trainTestRun(t, append([]string{"-q"}, tc.args...)...)
		var ec cli.ExitCoder
		if !errors.As(err, &ec) || ec.ExitCode() != exitUsage || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want a usage error containing %q", tc.args, err, tc.want)
		}
	}
}
