package completion

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/perturb"
)

// withRepeats returns st plus a repeated cell for every seventh rating:
// the same user and item (and time bucket) with another value, as a raw
// log before the bound may hold.
func withRepeats(st *data.Store) *data.Store {
	out := &data.Store{Dims: st.Dims, Dicts: st.Dicts, Time: st.Time, Idx: make([][]int32, len(st.Idx))}
	for m := range st.Idx {
		out.Idx[m] = append([]int32(nil), st.Idx[m]...)
	}
	out.Val = append([]float64(nil), st.Val...)
	for e := 0; e < st.NNZ(); e += 7 {
		for m := range st.Idx {
			out.Idx[m] = append(out.Idx[m], st.Idx[m][e])
		}
		out.Val = append(out.Val, 5.5-st.Val[e])
	}
	return out
}

func mustFallbackStats(t *testing.T, st *data.Store, o *PrivateOptions, mu float64) []float64 {
	t.Helper()
	v, err := alsFallbackStats(st, o, mu, st.Dims[1])
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestUserContributionWeight(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		mech string
		k, m int
		want float64
	}{
		{perturb.MechGaussian, 100, 0, 0},
		{perturb.MechGaussian, 100, 1, 1},
		{perturb.MechGaussian, 100, 100, 1},
		{perturb.MechGaussian, 100, 400, 0.5},
		{perturb.MechLaplace, 100, 400, 0.25},
		{perturb.MechLaplace, 100, 50, 1},
		{"", 4, 16, 0.25},         // not exactly Gaussian: the rule safe under both norms
		{"Gaussian", 4, 16, 0.25}, // likewise
	} {
		if got := UserContributionWeight(c.mech, c.k, c.m); math.Abs(got-c.want) > 1e-15 {
			t.Errorf("UserContributionWeight(%q, %d, %d) = %v, want %v", c.mech, c.k, c.m, got, c.want)
		}
	}
}

// TestUserWeightedSensitivity removes each user in turn from a log before
// the bound (users with 3 to 61 distinct items against k = 6, repeated
// cells, extreme ratings) and checks that the weighted item counts and
// sums the user-unit bias releases read, and private ALS's second release
// of them, move by at most the sensitivities the releases declare (l2
// under Gaussian noise, l1 under Laplace), that the heaviest users reach
// them, and that on the bounded log the weights are 1 on every rating.
func TestUserWeightedSensitivity(t *testing.T) {
	t.Parallel()
	const k = 6
	rng := rand.New(rand.NewPCG(5, 5))
	base := userStore([]int{30, 80}, 1, 1)
	base.Idx = [][]int32{nil, nil}
	base.Val = nil
	for u := range 30 {
		m := 3 + 2*u
		for _, i := range rng.Perm(80)[:m] {
			base.Idx[0] = append(base.Idx[0], int32(u))
			base.Idx[1] = append(base.Idx[1], int32(i))
			base.Val = append(base.Val, []float64{1, 5}[rng.IntN(2)])
		}
	}
	raw := withRepeats(base)
	for _, mech := range []string{perturb.MechGaussian, perturb.MechLaplace} {
		o := userOpts(k)
		o.Mechanism = mech
		o.Unbounded = raw
		st, err := BoundForUnit(raw, &o)
		if err != nil {
			t.Fatal(err)
		}
		rels := userBiasReleases(&o)
		norm := func(a, b []float64) float64 {
			var d float64
			for i := range a {
				if mech == perturb.MechLaplace {
					d += math.Abs(a[i] - b[i])
				} else {
					d += (a[i] - b[i]) * (a[i] - b[i])
				}
			}
			if mech == perturb.MechLaplace {
				return d
			}
			return math.Sqrt(d)
		}
		bound := func(r userRelease) float64 {
			if mech == perturb.MechLaplace {
				return r.l1
			}
			return r.l2
		}
		stats := func(un *data.Store, mu float64) (c, s []float64) {
			oo := o
			oo.Unbounded = un
			src, err := newStoreUserBiasSource(st, &oo)
			if err != nil {
				t.Fatal(err)
			}
			_, _, _, c, _ = src.UserTotals(&oo)
			s, _ = src.ResidualSums(&oo, mu)
			return c, s
		}
		_, fl2 := alsFallbackWeight(&o)
		var worstC, worstS, worstF float64
		for _, mu := range []float64{1, 2.5, 5} {
			ca, sa := stats(raw, mu)
			fa := mustFallbackStats(t, st, &o, mu)
			for u := int32(0); u < 30; u++ {
				nb := withoutUser(raw, u)
				cb, sb := stats(nb, mu)
				dc, ds := norm(ca, cb), norm(sa, sb)
				if dc > bound(rels[3])+1e-9 || ds > bound(rels[4])+1e-9 {
					t.Fatalf("%s, user %d (m_u %d): counts moved by %v (declared %v), sums by %v (declared %v)", mech, u, 3+2*u, dc, bound(rels[3]), ds, bound(rels[4]))
				}
				worstC, worstS = math.Max(worstC, dc), math.Max(worstS, ds)
				if mech == perturb.MechGaussian {
					oo := o
					oo.Unbounded = nb
					fb := mustFallbackStats(t, withoutUser(st, u), &oo, mu)
					var d float64
					for i := range fa {
						d += (fa[i] - fb[i]) * (fa[i] - fb[i])
					}
					if d = math.Sqrt(d); d > fl2+1e-9 {
						t.Fatalf("user %d: the fallback release moved by %v > %v", u, d, fl2)
					}
					worstF = math.Max(worstF, d)
				}
			}
		}
		if worstC < bound(rels[3])*(1-1e-9) || worstS < 0.9*bound(rels[4]) {
			t.Errorf("%s: worst changes %v, %v against the bounds %v, %v: the weights are smaller than the rule's", mech, worstC, worstS, bound(rels[3]), bound(rels[4]))
		}
		if mech == perturb.MechGaussian && worstF < 0.8*fl2 {
			t.Errorf("fallback: worst change %v against %v", worstF, fl2)
		}
		if mech == perturb.MechLaplace {
			// The fallback's release is Gaussian whatever o says: its
			// weights are the Gaussian rule's, as the bias releases' it is
			// pooled with under private ALS (alsBiasOptions).
			g := o
			g.Mechanism = perturb.MechGaussian
			a, b := mustFallbackStats(t, st, &o, 3), mustFallbackStats(t, st, &g, 3)
			for i := range a {
				if a[i] != b[i] {
					t.Fatalf("the fallback's statistics depend on o's mechanism (item %d: %v against %v)", i, a[i], b[i])
				}
			}
		}
		// Every user's weights sum to min(m_u, sqrt(k m_u)) (Gaussian) or
		// min(m_u, k) (Laplace) over its distinct items, repeats weigh 0.
		w := userEntryWeights(raw, &o)
		sum := make([]float64, 30)
		for e, u := range raw.Idx[0] {
			sum[u] += w[e]
			if e >= base.NNZ() && w[e] != 0 {
				t.Fatalf("%s: a repeated cell (rating %d) has weight %v", mech, e, w[e])
			}
		}
		for u, s := range sum {
			m := float64(3 + 2*u)
			want := math.Min(m, math.Sqrt(k*m))
			if mech == perturb.MechLaplace {
				want = math.Min(m, k)
			}
			if math.Abs(s-want) > 1e-9 {
				t.Fatalf("%s: user %d's weights sum to %v, want %v", mech, u, s, want)
			}
		}
		for e, x := range userEntryWeights(st, &o) {
			if x != 1 {
				t.Fatalf("%s: on the bounded log rating %d has weight %v", mech, e, x)
			}
		}
	}
}

// TestUserEntryWeightsRepeats: on an order-3 log a user's ratings of one
// item in several time buckets (and a repeated cell) count once, with the
// first rating in the log's order, towards m_u and the weighted counts
// and sums; the later ones weigh 0.
func TestUserEntryWeightsRepeats(t *testing.T) {
	t.Parallel()
	// User 0 rates items 0, 1, 2, 3 (item 1 in buckets 0, 2 and 5, item 3
	// twice in bucket 1); user 1 rates item 0 once. k = 1, Gaussian: user
	// 0 has m = 4 distinct items, weight sqrt(1/4) = 0.5.
	st := &data.Store{Dims: []int{2, 4, 6}, Idx: [][]int32{
		{0, 0, 0, 0, 0, 0, 0, 1},
		{1, 0, 1, 2, 1, 3, 3, 0},
		{0, 1, 2, 3, 5, 1, 1, 4},
	}, Val: []float64{5, 2, 1, 3, 1, 4, 1, 5}}
	o := userOpts(1)
	o.Mechanism = perturb.MechGaussian
	w := userEntryWeights(st, &o)
	want := []float64{0.5, 0.5, 0, 0.5, 0, 0.5, 0, 1}
	for e := range want {
		if w[e] != want[e] {
			t.Fatalf("weights %v, want %v", w, want)
		}
	}
	c := userWeightedCounts(st, w)
	if c[0] != 1.5 || c[1] != 0.5 || c[2] != 0.5 || c[3] != 0.5 {
		t.Fatalf("weighted counts %v", c)
	}
	// Item 1's sum reads its first rating (5), not the later 1s.
	s := userWeightedResidualSums(st, w, &o, 3)
	if want := 0.5 * BiasResidual(5, 3, o.RatingMin, o.RatingMax); s[1] != want {
		t.Fatalf("item 1's weighted sum %v, want %v (the first rating's)", s[1], want)
	}
}
