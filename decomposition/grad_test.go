package decomposition

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// randomModel returns a model with N(0,1) parameters.
func randomModel(t testing.TB, kind Kind, dims, ranks []int, bias bool, seed uint64) *Model {
	t.Helper()
	m, err := NewModel(kind, dims, ranks, bias)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(seed, 1))
	for _, f := range m.Factors {
		for i := range f {
			f[i] = r.NormFloat64()
		}
	}
	for i := range m.Core {
		m.Core[i] = r.NormFloat64()
	}
	if bias {
		m.Mean = 3
		for _, b := range m.Bias {
			for i := range b {
				b[i] = r.NormFloat64()
			}
		}
	}
	return m
}

var gradCases = []struct {
	kind  Kind
	dims  []int
	ranks []int
	bias  bool
}{
	{CP, []int{4, 5}, []int{3}, false},
	{CP, []int{4, 5}, []int{3}, true},
	{CP, []int{4, 5, 6}, []int{3}, false},
	{CP, []int{4, 5, 6}, []int{3}, true},
	{Tucker, []int{4, 5}, []int{2, 3}, false},
	{Tucker, []int{4, 5}, []int{2, 3}, true},
	{Tucker, []int{4, 5, 6}, []int{2, 3, 4}, false},
	{Tucker, []int{4, 5, 6}, []int{2, 3, 4}, true},
}

// TestGradientsFiniteDifference checks DataGrad and RegGrad against central
// differences of EntryLoss for every parameter an entry touches. The loss is
// a polynomial of degree <= 8 in the perturbed parameter, so with h = 1e-5
// the central difference error is O(h^2) ~ 1e-10 relative; 1e-6 leaves room
// for rounding.
func TestGradientsFiniteDifference(t *testing.T) {
	const h, tol = 1e-5, 1e-6
	const lo, lb, lg = 0.3, 0.2, 0.7
	for _, tc := range gradCases {
		t.Run(fmt.Sprintf("%s_%d_bias=%v", tc.kind, len(tc.dims), tc.bias), func(t *testing.T) {
			m := randomModel(t, tc.kind, tc.dims, tc.ranks, tc.bias, 7)
			idx := []int32{1, 3, 2}[:len(tc.dims)]
			x := 2.5
			dw, rw := m.NewWork(), m.NewWork()
			m.DataGrad(idx, x, dw)
			m.RegGrad(idx, lo, lb, lg, rw)
			check := func(name string, p *float64, data, reg float64) {
				t.Helper()
				old := *p
				*p = old + h
				dp := m.EntryLoss(idx, x, 0, 0, 0)
				fp := m.EntryReg(idx, lo, lb, lg)
				*p = old - h
				dm := m.EntryLoss(idx, x, 0, 0, 0)
				fm := m.EntryReg(idx, lo, lb, lg)
				*p = old
				numD := (dp - dm) / (2 * h)
				numR := (fp - fm) / (2 * h)
				if math.Abs(numD-data) > tol*(1+math.Abs(numD)) {
					t.Errorf("%s data gradient %g, finite difference %g", name, data, numD)
				}
				if math.Abs(numR-reg) > tol*(1+math.Abs(numR)) {
					t.Errorf("%s reg gradient %g, finite difference %g", name, reg, numR)
				}
			}
			for mo := range m.Dims {
				row := m.Row(mo, int(idx[mo]))
				for r := range row {
					check(fmt.Sprintf("factor %d[%d]", mo, r), &row[r], dw.Factor[mo][r], rw.Factor[mo][r])
				}
				if m.HasBias {
					check(fmt.Sprintf("bias %d", mo), &m.Bias[mo][idx[mo]], dw.Bias[mo], rw.Bias[mo])
				}
			}
			for i := range m.Core {
				check(fmt.Sprintf("core[%d]", i), &m.Core[i], dw.Core[i], rw.Core[i])
			}
			// The loss of (4) is also consistent with Raw.
			e := x - m.Raw(idx)
			if got := m.EntryLoss(idx, x, 0, 0, 0); math.Abs(got-e*e) > 1e-12 {
				t.Errorf("EntryLoss %g, want %g", got, e*e)
			}
		})
	}
}

// TestCPEqualsSuperdiagonalTucker: CP is Tucker with the identity
// superdiagonal core (Wei et al. 2021, eq. 3), including the data gradients of
// the factors.
func TestCPEqualsSuperdiagonalTucker(t *testing.T) {
	for _, dims := range [][]int{{5, 6}, {5, 6, 7}} {
		for _, bias := range []bool{false, true} {
			cp := randomModel(t, CP, dims, []int{3}, bias, 11)
			ranks := make([]int, len(dims))
			for i := range ranks {
				ranks[i] = 3
			}
			tk, _ := NewModel(Tucker, dims, ranks, bias)
			for mo := range dims {
				copy(tk.Factors[mo], cp.Factors[mo])
				if bias {
					copy(tk.Bias[mo], cp.Bias[mo])
				}
			}
			tk.Mean = cp.Mean
			for r := 0; r < 3; r++ {
				off := 0
				for range dims {
					off = off*3 + r
				}
				tk.Core[off] = 1
			}
			wc, wt := cp.NewWork(), tk.NewWork()
			idx := make([]int32, len(dims))
			for i := 0; i < 20; i++ {
				for mo, d := range dims {
					idx[mo] = int32((i*7 + mo*3) % d)
				}
				a, b := cp.Raw(idx), tk.Raw(idx)
				if math.Abs(a-b) > 1e-12*(1+math.Abs(a)) {
					t.Fatalf("dims %v bias %v idx %v: CP %g, Tucker %g", dims, bias, idx, a, b)
				}
				cp.DataGrad(idx, 1, wc)
				tk.DataGrad(idx, 1, wt)
				for mo := range dims {
					for r := range wc.Factor[mo] {
						if math.Abs(wc.Factor[mo][r]-wt.Factor[mo][r]) > 1e-12*(1+math.Abs(wc.Factor[mo][r])) {
							t.Fatalf("gradient of mode %d differs", mo)
						}
					}
				}
			}
		}
	}
}

// TestPredictIndependent checks Raw against an explicit sum over the core.
func TestPredictIndependent(t *testing.T) {
	m := randomModel(t, Tucker, []int{3, 4, 5}, []int{2, 3, 2}, true, 3)
	idx := []int32{2, 1, 4}
	want := m.Mean + m.Bias[0][2] + m.Bias[1][1] + m.Bias[2][4]
	a, b, c := m.Row(0, 2), m.Row(1, 1), m.Row(2, 4)
	for p := 0; p < 2; p++ {
		for q := 0; q < 3; q++ {
			for s := 0; s < 2; s++ {
				want += m.Core[(p*3+q)*2+s] * a[p] * b[q] * c[s]
			}
		}
	}
	if got := m.Raw(idx); math.Abs(got-want) > 1e-12 {
		t.Fatalf("Raw %g, want %g", got, want)
	}
	m.ClampLo, m.ClampHi = 0.5, 5
	if got := m.Predict(idx); math.Abs(got-math.Min(5, math.Max(0.5, want))) > 1e-12 {
		t.Fatalf("clamped %g", got)
	}
}

func TestPredictAllocs(t *testing.T) {
	m := randomModel(t, Tucker, []int{3, 4, 5}, []int{2, 3, 2}, true, 3)
	w := m.NewWork()
	idx := []int32{2, 1, 4}
	if n := testing.AllocsPerRun(100, func() { m.DataGrad(idx, 1, w); m.PredictWork(idx, w) }); n != 0 {
		t.Fatalf("%v allocations per entry", n)
	}
}

// TestFoldIn: with a model whose user rows are known, folding in a user's
// full noiseless ratings with a tiny lambda recovers that user's row and bias.
func TestFoldIn(t *testing.T) {
	for _, tc := range gradCases {
		m := randomModel(t, tc.kind, tc.dims, tc.ranks, tc.bias, 5)
		user := int32(2)
		var items, times []int32
		var ratings []float64
		idx := make([]int32, len(tc.dims))
		idx[0] = user
		for j := 0; j < tc.dims[1]; j++ {
			kmax := 1
			if len(tc.dims) == 3 {
				kmax = tc.dims[2]
			}
			for k := 0; k < kmax; k++ {
				idx[1] = int32(j)
				if len(tc.dims) == 3 {
					idx[2] = int32(k)
					times = append(times, int32(k))
				}
				items = append(items, int32(j))
				ratings = append(ratings, m.Raw(idx))
			}
		}
		row, err := FoldIn(m, items, times, ratings, 1e-9)
		if err != nil {
			t.Fatal(err)
		}
		want := append([]float64(nil), m.Row(0, int(user))...)
		if tc.bias {
			want = append(want, m.Bias[0][user])
		}
		if len(row) != len(want) {
			t.Fatalf("%v: row length %d, want %d", tc, len(row), len(want))
		}
		for p := range want {
			if math.Abs(row[p]-want[p]) > 1e-5 {
				t.Errorf("%s %v bias=%v: row[%d] = %g, want %g", tc.kind, tc.dims, tc.bias, p, row[p], want[p])
			}
		}
		w := m.NewWork()
		if got, w2 := m.PredictFolded(row, idx, w), m.Raw(idx); math.Abs(got-w2) > 1e-5 {
			t.Errorf("PredictFolded %g, want %g", got, w2)
		}
	}
	m := randomModel(t, CP, []int{3, 4}, []int{2}, false, 1)
	bad := []struct {
		items  []int32
		times  []int32
		r      []float64
		lambda float64
	}{
		{[]int32{0}, nil, []float64{1, 2}, 1},
		{nil, nil, nil, 1},
		{[]int32{9}, nil, []float64{1}, 1},
		{[]int32{0}, []int32{0}, []float64{1}, 1},
		{[]int32{0}, nil, []float64{math.NaN()}, 1},
		{[]int32{0}, nil, []float64{1}, 0},
	}
	for i, b := range bad {
		if _, err := FoldIn(m, b.items, b.times, b.r, b.lambda); err == nil {
			t.Errorf("bad case %d accepted", i)
		}
	}
}
