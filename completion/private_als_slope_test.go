package completion

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/stat"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/perturb"
)

// slopeLog is a planted log whose users follow the item consensus and
// the items' popularity each to their own degree: r_ui = 3 + b_u + (1 +
// a_u) b_i + c_u z_i + noise (a_u sd 0.6, c_u sd 0.5, b_i sd 0.8, b_u sd
// 0.4, noise sd 0.4; z_i the standardised log of item i's expected
// count), clamped to [1, 5]; 600 users rate 30 distinct items of 300 each,
// drawn with probability proportional to 1/(i + 10). It returns a
// training part and a test part (a random tenth).
func slopeLog() (train, test *data.Store) {
	return popularityLog([4]uint64{21, 22, 23, 24}, 0.8, func(rng *rand.Rand) func(bi, z float64) float64 {
		bu, au, cu := 0.4*rng.NormFloat64(), 0.6*rng.NormFloat64(), 0.5*rng.NormFloat64()
		return func(bi, z float64) float64 { return 3 + bu + (1+au)*bi + cu*z }
	})
}

// popularityLog is the shape of slopeLog and curveLog: 600 users rate 30
// distinct items of 300 each, drawn with probability proportional to
// 1/(i + 10); item biases of sd biSD; each user draws their parameters
// with user, whose returned function gives the rating's mean from the
// item's bias and its standardised log expected count z; noise of sd 0.4,
// clamped to [1, 5]. seeds seed the log's source and the split's. It
// returns a training part and a test part (a random tenth).
func popularityLog(seeds [4]uint64, biSD float64, user func(rng *rand.Rand) func(bi, z float64) float64) (train, test *data.Store) {
	const n, m, per = 600, 300, 30
	rng := rand.New(rand.NewPCG(seeds[0], seeds[1]))
	bi := make([]float64, m)
	w := make([]float64, m)
	lw := make([]float64, m)
	var tot float64
	for i := range bi {
		bi[i] = biSD * rng.NormFloat64()
		w[i] = 1 / float64(i+10)
		tot += w[i]
		lw[i] = math.Log(w[i])
	}
	mean, sd := stat.PopMeanStdDev(lw, nil)
	st := &data.Store{Dims: []int{n, m}, Idx: make([][]int32, 2)}
	for u := 0; u < n; u++ {
		rate := user(rng)
		seen := map[int]bool{}
		for len(seen) < per {
			x, i := rng.Float64()*tot, 0
			for ; i < m-1 && x > w[i]; i++ {
				x -= w[i]
			}
			if seen[i] {
				continue
			}
			seen[i] = true
			v := rate(bi[i], (lw[i]-mean)/sd) + 0.4*rng.NormFloat64()
			st.Idx[0] = append(st.Idx[0], int32(u))
			st.Idx[1] = append(st.Idx[1], int32(i))
			st.Val = append(st.Val, math.Max(1, math.Min(5, v)))
		}
	}
	perm := rand.New(rand.NewPCG(seeds[2], seeds[3])).Perm(st.NNZ())
	return st.Subset(perm[st.NNZ()/10:]), st.Subset(perm[:st.NNZ()/10])
}

// TestALSSlopeColumn: when private ALS releases no factor learnt from the
// ratings (the user unit's fallback, the entry unit's residual-route
// fallback), its item rows are the free columns (freeItemColumns:
// post-processing): the released item biases over s, then the
// standardised log counts at the first column's spread, the other columns
// zero; the report says so, and on a log whose users follow the item
// consensus each to their own degree the users' fold-in turns them into a
// clear gain over the bias mode at the same budget (it fails without the
// columns: the model is then the bias mode's).
func TestALSSlopeColumn(t *testing.T) {
	t.Parallel()
	train, test := slopeLog()
	const R = 4
	for _, unit := range []Unit{UnitUser, UnitEntry} {
		o := baseOpts()
		o.Epsilon, o.Delta, o.Noise = 1, 1e-5, perturb.SeededNoise(5)
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
		if notes := strings.Join(rep.Notes, "\n"); !strings.Contains(notes, "slope column") || !strings.Contains(notes, "popularity column") {
			t.Fatalf("%v: no item step should run on this log, and the report should name the free columns: %q", unit, rep.Notes)
		}
		checkFreeColumns(t, ma, &o, rep.ItemCounts, 0, true)
		bias, err := FoldInRMSE(mb, train, test, BillboardFoldFor(brep))
		if err != nil {
			t.Fatal(err)
		}
		als, err := FoldInRMSE(ma, train, test, BillboardFoldFor(rep))
		if err != nil {
			t.Fatal(err)
		}
		// The same model without the popularity column (and the curve
		// columns, which are read from it).
		for i := 0; i < ma.Dims[1]; i++ {
			clear(ma.Factors[1][i*R+1 : (i+1)*R])
		}
		slope, err := FoldInRMSE(ma, train, test, BillboardFoldFor(rep))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%v: bias mode %.4f, private ALS with the slope column %.4f, with both free columns %.4f", unit, bias, slope, als)
		if slope > bias-0.015 || als > slope-0.008 {
			t.Errorf("%v: bias mode %.4f, slope column %.4f, both columns %.4f: the slope column should gain at least 0.015 and the popularity column 0.008 more", unit, bias, slope, als)
		}
	}
}

// checkFreeColumns checks that columns col and col+1 of m's item rows are
// freeItemColumnsAt's, computed here from m's released biases and counts:
// b_i/s, then the standardised log(1 + n_i) at the first's standard
// deviation; and that the columns after them are zero.
func checkFreeColumns(t *testing.T, m *decomposition.Model, o *PrivateOptions, counts []float64, col int, curve bool) {
	t.Helper()
	R, I := m.Ranks[0], m.Dims[1]
	s := (o.RatingMax - o.RatingMin) / biasSpreadDivisor
	var lg, c0 []float64
	for i := 0; i < I; i++ {
		lg = append(lg, math.Log1p(math.Max(counts[i], 0)))
		c0 = append(c0, m.Bias[1][i]/s)
	}
	_, sd0 := stat.PopMeanStdDev(c0, nil)
	mean, sd := stat.PopMeanStdDev(lg, nil)
	if sd0 == 0 || sd == 0 {
		t.Fatalf("degenerate log: column spreads %v, %v", sd0, sd)
	}
	want := make([][]float64, I)
	for i := 0; i < I; i++ {
		want[i] = []float64{c0[i], sd0 * (lg[i] - mean) / sd}
	}
	if curve {
		// The curve columns, from the standardised free columns v1, v2:
		// v2^2, v1 v2, v1^2, each centred and scaled to
		// ALSCurveColumnScale times the slope column's deviation.
		for j := 0; j < min(ALSCurveColumns, R-col-2); j++ {
			x := make([]float64, I)
			for i := range x {
				v1, v2 := want[i][0]/sd0, want[i][1]/sd0
				x[i] = [3]float64{v2 * v2, v1 * v2, v1 * v1}[j]
			}
			mx, sx := stat.PopMeanStdDev(x, nil)
			for i := range x {
				want[i] = append(want[i], ALSCurveColumnScale*sd0*(x[i]-mx)/sx)
			}
		}
	}
	for i := 0; i < I; i++ {
		row := m.Factors[1][i*R : i*R+R]
		for j := col; j < R; j++ {
			w := 0.0
			if j-col < len(want[i]) {
				w = want[i][j-col]
			}
			if math.Abs(row[j]-w) > 1e-9 {
				t.Fatalf("item %d: row %v, column %d want %v (the free columns from column %d, then the curve columns (%v), then zeros)", i, row, j, w, col, curve)
			}
		}
	}
}

// TestALSResidualFreeColumns: from rank 10 up the residual route fits R -
// 2 columns on the noisy residuals and releases the free columns after
// them (alsInputFree); below rank 10 it fits every column.
func TestALSResidualFreeColumns(t *testing.T) {
	t.Parallel()
	train, _ := slopeLog()
	o := baseOpts()
	o.Epsilon, o.Delta, o.Noise = 30, 1e-5, perturb.SeededNoise(5)
	o.RatingMin, o.RatingMax = 1, 5
	o.ALSPositions = ALSPositionsOff
	counts := make([]float64, train.Dims[1])
	for _, i := range train.Idx[1] {
		counts[i]++
	}
	for _, R := range []int{4, 10} {
		m, rep, notes := trainALSNotes(t, train, train.Dims, R, &o)
		if !strings.Contains(notes, "residual route (entry unit)") {
			t.Fatalf("rank %d: the residual route did not run: %q", R, rep.Notes)
		}
		if want := R >= ALSPositionsMaxRank; strings.Contains(notes, "free columns") != want {
			t.Fatalf("rank %d: free columns in the notes %v, want %v: %q", R, !want, want, rep.Notes)
		}
		if R >= ALSPositionsMaxRank {
			checkFreeColumns(t, m, &o, counts, R-ALSFreeColumns, false)
			continue
		}
		// Below rank 10 the fit fills the last column.
		last := 0.0
		for i := 0; i < m.Dims[1]; i++ {
			last += math.Abs(m.Factors[1][i*R+R-1])
		}
		if last == 0 {
			t.Fatalf("rank %d: the last column is zero", R)
		}
	}
}

// TestALSStepsFreeColumns: from rank 10 up the user unit's item steps fit
// R - 2 columns and the free columns follow (alsStepsFree).
func TestALSStepsFreeColumns(t *testing.T) {
	t.Parallel()
	train, _ := slopeLog()
	o := userOpts(30)
	o.Epsilon, o.Delta, o.Noise = 100, 1e-5, perturb.SeededNoise(5)
	o.RatingMin, o.RatingMax = 1, 5
	const R = 10
	m, err := decomposition.NewModel(decomposition.CP, []int{1, train.Dims[1]}, []int{R}, true)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := TrainPrivateALS(train, m, &o)
	if err != nil {
		t.Fatal(err)
	}
	if notes := strings.Join(rep.Notes, "\n"); !strings.Contains(notes, "item steps: ") || !strings.Contains(notes, "the last 2 are the free columns") {
		t.Fatalf("the item steps should run and the report name the free columns: %q", rep.Notes)
	}
	checkFreeColumns(t, m, &o, rep.ItemCounts, R-ALSFreeColumns, false)
	nonzero := 0
	for i := 0; i < m.Dims[1]; i++ {
		for _, x := range m.Factors[1][i*R : i*R+R-ALSFreeColumns] {
			if x != 0 {
				nonzero++
			}
		}
	}
	if nonzero == 0 {
		t.Fatal("the steps' columns are all zero")
	}
}

// TestALSUserFallbackFold: users fold in to the user unit's fallback
// model (the free columns; no item step ran) with the bias mode's
// penalties but the fixed ridge ALSUserFallbackFoldRow on their row and
// bias: the report carries it and says so, BillboardFoldFor returns it,
// and on a log whose users weight the consensus and popularity each to
// their own degree it scores below the bias mode's ridge (which it fails
// if the report drops the ridge). The entry unit's fallback keeps the
// bias mode's penalties.
func TestALSUserFallbackFold(t *testing.T) {
	t.Parallel()
	train, test := slopeLog()
	const R = 4
	for _, unit := range []Unit{UnitUser, UnitEntry} {
		o := baseOpts()
		o.Epsilon, o.Delta, o.Noise = 3, 1e-5, perturb.SeededNoise(6)
		o.RatingMin, o.RatingMax = 1, 5
		o.ALSPositions = ALSPositionsOff
		dims := train.Dims
		if unit == UnitEntry {
			o.Epsilon = 1 // the residual route's fallback (TestALSSlopeColumn)
		}
		if unit == UnitUser {
			o.Unit, o.MaxRatingsPerUser = UnitUser, 30
			dims = []int{1, train.Dims[1]}
		}
		m, rep, notes := trainALSNotes(t, train, dims, R, &o)
		if !strings.Contains(notes, "slope column") {
			t.Fatalf("%v: no item step should run on this log: %q", unit, rep.Notes)
		}
		pen := BillboardFoldFor(rep)
		if unit == UnitEntry {
			if rep.FoldRow != 0 || pen != BillboardFold() {
				t.Fatalf("entry unit's fallback: fold row %v, penalties %+v; want the bias mode's %+v", rep.FoldRow, pen, BillboardFold())
			}
			continue
		}
		if rep.FoldRow != ALSUserFallbackFoldRow || pen.Row != ALSUserFallbackFoldRow || pen.PerRating != 0 || pen.Bucket != BiasBucketPenalty {
			t.Fatalf("user unit's fallback: fold row %v, penalties %+v; want row %v and the bias mode's bucket penalty", rep.FoldRow, pen, ALSUserFallbackFoldRow)
		}
		if !strings.Contains(notes, "fixed ridge of 5 on the row and bias") {
			t.Fatalf("the report does not state the fold-in ridge: %q", rep.Notes)
		}
		got, err := FoldInRMSE(m, train, test, pen)
		if err != nil {
			t.Fatal(err)
		}
		old, err := FoldInRMSE(m, train, test, BillboardFold())
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("fold-in RMSE with the ridge %g %.4f, with the bias mode's %g %.4f", ALSUserFallbackFoldRow, got, BiasUserPenalty, old)
		if got > old-0.003 {
			t.Fatalf("fold-in RMSE with the ridge %g %.4f against %.4f with the bias mode's: no gain on a log whose users weight the columns each their own way", ALSUserFallbackFoldRow, got, old)
		}
	}
}

// trainALSNotes trains private ALS of rank R on train into a new CP model
// of dims with biases, and returns it, the report and its notes joined.
func trainALSNotes(t *testing.T, train *data.Store, dims []int, R int, o *PrivateOptions) (*decomposition.Model, *perturb.Report, string) {
	t.Helper()
	m, err := decomposition.NewModel(decomposition.CP, dims, []int{R}, true)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := TrainPrivateALS(train, m, o)
	if err != nil {
		t.Fatal(err)
	}
	return m, rep, strings.Join(rep.Notes, "\n")
}
