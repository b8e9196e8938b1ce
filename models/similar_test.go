package models

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/perturb"
)

func TestSimilarMatchesBruteForce(t *testing.T) {
	for _, dims := range [][]int{{6, 9}, {6, 9, 4}} {
		f := testFile(t, decomposition.CP, dims, []int{3}, true, 21)
		p := NewPredictor(f)
		for _, mode := range []int{0, 1} {
			m := f.Model
			emb := func(i int) []float64 {
				v := slices.Clone(m.Row(mode, i))
				if len(dims) == 3 {
					for r := range v {
						v[r] *= p.meanTime[r]
					}
				}
				return v
			}
			cos := func(a, b []float64) float64 {
				var d, na, nb float64
				for r := range a {
					d += a[r] * b[r]
					na += a[r] * a[r]
					nb += b[r] * b[r]
				}
				return d / math.Sqrt(na*nb)
			}
			q := 2
			type sc struct {
				i int
				c float64
			}
			var all []sc
			for i := 0; i < dims[mode]; i++ {
				if i != q {
					all = append(all, sc{i, cos(emb(q), emb(i))})
				}
			}
			sort.SliceStable(all, func(a, b int) bool { return all[a].c > all[b].c })
			var got []Neighbor
			var err error
			if mode == 1 {
				got, err = p.SimilarItems(p.ItemID(int32(q)), 4)
			} else {
				got, err = p.SimilarUsers(p.UserID(int32(q)), 4)
			}
			if err != nil || len(got) != 4 {
				t.Fatalf("mode %d: %v %v", mode, err, got)
			}
			for k, g := range got {
				if int(g.Index) != all[k].i || math.Abs(g.Cosine-all[k].c) > 1e-12 {
					t.Fatalf("dims %v mode %d rank %d: got %+v, want %+v", dims, mode, k, g, all[k])
				}
			}
		}
		if _, err := p.SimilarItems("nope", 3); !errors.Is(err, ErrUnknownID) {
			t.Fatalf("unknown item: %v", err)
		}
		if _, err := p.SimilarUsers("12345", 3); !errors.Is(err, ErrUnknownID) {
			t.Fatalf("unknown user: %v", err)
		}
	}
}

// TestShrinkageRanking: with shrinkage, RecommendAll and Recommend both
// rank by base + z_j (prediction - base), z_j = n_j / (n_j + kappa).
func TestShrinkageRanking(t *testing.T) {
	f := testFile(t, decomposition.CP, []int{4, 5}, []int{2}, true, 8)
	f.Model.ClampLo, f.Model.ClampHi = 0, 0
	f.Seen, _ = SeenFromStore(seenStore(), 4, 5) // supports 2, 2, 1, 2, 2
	base := NewPredictor(f)
	p := base.WithShrinkage(1.5)
	if p.Shrinkage() != 1.5 || base.Shrinkage() != 0 || base.WithShrinkage(0).rankWeight != nil {
		t.Fatal("WithShrinkage modified the original or ignored kappa 0")
	}
	sup := f.Seen.Support(5)
	for u := 0; u < 4; u++ {
		m := f.Model
		b := m.Mean + m.Bias[0][u]
		type sc struct {
			j int32
			s float64
		}
		var all []sc
		for j := 0; j < 5; j++ {
			raw := m.Raw([]int32{int32(u), int32(j)})
			z := float64(sup[j]) / (float64(sup[j]) + 1.5)
			all = append(all, sc{int32(j), b + z*(raw-b)})
		}
		sort.SliceStable(all, func(a, c int) bool { return all[a].s > all[c].s })
		recs, _ := p.Recommend(p.UserID(int32(u)), nil, 5, nil)
		for k := range recs {
			if recs[k].Item != all[k].j || math.Abs(recs[k].Score-all[k].s) > 1e-12 {
				t.Fatalf("user %d rank %d: %+v, want %+v", u, k, recs[k], all[k])
			}
		}
	}
	err := p.RecommendAll(5, nil, 2, nil, func(u int32, recs []Scored) error {
		one, _ := p.Recommend(p.UserID(u), nil, 5, nil)
		if !slices.Equal(items(one), items(recs)) {
			t.Fatalf("user %d: RecommendAll %v, Recommend %v", u, items(recs), items(one))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestImplicitUnknownUserPopularity: an unknown user of an implicit model
// gets the items by training popularity.
func TestImplicitUnknownUserPopularity(t *testing.T) {
	f := testFile(t, decomposition.CP, []int{4, 5}, []int{2}, false, 8)
	f.Model.ClampLo, f.Model.ClampHi = 0, 0
	f.Header.Objective = ObjectiveImplicit
	f.Seen, _ = SeenFromStore(seenStore(), 4, 5) // supports 2, 2, 1, 2, 2
	g, err := decode(encode(t, f))
	if err != nil {
		t.Fatal(err)
	}
	p := NewPredictor(g)
	recs, fb := p.Recommend("unknown", nil, 5, nil)
	if fb&UnknownUser == 0 || !slices.Equal(items(recs), []int32{0, 1, 3, 4, 2}) {
		t.Fatalf("unknown user: %v %v", items(recs), fb)
	}
}

// TestShrinkagePrivateCounts: a private model keeps no seen items; its
// report's item counts (public or released) weight its rankings instead,
// and a report without them (or of the wrong length) leaves rankings on
// the plain prediction.
func TestShrinkagePrivateCounts(t *testing.T) {
	f := testFile(t, decomposition.CP, []int{4, 5}, []int{2}, true, 8)
	f.Model.ClampLo, f.Model.ClampHi = 0, 0
	f.Seen = nil
	f.Privacy = &perturb.Report{Mode: "bias", Billboard: true, ItemCounts: []float64{2, 0, 7, 1, 30}}
	p := NewPredictor(f).WithShrinkage(3)
	if p.Shrinkage() != 3 || len(p.rankWeight) != 5 {
		t.Fatalf("shrinkage %v, weights %v", p.Shrinkage(), p.rankWeight)
	}
	for j, n := range f.Privacy.ItemCounts {
		if w := n / (n + 3); math.Abs(p.rankWeight[j]-w) > 1e-15 {
			t.Errorf("item %d: weight %v, want %v", j, p.rankWeight[j], w)
		}
	}
	f.Privacy.ItemCounts = f.Privacy.ItemCounts[:4]
	if q := NewPredictor(f).WithShrinkage(3); q.rankWeight != nil || q.Shrinkage() != 0 {
		t.Error("item counts of the wrong length used")
	}
}

// TestRelevanceNoisyCounts: a private model whose report carries item
// counts released with noise (ItemCountsSD > 0) ranks by log(n~ + 1 + sd)
// + log Phi((prediction - t)/s), t and s from its public range, in
// Recommend and RecommendAll alike; its lists' Rating is the clamped
// prediction; exact counts (sd 0) rank the same way with log(n + 1), and a
// model without a public range keeps the credibility score.
func TestRelevanceNoisyCounts(t *testing.T) {
	f := testFile(t, decomposition.CP, []int{4, 6}, []int{2}, true, 8)
	f.Model.ClampLo, f.Model.ClampHi = 1, 5
	f.Model.Mean = 4
	f.Seen = nil
	counts := []float64{2, 0, 700, 1, 30, 5}
	const sd = 3.5
	f.Privacy = &perturb.Report{Mode: "bias", Billboard: true, ItemCounts: counts, ItemCountsSD: sd}
	p := NewPredictor(f).WithShrinkage(500)
	if p.relevance == nil || p.rankWeight != nil || p.Shrinkage() != 500 {
		t.Fatalf("relevance %v, weights %v, shrinkage %v", p.relevance, p.rankWeight, p.Shrinkage())
	}
	m := f.Model
	for u := 0; u < 4; u++ {
		type sc struct {
			j       int32
			s, pred float64
		}
		var all []sc
		for j := range counts {
			raw := m.Raw([]int32{int32(u), int32(j)})
			phi := 0.5 * math.Erfc(-(raw-4)/1/math.Sqrt2) // t = 5 - 4/4, s = 4/4
			all = append(all, sc{int32(j), math.Log(counts[j]+1+sd) + math.Log(phi), raw})
		}
		sort.SliceStable(all, func(a, c int) bool { return all[a].s > all[c].s })
		recs, _ := p.Recommend(p.UserID(int32(u)), nil, len(counts), nil)
		for k := range recs {
			if recs[k].Item != all[k].j || math.Abs(recs[k].Score-all[k].s) > 1e-9 {
				t.Fatalf("user %d rank %d: %+v, want %+v", u, k, recs[k], all[k])
			}
			if want := m.Clamp(all[k].pred); math.Abs(recs[k].Rating-want) > 1e-9 {
				t.Fatalf("user %d item %d: rating %v, want the clamped prediction %v", u, recs[k].Item, recs[k].Rating, want)
			}
		}
	}
	err := p.RecommendAll(len(counts), nil, 2, nil, func(u int32, recs []Scored) error {
		one, _ := p.Recommend(p.UserID(u), nil, len(counts), nil)
		if !slices.Equal(items(one), items(recs)) {
			t.Fatalf("user %d: RecommendAll %v, Recommend %v", u, items(recs), items(one))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	f.Privacy.ItemCountsSD = 0
	if q := NewPredictor(f).WithShrinkage(500); q.relevance == nil || q.relevance.logN[2] != math.Log(701) {
		t.Error("exact counts: want the relevance score with log(n + 1)")
	}
	f.Model.ClampLo, f.Model.ClampHi = 0, 0
	if q := NewPredictor(f).WithShrinkage(500); q.relevance != nil || q.rankWeight == nil {
		t.Error("no public rating range: want the credibility score")
	}
	f.Model.ClampLo, f.Model.ClampHi = 1, 5
	f.Privacy.ItemCountsSD = sd
	if q := NewPredictor(f).WithShrinkage(0); q.relevance != nil || q.rankWeight != nil {
		t.Error("kappa 0: want the plain prediction")
	}
}

// TestRankingNonPrivate: a non-private rating model with seen items and a
// rating range ranks by relevance at the defaults (its supports exact, sd
// 0); WithRanking selects the credibility score or the prediction, and
// Ranking says which is in use.
func TestRankingNonPrivate(t *testing.T) {
	f := testFile(t, decomposition.CP, []int{4, 5}, []int{2}, true, 8)
	f.Model.ClampLo, f.Model.ClampHi = 1, 5
	f.Seen, _ = SeenFromStore(seenStore(), 4, 5) // supports 2, 2, 1, 2, 2
	base := NewPredictor(f)
	if base.Ranking() != RankPrediction {
		t.Fatalf("a new predictor ranks by %q", base.Ranking())
	}
	p := base.WithShrinkage(DefaultShrinkage)
	if p.Ranking() != RankRelevance || p.relevance == nil || p.rankWeight != nil {
		t.Fatalf("default: ranking %q", p.Ranking())
	}
	sup := f.Seen.Support(5)
	for j, n := range sup {
		if want := math.Log(float64(n) + 1); math.Abs(p.relevance.logN[j]-want) > 1e-15 {
			t.Errorf("item %d: log support term %v, want %v", j, p.relevance.logN[j], want)
		}
	}
	m := f.Model
	for u := 0; u < 4; u++ {
		recs, _ := p.Recommend(p.UserID(int32(u)), nil, 5, nil)
		for _, r := range recs {
			raw := m.Raw([]int32{int32(u), r.Item})
			want := math.Log(float64(sup[r.Item])+1) + logPhi((raw-4)/1)
			if math.Abs(r.Score-want) > 1e-9 {
				t.Fatalf("user %d item %d: score %v, want %v", u, r.Item, r.Score, want)
			}
		}
	}
	for _, tc := range []struct {
		r     Ranking
		kappa float64
		want  Ranking
	}{
		{RankCredibility, 500, RankCredibility},
		{RankCredibility, 0, RankPrediction},
		{RankPrediction, 500, RankPrediction},
		{RankRelevance, 0, RankRelevance},
	} {
		if got := base.WithRanking(tc.r, tc.kappa).Ranking(); got != tc.want {
			t.Errorf("WithRanking(%q, %v): ranks by %q, want %q", tc.r, tc.kappa, got, tc.want)
		}
	}
	if q := base.WithRanking(RankCredibility, 3); q.rankWeight == nil || math.Abs(q.rankWeight[2]-1.0/4) > 1e-15 {
		t.Error("credibility: want weights n/(n + kappa)")
	}
	if q := base.WithShrinkage(0); q.Ranking() != RankPrediction {
		t.Errorf("--shrinkage 0 ranks by %q", q.Ranking())
	}
	f.Model.ClampLo, f.Model.ClampHi = 0, 0 // --clamp none: no rating range
	if q := NewPredictor(f).WithShrinkage(DefaultShrinkage); q.Ranking() != RankCredibility {
		t.Errorf("no rating range: ranks by %q, want the credibility fallback", q.Ranking())
	}
}

// TestRankingEdges: the zero Ranking is relevance; a kappa that is not a
// finite positive number leaves relevance as it is but turns credibility
// into the prediction; a model without item supports ranks by the
// prediction; implicit models report their own scores; and an unknown
// user of a model without biases gets the items by popularity under
// relevance, each with the fallback mean as its rating.
func TestRankingEdges(t *testing.T) {
	f := testFile(t, decomposition.CP, []int{4, 5}, []int{2}, false, 8)
	f.Model.ClampLo, f.Model.ClampHi = 1, 5
	f.Seen, _ = SeenFromStore(seenStore(), 4, 5) // supports 2, 2, 1, 2, 2
	base := NewPredictor(f)
	for _, tc := range []struct {
		r     Ranking
		kappa float64
		want  Ranking
	}{
		{"", 500, RankRelevance},
		{RankRelevance, math.Inf(1), RankRelevance},
		{RankRelevance, math.NaN(), RankRelevance},
		{RankCredibility, math.Inf(1), RankPrediction},
		{RankCredibility, math.NaN(), RankPrediction},
		{"popular", 500, RankPrediction},
	} {
		q := base.WithRanking(tc.r, tc.kappa)
		if q.Ranking() != tc.want || math.IsNaN(q.Shrinkage()) || math.IsInf(q.Shrinkage(), 0) {
			t.Errorf("WithRanking(%q, %v): ranking %q, shrinkage %v; want %q and a finite shrinkage", tc.r, tc.kappa, q.Ranking(), q.Shrinkage(), tc.want)
		}
	}
	p := base.WithShrinkage(DefaultShrinkage)
	recs, fb := p.Recommend("nobody", nil, 5, nil)
	if fb&UnknownUser == 0 || !slices.Equal(items(recs), []int32{0, 1, 3, 4, 2}) {
		t.Fatalf("unknown user of a model without biases: %v (fallback %v), want the items by popularity", items(recs), fb)
	}
	for _, r := range recs {
		if want := f.Model.Clamp(p.fallbackMean); math.Abs(r.Rating-want) > 1e-9 {
			t.Errorf("item %d: rating %v, want the fallback mean %v", r.Item, r.Rating, want)
		}
	}
	g := testFile(t, decomposition.CP, []int{4, 5}, []int{2}, true, 8)
	g.Model.ClampLo, g.Model.ClampHi = 1, 5
	g.Seen = nil
	if q := NewPredictor(g).WithShrinkage(DefaultShrinkage); q.Ranking() != RankPrediction {
		t.Errorf("no item supports: ranks by %q, want prediction", q.Ranking())
	}
	g.Header.Objective = ObjectiveImplicit
	if q := NewPredictor(g).WithRanking(RankRelevance, DefaultShrinkage); q.Ranking() != RankModelScore {
		t.Errorf("implicit model: ranks by %q, want its own scores", q.Ranking())
	}
}

func TestParseRanking(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Ranking
		ok   bool
	}{
		{"relevance", RankRelevance, true},
		{"credibility", RankCredibility, true},
		{"prediction", RankPrediction, true},
		{"", "", false},
		{"Relevance", "", false},
		{"model-score", "", false},
	} {
		got, err := ParseRanking(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseRanking(%q) = %q, %v", tc.in, got, err)
		}
	}
}

// TestLogPhi: logPhi matches log(Phi) where Phi is representable, is
// finite and decreasing far in the tail, and invLogPhi inverts it.
func TestLogPhi(t *testing.T) {
	for x := -60.0; x <= 8; x += 0.37 {
		l := logPhi(x)
		if x > -30 {
			if want := math.Log(0.5 * math.Erfc(-x/math.Sqrt2)); math.Abs(l-want) > 1e-12*math.Max(1, math.Abs(want)) {
				t.Fatalf("logPhi(%v) = %v, want %v", x, l, want)
			}
		}
		if math.IsInf(l, 0) || math.IsNaN(l) || (x < -30 && logPhi(x-0.01) >= l) {
			t.Fatalf("logPhi(%v) = %v", x, l)
		}
		if x < 7 {
			if back := invLogPhi(l); math.Abs(back-x) > 1e-6*math.Max(1, math.Abs(x)) {
				t.Fatalf("invLogPhi(logPhi(%v)) = %v", x, back)
			}
		}
	}
	// Continuity at the switch to the asymptotic series.
	if d := math.Abs(logPhi(-30-1e-9) - logPhi(-30+1e-9)); d > 1e-6 {
		t.Fatalf("logPhi jumps by %v at -30", d)
	}
}

// TestRelevancePruned: the relevance scan stops early (items by
// popularity, the popularity term bounding every later score), yet its
// lists are a full ranking's, in Recommend and in RecommendAll with a
// candidate filter.
func TestRelevancePruned(t *testing.T) {
	const U, J, n = 5, 400, 7
	f := testFile(t, decomposition.CP, []int{U, J}, []int{3}, true, 12)
	f.Model.ClampLo, f.Model.ClampHi = 1, 5
	f.Model.Mean = 3.5
	f.Seen = nil
	r := rand.New(rand.NewPCG(3, 4))
	counts := make([]float64, J)
	for j := range counts {
		counts[j] = math.Floor(2000*r.Float64()*r.Float64()) - 20 // some negative: released noise
	}
	const sd = 15
	f.Privacy = &perturb.Report{Mode: "bias", Billboard: true, ItemCounts: counts, ItemCountsSD: sd}
	p := NewPredictor(f).WithShrinkage(500)
	allowed := make([]bool, J)
	for j := range allowed {
		allowed[j] = j%3 != 0
	}
	full := func(u int, keep func(int) bool) []int32 {
		type sc struct {
			j int32
			s float64
		}
		var all []sc
		for j := 0; j < J; j++ {
			if !keep(j) {
				continue
			}
			raw := f.Model.Raw([]int32{int32(u), int32(j)})
			all = append(all, sc{int32(j), math.Log(math.Max(counts[j], 0)+1+sd) + logPhi((raw-4)/1)})
		}
		sort.SliceStable(all, func(a, c int) bool { return all[a].s > all[c].s })
		out := make([]int32, n)
		for k := range out {
			out[k] = all[k].j
		}
		return out
	}
	for u := 0; u < U; u++ {
		recs, _ := p.Recommend(p.UserID(int32(u)), nil, n, nil)
		if want := full(u, func(int) bool { return true }); !slices.Equal(items(recs), want) {
			t.Fatalf("user %d: Recommend %v, full ranking %v", u, items(recs), want)
		}
	}
	err := p.RecommendAll(n, nil, 2, &Exclusions{Allowed: allowed}, func(u int32, recs []Scored) error {
		if want := full(int(u), func(j int) bool { return allowed[j] }); !slices.Equal(items(recs), want) {
			t.Fatalf("user %d: RecommendAll %v, full ranking %v", u, items(recs), want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
