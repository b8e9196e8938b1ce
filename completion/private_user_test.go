package completion

import (
	"cmp"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/perturb"
)

// userStore is a log with integer user and item dictionaries (users
// 100..100+U-1, items 1000..), some users rating more than k items.
func userStore(dims []int, n int, seed uint64) *data.Store {
	st := privStore(dims, n, seed)
	users, items := data.NewIntDict("user"), data.NewIntDict("item")
	for u := 0; u < dims[0]; u++ {
		users.InternInt(int64(100 + u))
	}
	for i := 0; i < dims[1]; i++ {
		items.InternInt(int64(1000 + i))
	}
	st.Dicts = make([]*data.Dict, len(dims))
	st.Dicts[0], st.Dicts[1] = users, items
	if len(dims) == 3 {
		st.Time = &data.TimeBucketing{Unit: data.TimeDay, First: 20000, Count: dims[2]}
	}
	return st
}

// withoutUser returns st minus every row of user u (the neighbour under
// the add/remove-one-user relation; dictionaries unchanged).
func withoutUser(st *data.Store, u int32) *data.Store {
	var keep []int
	for e, v := range st.Idx[0] {
		if v != u {
			keep = append(keep, e)
		}
	}
	return st.Subset(keep)
}

func userOpts(k int) PrivateOptions {
	o := baseOpts()
	o.Unit, o.MaxRatingsPerUser = UnitUser, k
	return o
}

// TestUserSensitivityNeighbours removes each user in turn from a bounded
// log and recomputes every statistic the user-unit bias mode releases (the
// numbers of users and ratings, the centred sum, the item counts and the
// item residual sums at several released means) and checks that each
// moves by at most its declared l1 and l2 sensitivity, and that the l2
// bound of the counts is reached by a user with k ratings (so a smaller
// one would fail).
func TestUserSensitivityNeighbours(t *testing.T) {
	t.Parallel()
	const k = 6
	o := userOpts(k)
	st, err := BoundForUnit(userStore([]int{25, 30}, 400, 5), &o)
	if err != nil {
		t.Fatal(err)
	}
	rels := userBiasReleases(&o)
	stats := func(s *data.Store, mu float64) [][]float64 {
		mid := (o.RatingMin + o.RatingMax) / 2
		var tot float64
		cnt := make([]float64, s.Dims[1])
		for e, v := range s.Val {
			tot += clampValue(v, o.RatingMin, o.RatingMax) - mid
			cnt[s.Idx[1][e]]++
		}
		return [][]float64{{float64(usersWithRows(s.Idx[0], s.Dims[0]))}, {float64(s.NNZ())}, {tot}, cnt, biasResidualSums(s, &o, mu)}
	}
	worstCounts := 0.0
	r := rand.New(rand.NewPCG(3, 3))
	for u := int32(0); u < int32(st.Dims[0]); u++ {
		nb := withoutUser(st, u)
		mu := o.RatingMin + r.Float64()*(o.RatingMax-o.RatingMin)
		a, b := stats(st, mu), stats(nb, mu)
		for j, rel := range rels {
			var l1, l2 float64
			for i := range a[j] {
				d := math.Abs(a[j][i] - b[j][i])
				l1 += d
				l2 += d * d
			}
			l2 = math.Sqrt(l2)
			if l1 > rel.l1+1e-9 || l2 > rel.l2+1e-9 {
				t.Fatalf("user %d, %s: moved by l1 %v, l2 %v > declared %v, %v", u, rel.what, l1, l2, rel.l1, rel.l2)
			}
			if j == 3 {
				worstCounts = math.Max(worstCounts, l2)
			}
		}
	}
	if worstCounts < math.Sqrt(k)-1e-9 {
		t.Errorf("no user reached the count sensitivity sqrt(k) = %v (worst %v): the test log is too small to check it", math.Sqrt(k), worstCounts)
	}
}

// TestALSUserSensitivityNeighbours removes each user from a bounded log
// and checks that one item step's statistics (same public item rows, mean
// and item biases) move by at most the declared l2 sensitivity, with the
// default constants and with a small user-vector bound Gamma_u = 0.1 that
// the projection reaches, on extreme ratings; there the worst user must
// come within 85% of the bound (0.93 measured; a bound 0.85 times as large
// would fail).
func TestALSUserSensitivityNeighbours(t *testing.T) {
	t.Parallel()
	const k, R = 5, 3
	o := userOpts(k)
	raw := userStore([]int{20, 15}, 300, 6)
	for e := range raw.Val {
		raw.Val[e] = []float64{o.RatingMin, o.RatingMax}[e%2]
	}
	st, err := BoundForUnit(raw, &o)
	if err != nil {
		t.Fatal(err)
	}
	for _, gu := range []float64{ALSPrivateUserClip, 0.1} {
		p := newALSPrivateParams(&o)
		p.gu = gu
		r := rand.New(rand.NewPCG(8, 8))
		V := make([]float64, st.Dims[1]*R)
		for i := range V {
			V[i] = 10 * r.NormFloat64()
		}
		for i := 0; i < st.Dims[1]; i++ {
			projectBall(V[i*R:(i+1)*R], p.gv)
		}
		ib := make([]float64, st.Dims[1])
		sens := p.userSensitivity(k)
		worst := 0.0
		a := alsItemStats(st, alsUsers(st), 3, ib, V, R, p, &o)
		for u := int32(0); u < int32(st.Dims[0]); u++ {
			nb := withoutUser(st, u)
			b := alsItemStats(nb, alsUsers(nb), 3, ib, V, R, p, &o)
			var l2 float64
			for i := range a {
				l2 += (a[i] - b[i]) * (a[i] - b[i])
			}
			l2 = math.Sqrt(l2)
			if l2 > sens+1e-9 {
				t.Fatalf("Gamma_u %g, user %d: statistics moved by %v > %v", gu, u, l2, sens)
			}
			worst = math.Max(worst, l2)
		}
		if worst == 0 || (gu < 1 && worst < 0.85*sens) {
			t.Errorf("Gamma_u %g: worst change %v, bound %v", gu, worst, sens)
		}
	}
}

// TestBoundUserContributions: after bounding no user has more than k
// ratings or two of one item, users under the bound keep everything, and
// another user's rows do not change when a user is removed (the bounding
// is per user).
func TestBoundUserContributions(t *testing.T) {
	t.Parallel()
	st := userStore([]int{10, 8, 4}, 200, 7)
	for _, k := range []int{1, 3, 50} {
		b, pos, err := BoundUserContributions(st, k, rand.NewPCG(1, 2))
		if err != nil {
			t.Fatal(err)
		}
		if err := checkUserContributions(b, k); err != nil {
			t.Errorf("k=%d: %v", k, err)
		}
		per := map[int32]int{}
		items := map[[2]int32]bool{}
		for _, e := range pos {
			per[st.Idx[0][e]]++
			items[[2]int32{st.Idx[0][e], st.Idx[1][e]}] = true
		}
		full := map[[2]int32]bool{}
		for e, u := range st.Idx[0] {
			full[[2]int32{u, st.Idx[1][e]}] = true
		}
		if k == 50 && len(items) != len(full) {
			t.Errorf("k=%d: kept %d distinct (user, item) pairs of %d", k, len(items), len(full))
		}
	}
	if _, _, err := BoundUserContributions(st, 0, rand.NewPCG(1, 1)); !errors.Is(err, perturb.ErrDimension) {
		t.Errorf("k = 0: %v", err)
	}
}

// TestRestrictToDomain: rows of unlisted items and outside the public time
// range are dropped and counted, the item and time modes become the
// catalogue and the range, and a domain that excludes everything or is
// missing is an error.
func TestRestrictToDomain(t *testing.T) {
	t.Parallel()
	st := userStore([]int{6, 5, 4}, 60, 9)
	cat, _ := data.DictFromInts("item", []int64{1003, 1001, 5000, 1000})
	tb, err := TimeRange(data.TimeDay, 86400*20001, 86400*20002+5)
	if err != nil {
		t.Fatal(err)
	}
	out, dr, err := RestrictToDomain(st, UserDomain{Items: cat, Time: tb})
	if err != nil {
		t.Fatal(err)
	}
	var wantItems, wantTime int
	for e := range st.Val {
		id := st.Dicts[1].Int(st.Idx[1][e])
		if _, ok := cat.LookupInt(id); !ok {
			wantItems++
		} else if k := st.Idx[2][e]; k < 1 || k > 2 {
			wantTime++
		}
	}
	if dr.Items != wantItems || dr.Time != wantTime || out.NNZ() != st.NNZ()-wantItems-wantTime {
		t.Errorf("drops %+v, kept %d; want items %d, time %d", dr, out.NNZ(), wantItems, wantTime)
	}
	if out.Dims[1] != 4 || out.Dims[2] != 2 || out.Dicts[1] != cat || out.Time.First != 20001 {
		t.Errorf("domain not applied: dims %v, time %+v", out.Dims, out.Time)
	}
	for e := range out.Val {
		if out.Dicts[1].Int(out.Idx[1][e]) == 5000 {
			t.Fatal("a row of an unrated catalogue item appeared")
		}
	}
	none, _ := data.DictFromInts("item", []int64{9})
	for name, d := range map[string]UserDomain{
		"no catalogue":       {Time: tb},
		"no time range":      {Items: cat},
		"catalogue excludes": {Items: none, Time: tb},
		"range excludes":     {Items: cat, Time: &data.TimeBucketing{Unit: data.TimeDay, First: 1, Count: 3}},
	} {
		if _, _, err := RestrictToDomain(st, d); !errors.Is(err, ErrDomain) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := TimeRange(data.TimeDay, 10, 5); !errors.Is(err, ErrDomain) {
		t.Errorf("reversed range: %v", err)
	}
}

// TestSelectItems: the threshold keeps the leak of an item only the added
// user rated within its delta (checked against the formula at the
// returned tau and just below it), popular items are kept at a large
// epsilon, and a tiny log keeps nothing at a small one (an error).
func TestSelectItems(t *testing.T) {
	t.Parallel()
	for _, k := range []int{1, 10, 100} {
		sigma, delta := 3.0, 1e-6
		tau := selectionThreshold(sigma, k, delta)
		leak := func(tau float64) float64 {
			w := 0.0
			for m := 1; m <= k; m++ {
				p := 0.5 * math.Erfc(-(tau-1/math.Sqrt(float64(m)))/sigma/math.Sqrt2)
				w = math.Max(w, 1-math.Pow(p, float64(m)))
			}
			return w
		}
		if leak(tau) > delta*(1+1e-6) || leak(tau*0.99) <= delta {
			t.Errorf("k=%d: tau %v leaks %v (at 0.99 tau %v), delta %v", k, tau, leak(tau), leak(tau*0.99), delta)
		}
	}
	o := userOpts(5)
	st, err := BoundForUnit(userStore([]int{400, 6}, 2000, 3), &o)
	if err != nil {
		t.Fatal(err)
	}
	sel, err := SelectItems(st, 5, perturb.Budget{Epsilon: 5, Delta: 1e-5}, perturb.SeededNoise(1))
	if err != nil {
		t.Fatal(err)
	}
	if sel.Items.Len() != 6 || sel.Release.Delta != 1e-5 || sel.Release.Epsilon != 5 {
		t.Errorf("selected %d of 6 popular items; release %+v", sel.Items.Len(), sel.Release)
	}
	small, _ := BoundForUnit(userStore([]int{5, 6}, 20, 3), &o)
	if _, err := SelectItems(small, 5, perturb.Budget{Epsilon: 0.1, Delta: 1e-5}, perturb.SeededNoise(1)); !errors.Is(err, ErrDomain) {
		t.Errorf("tiny log: %v", err)
	}
}

// TestUserLevelNeighbouringModels is the neighbouring-log experiment:
// train the user-unit bias and als modes on a log and on the log minus one
// user (same seed), and check that the two models cannot reveal presence
// by construction: the same shapes, the same item dictionary and time
// range, no user row or bias, and reports that carry no exact count; then
// that the report's releases compose within the budget, its own Check
// agrees, and it names what the relation treats as public.
func TestUserLevelNeighbouringModels(t *testing.T) {
	t.Parallel()
	full := userStore([]int{30, 12, 3}, 300, 4)
	cat, _ := data.DictFromInts("item", []int64{1000, 1001, 1002, 1003, 1004, 1005, 1006, 1007, 1008, 1009, 1010, 1011, 1012})
	tb := &data.TimeBucketing{Unit: data.TimeDay, First: 20000, Count: 3}
	for _, mode := range []string{"bias", "als"} {
		var shapes [2][]int
		var reps [2]*perturb.Report
		for j, st := range []*data.Store{full, withoutUser(full, 7)} {
			o := userOpts(8)
			r, _, err := RestrictToDomain(st, UserDomain{Items: cat, Time: tb})
			if err != nil {
				t.Fatal(err)
			}
			b, err := BoundForUnit(r, &o)
			if err != nil {
				t.Fatal(err)
			}
			m := privModel(t, decomposition.CP, []int{1, r.Dims[1], r.Dims[2]}, 2, true, 1, 1)
			if mode == "als" {
				reps[j], err = TrainPrivateALS(b, m, &o)
			} else {
				reps[j], err = TrainPrivateBias(b, m, &o)
			}
			if err != nil {
				t.Fatalf("%s: %v", mode, err)
			}
			shapes[j] = m.Dims
			for _, x := range append(append([]float64(nil), m.Factors[0]...), m.Bias[0]...) {
				if x != 0 {
					t.Fatalf("%s: a user parameter %v was released", mode, x)
				}
			}
			if b.Dicts[1] != cat || b.Time.First != tb.First || b.Time.Count != tb.Count {
				t.Fatalf("%s: the item or time domain depends on the log", mode)
			}
			for _, n := range reps[j].Notes {
				if strings.Contains(n, "public under the relation") && n != PublicUserCatalogue {
					t.Errorf("%s: public note %q", mode, n)
				}
			}
			if c := reps[j].Check(); c != nil {
				t.Errorf("%s: report check: %v", mode, c)
			}
			// The noisy counts the user unit releases (in the notes) are
			// covered, in both modes.
			if !slices.Contains(reps[j].Covered, "number of users") || !slices.Contains(reps[j].Covered, "number of ratings") {
				t.Errorf("%s: covered %q omits the released noisy counts", mode, reps[j].Covered)
			}
			if reps[j].Epsilon > o.Epsilon*(1+1e-9) || reps[j].Delta > o.Delta*(1+1e-9) || reps[j].Unit != "user" || !strings.Contains(reps[j].Relation, "adding or removing one user") {
				t.Errorf("%s: report %+v", mode, reps[j])
			}
		}
		if len(shapes[0]) != len(shapes[1]) || shapes[0][0] != shapes[1][0] || shapes[0][1] != shapes[1][1] || shapes[0][2] != shapes[1][2] {
			t.Errorf("%s: shapes %v and %v differ", mode, shapes[0], shapes[1])
		}
		if len(reps[0].Releases) != len(reps[1].Releases) {
			t.Errorf("%s: the number of releases depends on the log", mode)
		}
		for i := range reps[0].Releases {
			if a, b := reps[0].Releases[i], reps[1].Releases[i]; a.Scale != b.Scale || a.Sensitivity != b.Sensitivity {
				t.Errorf("%s: release %d's noise depends on the log: %+v vs %+v", mode, i, a, b)
			}
		}
	}
}

// TestReportsNamePublic: every private mode's report sets its relation
// kind (value-change, zero-out for minibatch DP-SGD with its value-change
// epsilon beside it, add-remove for the billboard modes' user unit) and
// names, in exactly one note, what its relation treats as public: the positions, counts,
// dictionaries and time range under the entry unit; the same, and that
// presence is not protected, under the SGD modes' user unit; the item
// catalogue (or a private selection) and the time range under the
// add/remove-one-user unit of the bias and als modes. Every release of
// every report carries the derivation of its sensitivity.
func TestReportsNamePublic(t *testing.T) {
	t.Parallel()
	dims := []int{20, 12, 3}
	st := userStore(dims, 200, 12)
	cat := st.Dicts[1]
	tb := &data.TimeBucketing{Unit: data.TimeDay, First: 20000, Count: 3}
	sgd := func(p Privacy, err error, s *data.Store) *perturb.Report {
		if err != nil {
			t.Fatal(err)
		}
		m := privModel(t, decomposition.CP, s.Dims, 2, true, 1, 0.1)
		res, err := Train(s, nil, m, &Settings{Epochs: 1, Privacy: p}, rand.NewPCG(1, 2), nil)
		if err != nil {
			t.Fatal(err)
		}
		return res.Privacy
	}
	stats := func(mode string, o PrivateOptions, s *data.Store, userDim int) *perturb.Report {
		m := privModel(t, decomposition.CP, append([]int{userDim}, s.Dims[1:]...), 2, true, 1, 0.1)
		var rep *perturb.Report
		var err error
		if mode == "als" {
			rep, err = TrainPrivateALS(s, m, &o)
		} else {
			rep, err = TrainPrivateBias(s, m, &o)
		}
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	bounded, _, _ := BoundUserRatings(st, 4, rand.NewPCG(3, 3))
	user := userOpts(4)
	dom, _, err := RestrictToDomain(st, UserDomain{Items: cat, Time: tb})
	if err != nil {
		t.Fatal(err)
	}
	dom, _ = BoundForUnit(dom, &user)
	selected := user
	selected.SelectedItems = true
	gradient := func(protect Protect, v DPSGDVariant) *perturb.Report {
		o := baseOpts()
		o.Protect, o.DPSGD = protect, v
		p, err := NewGradientPerturbation(&o)
		return sgd(p, err, st)
	}
	const vc, zo, ar = perturb.RelationValueChange, perturb.RelationZeroOut, perturb.RelationAddRemove
	for _, tc := range []struct {
		name string
		rep  func() *perturb.Report
		want string
		kind string // Report.RelationKind
	}{
		{"input entry", func() *perturb.Report { o := baseOpts(); p, err := NewInputPerturbation(&o); return sgd(p, err, st) }, PublicEntry, vc},
		{"gradient entry", func() *perturb.Report { o := baseOpts(); p, err := NewGradientPerturbation(&o); return sgd(p, err, st) }, PublicEntry, zo},
		{"gradient entry per-entry", func() *perturb.Report { return gradient(ProtectAll, DPSGDPerEntry) }, PublicEntry, vc},
		{"gradient entry C", func() *perturb.Report { return gradient(ProtectC, DPSGDMinibatch) }, PublicEntry, vc},
		{"output entry", func() *perturb.Report { o := baseOpts(); p, err := NewOutputPerturbation(&o); return sgd(p, err, st) }, PublicEntry, vc},
		{"bias entry", func() *perturb.Report { return stats("bias", baseOpts(), st, dims[0]) }, PublicEntry, vc},
		{"als entry", func() *perturb.Report { return stats("als", baseOpts(), st, dims[0]) }, PublicEntry, vc},
		{"input user", func() *perturb.Report { o := user; p, err := NewInputPerturbation(&o); return sgd(p, err, bounded) }, PublicUserValues, vc},
		{"bias user", func() *perturb.Report { return stats("bias", user, dom, 1) }, PublicUserCatalogue, ar},
		{"als user", func() *perturb.Report { return stats("als", user, dom, 1) }, PublicUserCatalogue, ar},
		{"bias user selected", func() *perturb.Report { return stats("bias", selected, dom, 1) }, PublicUserSelected, ar},
	} {
		rep := tc.rep()
		// The relation in machine-readable form (issue 24): every mode
		// sets it, and only the zero-out mode a value-change epsilon,
		// above its headline.
		if rep.RelationKind != tc.kind {
			t.Errorf("%s: relation kind %q, want %q", tc.name, rep.RelationKind, tc.kind)
		}
		if (tc.kind == zo) != (rep.ValueChangeEpsilon > rep.Epsilon) || (tc.kind != zo && rep.ValueChangeEpsilon != 0) {
			t.Errorf("%s: value-change epsilon %v with headline %v under %q", tc.name, rep.ValueChangeEpsilon, rep.Epsilon, rep.RelationKind)
		}
		// A mode drawing l2-norm noise states what its sampler
		// guarantees in floating point (issue 24).
		for _, r := range rep.Releases {
			if r.Mechanism == perturb.MechL2 && !slices.Contains(rep.Notes, perturb.L2NoiseNote) {
				t.Errorf("%s: l2-norm release %q without perturb.L2NoiseNote", tc.name, r.What)
			}
		}
		var notes []string
		for _, n := range rep.Notes {
			if strings.HasPrefix(n, "public under the relation") {
				notes = append(notes, n)
			}
		}
		if len(notes) != 1 || notes[0] != tc.want {
			t.Errorf("%s: public notes %q, want [%q]", tc.name, notes, tc.want)
		}
		checkDerivations(t, tc.name, rep)
	}
}

// checkDerivations fails the test for every release of rep without a
// derivation of its sensitivity (docs/privacy.md promises each sensitivity
// with its derivation; review 7 L2: private ALS's item statistics had
// none).
func checkDerivations(t *testing.T, name string, rep *perturb.Report) {
	t.Helper()
	if len(rep.Releases) == 0 {
		t.Errorf("%s: no releases", name)
	}
	for _, r := range rep.Releases {
		if strings.TrimSpace(r.Derivation) == "" {
			t.Errorf("%s: release %q has no derivation", name, r.What)
		}
	}
}

// selectionLog is the log of the selection tests: 200 users rating 8 of
// 50 common items (IDs 1..50) each, and, when extra > 0, user 9999 rating
// extra items nobody else rated (IDs 1000..), in file order.
func selectionLog(extra int) *data.Store {
	users, items := data.NewIntDict("user"), data.NewIntDict("item")
	st := &data.Store{Idx: make([][]int32, 2), Dicts: []*data.Dict{users, items}}
	add := func(u, i int64) {
		st.Idx[0] = append(st.Idx[0], users.InternInt(u))
		st.Idx[1] = append(st.Idx[1], items.InternInt(i))
		st.Val = append(st.Val, 4)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for u := int64(1); u <= 200; u++ {
		for _, i := range r.Perm(50)[:8] {
			add(u, int64(i+1))
		}
	}
	for j := range extra {
		add(9999, int64(1000+j))
	}
	st.Dims = []int{users.Len(), items.Len()}
	return st
}

// TestSelectItemsOnlyRatedCandidates is the neighbouring-log test of the
// selection's candidates: D adds to D' one user who rated 3000 items
// nobody else rated. After the bound (k = 8) D's item dictionary still
// lists the 2992 dropped items with weight 0; no such item may ever be
// selected (deterministic), and the chance that any of the user's items
// is selected (0 under D', where they do not exist) must stay within the
// threshold part of delta (0.1 here; 300 seeded runs, 4.42 standard
// errors). Candidates taken from the dictionary keep a zero-weight item
// with probability 1 - Phi(tau/sigma) ~ 0.005 each, so about 15 per run.
func TestSelectItemsOnlyRatedCandidates(t *testing.T) {
	t.Parallel()
	const k, runs = 8, 300
	b := perturb.Budget{Epsilon: 1, Delta: 0.2}
	dThr := (1 - SelectionDeltaShare) * b.Delta
	d, dPrime := selectionLog(3000), selectionLog(0)
	hits := 0
	for s := range runs {
		o := perturb.SeededNoise(uint64(s + 1))
		bd, _, err := BoundUserContributions(d, k, o.Source(streamBound))
		if err != nil {
			t.Fatal(err)
		}
		rated := map[int64]bool{}
		for _, i := range bd.Idx[1] {
			rated[bd.Dicts[1].Int(i)] = true
		}
		sel, err := SelectItems(bd, k, b, o)
		if err != nil {
			t.Fatal(err)
		}
		hit := false
		for j := range sel.Items.Len() {
			id := sel.Items.Int(int32(j))
			if !rated[id] {
				t.Fatalf("run %d: item %d has no rating in the bounded store and was selected", s, id)
			}
			hit = hit || id >= 1000
		}
		if hit {
			hits++
		}
		bp, _, err := BoundUserContributions(dPrime, k, o.Source(streamBound))
		if err != nil {
			t.Fatal(err)
		}
		selP, err := SelectItems(bp, k, b, o)
		if err != nil {
			t.Fatal(err)
		}
		for j := range selP.Items.Len() {
			if selP.Items.Int(int32(j)) >= 1000 {
				t.Fatal("D' released an item it does not hold")
			}
		}
	}
	if lim := runs*dThr + 4.42*math.Sqrt(runs*dThr*(1-dThr)); float64(hits) > lim {
		t.Errorf("one user's unique items selected in %d of %d runs; the threshold delta %.3g allows at most %.1f", hits, runs, dThr, lim)
	}
}

// TestSelectItemsOrderIsPublic: the selected dictionary is sorted by ID
// and identical, order included, for neighbouring logs that select the
// same set. The log is in file order: user 1, first in the file, rated
// items 17 and 12, so the log's dictionary starts 17, 12 with user 1 and
// 10, 11, ... without (the order the audit's demo released).
func TestSelectItemsOrderIsPublic(t *testing.T) {
	t.Parallel()
	build := func(withUser1 bool, str bool) *data.Store {
		users := data.NewIntDict("user")
		items := data.NewIntDict("item")
		if str {
			items = data.NewStringDict("item")
		}
		st := &data.Store{Idx: make([][]int32, 2), Dicts: []*data.Dict{users, items}}
		add := func(u, i int64) {
			st.Idx[0] = append(st.Idx[0], users.InternInt(u))
			if str {
				st.Idx[1] = append(st.Idx[1], items.InternString("m"+strconv.FormatInt(i, 10)))
			} else {
				st.Idx[1] = append(st.Idx[1], items.InternInt(i))
			}
			st.Val = append(st.Val, 4)
		}
		if withUser1 {
			add(1, 17)
			add(1, 12)
		}
		for u := int64(2); u <= 400; u++ {
			for i := int64(10); i < 18; i++ {
				add(u, i)
			}
		}
		st.Dims = []int{users.Len(), items.Len()}
		return st
	}
	for _, str := range []bool{false, true} {
		var got [2][]string
		for j, with := range []bool{true, false} {
			st := build(with, str)
			if with && st.Dicts[1].String(0) != map[bool]string{false: "17", true: "m17"}[str] {
				t.Fatalf("the log's dictionary does not start with user 1's item: %v", st.Dicts[1].String(0))
			}
			sel, err := SelectItems(st, 8, perturb.Budget{Epsilon: 5, Delta: 1e-6}, perturb.SeededNoise(7))
			if err != nil {
				t.Fatal(err)
			}
			for i := range sel.Items.Len() {
				got[j] = append(got[j], sel.Items.String(int32(i)))
			}
			if sel.Items.IsString != str {
				t.Errorf("string IDs %v: selected dictionary IsString %v", str, sel.Items.IsString)
			}
		}
		if len(got[0]) != 8 || !slices.Equal(got[0], got[1]) {
			t.Errorf("string IDs %v: selected %v with user 1 and %v without", str, got[0], got[1])
		}
		if !slices.IsSortedFunc(got[0], func(a, b string) int {
			if !str {
				x, _ := strconv.ParseInt(a, 10, 64)
				y, _ := strconv.ParseInt(b, 10, 64)
				return cmp.Compare(x, y)
			}
			return strings.Compare(a, b)
		}) {
			t.Errorf("string IDs %v: selected order %v is not sorted", str, got[0])
		}
	}
}

// TestBiasUserScalars: with PrivateOptions.Scalars (the bounded log before
// a private item selection) the user-unit bias mode releases the number of
// users, the number of ratings and the centred sum from it, while the item
// statistics stay on the training store (the selected items' ratings):
// with little noise the released count is that of Scalars and the mean is
// Scalars' mean, not the few selected items'. Scalars that break the bound,
// or without the user unit and a selection, are refused.
func TestBiasUserScalars(t *testing.T) {
	t.Parallel()
	const k = 8
	o := userOpts(k)
	o.Epsilon = 500
	all, err := BoundForUnit(userStore([]int{40, 30}, 600, 9), &o)
	if err != nil {
		t.Fatal(err)
	}
	// High ratings on item 0, low elsewhere: the selected items' mean is
	// far from the whole log's.
	for e, i := range all.Idx[1] {
		all.Val[e] = 2
		if i == 0 {
			all.Val[e] = 5
		}
	}
	few, _, err := RestrictToDomain(all, UserDomain{Items: keepItems(all, 1)})
	if err != nil {
		t.Fatal(err)
	}
	fit := func(sc *data.Store) (*biasFit, *decomposition.Model, error) {
		oo := o
		oo.SelectedItems, oo.Scalars = true, sc
		m, err := decomposition.NewModel(decomposition.CP, few.Dims, []int{1}, true)
		if err != nil {
			t.Fatal(err)
		}
		f, err := fitPrivateBias(few, m, &oo)
		return f, m, err
	}
	f, m, err := fit(all)
	if err != nil {
		t.Fatal(err)
	}
	usersAll, usersFew := usersWithRows(all.Idx[0], all.Dims[0]), usersWithRows(few.Idx[0], few.Dims[0])
	if usersAll == usersFew {
		t.Fatalf("the test log needs users without ratings of the selected item (%d users either way)", usersAll)
	}
	if math.Abs(f.noisyRatings-float64(all.NNZ())) > 5 || math.Abs(f.noisyUsers-float64(usersAll)) > 3 || math.Abs(m.Mean-meanOf(all.Val)) > 0.05 {
		t.Errorf("scalars: count %v (log before the selection %d, selected %d), users %v (want %d, not %d), mean %v (want %v)", f.noisyRatings, all.NNZ(), few.NNZ(), f.noisyUsers, usersAll, usersFew, m.Mean, meanOf(all.Val))
	}
	f, m, err = fit(nil)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(f.noisyRatings-float64(few.NNZ())) > 5 || math.Abs(f.noisyUsers-float64(usersFew)) > 3 || math.Abs(m.Mean-5) > 0.05 {
		t.Errorf("no scalars: count %v (want %d), users %v (want %d), mean %v (want 5)", f.noisyRatings, few.NNZ(), f.noisyUsers, usersFew, m.Mean)
	}
	// A user over the bound in Scalars is refused.
	over := userStore([]int{5, 30}, 140, 2)
	if _, _, err := fit(over); !errors.Is(err, ErrUserBound) {
		t.Errorf("scalars with users over the bound: %v, want ErrUserBound", err)
	}
	// Scalars without a selection, at entry level or in another mode are
	// refused.
	for _, tc := range []struct {
		name string
		mod  func(*PrivateOptions)
		mode string
	}{
		{"no selection", func(*PrivateOptions) {}, "bias"},
		{"entry unit", func(o *PrivateOptions) { o.SelectedItems, o.Unit = true, UnitEntry }, "bias"},
		{"input mode", func(o *PrivateOptions) { o.SelectedItems = true }, "input"},
	} {
		oo := o
		oo.Scalars = all
		tc.mod(&oo)
		if _, err := oo.resolve(tc.mode); err == nil || !strings.Contains(err.Error(), "Scalars") {
			t.Errorf("%s: %v, want a refusal naming Scalars", tc.name, err)
		}
	}
	oo := o
	oo.SelectedItems, oo.Scalars = true, all
	if _, err := oo.resolve("als"); err != nil {
		t.Errorf("als with Scalars: %v", err)
	}
}

// TestBiasUserScalarsNeighbours runs the user-unit bias release with
// Scalars on neighbouring bounded logs (each user removed in turn from
// both the log before the selection and the selected items' log) with the
// same seeded noise, so the released scalars differ by the raw
// statistics' differences: the number of users moves by at most 1, the
// number of ratings by at most k (and by k for some user, so a smaller
// bound would fail), the centred sum by at most k Delta_r/2.
func TestBiasUserScalarsNeighbours(t *testing.T) {
	t.Parallel()
	const k = 8
	o := userOpts(k)
	o.Epsilon = 5
	st, err := BoundForUnit(userStore([]int{40, 30}, 900, 9), &o)
	if err != nil {
		t.Fatal(err)
	}
	train, _, err := RestrictToDomain(st, UserDomain{Items: keepItems(st, 3)})
	if err != nil {
		t.Fatal(err)
	}
	mid := (o.RatingMin + o.RatingMax) / 2
	run := func(tr, sc *data.Store) [3]float64 {
		oo := o
		oo.SelectedItems, oo.Scalars = true, sc
		m, err := decomposition.NewModel(decomposition.CP, tr.Dims, []int{1}, true)
		if err != nil {
			t.Fatal(err)
		}
		f, err := fitPrivateBias(tr, m, &oo)
		if err != nil {
			t.Fatal(err)
		}
		// The centred sum behind the (unclamped) mean.
		return [3]float64{f.noisyUsers, f.noisyRatings, (m.Mean - mid) * math.Max(f.noisyRatings, 1)}
	}
	base := run(train, st)
	rels := userBiasReleases(&o)
	var worst [3]float64
	for u := int32(0); u < int32(st.Dims[0]); u++ {
		nb := run(withoutUser(train, u), withoutUser(st, u))
		for j := range worst {
			worst[j] = math.Max(worst[j], math.Abs(nb[j]-base[j]))
		}
	}
	for j := range worst {
		if worst[j] > rels[j].l1+1e-6 {
			t.Errorf("%s moved by %v > declared %v", rels[j].what, worst[j], rels[j].l1)
		}
	}
	if worst[1] < k-1e-6 {
		t.Errorf("no user moved the number of ratings by k = %d (worst %v): the test log is too small", k, worst[1])
	}
}

// keepItems returns a dictionary of the first n items of st's item mode.
func keepItems(st *data.Store, n int) *data.Dict {
	d := data.NewIntDict("item")
	for i := 0; i < n; i++ {
		d.InternInt(st.Dicts[1].Ints()[i])
	}
	return d
}

func meanOf(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// TestCheckUserContributions: the bound check accepts at most k ratings a
// user, one per item, and refuses more ratings or two ratings of one item
// (in different time buckets too).
func TestCheckUserContributions(t *testing.T) {
	t.Parallel()
	mk := func(rows [][3]int32) *data.Store {
		s := &data.Store{Dims: []int{3, 4, 2}, Idx: make([][]int32, 3)}
		for _, r := range rows {
			for m := range r {
				s.Idx[m] = append(s.Idx[m], r[m])
			}
			s.Val = append(s.Val, 3)
		}
		return s
	}
	for _, tc := range []struct {
		name string
		rows [][3]int32
		ok   bool
	}{
		{"within", [][3]int32{{0, 0, 0}, {0, 1, 1}, {1, 0, 0}, {2, 3, 1}}, true},
		{"over k", [][3]int32{{0, 0, 0}, {0, 1, 0}, {0, 2, 0}}, false},
		{"same item twice", [][3]int32{{1, 2, 0}, {0, 2, 0}, {1, 2, 1}}, false},
		{"empty", nil, true},
	} {
		err := checkUserContributions(mk(tc.rows), 2)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrUserBound)) {
			t.Errorf("%s: %v, want ok %v", tc.name, err, tc.ok)
		}
	}
}
