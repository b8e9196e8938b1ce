package completion

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/perturb"
)

// TestUserCooccurrenceSensitivity removes each user of a bounded log in
// turn: the packed co-occurrence moves by exactly sqrt((n_u + 1)/(2 n_u))
// (the derivation on userCooccurrence), never above the declared 1, and a
// user with one rating reaches 1.
func TestUserCooccurrenceSensitivity(t *testing.T) {
	t.Parallel()
	o := userOpts(6)
	raw := userStore([]int{30, 20}, 240, 21)
	// A user with a single rating: the bound is reached.
	raw = withoutUser(raw, 29)
	raw.Idx[0] = append(raw.Idx[0], 29)
	raw.Idx[1] = append(raw.Idx[1], 3)
	raw.Val = append(raw.Val, 4)
	st, err := BoundForUnit(raw, &o)
	if err != nil {
		t.Fatal(err)
	}
	I := st.Dims[1]
	full := userCooccurrence(st, I)
	n := map[int32]int{}
	for _, u := range st.Idx[0] {
		n[u]++
	}
	worst := 0.0
	for u, nu := range n {
		c := userCooccurrence(withoutUser(st, u), I)
		var d float64
		for i := range c {
			d += (full[i] - c[i]) * (full[i] - c[i])
		}
		d = math.Sqrt(d)
		want := math.Sqrt(float64(nu+1) / float64(2*nu))
		if math.Abs(d-want) > 1e-9 || d > 1+1e-12 {
			t.Fatalf("user %d with %d ratings: C moved by %v, want %v <= 1", u, nu, d, want)
		}
		worst = math.Max(worst, d)
	}
	if worst < 1-1e-12 {
		t.Fatalf("worst move %v: the single-rating user should reach the bound 1", worst)
	}
	// The packed layout: entry (i, j) of the dense product.
	dense := make([]float64, I*I)
	by := map[int32][]int32{}
	for e, u := range st.Idx[0] {
		by[u] = append(by[u], st.Idx[1][e])
	}
	for _, items := range by {
		for _, i := range items {
			for _, j := range items {
				dense[int(i)*I+int(j)] += 1 / float64(len(items))
			}
		}
	}
	for i := 0; i < I; i++ {
		for j := i; j < I; j++ {
			if got := full[packedRow(int32(i), I)+j]; math.Abs(got-dense[i*I+j]) > 1e-12 {
				t.Fatalf("C[%d][%d] = %v, want %v", i, j, got, dense[i*I+j])
			}
		}
	}
}

// TestLeadingEigen: the subspace iteration's leading eigenpairs match a
// dense eigendecomposition on a symmetric matrix with a planted spectrum
// plus noise, with a planted negative eigenvalue larger in magnitude
// than some positive ones: it is in the block, and Rayleigh-Ritz must
// order it last.
func TestLeadingEigen(t *testing.T) {
	t.Parallel()
	const I, k, planted = 120, 4, 5
	rng := rand.New(rand.NewPCG(3, 4))
	X := make([]float64, I*planted)
	for i := range X {
		X[i] = rng.NormFloat64()
	}
	orthonormalCols(X, I, planted)
	lam := []float64{60, 40, 30, 25, -50}
	sigma := 0.8 // noise edge 2 sigma sqrt(I) = 17.5
	dense := mat.NewSymDense(I, nil)
	packed := make([]float64, I*(I+1)/2)
	for i := 0; i < I; i++ {
		for j := i; j < I; j++ {
			v := sigma * rng.NormFloat64()
			for c := 0; c < planted; c++ {
				v += lam[c] * X[i*planted+c] * X[j*planted+c]
			}
			dense.SetSym(i, j, v)
			packed[packedRow(int32(i), I)+j] = v
		}
	}
	var es mat.EigenSym
	if !es.Factorize(dense, true) {
		t.Fatal("factorize")
	}
	vals := es.Values(nil)
	slices.Reverse(vals)
	var W mat.Dense
	es.VectorsTo(&W)
	V, got := leadingEigen(packed, I, k+2)
	if last := got[k+1]; last > -45 {
		t.Fatalf("the planted -50 is not last: %v", got)
	}
	for c := 0; c < k; c++ {
		if math.Abs(got[c]-vals[c]) > 1e-3*vals[c] {
			t.Fatalf("eigenvalue %d: %v, dense %v (all %v)", c, got[c], vals[c], got)
		}
		// The vector, up to sign.
		var dot float64
		for i := 0; i < I; i++ {
			dot += V[i*(k+2)+c] * W.At(i, I-1-c)
		}
		if math.Abs(math.Abs(dot)-1) > 1e-3 {
			t.Fatalf("eigenvector %d: |<v, dense>| = %v", c, math.Abs(dot))
		}
	}
}

// positionsLog is a planted log whose positions carry taste: two user
// groups, each rating mostly the items of its own half (32 of its 40
// training ratings, 4 of its 6 test ones) and liking them (+0.5 against
// -0.5 on the other half), item biases sd 1, noise sd 0.5, on [1, 5].
func positionsLog(users, items int, seed uint64) (train, test *data.Store) {
	rng := rand.New(rand.NewPCG(seed, 5))
	bi := make([]float64, items)
	for i := range bi {
		bi[i] = rng.NormFloat64()
	}
	mk := func() *data.Store {
		return &data.Store{Dims: []int{users, items}, Idx: make([][]int32, 2)}
	}
	train, test = mk(), mk()
	half := items / 2
	for u := 0; u < users; u++ {
		g := u % 2
		seen := map[int]bool{}
		for r := 0; r < 46; r++ {
			own := r%5 != 4 // 32 of the first 40, 4 of the last 6
			var i int
			for {
				i = rng.IntN(half)
				if own == (g == 1) {
					i += half
				}
				if !seen[i] {
					break
				}
			}
			seen[i] = true
			taste := -0.5
			if own {
				taste = 0.5
			}
			v := clampValue(3+bi[i]+taste+0.5*rng.NormFloat64(), 1, 5)
			st := train
			if r >= 40 {
				st = test
			}
			st.Idx[0] = append(st.Idx[0], int32(u))
			st.Idx[1] = append(st.Idx[1], int32(i))
			st.Val = append(st.Val, v)
		}
	}
	return train, test
}

// TestALSUserPositions: under the user unit, when private ALS's
// fallback runs and the gate passes, the co-occurrence is released once,
// with the noise the report states; the report says so and states its
// sensitivity; the kept columns follow the free ones, are orthogonal
// with the scale the rule sets, and on a log whose positions carry taste
// they cut the fold-in RMSE well below the fallback without them (which
// the columns' absence would fail). At a small epsilon the gate keeps the
// budget for the counts and sums, and the report says why.
func TestALSUserPositions(t *testing.T) {
	t.Parallel()
	const k, R = 40, 6
	train, test := positionsLog(2000, 100, 1)
	o := userOpts(k)
	o.Epsilon = 50
	st, err := BoundForUnit(train, &o)
	if err != nil {
		t.Fatal(err)
	}
	// The fallback: the item steps and the covariance stage (this log is
	// dense enough for it) off.
	forceFallback := func(p *alsPrivateParams) { p.userGateShare, p.noCov = 2, true }
	run := func(oo *PrivateOptions, tweak func(*alsPrivateParams)) (*decomposition.Model, *perturb.Report) {
		t.Helper()
		return trainUserALS(t, st, R, oo, tweak)
	}
	nt := newNoiseTally()
	truth := userCooccurrence(st, st.Dims[1])
	var rep *perturb.Report
	var m *decomposition.Model
	for seed := uint64(0); seed < 20; seed++ {
		oo := o
		oo.Noise = perturb.SeededNoise(seed)
		got := map[string][][]float64{}
		oo.probe = probeInto(got)
		m, rep = run(&oo, forceFallback)
		if len(got[alsUserPosWhat]) != 1 {
			t.Fatalf("seed %d: %d co-occurrence releases; notes %q", seed, len(got[alsUserPosWhat]), rep.Notes)
		}
		nt.add(t, alsUserPosWhat, got[alsUserPosWhat][0], truth)
	}
	nt.check(t, "co-occurrence", rep, alsUserPosWhat)
	if rep.Epsilon > o.Epsilon*(1+1e-9) || rep.Epsilon < 0.98*o.Epsilon {
		t.Fatalf("epsilon spent %v, budget %v", rep.Epsilon, o.Epsilon)
	}
	notes := strings.Join(rep.Notes, "\n")
	for _, want := range []string{"position columns (user unit)", "(n_u + 1)/(2 n_u) <= 1", "columns 3 to"} {
		if !strings.Contains(notes, want) {
			t.Fatalf("the report does not say %q: %q", want, rep.Notes)
		}
	}
	var rel *perturb.Release
	for i := range rep.Releases {
		if rep.Releases[i].What == alsUserPosWhat {
			rel = &rep.Releases[i]
		}
	}
	if rel == nil || rel.Sensitivity != 1 || rel.Mechanism != perturb.MechGaussian {
		t.Fatalf("the co-occurrence release in the report: %+v", rel)
	}
	// The split: the counts and sums at multiplier z/sqrt(1 - f), the
	// co-occurrence at z/sqrt(f).
	for _, r := range rep.Releases {
		if r.What == alsFallbackWhat {
			f := ALSUserPositionsShare
			if got, want := (r.Scale/r.Sensitivity)/rel.Scale, math.Sqrt(f/(1-f)); math.Abs(got-want) > 1e-9*want {
				t.Fatalf("noise multipliers: counts and sums over co-occurrence %v, want %v", got, want)
			}
		}
	}
	// The columns: the free ones first, then K >= 1 orthogonal columns of
	// the rule's spread; the rest zero.
	I := st.Dims[1]
	free := *m
	free.Factors = [][]float64{m.Factors[0], slices.Clone(m.Factors[1])}
	for i := 0; i < I; i++ {
		clear(free.Factors[1][i*R+ALSFreeColumns : (i+1)*R])
	}
	checkFreeColumns(t, &free, &o, rep.ItemCounts, 0, false)
	slope := columnSD(m.Factors[1], R, 0)
	K := 0
	for c := ALSFreeColumns; c < R; c++ {
		var s float64
		for i := 0; i < I; i++ {
			s += m.Factors[1][i*R+c] * m.Factors[1][i*R+c]
		}
		if s == 0 {
			break
		}
		K++
		want := ALSUserPositionsScale * slope * math.Sqrt(float64(I))
		if math.Abs(math.Sqrt(s)-want) > 1e-9*want {
			t.Fatalf("column %d has norm %v, want %v", c, math.Sqrt(s), want)
		}
		for c2 := ALSFreeColumns; c2 < c; c2++ {
			var d float64
			for i := 0; i < I; i++ {
				d += m.Factors[1][i*R+c] * m.Factors[1][i*R+c2]
			}
			if math.Abs(d) > 1e-6*s {
				t.Fatalf("columns %d and %d are not orthogonal: %v", c, c2, d)
			}
		}
	}
	if K == 0 {
		t.Fatalf("no position column kept: %q", rep.Notes)
	}
	// The gain on a log whose positions carry taste.
	with, err := FoldInRMSE(m, train, test, BillboardFoldFor(rep))
	if err != nil {
		t.Fatal(err)
	}
	m0, rep0 := run(&o, func(p *alsPrivateParams) { forceFallback(p); p.userPosOff = true })
	without, err := FoldInRMSE(m0, train, test, BillboardFoldFor(rep0))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("fold-in RMSE with the position columns %.4f, without %.4f (K = %d)", with, without, K)
	if with > without-0.02 {
		t.Fatalf("the position columns score %.4f against %.4f without them: no gain on a log whose positions carry taste", with, without)
	}
	// Same seed, same model, bit for bit.
	oa, ob := o, o
	oa.Noise, ob.Noise = perturb.SeededNoise(3), perturb.SeededNoise(3)
	ma, _ := run(&oa, forceFallback)
	mb, _ := run(&ob, forceFallback)
	if !slices.Equal(ma.Factors[1], mb.Factors[1]) || !slices.Equal(ma.Bias[1], mb.Bias[1]) {
		t.Fatal("two runs with the same seed released different item sides")
	}
	// A small epsilon: the gate keeps the budget for the counts and sums.
	small := o
	small.Epsilon = 1
	got := map[string][][]float64{}
	small.probe = probeInto(got)
	_, rs := run(&small, forceFallback)
	if len(got[alsUserPosWhat]) != 0 || !strings.Contains(strings.Join(rs.Notes, "\n"), "co-occurrence is not released") {
		t.Fatalf("epsilon 1: %d co-occurrence releases; notes %q", len(got[alsUserPosWhat]), rs.Notes)
	}
	for _, r := range rs.Releases {
		if r.What == alsUserPosWhat {
			t.Fatalf("epsilon 1: the report lists the co-occurrence release")
		}
	}
}

// TestUserPositionsGate: the gate compares the noise's spectral edge with
// tau times the released number of users.
func TestUserPositionsGate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		sigma, users float64
		I            int
		want         bool
	}{
		{0.1, 943, 1682, true},   // edge 8.2 <= 18.9
		{0.33, 943, 1682, false}, // edge 27.1 > 18.9
		{0.1, 100, 1682, false},
		{1, 20000, 1000, true},
	} {
		ok, why := userPositionsGate(tc.sigma, tc.I, tc.users, ALSUserPositionsGate)
		if ok != tc.want || ok == (why != "") {
			t.Errorf("sigma %g, %g users, %d items: %v %q, want %v", tc.sigma, tc.users, tc.I, ok, why, tc.want)
		}
	}
}

// trainUserALS trains private ALS of rank R at the user unit on the
// bounded store st (tweak as trainPrivateALS takes it) and returns the
// model and its report.
func trainUserALS(t *testing.T, st *data.Store, R int, o *PrivateOptions, tweak func(*alsPrivateParams)) (*decomposition.Model, *perturb.Report) {
	t.Helper()
	m := privModel(t, decomposition.CP, []int{1, st.Dims[1]}, R, true, 1, 1)
	rep, err := trainPrivateALS(st, m, o, tweak)
	if err != nil {
		t.Fatal(err)
	}
	return m, rep
}

// TestUserCooccurrenceUnbounded: the co-occurrence read from the log
// before the contribution bound (PrivateOptions.Unbounded), users above
// the cap cut to a random subset keyed by the seed and their own items.
// Removing any user moves C by exactly their p_u p_u^T, of norm
// sqrt((m + 1)/(2 m)) <= 1 with m = min(their distinct items, cap), for
// every seed (a subset that depended on other users, or a norm that grew
// with n_u, would fail); private ALS's fallback releases that C (its
// noise around it has the release's variance, far from the k-bounded
// C's), says so, and refuses an Unbounded on another item domain.
func TestUserCooccurrenceUnbounded(t *testing.T) {
	t.Parallel()
	const maxItems = 6
	raw := userStore([]int{30, 20}, 400, 22)
	I := raw.Dims[1]
	distinct := map[int32]map[int32]bool{}
	for e, u := range raw.Idx[0] {
		if distinct[u] == nil {
			distinct[u] = map[int32]bool{}
		}
		distinct[u][raw.Idx[1][e]] = true
	}
	capped := 0
	for _, seed := range []uint64{1, 2} {
		full := userCooccurrenceCapped(raw, I, maxItems, seed)
		for u, items := range distinct {
			c := userCooccurrenceCapped(withoutUser(raw, u), I, maxItems, seed)
			var d, tr float64
			for i := range c {
				d += (full[i] - c[i]) * (full[i] - c[i])
			}
			for i := int32(0); i < int32(I); i++ {
				tr += full[packedRow(i, I)+int(i)] - c[packedRow(i, I)+int(i)]
			}
			m := min(len(items), maxItems)
			if len(items) > maxItems {
				capped++
			}
			if want := math.Sqrt(float64(m+1) / float64(2*m)); math.Abs(math.Sqrt(d)-want) > 1e-9 || math.Abs(tr-1) > 1e-9 {
				t.Fatalf("seed %d, user %d with %d items: C moved by %v (trace %v), want %v (trace 1)", seed, u, len(items), math.Sqrt(d), tr, want)
			}
		}
	}
	if capped == 0 {
		t.Fatal("no user above the cap: the test does not reach the subsets")
	}
	// The users renumbered and the rows reordered: the same C (a subset
	// keyed by a user's index or row order would move it).
	perm := rand.New(rand.NewPCG(9, 9)).Perm(raw.Dims[0])
	rows := rand.New(rand.NewPCG(9, 10)).Perm(raw.NNZ())
	re := &data.Store{Dims: raw.Dims, Idx: make([][]int32, 2)}
	for _, e := range rows {
		re.Idx[0] = append(re.Idx[0], int32(perm[raw.Idx[0][e]]))
		re.Idx[1] = append(re.Idx[1], raw.Idx[1][e])
		re.Val = append(re.Val, raw.Val[e])
	}
	a, b := userCooccurrenceCapped(raw, I, maxItems, 1), userCooccurrenceCapped(re, I, maxItems, 1)
	for i := range a {
		if math.Abs(a[i]-b[i]) > 1e-12 {
			t.Fatalf("renumbered users: C[%d] = %v, want %v", i, b[i], a[i])
		}
	}

	// Private ALS's fallback reads the unbounded log.
	const k, R = 20, 6
	train, _ := positionsLog(2000, 100, 1)
	o := userOpts(k)
	o.Epsilon, o.Noise = 50, perturb.SeededNoise(3)
	st, err := BoundForUnit(train, &o)
	if err != nil {
		t.Fatal(err)
	}
	o.Unbounded = train
	got := map[string][][]float64{}
	o.probe = probeInto(got)
	_, rep := trainUserALS(t, st, R, &o, func(p *alsPrivateParams) { p.userGateShare, p.noCov = 2, true })
	if len(got[alsUserPosWhat]) != 1 {
		t.Fatalf("%d co-occurrence releases; notes %q", len(got[alsUserPosWhat]), rep.Notes)
	}
	var sigma float64
	for _, r := range rep.Releases {
		if r.What == alsUserPosWhat {
			sigma = r.Scale
		}
	}
	msd := func(truth []float64) float64 {
		var s float64
		for i, v := range got[alsUserPosWhat][0] {
			s += (v - truth[i]) * (v - truth[i])
		}
		return s / float64(len(truth)) / (sigma * sigma)
	}
	unb, bnd := msd(userCooccurrence(train, train.Dims[1])), msd(userCooccurrence(st, st.Dims[1]))
	t.Logf("noise sigma %.4g; mean squared distance over sigma^2: to the unbounded C %.3f, to the bounded C %.3f", sigma, unb, bnd)
	if math.Abs(unb-1) > 0.1 || bnd < 1.5 {
		t.Fatalf("the released C is at %.3f sigma^2 from the unbounded C (want about 1) and %.3f from the bounded one (want far)", unb, bnd)
	}
	if notes := strings.Join(rep.Notes, "\n"); !strings.Contains(notes, "not the k-bounded subset") || !strings.Contains(rep.Relation, "in every release but the item counts and sums and the users' item co-occurrence") {
		t.Fatalf("the report does not say C reads every rating: relation %q, notes %q", rep.Relation, rep.Notes)
	}
	// Without the co-occurrence's release the relation is the plain one.
	o.probe = nil
	_, rep0 := trainUserALS(t, st, R, &o, func(p *alsPrivateParams) { p.userGateShare, p.noCov = 2, true; p.userPosOff = true })
	if strings.Contains(rep0.Relation, "co-occurrence") {
		t.Fatalf("no co-occurrence was released, but the relation names it: %q", rep0.Relation)
	}
	// Another item domain is refused.
	o.Unbounded = userStore([]int{30, 20}, 400, 22)
	o.probe = nil
	if _, err := trainPrivateALS(st, privModel(t, decomposition.CP, []int{1, st.Dims[1]}, R, true, 1, 1), &o, func(p *alsPrivateParams) { p.userGateShare, p.noCov = 2, true }); !errors.Is(err, ErrDomain) {
		t.Fatalf("an unbounded store over 20 items for a training store over %d: err %v, want ErrDomain", st.Dims[1], err)
	}
}
