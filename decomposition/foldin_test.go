package decomposition

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// TestFoldInUserBuckets checks FoldInUser's Schur-complement solve against
// the joint normal equations in (a, b) built and solved directly, on
// order-3 CP and Tucker models with and without biases.
func TestFoldInUserBuckets(t *testing.T) {
	for _, tc := range gradCases {
		if len(tc.dims) != 3 {
			continue
		}
		m := randomModel(t, tc.kind, tc.dims, tc.ranks, tc.bias, 7)
		r := rand.New(rand.NewPCG(3, 4))
		var items, times []int32
		var ratings []float64
		for e := 0; e < 15; e++ {
			items = append(items, int32(r.IntN(tc.dims[1])))
			times = append(times, int32(r.IntN(3))) // buckets 0..2 of 6
			ratings = append(ratings, 3+r.NormFloat64())
		}
		pen := FoldPenalties{Row: 0.7, Bucket: 2.5}
		f, err := FoldInUser(m, items, times, ratings, pen)
		if err != nil {
			t.Fatal(err)
		}
		a, b := foldInJoint(m, items, times, ratings, pen)
		for p := range a {
			if math.Abs(f.Row[p]-a[p]) > 1e-9 {
				t.Errorf("%s bias=%v: row[%d] = %.12g, joint solve %.12g", tc.kind, tc.bias, p, f.Row[p], a[p])
			}
		}
		if len(f.Buckets) != 3 {
			t.Fatalf("%s: %d buckets, want 3", tc.kind, len(f.Buckets))
		}
		for i, k := range f.Buckets {
			if math.Abs(f.BucketBias[i]-b[k]) > 1e-9 || f.BucketBiasAt(k) != f.BucketBias[i] {
				t.Errorf("%s bias=%v: bucket %d bias %.12g, joint solve %.12g", tc.kind, tc.bias, k, f.BucketBias[i], b[k])
			}
		}
		if f.BucketBiasAt(5) != 0 {
			t.Errorf("bucket without ratings has bias %g", f.BucketBiasAt(5))
		}
		w := m.NewWork()
		idx := []int32{0, items[0], times[0]}
		if got, want := m.PredictFoldedUser(f, idx, w), m.Clamp(m.predictFoldedRaw(f.Row, idx, w)+b[times[0]]); math.Abs(got-want) > 1e-12 {
			t.Errorf("PredictFoldedUser %g, want %g", got, want)
		}
		// Without bucket biases FoldInUser is FoldIn.
		g, err := FoldInUser(m, items, times, ratings, FoldPenalties{Row: 0.7})
		if err != nil {
			t.Fatal(err)
		}
		row, _ := FoldIn(m, items, times, ratings, 0.7)
		for p := range row {
			if g.Row[p] != row[p] || len(g.Buckets) != 0 {
				t.Fatalf("no-bucket fold-in differs from FoldIn")
			}
		}
	}
	// Edge cases against the joint solve: one rating; every rating in one
	// bucket.
	m := randomModel(t, CP, []int{3, 4, 5}, []int{2}, true, 1)
	pen := FoldPenalties{Row: 1.5, Bucket: 4}
	for _, c := range []struct {
		items, times []int32
		r            []float64
	}{
		{[]int32{2}, []int32{3}, []float64{4.5}},
		{[]int32{0, 1, 3, 1}, []int32{2, 2, 2, 2}, []float64{1, 5, 3, 4}},
	} {
		f, err := FoldInUser(m, c.items, c.times, c.r, pen)
		if err != nil {
			t.Fatal(err)
		}
		a, b := foldInJoint(m, c.items, c.times, c.r, pen)
		for p := range a {
			if math.Abs(f.Row[p]-a[p]) > 1e-9 {
				t.Errorf("%d ratings: row[%d] = %.12g, joint solve %.12g", len(c.r), p, f.Row[p], a[p])
			}
		}
		if len(f.Buckets) != 1 || math.Abs(f.BucketBias[0]-b[f.Buckets[0]]) > 1e-9 {
			t.Errorf("%d ratings: buckets %v %v, joint solve %v", len(c.r), f.Buckets, f.BucketBias, b)
		}
	}
	for _, bad := range []float64{-1, math.NaN(), math.Inf(1)} {
		if _, err := FoldInUser(m, []int32{0}, []int32{0}, []float64{1}, FoldPenalties{Row: 1, Bucket: bad}); err == nil {
			t.Errorf("bucket penalty %g accepted", bad)
		}
		if _, err := FoldInUser(m, []int32{0}, []int32{0}, []float64{1}, FoldPenalties{Row: 1, PerRating: bad}); err == nil {
			t.Errorf("per-rating penalty %g accepted", bad)
		}
	}
	if _, err := FoldInUser(m, []int32{0}, []int32{0}, []float64{1}, FoldPenalties{}); err == nil {
		t.Error("zero penalties accepted")
	}
	// PerRating p adds p n to the row penalty: a user with 4 ratings at
	// Row 0.3, PerRating 0.2 folds in as at Row 1.1.
	items, times, r := []int32{0, 1, 3, 1}, []int32{2, 2, 2, 2}, []float64{1, 5, 3, 4}
	a, err := FoldInUser(m, items, times, r, FoldPenalties{Row: 0.3, PerRating: 0.2, Bucket: 4})
	if err != nil {
		t.Fatal(err)
	}
	b, err := FoldInUser(m, items, times, r, FoldPenalties{Row: 1.1, Bucket: 4})
	if err != nil {
		t.Fatal(err)
	}
	for p := range a.Row {
		if math.Abs(a.Row[p]-b.Row[p]) > 1e-12 {
			t.Errorf("per-rating penalty: row[%d] = %v, want %v", p, a.Row[p], b.Row[p])
		}
	}
}

// foldInJoint solves the fold-in's joint normal equations in (a, b_0..b_K)
// directly (K the model's number of buckets; buckets without ratings get
// b = 0 from their penalty).
func foldInJoint(m *Model, items, times []int32, ratings []float64, p FoldPenalties) (a []float64, b []float64) {
	R := m.Ranks[0]
	n := R
	if m.HasBias {
		n++
	}
	K := m.Dims[2]
	N := n + K
	A := mat.NewDense(N, N, nil)
	rhs := mat.NewVecDense(N, nil)
	w := m.NewWork()
	x := make([]float64, N)
	for e := range items {
		idx := []int32{0, items[e], times[e]}
		m.Partial(idx, w)
		clear(x)
		copy(x, w.Factor[0])
		y := ratings[e]
		if m.HasBias {
			y -= m.OffsetWithout(idx, 0)
			x[R] = 1
		}
		x[n+int(times[e])] = 1
		for i := range N {
			rhs.SetVec(i, rhs.AtVec(i)+x[i]*y)
			for j := range N {
				A.Set(i, j, A.At(i, j)+x[i]*x[j])
			}
		}
	}
	for i := range N {
		l := p.Row
		if i >= n {
			l = p.Bucket
		}
		A.Set(i, i, A.At(i, i)+l)
	}
	var sol mat.VecDense
	if err := sol.SolveVec(A, rhs); err != nil {
		panic(err)
	}
	s := sol.RawVector().Data
	return s[:n], s[n:]
}
