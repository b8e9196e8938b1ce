package main

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// TestEvalRanking: eval and recommend rank a non-private rating model by
// relevance at their defaults, by the prediction with --shrinkage 0 (its
// earlier meaning), as --ranking says otherwise; eval reports the ranking,
// and an unknown --ranking is a usage error.
func TestEvalRanking(t *testing.T) {
	dir := t.TempDir()
	train, test := trainTestLog(t, dir)
	model := filepath.Join(dir, "m.arrow")
	if _, errOut, err := trainTestRun(t, "-q", "train", "--data", train, "--solver", "als", "--epochs", "3", "--seed", "1", "--out", model); err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "relevance"},
		{[]string{"--shrinkage", "0"}, "prediction"},
		{[]string{"--ranking", "credibility"}, "credibility"},
		{[]string{"--ranking", "credibility", "--shrinkage", "0"}, "prediction"},
		{[]string{"--ranking", "prediction"}, "prediction"},
		{[]string{"--ranking", "relevance", "--shrinkage", "0"}, "relevance"},
	} {
		out, errOut, err := trainTestRun(t, append([]string{"-q", "eval", "-m", model, "--data", test, "--json"}, tc.args...)...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", tc.args, err, errOut)
		}
		var res struct {
			Ranking string `json:"ranking"`
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("%v: %v\n%s", tc.args, err, out)
		}
		if res.Ranking != tc.want {
			t.Errorf("eval %v: ranking %q, want %q", tc.args, res.Ranking, tc.want)
		}
	}
	out, _, err := trainTestRun(t, "-q", "eval", "-m", model, "--data", test)
	if err != nil || !strings.Contains(out, "ranking        relevance\n") {
		t.Errorf("eval text output: %v\n%s", err, out)
	}
	// recommend follows the same flags: the relevance list differs from
	// the prediction's on this log.
	rel, _, err := trainTestRun(t, "-q", "recommend", "-m", model, "--user", "1000", "--top", "5", "--json")
	if err != nil {
		t.Fatal(err)
	}
	pred, _, err := trainTestRun(t, "-q", "recommend", "-m", model, "--user", "1000", "--top", "5", "--json", "--ranking", "prediction")
	if err != nil {
		t.Fatal(err)
	}
	if a, b := recommendedItems(t, rel), recommendedItems(t, pred); slices.Equal(a, b) {
		t.Errorf("recommend: --ranking prediction gave the relevance list's items %v", a)
	}
	for _, args := range [][]string{
		{"eval", "-m", model, "--data", test, "--ranking", "popular"},
		{"recommend", "-m", model, "--user", "1000", "--ranking", "Relevance"},
	} {
		_, _, err := trainTestRun(t, append([]string{"-q"}, args...)...)
		var ec cli.ExitCoder
		if !errors.As(err, &ec) || ec.ExitCode() != exitUsage || !strings.Contains(err.Error(), "--ranking") {
			t.Errorf("%v: %v, want a usage error naming --ranking", args, err)
		}
	}
}

// recommendedItems returns the item ids of recommend --json's list.
func recommendedItems(t *testing.T, out string) []string {
	t.Helper()
	var l struct {
		Items []struct {
			Item string `json:"item"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &l); err != nil || len(l.Items) == 0 {
		t.Fatalf("recommend --json: %v\n%s", err, out)
	}
	ids := make([]string, len(l.Items))
	for i, it := range l.Items {
		ids[i] = it.Item
	}
	return ids
}
