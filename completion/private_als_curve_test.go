package completion

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/stat"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/perturb"
)

// curveLog is slopeLog's shape (600 users of 30 ratings over 300 items
// of Zipf-like popularity) whose users' taste bends with popularity: user
// u adds c_u (z_i^2 - 1), z_i the item's standardised log popularity, so
// some like the most and the least popular items alike and the middle
// less, others the reverse. No slope on the consensus or on popularity can
// follow that; a quadratic in popularity can.
func curveLog() (train, test *data.Store) {
	return popularityLog([4]uint64{31, 32, 33, 34}, 0.5, func(rng *rand.Rand) func(bi, z float64) float64 {
		bu, cu := 0.4*rng.NormFloat64(), 0.6*rng.NormFloat64()
		return func(bi, z float64) float64 { return 3 + bu + bi + cu*(z*z-1) }
	})
}

// TestALSCurveColumns: where private ALS learns no factor from the
// ratings (here the user unit's fallback), the item rows carry the curve
// columns after the free ones (curveItemColumns: the products of
// the slope and popularity columns, computed from the released biases and
// counts alone), the report says so, and the users' fold-in turns them
// into a clear gain on a log whose users' taste bends with popularity (it
// fails if the columns are zero, wrong, or not read by the fold-in). On a
// log without that taste (slopeLog) they cost little.
func TestALSCurveColumns(t *testing.T) {
	t.Parallel()
	const R = 5
	for _, c := range []struct {
		name        string
		log         func() (*data.Store, *data.Store)
		gainAtLeast float64 // fold-in RMSE without the curve columns minus with them
	}{
		{"curved taste", curveLog, 0.02},
		{"no curved taste", slopeLog, -0.005},
	} {
		train, test := c.log()
		o := baseOpts()
		o.Epsilon, o.Delta, o.Noise = 10, 1e-5, perturb.SeededNoise(7)
		o.RatingMin, o.RatingMax = 1, 5
		o.Unit, o.MaxRatingsPerUser = UnitUser, 30
		o.ALSPositions = ALSPositionsOff
		m, rep, notes := trainALSNotes(t, train, []int{1, train.Dims[1]}, R, &o)
		if !strings.Contains(notes, "columns 3 to 5 are the curve columns") {
			t.Fatalf("%s: the fallback should run and the report name the curve columns: %q", c.name, rep.Notes)
		}
		checkFreeColumns(t, m, &o, rep.ItemCounts, 0, true)
		pen := BillboardFoldFor(rep)
		with, err := FoldInRMSE(m, train, test, pen)
		if err != nil {
			t.Fatal(err)
		}
		m0 := *m
		m0.Factors = [][]float64{m.Factors[0], append([]float64(nil), m.Factors[1]...)}
		for i := 0; i < m.Dims[1]; i++ {
			clear(m0.Factors[1][i*R+ALSFreeColumns : (i+1)*R])
		}
		without, err := FoldInRMSE(&m0, train, test, pen)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: fold-in RMSE with the curve columns %.4f, without %.4f", c.name, with, without)
		if without-with < c.gainAtLeast {
			t.Errorf("%s: fold-in RMSE with the curve columns %.4f, without %.4f: want a gain of at least %g", c.name, with, without, c.gainAtLeast)
		}
	}
}

// TestCurveItemColumns: the curve columns are the three products of the
// two free columns in their order, centred, at ALSCurveColumnScale times
// the slope column's deviation; only as many as the rank leaves; none
// before the free columns or when the slope column is constant; a
// constant product takes no column; they read only columns 0 and 1
// (post-processing of the released values); and in the fallback's rows
// they come after the position columns (fallbackItemRows), as the
// report's note says.
func TestCurveItemColumns(t *testing.T) {
	const I = 7
	slope := []float64{0.3, -0.2, 0.5, 0.1, -0.6, 0.2, 0.0}
	pop := []float64{1.1, 0.4, -0.3, -0.2, 0.5, -0.8, -0.7}
	model := func(R int) *decomposition.Model {
		m, err := decomposition.NewModel(decomposition.CP, []int{1, I}, []int{R}, true)
		if err != nil {
			t.Fatal(err)
		}
		for i := range I {
			m.Factors[1][i*R], m.Factors[1][i*R+1] = slope[i], pop[i]
			for j := 2; j < R; j++ {
				m.Factors[1][i*R+j] = 9 // overwritten or left alone
			}
		}
		return m
	}
	_, sd := stat.PopMeanStdDev(slope, nil)
	products := []func(a, b float64) float64{
		func(a, b float64) float64 { return b * b },
		func(a, b float64) float64 { return a * b },
		func(a, b float64) float64 { return a * a },
	}
	// check says column c of m (rank R) is product j of the free columns.
	check := func(m *decomposition.Model, R, c, j int) {
		t.Helper()
		x := make([]float64, I)
		for i := range x {
			x[i] = products[j](slope[i]/sd, pop[i]/sd)
		}
		mx, sx := stat.PopMeanStdDev(x, nil)
		for i := range I {
			want := ALSCurveColumnScale * sd * (x[i] - mx) / sx
			if got := m.Factors[1][i*R+c]; math.Abs(got-want) > 1e-12 {
				t.Fatalf("rank %d, column %d, item %d: %v, want product %d of the free columns, %v", R, c, i, got, j, want)
			}
		}
	}
	m := model(6)
	if set := curveItemColumns(m, 2); len(set) != 3 || set[0] != "the popularity column squared" {
		t.Fatalf("rank 6 from column 2: %q, want the three columns, the popularity column squared first", set)
	}
	for j := range 3 {
		check(m, 6, 2+j, j)
	}
	for i := range I {
		if m.Factors[1][i*6+5] != 9 {
			t.Fatalf("column 5 changed: %v", m.Factors[1][i*6+5])
		}
	}
	m4 := model(4)
	if set := curveItemColumns(m4, 2); len(set) != 2 {
		t.Fatalf("rank 4: %q, want 2 columns", set)
	}
	check(m4, 4, 2, 0)
	check(m4, 4, 3, 1)
	if set := curveItemColumns(model(6), 1); len(set) != 0 {
		t.Fatalf("from column 1 (inside the free columns): %q, want none", set)
	}
	flat := model(5)
	for i := range I {
		flat.Factors[1][i*5] = 0.4
	}
	if set := curveItemColumns(flat, 2); len(set) != 0 {
		t.Fatalf("a constant slope column: %q, want none", set)
	}
	// Equal counts: the popularity column is zero, so only the slope
	// column squared varies; it takes the first curve column.
	even := model(5)
	for i := range I {
		even.Factors[1][i*5+1] = 0
	}
	if set := curveItemColumns(even, 2); len(set) != 1 || set[0] != "the slope column squared" {
		t.Fatalf("a zero popularity column: %q, want the slope column squared alone", set)
	}
	for i := range I {
		if even.Factors[1][i*5+3] != 9 {
			t.Fatalf("a zero popularity column: column 3 changed: %v", even.Factors[1][i*5+3])
		}
	}

	// The fallback's rows: free columns, one position column, then the
	// curve columns from column 3; the report's note says which.
	o := baseOpts()
	o.RatingMin, o.RatingMax = 1, 5
	const R = 5
	fb, err := decomposition.NewModel(decomposition.CP, []int{1, I}, []int{R}, true)
	if err != nil {
		t.Fatal(err)
	}
	counts := make([]float64, I)
	for i := range I {
		fb.Bias[1][i] = slope[i]
		counts[i] = float64(3 + 5*i*i)
	}
	up := &userPositions{I: I, K: 1, cols: make([]float64, I), scale: ALSUserPositionsScale}
	for i := range I {
		up.cols[i] = float64(i%3) - 1
	}
	set := fallbackItemRows(fb, &o, counts, up)
	if len(set) != 2 {
		t.Fatalf("rank 5 with one position column: %q, want 2 curve columns", set)
	}
	free := slices.Clone(fb.Factors[1])
	var pos float64
	for i := range I {
		pos += fb.Factors[1][i*R+2] * up.cols[i]
	}
	if !(pos > 0) {
		t.Fatalf("column 3 is not the position column: %v", fb.Factors[1])
	}
	slope2, pop2 := make([]float64, I), make([]float64, I)
	for i := range I {
		slope2[i], pop2[i] = free[i*R], free[i*R+1]
	}
	slope, pop = slope2, pop2
	_, sd = stat.PopMeanStdDev(slope, nil)
	check(fb, R, 3, 0)
	check(fb, R, 4, 1)
	note := freeColumnsNote(&o, R, up, set)
	for _, want := range []string{"column 3 is the position column (below)", "columns 4 to 5 are the curve columns: the popularity column squared, the product"} {
		if !strings.Contains(note, want) {
			t.Fatalf("note %q lacks %q", note, want)
		}
	}
	if strings.HasSuffix(note, "; ") || strings.Contains(note, "zero") {
		t.Fatalf("note %q: no zero column is left at rank 5", note)
	}
}
