package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/dprec/dprec/completion"
	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/perturb"
)

// TestPrivateBiasMatchesSingleMachine: with seeded noise (NOT private; the
// same noise draws) and the catalogue equal to the log's items, the
// pipelines' bias model is completion.TrainPrivateBias's on the whole log
// (up to the order of the residual sums) and the privacy report is the
// same: relation, mechanism, sensitivities, epsilon, delta, coverage.
// Ratings of items outside the catalogue are dropped.
func TestPrivateBiasMatchesSingleMachine(t *testing.T) {
	dir := t.TempDir()
	shards, whole := writeSynth(t, dir)
	st := loadTSV(t, whole)
	cat := filepath.Join(dir, "items.csv")
	ids := []string{"itemId"}
	for i := 0; i < st.Dicts[1].Len(); i++ {
		ids = append(ids, st.Dicts[1].String(int32(i)))
	}
	if err := os.WriteFile(cat, []byte(strings.Join(ids, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, mech := range []string{perturb.MechLaplace, perturb.MechGaussian} {
		po := completion.PrivateOptions{Epsilon: 1, RatingMin: 0.5, RatingMax: 5, Mechanism: mech, Noise: perturb.SeededNoise(17)}
		if mech == perturb.MechGaussian {
			po.Delta = 1e-5
		}
		m, err := decomposition.NewModel(decomposition.CP, st.Dims, []int{1}, true)
		if err != nil {
			t.Fatal(err)
		}
		want, err := completion.TrainPrivateBias(st, m, &po)
		if err != nil {
			t.Fatal(err)
		}
		res, err := TrainPrivateBias(context.Background(), PrivateBiasOptions{Data: shards, Items: cat, Privacy: po})
		if err != nil {
			t.Fatal(err)
		}
		got := res.File
		if int(res.Ratings) != st.NNZ() || res.Dropped != 0 {
			t.Fatalf("%s: %d ratings (%d dropped), log has %d", mech, res.Ratings, res.Dropped, st.NNZ())
		}
		if got.Model.Mean != m.Mean {
			t.Fatalf("%s: mean %v, single machine %v", mech, got.Model.Mean, m.Mean)
		}
		for i, b := range m.Bias[1] {
			if !closeTo(got.Model.Bias[1][i], b, 1e-9) {
				t.Fatalf("%s: item %d bias %v, single machine %v", mech, i, got.Model.Bias[1][i], b)
			}
		}
		a, _ := json.Marshal(want)
		b, _ := json.Marshal(got.Privacy)
		if string(a) != string(b) {
			t.Fatalf("%s: report differs:\n%s\n%s", mech, a, b)
		}
		if prov, _ := got.Privacy.Provenance(); prov != perturb.ProvenanceSeeded {
			t.Fatalf("%s: seeded run's report says provenance %q", mech, prov)
		}
	}
	if _, err := TrainPrivateBias(context.Background(), PrivateBiasOptions{Data: shards,
		Privacy: completion.PrivateOptions{Epsilon: 1, RatingMin: 0.5, RatingMax: 5}}); err == nil {
		t.Fatal("no catalogue: no error")
	}
}

func closeTo(a, b, tol float64) bool {
	d := a - b
	if d < 0 {
		d = -d
	}
	return d <= tol*max(1, abs(a), abs(b))
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// TestPrivateEntryRefusesOneValue: as dprec train does, the private jobs at
// the entry unit refuse a log whose ratings all have one value (a click
// log): the value-change relation would protect nothing of it.
func TestPrivateEntryRefusesOneValue(t *testing.T) {
	log, cat := writeSmallLog(t, func(u, j int) string { return "1" })
	po := completion.PrivateOptions{Epsilon: 1, Delta: 1e-5, RatingMin: 1, RatingMax: 5, Noise: perturb.SeededNoise(3)}
	if _, err := TrainPrivateBias(context.Background(), PrivateBiasOptions{Data: log, Items: cat, Privacy: po}); err == nil || !strings.Contains(err.Error(), "protects nothing") {
		t.Errorf("bias on a one-value log: %v", err)
	}
	if _, err := TrainPrivateALS(context.Background(), PrivateALSOptions{Data: log, Items: cat, Rank: 2, Privacy: po}); err == nil || !strings.Contains(err.Error(), "protects nothing") {
		t.Errorf("als on a one-value log: %v", err)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// writeSmallLog writes a log of 20 users with 5 ratings each over 8 items
// (user u's j-th rating, of item (u+j)%8 + 1, has value value(u, j)) and
// the catalogue of the 8 items, and returns their paths.
func writeSmallLog(t *testing.T, value func(u, j int) string) (log, cat string) {
	t.Helper()
	dir := t.TempDir()
	log, cat = filepath.Join(dir, "log.tsv"), filepath.Join(dir, "items.csv")
	var b strings.Builder
	b.WriteString("userId\titemId\trating\n")
	for u := 1; u <= 20; u++ {
		for j := 1; j <= 5; j++ {
			b.WriteString(strings.Join([]string{itoa(u), itoa((u+j)%8 + 1), value(u, j)}, "\t") + "\n")
		}
	}
	var c strings.Builder
	for j := 1; j <= 8; j++ {
		c.WriteString(itoa(j) + "\n")
	}
	if err := os.WriteFile(log, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cat, []byte(c.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return log, cat
}

// TestPrivateUndeclaredScale: on an undeclared default scale, the private
// pipelines refuse a log whose ratings leave it (a *ScaleError, entry and
// user unit, bias and ALS), and clamp as documented when it is declared.
func TestPrivateUndeclaredScale(t *testing.T) {
	log, cat := writeSmallLog(t, func(u, j int) string { return strconv.FormatFloat(-9.5+float64((u*j)%20), 'g', -1, 64) })
	po := completion.PrivateOptions{Epsilon: 1, Delta: 1e-5, RatingMin: 0.5, RatingMax: 5, Noise: perturb.SeededNoise(3)}
	user := po
	user.Unit, user.MaxRatingsPerUser = completion.UnitUser, 5
	for _, undeclared := range []bool{true, false} {
		var se *ScaleError
		_, err := TrainPrivateBias(context.Background(), PrivateBiasOptions{Data: log, Items: cat, Privacy: po, UndeclaredScale: undeclared})
		if got := errors.As(err, &se); got != undeclared || (!undeclared && err != nil) {
			t.Errorf("bias, undeclared %v: %v", undeclared, err)
		}
		if undeclared && (se.Min != -9.5 || se.Max > 10) {
			t.Errorf("scale error %+v", se)
		}
		_, err = TrainPrivateBias(context.Background(), PrivateBiasOptions{Data: log, Items: cat, Privacy: user, UndeclaredScale: undeclared})
		if got := errors.As(err, &se); got != undeclared || (!undeclared && err != nil) {
			t.Errorf("bias at the user unit, undeclared %v: %v", undeclared, err)
		}
		_, err = TrainPrivateALS(context.Background(), PrivateALSOptions{Data: log, Items: cat, Rank: 2, Privacy: po, UndeclaredScale: undeclared})
		if got := errors.As(err, &se); got != undeclared || (!undeclared && err != nil) {
			t.Errorf("als, undeclared %v: %v", undeclared, err)
		}
	}
}
