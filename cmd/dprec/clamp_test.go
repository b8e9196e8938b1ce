package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestOneValueLogClamps: a log whose ratings all have one value (one
// rating, 2,000 copies of one cell, or a dozen cells all rated alike)
// predicts exactly that value for its cells, through train --objective
// rating (without it such a log trains the implicit objective: issue 23;
// the default Gibbs solver and SGD), the model file (a one-point range at 0 is stored
// as [-0, 0]) and tune --out (issue 24 item 14: the clamp was disabled
// when min = max and a one-rating log predicted 5.65, 5.17 or 1.93 from
// run to run).
func TestOneValueLogClamps(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("userId,movieId,rating\n"+body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	same := func(n int, row string) string { return strings.Repeat(row, n) }
	var dozen strings.Builder
	for u := 1; u <= 4; u++ {
		for i := 1; i <= 3; i++ {
			fmt.Fprintf(&dozen, "%d,%d,3.5\n", u, 10+i)
		}
	}
	predict := func(model, user, item string) float64 {
		t.Helper()
		out, errOut, err := trainTestRun(t, "-q", "predict", "-m", model, "--user", user, "--item", item)
		rows := trainTestCSV(t, out)
		if err != nil || len(rows) != 2 {
			t.Fatalf("predict: %v %q %q", err, out, errOut)
		}
		v, err := strconv.ParseFloat(rows[1][3], 64)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for i, tc := range []struct {
		log        string
		args       []string
		user, item string
		want       float64
	}{
		{write("one.csv", "1,10,5\n"), nil, "1", "10", 5},
		{write("copies.csv", same(2000, "1,10,5\n")), nil, "1", "10", 5},
		{write("zero.csv", "1,10,0\n"), nil, "1", "10", 0},
		{write("one-sgd.csv", "1,10,2\n"), []string{"--solver", "sgd"}, "1", "10", 2},
		{write("dozen.csv", dozen.String()), nil, "1", "11", 3.5},
	} {
		model := filepath.Join(dir, fmt.Sprintf("m%d.arrow", i))
		args := append([]string{"-q", "train", "--data", tc.log, "--rank", "2", "--time-unit", "none", "--objective", "rating", "--out", model}, tc.args...)
		if _, errOut, err := trainTestRun(t, args...); err != nil {
			t.Fatalf("%s: train: %v %s", tc.log, err, errOut)
		}
		if got := predict(model, tc.user, tc.item); got != tc.want {
			t.Errorf("%s: predicted %g, want %g", tc.log, got, tc.want)
		}
		out, _, err := trainTestRun(t, "inspect", model)
		if want := fmt.Sprintf("clamp       [%g, %g]", tc.want, tc.want); err != nil || !strings.Contains(out, want) {
			t.Errorf("%s: inspect lacks %q: %v\n%s", tc.log, want, err, out)
		}
	}
	// tune --out saves the best point with the data's one-point range.
	model := filepath.Join(dir, "tuned.arrow")
	if _, errOut, err := trainTestRun(t, "-q", "tune", "--data", filepath.Join(dir, "dozen.csv"), "--time-unit", "none", "--grid", "rank=1,2", "--seed", "1", "--out", model); err != nil {
		t.Fatalf("tune: %v %s", err, errOut)
	}
	if got := predict(model, "2", "12"); got != 3.5 {
		t.Errorf("tune --out: predicted %g, want 3.5", got)
	}
}
