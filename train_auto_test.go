package dprec_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dprec/dprec"
	"github.com/dprec/dprec/completion"
	"github.com/dprec/dprec/itemitem"
)

// TestFitAutoTopN: a two-column click log given as it is (no options)
// trains the EASE item-item model when its catalogue fits the closed form,
// the implicit factor model when an option of that model is set or the
// catalogue is larger than EASE.MaxItems, and the rating objective for a
// log with ratings; each note says why.
func TestFitAutoTopN(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "clicks.csv")
	r := rand.New(rand.NewPCG(8, 9))
	var b strings.Builder
	for u := 1; u <= 60; u++ {
		for range 6 {
			fmt.Fprintf(&b, "%d,%d\n", u, (u%3)*20+1+r.IntN(20))
		}
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		opts dprec.Options
		want dprec.Objective
		note string
	}{
		{"as it is", dprec.Options{}, dprec.ObjectiveEASE, "EASE item-item model"},
		{"rank given", dprec.Options{Rank: 4}, dprec.ObjectiveImplicit, "implicit objective"},
		{"implicit settings", dprec.Options{Implicit: completion.ImplicitSettings{Iterations: 3}}, dprec.ObjectiveImplicit, "implicit objective"},
		{"catalogue above the cap", dprec.Options{EASE: itemitem.Settings{MaxItems: 10}}, dprec.ObjectiveImplicit, "implicit objective"},
		{"rating objective asked", dprec.Options{RatingOnly: "--epochs"}, dprec.ObjectiveRating, "applies to the rating objective only"},
	} {
		o := tc.opts
		o.Seed = 1
		res, err := dprec.Fit(context.Background(), path, &o)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if res.Objective != tc.want || !strings.Contains(res.ObjectiveNote, tc.note) || !strings.Contains(res.ObjectiveNote, "has no rating column") {
			t.Errorf("%s: objective %q, note %q; want %q with %q", tc.name, res.Objective, res.ObjectiveNote, tc.want, tc.note)
		}
	}
}
