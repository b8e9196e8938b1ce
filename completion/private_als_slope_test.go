package completion

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/perturb"
)

// slopeLog is a planted log whose users follow the item consensus each to
// their own degree: r_ui = 3 + b_u + (1 + a_u) b_i + noise (a_u sd 0.6,
// b_i sd 0.8, b_u sd 0.4, noise sd 0.4), clamped to [1, 5]; 600 users
// rate 30 random items of 300 each. It returns a training part and a
// test part (a random tenth).
func slopeLog() (train, test *data.Store) {
	const n, m, per = 600, 300, 30
	rng := rand.New(rand.NewPCG(21, 22))
	bi := make([]float64, m)
	for i := range bi {
		bi[i] = 0.8 * rng.NormFloat64()
	}
	st := &data.Store{Dims: []int{n, m}, Idx: make([][]int32, 2)}
	for u := 0; u < n; u++ {
		bu, au := 0.4*rng.NormFloat64(), 0.6*rng.NormFloat64()
		for _, i := range rng.Perm(m)[:per] {
			v := 3 + bu + (1+au)*bi[i] + 0.4*rng.NormFloat64()
			st.Idx[0] = append(st.Idx[0], int32(u))
			st.Idx[1] = append(st.Idx[1], int32(i))
			st.Val = append(st.Val, math.Max(1, math.Min(5, v)))
		}
	}
	perm := rand.New(rand.NewPCG(23, 24)).Perm(st.NNZ())
	return st.Subset(perm[st.NNZ()/10:]), st.Subset(perm[:st.NNZ()/10])
}

// TestALSSlopeColumn: when private ALS releases no factor learnt from the
// ratings (the user unit's fallback, the entry unit's residual-route
// fallback), the first column of its item rows is the released item
// biases over s (biasSlopeColumn: post-processing), the other columns are
// zero, the report says so, and on a log whose users follow the item
// consensus each to their own degree the users' fold-in turns it into a
// clear gain over the bias mode at the same budget (it fails without the
// column: the model is then the bias mode's).
func TestALSSlopeColumn(t *testing.T) {
	t.Parallel()
	train, test := slopeLog()
	const R = 4
	for _, unit := range []Unit{UnitUser, UnitEntry} {
		o := baseOpts()
		o.Epsilon, o.Delta, o.Noise = 3, 1e-5, perturb.SeededNoise(5)
		o.RatingMin, o.RatingMax = 1, 5
		if unit == UnitUser {
			o.Epsilon = 1
			o.Unit, o.MaxRatingsPerUser = UnitUser, 30
		}
		dims := train.Dims
		if unit == UnitUser {
			dims = []int{1, train.Dims[1]}
		}
		mb, err := decomposition.NewModel(decomposition.CP, dims, []int{1}, true)
		if err != nil {
			t.Fatal(err)
		}
		brep, err := TrainPrivateBias(train, mb, &o)
		if err != nil {
			t.Fatal(err)
		}
		ma, err := decomposition.NewModel(decomposition.CP, dims, []int{R}, true)
		if err != nil {
			t.Fatal(err)
		}
		oa := o
		oa.ALSPositions = ALSPositionsOff
		rep, err := TrainPrivateALS(train, ma, &oa)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(strings.Join(rep.Notes, "\n"), "slope column") {
			t.Fatalf("%v: no item step should run on this log, and the report should name the slope column: %q", unit, rep.Notes)
		}
		s := (o.RatingMax - o.RatingMin) / biasSpreadDivisor
		for i := 0; i < ma.Dims[1]; i++ {
			row := ma.Factors[1][i*R : i*R+R]
			if math.Abs(row[0]-ma.Bias[1][i]/s) > 1e-12 || row[1] != 0 || row[2] != 0 || row[3] != 0 {
				t.Fatalf("%v: item %d: row %v, want [b_i/s 0 0 0] with b_i/s = %v", unit, i, row, ma.Bias[1][i]/s)
			}
		}
		bias, err := FoldInRMSE(mb, train, test, BillboardFoldFor(brep))
		if err != nil {
			t.Fatal(err)
		}
		als, err := FoldInRMSE(ma, train, test, BillboardFoldFor(rep))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%v: bias mode %.4f, private ALS with the slope column %.4f", unit, bias, als)
		if als > bias-0.03 {
			t.Errorf("%v: private ALS %.4f, bias mode %.4f: the slope column should gain at least 0.03", unit, als, bias)
		}
	}
}
