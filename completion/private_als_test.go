package completion

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/perturb"
)

// TestALSSensitivityNeighbours changes one rating (in range, at the ends,
// far outside) and checks that the statistics one private-ALS item step
// releases move by at most ALSSensitivity of that user's count, for random
// public item rows within the norm bound, and that the bound is not loose
// by orders of magnitude in the worst trial.
func TestALSSensitivityNeighbours(t *testing.T) {
	t.Parallel()
	st := privStore([]int{25, 15, 4}, 300, 7)
	o := baseOpts()
	p := newALSPrivateParams(&o)
	by := alsUsers(st)
	const R = 3
	r := rand.New(rand.NewPCG(8, 8))
	worst := 0.0
	for trial := 0; trial < 1500; trial++ {
		V := make([]float64, st.Dims[1]*R)
		for i := range V {
			V[i] = 2 * r.NormFloat64()
		}
		for i := 0; i < st.Dims[1]; i++ {
			projectBall(V[i*R:(i+1)*R], p.gv)
		}
		ib := make([]float64, st.Dims[1])
		for i := range ib {
			ib[i] = 0.5 * r.NormFloat64()
		}
		mu := 3 + r.NormFloat64()
		nb := *st
		nb.Val = append([]float64(nil), st.Val...)
		e := r.IntN(len(nb.Val))
		switch trial % 3 {
		case 0:
			nb.Val[e] = o.RatingMin - 5
			st.Val[e] = o.RatingMax + 5
		case 1:
			nb.Val[e] = o.RatingMin + r.Float64()*(o.RatingMax-o.RatingMin)
		default:
			nb.Val[e] = 30 * r.NormFloat64()
		}
		a := alsItemStats(st, by, mu, ib, V, R, p, &o)
		b := alsItemStats(&nb, by, mu, ib, V, R, p, &o)
		var d2 float64
		for i := range a {
			d := a[i] - b[i]
			d2 += d * d
		}
		sens := p.sensitivity(len(by[st.Idx[0][e]]))
		if math.Sqrt(d2) > sens*(1+1e-9) {
			t.Fatalf("trial %d: statistics moved by %v > sensitivity %v", trial, math.Sqrt(d2), sens)
		}
		worst = math.Max(worst, math.Sqrt(d2)/sens)
	}
	if worst < 0.2 {
		t.Errorf("worst ratio %v: the test never came near the bound", worst)
	}
}

// TestPrivateALSRelease: user rows and biases zero in the model, time rows
// the constant ones, item rows within their bound, a report within the
// budget, and refusals (delta 0, user unit, Tucker).
func TestPrivateALSRelease(t *testing.T) {
	t.Parallel()
	st := privStore([]int{30, 20, 5}, 400, 9)
	m := privModel(t, decomposition.CP, st.Dims, 3, true, 1, 1)
	o := baseOpts()
	rep, err := TrainPrivateALS(st, m, &o)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range m.Factors[0] {
		if x != 0 {
			t.Fatalf("user row entry %v released", x)
		}
	}
	for _, x := range m.Bias[0] {
		if x != 0 {
			t.Fatalf("user bias %v released", x)
		}
	}
	for _, x := range m.Factors[2] {
		if x != 1 {
			t.Fatalf("time row entry %v, want 1", x)
		}
	}
	p := newALSPrivateParams(&o)
	for i := 0; i < m.Dims[1]; i++ {
		var s float64
		for _, x := range m.Row(1, i) {
			s += x * x
		}
		if math.Sqrt(s) > p.gv*(1+1e-12) {
			t.Fatalf("item row %d norm %v above %v", i, math.Sqrt(s), p.gv)
		}
	}
	if rep.Mode != "als" || rep.Epsilon > o.Epsilon*(1+1e-9) || rep.Delta > o.Delta || len(rep.NotCovered) != 0 {
		t.Fatalf("report %+v", rep)
	}
	checkDerivations(t, "als", rep)
	var acc perturb.Accountant
	for _, r := range rep.Releases {
		_ = acc.Add(r, r.Count)
	}
	if e, _, _ := acc.Total(o.Delta); e > o.Epsilon*(1+1e-9) {
		t.Errorf("releases recompose to epsilon %v > %v", e, o.Epsilon)
	}
	for _, bad := range []func(*PrivateOptions){
		func(o *PrivateOptions) { o.Delta = 0 },
		func(o *PrivateOptions) { o.Unit, o.MaxRatingsPerUser = UnitUser, 5 },
	} {
		oo := baseOpts()
		bad(&oo)
		if _, err := TrainPrivateALS(st, privModel(t, decomposition.CP, st.Dims, 3, true, 1, 1), &oo); err == nil {
			t.Errorf("options %+v accepted", oo)
		}
	}
	if _, err := TrainPrivateALS(st, privModel(t, decomposition.Tucker, st.Dims, 2, true, 1, 1), &o); err == nil {
		t.Error("Tucker model accepted")
	}
}
