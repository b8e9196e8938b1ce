package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/dprec/dprec"
	"github.com/dprec/dprec/completion"
	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/perturb"
)

// perUser returns every user's number of ratings in st.
func perUser(st *data.Store) []int {
	n := make([]int, st.Dims[0])
	for _, u := range st.Idx[0] {
		n[u]++
	}
	return n
}

// TestPrivateBiasUserMatchesSingleMachine: on a log where no user has
// more than k ratings (k is the largest user's count, so the bound drops
// nothing and the random subset cannot differ), the pipelines' user-level
// bias model with seeded noise is single-machine dprec.Fit's (--privacy
// bias --privacy-unit user --max-ratings-per-user k --items --time-unit
// none) with the same seed: the report JSON is identical and the mean and
// item biases agree to 1e-9 (the sums are added in another order). The
// noise is ON: the driver runs completion's user-unit release itself, so
// it draws the same streams of o.Noise in the same order. The model file
// holds the one placeholder user (dprec.NoUserID) and the public sizes
// only, as single-machine's.
func TestPrivateBiasUserMatchesSingleMachine(t *testing.T) {
	dir := t.TempDir()
	shards, whole := writeSynth(t, dir)
	st := loadTSV(t, whole)
	cat := writeCatalogue(t, t.TempDir(), st)
	k := slices.Max(perUser(st))
	const seed = 17
	for _, mech := range []string{perturb.MechGaussian, perturb.MechLaplace} {
		po := completion.PrivateOptions{Epsilon: 1, Delta: 1e-5, RatingMin: 0.5, RatingMax: 5, Mechanism: mech,
			Unit: completion.UnitUser, MaxRatingsPerUser: k}
		if mech == perturb.MechGaussian {
			po.Mechanism = "" // the user unit's default
		}
		want, err := dprec.Fit(context.Background(), whole, &dprec.Options{TimeUnit: data.TimeNone, Seed: seed, Seeded: true,
			Privacy: &dprec.Privacy{Mode: dprec.PrivacyBias, PrivateOptions: po, ItemsFile: cat}})
		if err != nil {
			t.Fatal(err)
		}
		wf := want.File()
		po.Noise = perturb.SeededNoise(seed)
		res, err := TrainPrivateBias(context.Background(), PrivateBiasOptions{Data: shards, Items: cat, Privacy: po,
			Out: filepath.Join(t.TempDir(), "m.arrow")})
		if err != nil {
			t.Fatal(err)
		}
		got := res.File
		if int(res.Ratings) != st.NNZ() || res.Dropped != 0 || res.Bounded != 0 || int(res.Users) != st.Dims[0] {
			t.Fatalf("%s: %d ratings of %d users (%d dropped, %d bounded), log has %d of %d", mech, res.Ratings, res.Users, res.Dropped, res.Bounded, st.NNZ(), st.Dims[0])
		}
		a, _ := json.Marshal(wf.Privacy)
		b, _ := json.Marshal(got.Privacy)
		if string(a) != string(b) {
			t.Fatalf("%s: report differs:\n%s\n%s", mech, a, b)
		}
		if !closeTo(got.Model.Mean, wf.Model.Mean, 1e-9) {
			t.Fatalf("%s: mean %v, single machine %v", mech, got.Model.Mean, wf.Model.Mean)
		}
		if len(got.Model.Bias[1]) != len(wf.Model.Bias[1]) {
			t.Fatalf("%s: %d items, single machine %d", mech, len(got.Model.Bias[1]), len(wf.Model.Bias[1]))
		}
		for i, b := range wf.Model.Bias[1] {
			if !closeTo(got.Model.Bias[1][i], b, 1e-9) {
				t.Fatalf("%s: item %d bias %v, single machine %v", mech, i, got.Model.Bias[1][i], b)
			}
		}
		if got.Model.ClampLo != wf.Model.ClampLo || got.Model.ClampHi != wf.Model.ClampHi {
			t.Fatalf("%s: clamp [%v, %v], single machine [%v, %v]", mech, got.Model.ClampLo, got.Model.ClampHi, wf.Model.ClampLo, wf.Model.ClampHi)
		}
		if got.Dicts[0].Len() != 1 || got.Dicts[0].String(0) != dprec.NoUserID || wf.Dicts[0].String(0) != dprec.NoUserID {
			t.Fatalf("%s: user mode %q, single machine %q: want the one placeholder %q", mech, got.Dicts[0].String(0), wf.Dicts[0].String(0), dprec.NoUserID)
		}
		da, _ := json.Marshal(wf.Header.Data)
		db, _ := json.Marshal(got.Header.Data)
		if string(da) != string(db) {
			t.Fatalf("%s: data info %s, single machine %s", mech, db, da)
		}
		if prov, _ := got.Privacy.Provenance(); prov != perturb.ProvenanceSeeded || prov.Private() {
			t.Fatalf("%s: seeded run's report says provenance %q", mech, prov)
		}
		if got.Privacy.Unit != string(completion.UnitUser) {
			t.Fatalf("%s: report unit %q", mech, got.Privacy.Unit)
		}
	}
	_, err := TrainPrivateBias(context.Background(), PrivateBiasOptions{Data: shards, Items: cat,
		Privacy: completion.PrivateOptions{Epsilon: 1, Delta: 1e-5, RatingMin: 0.5, RatingMax: 5, Unit: completion.UnitUser}})
	if err == nil {
		t.Fatal("user unit without max ratings per user: no error")
	}
}

// splitLines writes the lines of file into n files of dir in order (the
// same log as n shards).
func splitLines(t *testing.T, file, dir string, n int) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	per := (len(lines) + n - 1) / n
	for i := range n {
		part := lines[min(i*per, len(lines)):min((i+1)*per, len(lines))]
		if err := os.WriteFile(filepath.Join(dir, "s"+strconv.Itoa(i)+".tsv"), []byte(strings.Join(part, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "s*.tsv")
}

// TestPrivateBiasUserBound: on a log whose users exceed k, every user
// keeps exactly min(k, n_u) ratings, one per item, and the statistics
// UserTotals returns are those of the kept ratings (users, ratings,
// centred sum), the per-item counts and residual sums those of every
// rating weighted by completion.UserContributionWeight (under Gaussian
// and Laplace noise); with the same seed the kept ratings are
// the same whatever the number of input files (2 or 3) and output shards
// (2 or 5), since every user draws from its own keyed stream after
// sorting its ratings; another seed keeps others. Secure noise bounds too.
func TestPrivateBiasUserBound(t *testing.T) {
	dir := t.TempDir()
	_, whole := writeSynth(t, dir)
	st := loadTSV(t, whole)
	cat := writeCatalogue(t, t.TempDir(), st)
	items, err := readCatalogue(context.Background(), cat)
	if err != nil {
		t.Fatal(err)
	}
	const k = 5
	n := perUser(st)
	wantN, wantUsers := 0, 0
	for _, c := range n {
		wantN += min(c, k)
		if c > 0 {
			wantUsers++
		}
	}
	if slices.Max(n) <= k {
		t.Fatalf("no user exceeds k = %d", k)
	}
	// The weighted counts: every rating of a user with n_u distinct items
	// (the log has no repeated cell) weighs UserContributionWeight's
	// sqrt(k/n_u) above k.
	type run struct {
		files, shards int
		noise         perturb.Noise
		mech          string // the mechanism of the weights (Gaussian when empty)
	}
	// The weighted counts and sums: every rating of a user with n_u
	// distinct items (the log has no repeated cell) weighs
	// UserContributionWeight's sqrt(k/n_u) (Gaussian) or k/n_u (Laplace)
	// above k.
	const mu = 3.1
	weighted := func(mech string) (counts, sums []float64) {
		counts, sums = make([]float64, items.Len()), make([]float64, items.Len())
		for e, u := range st.Idx[0] {
			j, ok := items.LookupString(st.Dicts[1].String(st.Idx[1][e]))
			if !ok {
				t.Fatalf("item %s not in the catalogue", st.Dicts[1].String(st.Idx[1][e]))
			}
			w := completion.UserContributionWeight(mech, k, n[u])
			counts[j] += w
			sums[j] += w * completion.BiasResidual(st.Val[e], mu, 0.5, 5)
		}
		return counts, sums
	}
	bound := func(r run) []string {
		t.Helper()
		work := t.TempDir()
		files, err := Expand(context.Background(), splitLines(t, whole, t.TempDir(), r.files))
		if err != nil {
			t.Fatal(err)
		}
		trace := filepath.Join(work, "trace", "part")
		src := &userBiasSource{biasSource: &biasSource{ctx: context.Background(), files: files, items: items, work: work, shards: r.shards}, k: k, trace: trace}
		if r.mech == "" {
			r.mech = perturb.MechGaussian
		}
		o := completion.PrivateOptions{RatingMin: 0.5, RatingMax: 5, Unit: completion.UnitUser, MaxRatingsPerUser: k, Noise: r.noise, Mechanism: r.mech}
		wantCounts, wantSums := weighted(r.mech)
		users, nn, centred, counts, err := src.UserTotals(&o)
		if err != nil {
			t.Fatal(err)
		}
		var kept []string
		if err := ReadLines(context.Background(), trace+"-*", func(l string) error { kept = append(kept, l); return nil }); err != nil {
			t.Fatal(err)
		}
		slices.Sort(kept)
		byUser := map[string]map[string]bool{}
		cnt := make([]int, items.Len())
		sum := 0.0
		for _, l := range kept {
			f := strings.Split(l, "\t")
			i, _ := strconv.Atoi(f[1])
			v, _ := strconv.ParseFloat(f[2], 64)
			if byUser[f[0]] == nil {
				byUser[f[0]] = map[string]bool{}
			}
			if byUser[f[0]][f[1]] {
				t.Fatalf("user %s keeps item %s twice", f[0], f[1])
			}
			byUser[f[0]][f[1]] = true
			cnt[i]++
			sum += completion.BiasCentred(v, o.RatingMin, o.RatingMax)
		}
		for u, is := range byUser {
			uid, _ := strconv.Unquote(u)
			j, _ := st.Dicts[0].LookupString(uid)
			if len(is) != min(k, n[j]) {
				t.Fatalf("user %s keeps %d ratings, want min(k = %d, %d)", uid, len(is), k, n[j])
			}
		}
		if users != wantUsers || len(byUser) != wantUsers || nn != wantN || len(kept) != wantN || !closeTo(centred, sum, 1e-9) {
			t.Fatalf("statistics: %d users, %d ratings, centred sum %v; kept %d users, %d ratings, sum %v; want %d users, %d ratings",
				users, nn, centred, len(byUser), len(kept), sum, wantUsers, wantN)
		}
		sums, err := src.ResidualSums(&o, mu)
		if err != nil {
			t.Fatal(err)
		}
		for i := range counts {
			if !closeTo(counts[i], wantCounts[i], 1e-9) || !closeTo(sums[i], wantSums[i], 1e-9) {
				t.Fatalf("item %d: weighted count %v, sum %v, want %v, %v (kept %d)", i, counts[i], sums[i], wantCounts[i], wantSums[i], cnt[i])
			}
		}
		if int(src.before) != st.NNZ() || src.dropped != 0 {
			t.Fatalf("%d catalogue ratings before bounding (%d dropped), log has %d", src.before, src.dropped, st.NNZ())
		}
		return kept
	}
	a := bound(run{files: 2, shards: 2, noise: perturb.SeededNoise(5)})
	b := bound(run{files: 3, shards: 5, noise: perturb.SeededNoise(5)})
	if !slices.Equal(a, b) {
		t.Fatal("the same seed kept other ratings with another number of files and shards")
	}
	if c := bound(run{files: 2, shards: 2, noise: perturb.SeededNoise(6)}); slices.Equal(a, c) {
		t.Fatal("another seed kept the same ratings")
	}
	bound(run{files: 2, shards: 3, noise: perturb.SecureNoise()})
	bound(run{files: 2, shards: 2, noise: perturb.SeededNoise(5), mech: perturb.MechLaplace})
}

// TestPrivateBiasUserRefusals: no catalogue item in the log, a private
// item selection, and ALS at the user unit are refused.
func TestPrivateBiasUserRefusals(t *testing.T) {
	dir := t.TempDir()
	shards, _ := writeSynth(t, dir)
	cat := filepath.Join(t.TempDir(), "items.csv")
	if err := os.WriteFile(cat, []byte("item\n999999\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	po := completion.PrivateOptions{Epsilon: 1, Delta: 1e-5, RatingMin: 0.5, RatingMax: 5, Unit: completion.UnitUser, MaxRatingsPerUser: 3}
	if _, err := TrainPrivateBias(context.Background(), PrivateBiasOptions{Data: shards, Items: cat, Privacy: po}); !errors.Is(err, completion.ErrDomain) {
		t.Fatalf("no rating of a catalogue item: %v, want ErrDomain", err)
	}
	if _, err := TrainPrivateALS(context.Background(), PrivateALSOptions{Data: shards, Items: cat, Privacy: po}); err == nil {
		t.Fatal("private ALS at the user unit: no error")
	}
}
