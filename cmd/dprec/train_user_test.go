package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dprec/dprec/completion"
	"github.com/dprec/dprec/models"
)

// trainUserLogs writes the test log twice: whole, and without user 1003
// (its neighbour under add/remove-one-user), plus a catalogue of every
// item 500..524 and 990 (listed, never rated).
func trainUserLogs(t *testing.T, dir string) (with, without, items string) {
	t.Helper()
	train, _ := trainTestLog(t, dir)
	b, err := os.ReadFile(train)
	if err != nil {
		t.Fatal(err)
	}
	var wo bytes.Buffer
	for _, line := range strings.SplitAfter(string(b), "\n") {
		if !strings.HasPrefix(line, "1003,") {
			wo.WriteString(line)
		}
	}
	without = filepath.Join(dir, "without.csv")
	items = filepath.Join(dir, "items.csv")
	cat := "movieId,title\n990,Never rated\n"
	for j := 500; j < 525; j++ {
		cat += itoa(j) + ",\"Film, " + itoa(j) + "\"\n"
	}
	for _, f := range []struct{ path, body string }{{without, wo.String()}, {items, cat}} {
		if err := os.WriteFile(f.path, []byte(f.body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return train, without, items
}

// TestTrainUserLevelNeighbours is the neighbouring-log experiment through
// the CLI: train --privacy-unit user (bias and als) on a log and on the log
// minus one user, and check that the two model files cannot reveal the
// user's presence by construction (the same user placeholder and item
// dictionary, the same shapes and time range, no user table or exact
// count), that `predict --user` behaves the same way on both (the same
// fallback; with --user-log both fold the user in from their own rows),
// that the report names what it treats as public, and that
// the report checks.
func TestTrainUserLevelNeighbours(t *testing.T) {
	dir := t.TempDir()
	with, without, items := trainUserLogs(t, dir)
	for _, mode := range []string{"bias", "als"} {
		var files [2]*models.File
		var fbs [2]string
		for j, log := range []string{with, without} {
			out := filepath.Join(dir, mode+itoa(j)+".arrow")
			args := []string{"--quiet", "train", "--data", log, "--privacy", mode, "--privacy-unit", "user", "--max-ratings-per-user", "8",
				"--items", items, "--time-from", "2020-09-13", "--time-to", "2020-10-31", "--epsilon", "1", "--delta", "1e-5", "--rank", "2", "--out", out}
			if _, stderr, err := trainTestRun(t, args...); err != nil {
				t.Fatalf("%s: %v\n%s", mode, err, stderr)
			}
			f, err := models.Load(out)
			if err != nil {
				t.Fatal(err)
			}
			if f.PrivacyCheck != nil {
				t.Errorf("%s: report does not check: %v", mode, f.PrivacyCheck)
			}
			files[j] = f
			stdout, _, err := trainTestRun(t, "--quiet", "predict", "-m", out, "--user", "1003", "--item", "505", "--json")
			if err != nil {
				t.Fatal(err)
			}
			i := strings.Index(stdout, `"fallback"`)
			if i < 0 {
				t.Fatalf("predict output %s", stdout)
			}
			fbs[j] = stdout[i:]
			fbs[j] = fbs[j][:strings.IndexAny(fbs[j], ",}")]
			// From the user's own rows of the log, both models fold the
			// user in (the same way whether or not they trained on them).
			stdout, stderr, err := trainTestRun(t, "predict", "-m", out, "--user", "1003", "--item", "505", "--user-log", with, "--json")
			if err != nil || strings.Contains(stdout, "unknown-user") || !strings.Contains(stderr, "folded in 13 ratings") {
				t.Errorf("%s: predict --user-log: %v\n%s\n%s", mode, err, stdout, stderr)
			}
		}
		a, b := files[0], files[1]
		if !a.Dicts[0].Equal(b.Dicts[0]) || a.Dicts[0].Len() != 1 || a.Dicts[0].String(0) != trainNoUser {
			t.Errorf("%s: user dictionaries differ or hold users", mode)
		}
		if !a.Dicts[1].Equal(b.Dicts[1]) || a.Dicts[1].Len() != 26 {
			t.Errorf("%s: item dictionaries differ or are not the catalogue (%d items)", mode, a.Dicts[1].Len())
		}
		if *a.Time != *b.Time || len(a.Model.Dims) != 3 || a.Model.Dims[0] != 1 {
			t.Errorf("%s: time %+v vs %+v, dims %v", mode, a.Time, b.Time, a.Model.Dims)
		}
		for m := range a.Model.Dims {
			if a.Model.Dims[m] != b.Model.Dims[m] {
				t.Errorf("%s: shapes %v and %v differ", mode, a.Model.Dims, b.Model.Dims)
			}
		}
		if a.Header.Data.NNZ != 0 || b.Header.Data.NNZ != 0 || a.Seen != nil {
			t.Errorf("%s: the file carries a count or seen items: %+v", mode, a.Header.Data)
		}
		if fbs[0] != fbs[1] || !strings.Contains(fbs[0], "unknown-user") {
			t.Errorf("%s: predict --user 1003 falls back %s with the user and %s without", mode, fbs[0], fbs[1])
		}
		found := false
		for _, n := range a.Privacy.Notes {
			found = found || n == completion.PublicUserCatalogue
		}
		if !found || a.Privacy.Unit != "user" {
			t.Errorf("%s: report does not name what it treats as public: %+v", mode, a.Privacy)
		}
	}
}

// TestTrainUserLevelEdges: the edge cases are clear errors before training
// (a time mode without a public range, a range that excludes the log, a
// catalogue that covers none of it, a bad catalogue, user unit without k
// or with a mode that keeps users), and a catalogue that covers part of
// the log drops the rest with a note on stderr.
func TestTrainUserLevelEdges(t *testing.T) {
	dir := t.TempDir()
	with, _, items := trainUserLogs(t, dir)
	none := filepath.Join(dir, "none.csv")
	part := filepath.Join(dir, "part.csv")
	bad := filepath.Join(dir, "bad.csv")
	for p, body := range map[string]string{none: "movieId\n1\n2\n", part: "movieId\n500\n501\n502\n", bad: "movieId\n500\nabc\n"} {
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	base := []string{"train", "--data", with, "--privacy", "bias", "--privacy-unit", "user", "--epsilon", "1", "--delta", "1e-5", "--out", filepath.Join(dir, "m.arrow"), "--force"}
	rng := []string{"--time-from", "2020-09-13", "--time-to", "2020-10-31"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--max-ratings-per-user", "8", "--items", items}, "needs the public time range"},
		{[]string{"--max-ratings-per-user", "8", "--items", items, "--time-from", "2001-01-01", "--time-to", "2001-02-01"}, "no training row lies in the public domain"},
		{append([]string{"--max-ratings-per-user", "8", "--items", none}, rng...), "no training row lies in the public domain"},
		{append([]string{"--max-ratings-per-user", "8", "--items", bad}, rng...), "not an integer"},
		{append([]string{"--items", items}, rng...), "needs --max-ratings-per-user"},
		{[]string{"--max-ratings-per-user", "8", "--items", items, "--time-unit", "none", "--time-from", "2020-09-13"}, "no time mode"},
	} {
		_, stderr, err := trainTestRun(t, append(base, tc.args...)...)
		if err == nil || !strings.Contains(err.Error()+stderr, tc.want) {
			t.Errorf("%v: err %v, stderr %q; want %q", tc.args, err, stderr, tc.want)
		}
	}
	_, stderr, err := trainTestRun(t, append(append(base, "--max-ratings-per-user", "8", "--items", part), rng...)...)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr, "ratings of items not in --items") || !strings.Contains(stderr, "not saved") {
		t.Errorf("partial catalogue: stderr %q", stderr)
	}
}

// TestTrainUserLevelSelection: without --items the items are selected
// privately; the saved report lists the selection as its own first
// release, adds its epsilon and delta to the totals (still within the
// budget), names the selected-items relation as public, and checks.
func TestTrainUserLevelSelection(t *testing.T) {
	dir := t.TempDir()
	with, without, _ := trainUserLogs(t, dir)
	out := filepath.Join(dir, "sel.arrow")
	args := []string{"--quiet", "train", "--data", with, "--time-unit", "none", "--privacy", "bias", "--privacy-unit", "user", "--max-ratings-per-user", "3",
		"--epsilon", "40", "--delta", "1e-5", "--selection-epsilon", "20", "--out", out}
	stdout, stderr, err := trainTestRun(t, args...)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	// The summary's exact (bounded) rating count is labelled as the
	// operator's only, like the drop counts.
	if !strings.Contains(stdout, "training ratings ("+trainUserCountNote+")") {
		t.Errorf("the exact rating count is printed unlabelled:\n%s", stdout)
	}
	f, err := models.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	r := f.Privacy
	if f.PrivacyCheck != nil || len(r.Releases) < 2 || !strings.HasPrefix(r.Releases[0].What, "item selection") || r.Releases[0].Epsilon != 20 {
		t.Fatalf("report %+v (check %v)", r, f.PrivacyCheck)
	}
	if r.Epsilon > 40*(1+1e-9) || r.Delta > 1e-5*(1+1e-9) || r.Epsilon < 20 {
		t.Errorf("totals (%v, %v) for a budget (40, 1e-5)", r.Epsilon, r.Delta)
	}
	found := false
	for _, n := range r.Notes {
		found = found || n == completion.PublicUserSelected
	}
	if !found || f.Dicts[1].Len() == 0 || f.Dicts[1].Len() > 25 {
		t.Errorf("public note missing or %d items selected", f.Dicts[1].Len())
	}
	// The number of users, the number of ratings and the global mean come
	// from the bounded log before the selection.
	scalars := false
	for _, n := range r.Notes {
		scalars = scalars || strings.Contains(n, "before the private item selection")
	}
	if !scalars {
		t.Errorf("the scalar releases are not over the log before the selection: %q", r.Notes)
	}
	// Neighbouring logs (with and without user 1003, the same seed): the
	// selected dictionary is sorted by ID, so when both select the same
	// set the released dictionaries are identical, order included (the
	// log's dictionary is in first-appearance order: 500, 502, ...).
	var sel [2][]int64
	for j, log := range []string{with, without} {
		out := filepath.Join(dir, "sel"+itoa(j)+".arrow")
		args := []string{"--quiet", "train", "--data", log, "--time-unit", "none", "--privacy", "bias", "--privacy-unit", "user", "--max-ratings-per-user", "25",
			"--epsilon", "40", "--delta", "1e-5", "--selection-epsilon", "20", "--seed", "5", "--json", "--out", out}
		stdout, stderr, err := trainTestRun(t, args...)
		if err != nil {
			t.Fatalf("%v\n%s", err, stderr)
		}
		if !strings.Contains(stdout, `"train_ratings_note": "`+trainUserCountNote+`"`) {
			t.Errorf("--json: the exact rating count is not labelled:\n%s", stdout)
		}
		f, err := models.Load(out)
		if err != nil {
			t.Fatal(err)
		}
		sel[j] = append([]int64(nil), f.Dicts[1].Ints()...)
	}
	if !slices.IsSorted(sel[0]) || !slices.IsSorted(sel[1]) {
		t.Errorf("selected dictionaries are not sorted: %v and %v", sel[0], sel[1])
	}
	if len(sel[0]) != 25 || !slices.Equal(sel[0], sel[1]) {
		t.Errorf("the same selected set (all 25 items expected) released as %v with user 1003 and %v without", sel[0], sel[1])
	}
	// Without delta there is no selection.
	args = []string{"--quiet", "train", "--data", with, "--time-unit", "none", "--privacy", "bias", "--privacy-unit", "user", "--max-ratings-per-user", "3",
		"--mechanism", "laplace", "--epsilon", "1", "--out", filepath.Join(dir, "x.arrow")}
	if _, _, err := trainTestRun(t, args...); err == nil || !strings.Contains(err.Error(), "needs --delta") {
		t.Errorf("selection without delta: %v", err)
	}
}

// TestTrainUserLevelSelectionScalars: with a private item selection that
// keeps few items, the released number of ratings (bias and als, at a
// large epsilon so the noise is small) is that of the bounded log before
// the selection, the same as with a public catalogue of every item, not
// the selected items' exact count that the summary prints.
func TestTrainUserLevelSelectionScalars(t *testing.T) {
	dir := t.TempDir()
	with, _, items := trainUserLogs(t, dir)
	noted := func(f *models.File) float64 {
		for _, n := range f.Privacy.Notes {
			if i := strings.Index(n, "number of ratings "); i >= 0 && strings.HasPrefix(n, "released with noise") {
				var v float64
				if _, err := fmt.Sscanf(n[i+len("number of ratings "):], "%g", &v); err == nil {
					return v
				}
			}
		}
		t.Fatalf("no released number of ratings in %q", f.Privacy.Notes)
		return 0
	}
	run := func(mode string, extra ...string) (float64, float64, int) {
		out := filepath.Join(dir, mode+"-"+strings.TrimPrefix(extra[0], "--")+".arrow")
		args := append([]string{"--quiet", "train", "--json", "--data", with, "--time-unit", "none", "--privacy", mode, "--privacy-unit", "user", "--max-ratings-per-user", "3",
			"--epsilon", "400", "--delta", "1e-5", "--rank", "2", "--seed", "3", "--out", out}, extra...)
		stdout, stderr, err := trainTestRun(t, args...)
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", mode, extra, err, stderr)
		}
		var sum struct {
			TrainRatings int `json:"train_ratings"`
		}
		if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
			t.Fatalf("%s: %v\n%s", mode, err, stdout)
		}
		f, err := models.Load(out)
		if err != nil {
			t.Fatal(err)
		}
		return noted(f), float64(f.Dicts[1].Len()), sum.TrainRatings
	}
	for _, mode := range []string{"bias", "als"} {
		all, _, bounded := run(mode, "--items", items)
		sel, kept, selected := run(mode, "--selection-epsilon", "8")
		if kept >= 25 || selected >= bounded {
			t.Fatalf("%s: the selection kept %v items (%d of %d ratings): the test needs fewer", mode, kept, selected, bounded)
		}
		t.Logf("%s: kept %v items, %d of %d ratings; released %v (selection), %v (catalogue)", mode, kept, selected, bounded, sel, all)
		if math.Abs(all-float64(bounded)) > 3 || math.Abs(sel-float64(bounded)) > 3 {
			t.Errorf("%s: released number of ratings %v with the selection, %v with the catalogue; the bounded log has %d, the selected items %d", mode, sel, all, bounded, selected)
		}
	}
}
