package completion

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
)

// implicitStore draws a random users x items log with nnz events (repeats
// allowed) and values in [1, 5].
func implicitStore(U, I, nnz int, seed uint64) *data.Store {
	r := rand.New(rand.NewPCG(seed, 7))
	st := &data.Store{Dims: []int{U, I}, Idx: [][]int32{make([]int32, nnz), make([]int32, nnz)}, Val: make([]float64, nnz)}
	for e := 0; e < nnz; e++ {
		st.Idx[0][e] = int32(r.IntN(U))
		st.Idx[1][e] = int32(r.IntN(I))
		st.Val[e] = float64(1 + r.IntN(5))
	}
	return st
}

func implicitModel(t testing.TB, U, I, R int) *decomposition.Model {
	m, err := decomposition.NewModel(decomposition.CP, []int{U, I}, []int{R}, false)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// denseWeights returns the full confidence and preference matrices of a
// log, computed directly from the definition.
func denseWeights(st *data.Store, cfg *ImplicitSettings) (C, P []float64) {
	U, I := st.Dims[0], st.Dims[1]
	sum := make([]float64, U*I)
	obs := make([]bool, U*I)
	for e, v := range st.Val {
		k := int(st.Idx[0][e])*I + int(st.Idx[1][e])
		sum[k] += v
		obs[k] = true
	}
	C, P = make([]float64, U*I), make([]float64, U*I)
	for k := range C {
		C[k] = cfg.UnobservedWeight
		if obs[k] {
			C[k] = 1 + cfg.Alpha*cfg.Confidence.apply(sum[k])
			P[k] = 1
		}
	}
	return C, P
}

func TestCholeskySolve(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, R := range []int{1, 2, 5, 17} {
		M := make([]float64, R*R)
		for i := range M {
			M[i] = r.NormFloat64()
		}
		A := make([]float64, R*R) // M M' + I
		for i := 0; i < R; i++ {
			for j := 0; j < R; j++ {
				for k := 0; k < R; k++ {
					A[i*R+j] += M[i*R+k] * M[j*R+k]
				}
			}
			A[i*R+i]++
		}
		x := make([]float64, R)
		for i := range x {
			x[i] = r.NormFloat64()
		}
		b := make([]float64, R)
		for i := 0; i < R; i++ {
			for j := 0; j < R; j++ {
				b[i] += A[i*R+j] * x[j]
			}
		}
		L := slices.Clone(A)
		for i := 0; i < R; i++ { // the upper triangle must be ignored
			for j := i + 1; j < R; j++ {
				L[i*R+j] = math.NaN()
			}
		}
		if !choleskySolve(L, b, R) {
			t.Fatalf("R=%d: SPD matrix reported not positive definite", R)
		}
		for i := range x {
			if math.Abs(b[i]-x[i]) > 1e-9*(1+math.Abs(x[i])) {
				t.Fatalf("R=%d: x[%d] = %g, want %g", R, i, b[i], x[i])
			}
		}
	}
	// Not positive definite.
	A := []float64{1, 0, 2, 1}
	if choleskySolve(A, []float64{1, 1}, 2) {
		t.Fatal("indefinite matrix [[1 2] [2 1]] accepted")
	}
}

// TestImplicitHalfStepExact checks one user half-step against the dense
// weighted ridge solution built from every cell, observed or not.
func TestImplicitHalfStepExact(t *testing.T) {
	for _, cf := range []ConfidenceFunc{ConfidenceLinear, ConfidenceLog, ConfidenceBinary} {
		U, I, R := 7, 11, 3
		st := implicitStore(U, I, 30, 3)
		cfg := (&ImplicitSettings{Confidence: cf, Alpha: 1.7, Reg: 0.3, UnobservedWeight: 0.6, Threads: 2}).resolved()
		pr, err := newImplicitProblem(st, &cfg)
		if err != nil {
			t.Fatal(err)
		}
		m := implicitModel(t, U, I, R)
		r := rand.New(rand.NewPCG(5, 6))
		for i := range m.Factors[1] {
			m.Factors[1][i] = r.NormFloat64()
		}
		C, P := denseWeights(st, &cfg)
		// Users against Y, then items against the new X.
		for side := 0; side < 2; side++ {
			c := &pr.byUser
			if side == 1 {
				c = &pr.byItem
			}
			if err := pr.half(m.Factors[side], m.Factors[1-side], c, R); err != nil {
				t.Fatal(err)
			}
			Y := m.Factors[1-side]
			rows, cols := U, I
			if side == 1 {
				rows, cols = I, U
			}
			for u := 0; u < rows; u++ {
				A := make([]float64, R*R)
				b := make([]float64, R)
				for i := 0; i < cols; i++ {
					k := u*I + i
					if side == 1 {
						k = i*I + u
					}
					c, p := C[k], P[k]
					for a := 0; a < R; a++ {
						b[a] += c * p * Y[i*R+a]
						for bb := 0; bb < R; bb++ {
							A[a*R+bb] += c * Y[i*R+a] * Y[i*R+bb]
						}
					}
				}
				for a := 0; a < R; a++ {
					A[a*R+a] += cfg.Reg
				}
				if !choleskySolve(A, b, R) {
					t.Fatal("dense system not PD")
				}
				// A row without events: the dense solution has b = 0, so x = 0.
				got := m.Row(side, u)
				for a := range b {
					if math.Abs(got[a]-b[a]) > 1e-9 {
						t.Fatalf("%s side %d: row %d: x = %v, dense solution %v", cf, side, u, got, b)
					}
				}
			}
		}
	}
}

func TestImplicitLossAndMonotone(t *testing.T) {
	U, I, R := 9, 13, 4
	st := implicitStore(U, I, 40, 9)
	m := implicitModel(t, U, I, R)
	s := &ImplicitSettings{Iterations: 8, Alpha: 3, Reg: 0.1, Confidence: ConfidenceLinear, UnobservedWeight: 0.5, InitScale: 0.3}
	res, err := TrainImplicit(st, m, s, rand.NewPCG(1, 1), nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := res.Settings
	C, P := denseWeights(st, &cfg)
	dense := 0.0
	for u := 0; u < U; u++ {
		for i := 0; i < I; i++ {
			d := 0.0
			for a := 0; a < R; a++ {
				d += m.Row(0, u)[a] * m.Row(1, i)[a]
			}
			dense += C[u*I+i] * (P[u*I+i] - d) * (P[u*I+i] - d)
		}
	}
	for _, f := range m.Factors {
		for _, v := range f {
			dense += cfg.Reg * v * v
		}
	}
	last := res.History[len(res.History)-1].Loss
	if math.Abs(last-dense) > 1e-9*dense {
		t.Fatalf("loss %g, dense objective %g", last, dense)
	}
	for k := 1; k < len(res.History); k++ {
		if res.History[k].Loss > res.History[k-1].Loss*(1+1e-12) {
			t.Fatalf("loss rose from %g to %g at sweep %d", res.History[k-1].Loss, res.History[k].Loss, k+1)
		}
	}
}

// TestImplicitDeterministic: same seed gives bit-identical factors for 1, 2
// and 5 threads.
func TestImplicitDeterministic(t *testing.T) {
	st := implicitStore(300, 200, 3000, 4)
	var ref *decomposition.Model
	for _, th := range []int{1, 2, 5} {
		m := implicitModel(t, 300, 200, 8)
		if _, err := TrainImplicit(st, m, &ImplicitSettings{Iterations: 3, Threads: th}, rand.NewPCG(8, 8), nil); err != nil {
			t.Fatal(err)
		}
		if ref == nil {
			ref = m
			continue
		}
		for mo := range m.Factors {
			if !slices.Equal(m.Factors[mo], ref.Factors[mo]) {
				t.Fatalf("threads %d: factor %d differs from threads 1", th, mo)
			}
		}
	}
}

// TestImplicitDuplicatesAndTime: duplicate events and an order-3 log give
// the same model as one event per cell carrying the summed value.
func TestImplicitDuplicatesAndTime(t *testing.T) {
	dup := &data.Store{Dims: []int{3, 4, 2},
		Idx: [][]int32{{0, 0, 1, 2, 0, 2}, {1, 1, 2, 3, 0, 3}, {0, 1, 0, 1, 1, 0}},
		Val: []float64{1, 1, 1, 2, 1, 3}}
	sum := &data.Store{Dims: []int{3, 4},
		Idx: [][]int32{{0, 1, 2, 0}, {1, 2, 3, 0}},
		Val: []float64{2, 1, 5, 1}}
	train := func(st *data.Store) *decomposition.Model {
		m := implicitModel(t, 3, 4, 2)
		if _, err := TrainImplicit(st, m, &ImplicitSettings{Iterations: 4, Reg: 0.05, Confidence: ConfidenceLinear}, rand.NewPCG(2, 2), nil); err != nil {
			t.Fatal(err)
		}
		return m
	}
	a, b := train(dup), train(sum)
	for mo := range a.Factors {
		for k := range a.Factors[mo] {
			if math.Abs(a.Factors[mo][k]-b.Factors[mo][k]) > 1e-12 {
				t.Fatalf("factor %d differs: %v vs %v", mo, a.Factors[mo], b.Factors[mo])
			}
		}
	}
}

// TestImplicitRanksHeldOut: two taste groups; a user's held-out item of
// their own group must outrank every item of the other group.
func TestImplicitRanksHeldOut(t *testing.T) {
	const U, I = 60, 40
	r := rand.New(rand.NewPCG(3, 3))
	st := &data.Store{Dims: []int{U, I}, Idx: [][]int32{nil, nil}}
	heldOut := make([]int32, U)
	for u := 0; u < U; u++ {
		g := u % 2
		own := r.Perm(I / 2)
		heldOut[u] = int32(own[0]*2 + g)
		for _, k := range own[1:12] {
			st.Idx[0] = append(st.Idx[0], int32(u))
			st.Idx[1] = append(st.Idx[1], int32(k*2+g)) // group g = items of parity g
			st.Val = append(st.Val, 1)
		}
	}
	// Rank 2 holds the two tastes but not the random choices within a
	// group (a higher rank fits the held-out zeros of each user).
	m := implicitModel(t, U, I, 2)
	if _, err := TrainImplicit(st, m, &ImplicitSettings{Iterations: 10, Reg: 0.1}, rand.NewPCG(4, 4), nil); err != nil {
		t.Fatal(err)
	}
	score := func(u, i int) float64 {
		s := 0.0
		for a, v := range m.Row(0, u) {
			s += v * m.Row(1, i)[a]
		}
		return s
	}
	for u := 0; u < U; u++ {
		h := score(u, int(heldOut[u]))
		for i := 1 - u%2; i < I; i += 2 {
			if score(u, i) >= h {
				t.Fatalf("user %d: other-group item %d scores %g >= held-out own-group item %d (%g)", u, i, score(u, i), heldOut[u], h)
			}
		}
	}
}

func TestImplicitErrors(t *testing.T) {
	st := implicitStore(5, 6, 10, 1)
	good := implicitModel(t, 5, 6, 2)
	biased, _ := decomposition.NewModel(decomposition.CP, []int{5, 6}, []int{2}, true)
	tucker, _ := decomposition.NewModel(decomposition.Tucker, []int{5, 6}, []int{2, 2}, false)
	wrong := implicitModel(t, 5, 7, 2)
	neg := implicitStore(5, 6, 10, 1)
	neg.Val[3] = -1
	nan := implicitStore(5, 6, 10, 1)
	nan.Val[0] = math.NaN()
	empty := &data.Store{Dims: []int{5, 6}, Idx: [][]int32{{}, {}}}
	var shape *ShapeError
	var set *SettingsError
	cases := []struct {
		name string
		st   *data.Store
		m    *decomposition.Model
		s    *ImplicitSettings
		is   func(error) bool
	}{
		{"bias", st, biased, nil, func(e error) bool { return errors.As(e, &shape) }},
		{"tucker", st, tucker, nil, func(e error) bool { return errors.As(e, &shape) }},
		{"dims", st, wrong, nil, func(e error) bool { return errors.As(e, &shape) }},
		{"negative", neg, good, nil, func(e error) bool { return e != nil && !errors.As(e, &shape) }},
		{"nan", nan, good, nil, func(e error) bool { return e != nil && !errors.As(e, &shape) }},
		{"empty", empty, good, nil, func(e error) bool { return errors.Is(e, ErrEmpty) }},
		{"alpha", st, good, &ImplicitSettings{Alpha: -1}, func(e error) bool { return errors.As(e, &set) }},
		{"reg", st, good, &ImplicitSettings{Reg: math.Inf(1)}, func(e error) bool { return errors.As(e, &set) }},
		{"confidence", st, good, &ImplicitSettings{Confidence: "square"}, func(e error) bool { return e != nil }},
	}
	for _, c := range cases {
		_, err := TrainImplicit(c.st, c.m, c.s, rand.NewPCG(1, 1), nil)
		if !c.is(err) {
			t.Errorf("%s: error %v", c.name, err)
		}
	}
}

// TestImplicitFoldIn: folding in a training user's own events against the
// trained items reproduces that user's row (one more user half-step).
func TestImplicitFoldIn(t *testing.T) {
	st := implicitStore(40, 30, 300, 5)
	m := implicitModel(t, 40, 30, 3)
	s := &ImplicitSettings{Iterations: 4, Reg: 0.5, Confidence: ConfidenceLinear, Alpha: 1.5}
	if _, err := TrainImplicit(st, m, s, rand.NewPCG(1, 2), nil); err != nil {
		t.Fatal(err)
	}
	// One more user half-step, so rows are exactly the solve against Y.
	cfg := s.resolved()
	pr, _ := newImplicitProblem(st, &cfg)
	if err := pr.half(m.Factors[0], m.Factors[1], &pr.byUser, 3); err != nil {
		t.Fatal(err)
	}
	u := int32(7)
	var items []int32
	var vals []float64
	for e := range st.Val {
		if st.Idx[0][e] == u {
			items = append(items, st.Idx[1][e])
			vals = append(vals, st.Val[e])
		}
	}
	x, err := ImplicitFoldIn(m.Factors[1], 3, items, vals, s)
	if err != nil {
		t.Fatal(err)
	}
	for r, v := range m.Row(0, int(u)) {
		if math.Abs(x[r]-v) > 1e-10 {
			t.Fatalf("fold-in %v, trained row %v", x, m.Row(0, int(u)))
		}
	}
	if _, err := ImplicitFoldIn(m.Factors[1], 3, []int32{99}, []float64{1}, s); err == nil {
		t.Fatal("item out of range accepted")
	}
}
