package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestFlagValuesBeforeLoad: bad values of train's and eval's flags are
// usage errors (exit 2) found before the log is read (--data names a
// missing file: a check after loading would report that file, exit 1),
// in dprec's words naming the flag, not completion's ("setting Solver is
// 3"); implicit-only flags are refused with the rating objective instead
// of being ignored (issue 24 item 11).
func TestFlagValuesBeforeLoad(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "absent.csv")
	train := "train --data " + missing + " "
	private := train + "--privacy input --epsilon 1 "
	implicit := train + "--objective implicit "
	for _, tc := range []struct{ args, want string }{
		{private + "--rating-min 5 --rating-max 1", "--rating-min 5, --rating-max 1: the public rating scale needs min < max"},
		{private + "--rating-min 1 --rating-max 1", "needs min < max"},
		{private + "--rating-min NaN", "--rating-min NaN: must be a finite number"},
		{private + "--rating-max Inf", "--rating-max +Inf: must be a finite number"},
		{train + "--privacy output --epsilon 1 --output-lambda -1", "--output-lambda -1: must be at least 0"},
		{train + "--reg NaN", "--reg NaN: must be a finite number"},
		{train + "--solver als --reg-core NaN", "--reg-core NaN"},
		{implicit + "--alpha -1", "--alpha -1: must be positive"},
		{implicit + "--alpha NaN", "--alpha NaN"},
		{implicit + "--alpha 0", "--alpha 0: must be positive"},
		{implicit + "--unobserved-weight -1", "--unobserved-weight -1: must be positive"},
		{implicit + "--reg -5", "--reg -5: must be positive"},
		{implicit + "--validation 0.2", "--validation is not used by --objective implicit"},
		{implicit + "--privacy input --epsilon 1", "--objective implicit has one private mode, als"},
		{train + "--objective implict", `did you mean "implicit"?`},
		{train + "--privacy gradient --epsilon 1 --delta 1e-5 --solver gibbs", "--solver gibbs is for non-private training and --privacy input"},
		{train + "--privacy output --epsilon 1 --solver als", "--solver als is for non-private training and --privacy input"},
		{train + "--alpha 2", "--alpha is for --objective implicit"},
		{train + "--confidence linear", "--confidence is for --objective implicit"},
		{train + "--iterations 3", "--iterations is for --objective implicit"},
		{"eval -m m.arrow --data " + missing + " --threshold NaN", "--threshold NaN: must be a finite number"},
		{"eval -m m.arrow --data " + missing + " --threshold -Inf", "--threshold -Inf"},
	} {
		out, errs, code := cliRun(t, strings.Fields(tc.args)...)
		if code != exitUsage || !strings.Contains(errs, tc.want) || out != "" {
			t.Errorf("%s: exit %d, stderr %q; want %d and %q", tc.args, code, errs, exitUsage, tc.want)
		}
		if strings.Contains(errs, "setting ") || strings.Contains(errs, "absent.csv") {
			t.Errorf("%s: reported after loading or in completion's words: %q", tc.args, errs)
		}
	}
}
