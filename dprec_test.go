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
	"time"

	"github.com/dprec/dprec"
	"github.com/dprec/dprec/completion"
	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/models"
)

// writeLog writes a small rating log: 60 users x 40 items, rank-1 taste
// plus noise, on 20 days.
func writeLog(path string) error {
	r := rand.New(rand.NewPCG(1, 2))
	u, v := make([]float64, 60), make([]float64, 40)
	for i := range u {
		u[i] = r.NormFloat64()
	}
	for j := range v {
		v[j] = r.NormFloat64()
	}
	var b strings.Builder
	b.WriteString("userId,movieId,rating,timestamp\n")
	for i := range u {
		for j := range v {
			if r.Float64() < 0.5 {
				x := min(5, max(1, 3+u[i]*v[j]+0.3*r.NormFloat64()))
				fmt.Fprintf(&b, "%d,%d,%.1f,%d\n", i+1, j+1, x, 1600000000+86400*r.IntN(20))
			}
		}
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// Fit a rating log with one call, then predict, recommend, save and load by
// external IDs.
func ExampleFit() {
	dir, _ := os.MkdirTemp("", "dprec-example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "ratings.csv")
	if err := writeLog(path); err != nil {
		fmt.Println(err)
		return
	}
	m, err := dprec.Fit(context.Background(), path, &dprec.Options{Rank: 2, Seed: 1,
		Settings: completion.Settings{Solver: completion.SolverALS, Threads: 1}})
	if err != nil {
		fmt.Println(err)
		return
	}
	r, fb := m.Predict("1", "2", time.Time{})
	fmt.Println("rating in range:", r >= 1 && r <= 5, "fallback:", fb)
	recs, _, _ := m.Recommend("1", 5)
	fmt.Println("recommendations:", len(recs))
	if err := m.Save(filepath.Join(dir, "m.arrow"), false); err != nil {
		fmt.Println(err)
		return
	}
	back, err := dprec.Load(filepath.Join(dir, "m.arrow"))
	if err != nil {
		fmt.Println(err)
		return
	}
	r2, _ := back.Predict("1", "2", time.Time{})
	fmt.Println("same after load:", r == r2)
	// Output:
	// rating in range: true fallback: time-averaged
	// recommendations: 5
	// same after load: true
}

// TestFitSeenAndCancel: recommendations leave out the user's training
// items; a cancelled context stops training with its error; a private
// plug-in is refused.
func TestFitSeenAndCancel(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ratings.csv")
	if err := writeLog(path); err != nil {
		t.Fatal(err)
	}
	m, err := dprec.Fit(context.Background(), path, &dprec.Options{Rank: 2, Seed: 3, TimeUnit: data.TimeNone,
		Settings: completion.Settings{Solver: completion.SolverALS}})
	if err != nil {
		t.Fatal(err)
	}
	st, _, err := data.Load(path, data.LoadOptions{Builder: data.BuilderOptions{TimeUnit: data.TimeNone}})
	if err != nil {
		t.Fatal(err)
	}
	rated := map[string]bool{}
	for e := 0; e < st.NNZ(); e++ {
		if st.Dicts[0].String(st.Idx[0][e]) == "7" {
			rated[st.Dicts[1].String(st.Idx[1][e])] = true
		}
	}
	recs, _, err := m.Recommend("7", 40)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 40-len(rated) {
		t.Errorf("%d recommendations for a user with %d of 40 items rated", len(recs), len(rated))
	}
	for _, r := range recs {
		if rated[r.ID] {
			t.Errorf("recommended item %s the user rated", r.ID)
		}
	}
	// The lists rank as dprec recommend's default: by relevance.
	if r := models.NewPredictor(m.File()).WithShrinkage(models.DefaultShrinkage).Ranking(); r != models.RankRelevance {
		t.Fatalf("the default ranking of this model is %q, want relevance", r)
	}
	want, _ := models.NewPredictor(m.File()).WithRanking(models.RankRelevance, models.DefaultShrinkage).Recommend("7", nil, 40, m.File().Seen.For(mustUser(t, m.Model, "7"), 40, nil))
	for k := range want {
		if recs[k].ID != want[k].ID || recs[k].Score != want[k].Score {
			t.Fatalf("rank %d: %+v, want the relevance ranking's %+v", k, recs[k], want[k])
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := dprec.Fit(ctx, path, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled Fit: %v", err)
	}
	priv, err := completion.NewInputPerturbation(&completion.PrivateOptions{Epsilon: 1, RatingMin: 1, RatingMax: 5})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dprec.Fit(context.Background(), path, &dprec.Options{Settings: completion.Settings{Privacy: priv}}); err == nil {
		t.Error("Fit accepted a privacy plug-in")
	}
}

// mustUser returns the dense index of user id in m.
func mustUser(t *testing.T, m *dprec.Model, id string) int32 {
	t.Helper()
	u, ok := m.File().Dicts[0].LookupString(id)
	if !ok {
		t.Fatalf("user %s not in the model", id)
	}
	return u
}
