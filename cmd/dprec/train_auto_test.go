package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/dprec/dprec/models"
)

// TestTrainAutoImplicit: without --objective, train fits the implicit
// objective to a log with no rating column or whose ratings all have one
// value, and says so on stderr and in the JSON summary (issue 23); repeated
// events add up as with --objective implicit. --objective rating, or a
// flag of the rating objective only, keeps the rating objective (a
// one-value log then clamps to its value); a log with ratings to fit is
// unchanged.
func TestTrainAutoImplicit(t *testing.T) {
	dir := t.TempDir()
	var clicks, ones, rated strings.Builder
	ones.WriteString("userId,movieId,rating\n")
	rated.WriteString("userId,movieId,rating\n")
	events := 0
	for u := 0; u < 30; u++ {
		for j := 0; j < 12; j++ {
			if (u+j)%3 != 0 {
				continue
			}
			n := 1
			if j%4 == 0 {
				n = 2 // a repeat
			}
			for r := 0; r < n; r++ {
				clicks.WriteString(strconv.Itoa(u) + "," + strconv.Itoa(100+j) + "\n")
				ones.WriteString(strconv.Itoa(u) + "," + strconv.Itoa(100+j) + ",1\n")
				events++
			}
			rated.WriteString(strconv.Itoa(u) + "," + strconv.Itoa(100+j) + "," + strconv.Itoa(1+(u+2*j)%5) + "\n")
		}
	}
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	clickLog, oneLog, ratedLog := write("clicks.csv", clicks.String()), write("ones.csv", ones.String()), write("rated.csv", rated.String())
	for i, tc := range []struct {
		name     string
		args     []string
		implicit bool
		note     string // on stderr ("": no note)
	}{
		{"click log", []string{"--data", clickLog, "--columns", "user,item", "--iterations", "3"}, true, "clicks.csv has no rating column: trained with the implicit objective"},
		{"all ratings 1", []string{"--data", oneLog}, true, "every rating of " + oneLog + " is 1: trained with the implicit objective"},
		{"all ratings 1, --objective rating", []string{"--data", oneLog, "--objective", "rating"}, false, ""},
		{"click log, --objective rating", []string{"--data", clickLog, "--columns", "user,item", "--objective", "rating"}, false, ""},
		{"all ratings 1, --epochs", []string{"--data", oneLog, "--epochs", "3"}, false, "but --epochs applies to the rating objective only"},
		{"ratings to fit", []string{"--data", ratedLog}, false, ""},
	} {
		model := filepath.Join(dir, "m"+strconv.Itoa(i)+".arrow")
		args := append([]string{"train", "--time-unit", "none", "--rank", "2", "--seed", "1", "--out", model, "--json"}, tc.args...)
		out, errOut, err := trainTestRun(t, args...)
		if err != nil {
			t.Fatalf("%s: %v\n%s", tc.name, err, errOut)
		}
		f, err := models.Load(model)
		if err != nil {
			t.Fatal(err)
		}
		if got := f.Header.Objective == models.ObjectiveImplicit; got != tc.implicit {
			t.Errorf("%s: objective %q, want implicit %v", tc.name, f.Header.Objective, tc.implicit)
		}
		hasNote := strings.Contains(errOut, "note: ") && strings.Contains(errOut, "objective")
		if tc.note == "" && hasNote || tc.note != "" && !strings.Contains(errOut, tc.note) {
			t.Errorf("%s: stderr %q, want note %q", tc.name, errOut, tc.note)
		}
		if tc.implicit {
			var sum trainImplicitSummary
			if err := json.Unmarshal([]byte(out), &sum); err != nil || !strings.Contains(sum.ObjectiveNote, "implicit objective") {
				t.Errorf("%s: JSON summary lacks the note: %v\n%s", tc.name, err, out)
			}
			// Repeated events add up, as with --objective implicit.
			if d := f.Header.Data; int(d.Mean*float64(d.NNZ)+0.5) != events || d.Max != 2 {
				t.Errorf("%s: data info %+v for %d events: repeats did not add up", tc.name, d, events)
			}
		}
	}
	// --objective rating on a one-value log keeps today's clamp to it.
	out, _, err := trainTestRun(t, "inspect", filepath.Join(dir, "m2.arrow"))
	if err != nil || !strings.Contains(out, "clamp       [1, 1]") {
		t.Errorf("inspect: %v\n%s", err, out)
	}
}
