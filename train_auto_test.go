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
	cat := filepath.Join(dir, "items.csv")
	var cb strings.Builder
	for j := 1; j <= 60; j++ {
		fmt.Fprintf(&cb, "%d\n", j)
	}
	if err := os.WriteFile(cat, []byte(cb.String()), 0o644); err != nil {
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
		{"private als at the user unit", dprec.Options{Privacy: &dprec.Privacy{Mode: dprec.PrivacyALS, PrivateOptions: completion.PrivateOptions{Epsilon: 5, Delta: 1e-5, Unit: completion.UnitUser, MaxRatingsPerUser: 6}, ItemsFile: cat}}, dprec.ObjectiveImplicit, "implicit objective's private mode"},
		{"private bias", dprec.Options{Privacy: &dprec.Privacy{Mode: dprec.PrivacyBias, PrivateOptions: completion.PrivateOptions{Epsilon: 5, Delta: 1e-5, RatingMin: 0, RatingMax: 1, Unit: completion.UnitUser, MaxRatingsPerUser: 6}, ItemsFile: cat}}, dprec.ObjectiveRating, "applies to the rating objective only"},
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

// TestFitImplicitSelection: the implicit objective without rank, reg or
// alpha chooses them on a per-user hold-out (the chosen point's lists beat
// most-popular's on it, and the model has the chosen rank); given settings
// or NoSelect skip the choice.
func TestFitImplicitSelection(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "clicks.csv")
	r := rand.New(rand.NewPCG(10, 11))
	var b strings.Builder
	for u := 1; u <= 90; u++ {
		for range 10 {
			fmt.Fprintf(&b, "%d,%d\n", u, (u%3)*30+1+r.IntN(30))
		}
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := dprec.Fit(context.Background(), path, &dprec.Options{Objective: dprec.ObjectiveImplicit, Seed: 2,
		Implicit: completion.ImplicitSettings{Iterations: 4}})
	if err != nil {
		t.Fatal(err)
	}
	sel := res.Selection
	if sel == nil || len(sel.Points) != 8 || sel.Metric != "ndcg@10" {
		t.Fatalf("selection %+v", sel)
	}
	if best := sel.Points[0]; !(best.Score > 2*best.Popularity) || fmt.Sprint(res.File().Model.Ranks[0]) != sel.Chosen["rank"] {
		t.Errorf("chosen %v: ndcg %.4f vs most popular %.4f, model rank %d", sel.Chosen, best.Score, best.Popularity, res.File().Model.Ranks[0])
	}
	for _, o := range []dprec.Options{{Rank: 4}, {NoSelect: true}, {Implicit: completion.ImplicitSettings{Alpha: 1}}} {
		o.Objective, o.Seed = dprec.ObjectiveImplicit, 2
		res, err := dprec.Fit(context.Background(), path, &o)
		if err != nil || res.Selection != nil {
			t.Errorf("%+v: selection %v, err %v", o, res.Selection, err)
		}
	}
}
