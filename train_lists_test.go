package dprec_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dprec/dprec"
	"github.com/dprec/dprec/completion"
	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/models"
)

// TestPrivateListsPositions: a private als run at the entry unit ranks its
// lists by item-item weights of the positions (public under its relation)
// and says so in its report: on a log whose three user groups rate their
// own group's items with values that carry no group signal, the lists
// find each test user's group (NDCG@10 far above most-popular), while
// --lists ratings ranks by the predictions and stores no weights; the
// user unit refuses an explicit ListsPositions and stores none by
// default.
func TestPrivateListsPositions(t *testing.T) {
	dir := t.TempDir()
	trainPath, testPath := filepath.Join(dir, "train.csv"), filepath.Join(dir, "test.csv")
	r := rand.New(rand.NewPCG(3, 4))
	var tr, te strings.Builder
	for u := 1; u <= 150; u++ {
		g := u % 3
		items := r.Perm(40)[:14]
		for k, j := range items {
			line := fmt.Sprintf("%d,%d,%d\n", u, g*40+j+1, 1+r.IntN(5))
			if k < 10 {
				tr.WriteString(line)
			} else {
				te.WriteString(line)
			}
		}
	}
	// Popular items of other groups: most-popular alone misses the group.
	for u := 1; u <= 150; u++ {
		fmt.Fprintf(&tr, "%d,%d,%d\n", u, 121+u%5, 1+r.IntN(5))
	}
	for p, s := range map[string]string{trainPath: tr.String(), testPath: te.String()} {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	train := func(p *dprec.Privacy) (*dprec.Result, error) {
		p.PrivateOptions.Epsilon, p.PrivateOptions.Delta = 1, 1e-5
		p.PrivateOptions.RatingMin, p.PrivateOptions.RatingMax = 1, 5
		return dprec.Fit(context.Background(), trainPath, &dprec.Options{Rank: 4, TimeUnit: data.TimeNone, Seed: 5, Privacy: p})
	}
	load := func(path string) *data.Store {
		st, _, err := data.Load(path, data.LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	trSt, teSt := load(trainPath), load(testPath)
	ndcg := func(f *models.File) (model, pop float64) {
		pen := decomposition.FoldPenalties{Row: 1}
		res, err := models.Evaluate(models.NewPredictor(f), teSt, models.EvalOptions{K: 10, Threshold: 1, Train: trSt, Fold: &pen})
		if err != nil {
			t.Fatal(err)
		}
		return res.RankMetrics.NDCG, res.Popularity.NDCG
	}

	res, err := train(&dprec.Privacy{Mode: dprec.PrivacyALS})
	if err != nil {
		t.Fatal(err)
	}
	f := res.File()
	if !f.RankingWeights() || f.Seen != nil {
		t.Fatalf("default lists of private als at the entry unit: ranking weights %v, seen %v", f.RankingWeights(), f.Seen != nil)
	}
	if !strings.Contains(strings.Join(f.Privacy.Notes, "\n"), "the positions are public and the weights spend no budget") {
		t.Fatalf("the report does not say what ranks the lists: %q", f.Privacy.Notes)
	}
	m, pop := ndcg(f)
	t.Logf("positions NDCG@10 %.4f, most-popular %.4f", m, pop)
	if !(m > 2*pop) {
		t.Fatalf("lists by the positions: NDCG@10 %.4f, most-popular %.4f: want more than twice", m, pop)
	}

	res, err = train(&dprec.Privacy{Mode: dprec.PrivacyALS, Lists: dprec.ListsRatings})
	if err != nil {
		t.Fatal(err)
	}
	if res.File().RankingWeights() {
		t.Fatal("--lists ratings stored ranking weights")
	}
	m2, _ := ndcg(res.File())
	t.Logf("ratings NDCG@10 %.4f", m2)
	if !(m2 < m) {
		t.Fatalf("lists by the ratings %.4f not below those by the positions %.4f on a log whose values carry no group", m2, m)
	}

	// A log whose positions are drawn at random: the default ranks by the
	// ratings (EASE of the positions does not beat most-popular on their
	// validation part) and says so; an explicit ListsPositions still
	// stores the weights.
	var rnd strings.Builder
	for u := 1; u <= 150; u++ {
		for _, j := range r.Perm(120)[:12] {
			fmt.Fprintf(&rnd, "%d,%d,%d\n", u, j+1, 1+r.IntN(5))
		}
	}
	rndPath := filepath.Join(dir, "random.csv")
	if err := os.WriteFile(rndPath, []byte(rnd.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, l := range []dprec.ListSource{"", dprec.ListsPositions} {
		p := &dprec.Privacy{Mode: dprec.PrivacyBias, Lists: l, PrivateOptions: completion.PrivateOptions{Epsilon: 1, RatingMin: 1, RatingMax: 5}}
		res, err := dprec.Fit(context.Background(), rndPath, &dprec.Options{TimeUnit: data.TimeNone, Seed: 5, Privacy: p})
		if err != nil {
			t.Fatal(err)
		}
		notes := strings.Join(res.File().Privacy.Notes, "\n")
		if got, want := res.File().RankingWeights(), l != ""; got != want {
			t.Fatalf("random positions, lists %q: ranking weights %v, want %v (notes %s)", l, got, want, notes)
		}
		if l == "" && !strings.Contains(notes, "ranked by the private model's predictions: EASE of the positions scored") {
			t.Fatalf("random positions: the report does not say why the lists rank by the predictions: %s", notes)
		}
	}

	user := func(l dprec.ListSource) (*dprec.Result, error) {
		ids := make([]string, 125)
		for j := range ids {
			ids[j] = fmt.Sprint(j + 1)
		}
		items, err := data.DictFromStrings("item", ids)
		if err != nil {
			t.Fatal(err)
		}
		return train(&dprec.Privacy{Mode: dprec.PrivacyALS, Items: items, Lists: l, PrivateOptions: completion.PrivateOptions{Unit: completion.UnitUser, MaxRatingsPerUser: 10}})
	}
	var oe *dprec.OptionError
	if _, err := user(dprec.ListsPositions); !errors.As(err, &oe) || !strings.Contains(err.Error(), "entry unit only") {
		t.Fatalf("user unit with lists by the positions: %v", err)
	}
	if res, err = user(""); err != nil || res.File().RankingWeights() {
		t.Fatalf("user unit: err %v, ranking weights stored", err)
	}
}

// TestTuneRankingCheck: the resource check of the base options runs for
// the points of a ranking tuning, and a refusal stops the whole tuning
// (it used to be dropped: no size guard for the implicit and EASE grids).
func TestTuneRankingCheck(t *testing.T) {
	st, _, err := data.Synth(data.SynthOptions{Users: 80, Items: 30, Ratings: 1200, Choice: 1}, rand.NewPCG(1, 2))
	if err != nil {
		t.Fatal(err)
	}
	refuse := errors.New("too large for this machine")
	var plans int
	metric, err := dprec.ParseMetric("ndcg@10")
	if err != nil {
		t.Fatal(err)
	}
	grid, err := dprec.ParseGrid("rank=4,8", dprec.ObjectiveImplicit)
	if err != nil {
		t.Fatal(err)
	}
	o := &dprec.TuneOptions{Base: dprec.Options{Objective: dprec.ObjectiveImplicit, Seed: 3, Seeded: true,
		Check: func(p dprec.Plan) error {
			plans++
			if p.Objective != dprec.ObjectiveImplicit {
				t.Errorf("plan objective %q", p.Objective)
			}
			return refuse
		}}, Grid: grid, Metric: metric}
	if _, err := dprec.TuneRanking(context.Background(), st, o); !errors.Is(err, refuse) || plans == 0 {
		t.Fatalf("refusing check: err %v after %d plans", err, plans)
	}
}

// TestPrivateEntryRefusesClickLogs: at the entry unit (one rating value
// changes, the positions public) a log without ratings would have nothing
// protected, and its lists by the positions would publish the log itself
// under a private report: the private modes refuse it; the user unit
// accepts it.
func TestPrivateEntryRefusesClickLogs(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "clicks.csv")
	var b strings.Builder
	for u := 1; u <= 40; u++ {
		for j := 1; j <= 8; j++ {
			fmt.Fprintf(&b, "%d,%d\n", u, (u*j)%30+1)
		}
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []dprec.PrivacyMode{dprec.PrivacyBias, dprec.PrivacyALS, dprec.PrivacyInput} {
		p := &dprec.Privacy{Mode: mode, PrivateOptions: completion.PrivateOptions{Epsilon: 1, Delta: 1e-5, RatingMin: 1, RatingMax: 5}}
		_, err := dprec.Fit(context.Background(), path, &dprec.Options{TimeUnit: data.TimeNone, Privacy: p})
		var oe *dprec.OptionError
		if !errors.As(err, &oe) || !strings.Contains(err.Error(), "protects nothing") {
			t.Errorf("%s on a click log at the entry unit: %v", mode, err)
		}
	}
	ids := make([]string, 30)
	for j := range ids {
		ids[j] = fmt.Sprint(j + 1)
	}
	items, err := data.DictFromStrings("item", ids)
	if err != nil {
		t.Fatal(err)
	}
	p := &dprec.Privacy{Mode: dprec.PrivacyBias, Items: items, PrivateOptions: completion.PrivateOptions{Epsilon: 1, Delta: 1e-5, RatingMin: 1, RatingMax: 5,
		Unit: completion.UnitUser, MaxRatingsPerUser: 8}}
	if _, err := dprec.Fit(context.Background(), path, &dprec.Options{TimeUnit: data.TimeNone, Seed: 1, Privacy: p}); err != nil {
		t.Errorf("user unit on a click log: %v", err)
	}
}
