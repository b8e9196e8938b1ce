package pipeline

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/dprec/dprec/completion"
)

// obs is a rating on its way to the other mode's row: the row it belongs
// to in the mode being solved, its value and position.
type obs struct {
	Row   int32
	Value float64
	Pos   int64
}

// frow is a factor row with its bias.
type frow struct {
	Bias float64
	F    []float64
}

// contrib is one rating's contribution to a row's normal equations: the
// other mode's row and bias at the rating, its value and position.
type contrib struct {
	Pos   int64
	Value float64
	Bias  float64
	F     []float64
}

// half is a rating keyed by item with its user's dense index.
type half struct {
	U     int32
	Value float64
	Pos   int64
}

func init() {
	for _, t := range []any{(*obs)(nil), (*frow)(nil), (*contrib)(nil), (*half)(nil)} {
		beam.RegisterType(reflect.TypeOf(t).Elem())
	}
	register.Combiner3[int64, int64, int64](&minIntFn{})
	register.Function2x0(userPos)
	register.Function2x0(itemPos)
	register.Function2x1(formatFirst)
	register.Function2x0(userKeyed)
	register.Function2x0(parseDictLine)
	register.Emitter2[string, int32]()
	register.Function4x1(joinUser)
	register.Emitter2[string, half]()
	register.Iter1[Rating]()
	register.Iter1[int32]()
	register.Iter1[half]()
	register.Function4x1(joinItem)
	register.Function4x1(joinCatalogueItem)
	register.DoFn2x1[string, func(int32, obs), error](&parseObsFn{})
	register.Emitter2[int32, obs]()
	register.Function2x1(parseRow)
	register.Emitter2[int32, frow]()
	register.Function4x1(joinRow)
	register.Iter1[obs]()
	register.Iter1[frow]()
	register.Emitter2[int32, contrib]()
	register.DoFn3x1[int32, func(*contrib) bool, func(string), error](&solveFn{})
	register.Iter1[contrib]()
}

type minIntFn struct{}

func (minIntFn) CreateAccumulator() int64           { return math.MaxInt64 }
func (minIntFn) AddInput(a, v int64) int64          { return min(a, v) }
func (minIntFn) MergeAccumulators(a, b int64) int64 { return min(a, b) }
func (minIntFn) ExtractOutput(a int64) int64        { return a }

func userPos(r Rating, emit func(string, int64))    { emit(r.User, r.Pos) }
func itemPos(r Rating, emit func(string, int64))    { emit(r.Item, r.Pos) }
func formatFirst(id string, pos int64) string       { return strconv.FormatInt(pos, 10) + "\t" + quoteID(id) }
func userKeyed(r Rating, emit func(string, Rating)) { emit(r.User, r) }

// parseDictLine reads a dictionary line: quoted ID, dense index.
func parseDictLine(line string, emit func(string, int32)) {
	q, i, _ := strings.Cut(line, "\t")
	id, err := strconv.Unquote(q)
	if err != nil {
		panic(fmt.Sprintf("dictionary line %q: %v", line, err))
	}
	v, err := strconv.ParseInt(i, 10, 32)
	if err != nil {
		panic(fmt.Sprintf("dictionary line %q: %v", line, err))
	}
	emit(id, int32(v))
}

func joinUser(user string, ratings func(*Rating) bool, idx func(*int32) bool, emit func(string, half)) error {
	var u int32
	if !idx(&u) {
		return fmt.Errorf("user %q has no dense index", user)
	}
	var r Rating
	for ratings(&r) {
		emit(r.Item, half{U: u, Value: r.Value, Pos: r.Pos})
	}
	return nil
}

func joinItem(item string, halves func(*half) bool, idx func(*int32) bool, emit func(string)) error {
	var i int32
	if !idx(&i) {
		return fmt.Errorf("item %q has no dense index", item)
	}
	var h half
	for halves(&h) {
		emit(fmt.Sprintf("%d\t%d\t%s\t%d", h.U, i, fmtFloat(h.Value), h.Pos))
	}
	return nil
}

// joinCatalogueItem is joinItem over a public item catalogue: ratings of
// items outside it are dropped.
func joinCatalogueItem(item string, halves func(*half) bool, idx func(*int32) bool, emit func(string)) error {
	var i int32
	if !idx(&i) {
		return nil
	}
	var h half
	for halves(&h) {
		emit(fmt.Sprintf("%d\t%d\t%s\t%d", h.U, i, fmtFloat(h.Value), h.Pos))
	}
	return nil
}

// parseDense reads a dense rating line: user, item, value, position.
func parseDense(line string) (u, i int32, v float64, pos int64, err error) {
	f := strings.Split(line, "\t")
	if len(f) != 4 {
		return 0, 0, 0, 0, fmt.Errorf("dense rating line %q: want 4 fields", line)
	}
	a, err1 := strconv.ParseInt(f[0], 10, 32)
	b, err2 := strconv.ParseInt(f[1], 10, 32)
	v, err3 := strconv.ParseFloat(f[2], 64)
	pos, err4 := strconv.ParseInt(f[3], 10, 64)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return 0, 0, 0, 0, fmt.Errorf("dense rating line %q: %w", line, err)
	}
	return int32(a), int32(b), v, pos, nil
}

// parseObsFn keys a dense rating by its index in the other mode than Mode.
type parseObsFn struct{ Mode int }

func (f *parseObsFn) ProcessElement(line string, emit func(int32, obs)) error {
	u, i, v, pos, err := parseDense(line)
	if err != nil {
		return err
	}
	if f.Mode == 0 {
		emit(i, obs{Row: u, Value: v, Pos: pos})
	} else {
		emit(u, obs{Row: i, Value: v, Pos: pos})
	}
	return nil
}

// formatRow writes a factor row: index, bias, factors.
func formatRow(b *strings.Builder, idx int, bias float64, f []float64) {
	b.WriteString(strconv.Itoa(idx))
	b.WriteByte('\t')
	b.WriteString(fmtFloat(bias))
	appendFloats(b, f)
}

// appendFloats writes TAB v for every v of f (exact: shortest round trip).
func appendFloats(b *strings.Builder, f []float64) {
	for _, v := range f {
		b.WriteByte('\t')
		b.WriteString(fmtFloat(v))
	}
}

func parseRow(line string, emit func(int32, frow)) error {
	f := strings.Split(line, "\t")
	if len(f) < 2 {
		return fmt.Errorf("factor row %q: too few fields", line)
	}
	idx, err := strconv.ParseInt(f[0], 10, 32)
	if err != nil {
		return err
	}
	var r frow
	if r.Bias, err = strconv.ParseFloat(f[1], 64); err != nil {
		return err
	}
	r.F = make([]float64, len(f)-2)
	for k := range r.F {
		if r.F[k], err = strconv.ParseFloat(f[k+2], 64); err != nil {
			return err
		}
	}
	emit(int32(idx), r)
	return nil
}

// joinRow sends the other mode's row (and bias) of key to every rating of
// key, keyed by the rating's row in the mode being solved.
func joinRow(key int32, ratings func(*obs) bool, rows func(*frow) bool, emit func(int32, contrib)) error {
	var r frow
	if !rows(&r) {
		var o obs
		if ratings(&o) {
			return fmt.Errorf("row %d has ratings but no factor row", key)
		}
		return nil
	}
	var o obs
	for ratings(&o) {
		emit(o.Row, contrib{Pos: o.Pos, Value: o.Value, Bias: r.Bias, F: r.F})
	}
	return nil
}

// solveFn solves one row with completion.RowSystem, adding its ratings in
// storage order (sorted by position: GroupByKey hands them over in no
// fixed order), and writes "index, count, sse, bias, factors".
type solveFn struct {
	Rank    int
	Bias    bool
	Mean    float64
	Reg     float64
	RegBias float64
	Mode    int

	rs  *completion.RowSystem
	buf []contrib
	row []float64
}

func (f *solveFn) Setup() {
	f.rs = completion.NewRowSystem(f.Rank, f.Bias)
	f.row = make([]float64, f.Rank)
}

func (f *solveFn) ProcessElement(idx int32, iter func(*contrib) bool, emit func(string)) error {
	f.buf = f.buf[:0]
	var c contrib
	for iter(&c) {
		f.buf = append(f.buf, c)
		c = contrib{} // the iterator may reuse F
	}
	slices.SortFunc(f.buf, func(a, b contrib) int { return cmpInt64(a.Pos, b.Pos) })
	f.rs.Reset()
	for _, c := range f.buf {
		if len(c.F) != f.Rank {
			return fmt.Errorf("row %d: other-mode row of length %d, rank %d", idx, len(c.F), f.Rank)
		}
		off := 0.0
		if f.Bias {
			// Train's offset: the mean plus the other mode's bias.
			off = f.Mean + c.Bias
		}
		f.rs.Add(c.F, c.Value, off)
	}
	return emitSolved(f.rs, idx, f.Reg, f.RegBias, f.Mode, f.row, emit)
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
