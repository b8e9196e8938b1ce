package models

import (
	"errors"
	"math"
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
