package pipeline

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/dprec/dprec/completion"
)

// The broadcast half-sweep: every worker reads the fixed mode's rows (one
// file the driver wrote) into memory once, and the ratings are grouped by
// the row being solved with only (other index, value, position) each, so
// a half-sweep shuffles the ratings once, without factor vectors. The
// shuffle join (joinRow, solveFn) needs no worker to hold the fixed mode:
// it shuffles the ratings twice and a factor row with every rating.

func init() {
	register.DoFn2x1[string, func(int32, obs), error](&keyByRowFn{})
	register.DoFn4x1[context.Context, int32, func(*obs) bool, func(string), error](&solveBroadcastFn{})
}

// keyByRowFn keys a dense rating by its row in mode Mode, carrying its
// index in the other mode.
type keyByRowFn struct{ Mode int }

func (f *keyByRowFn) ProcessElement(line string, emit func(int32, obs)) error {
	u, i, v, pos, err := parseDense(line)
	if err != nil {
		return err
	}
	if f.Mode == 0 {
		emit(u, obs{Row: i, Value: v, Pos: pos})
	} else {
		emit(i, obs{Row: u, Value: v, Pos: pos})
	}
	return nil
}

// table is a mode's rows and biases as the driver wrote them.
type table struct {
	rank int
	f    []float64
	bias []float64
}

var tables struct {
	sync.Mutex
	m map[string]*table
}

// loadTable reads a fixed-rows file once per worker process (the newest
// one only: a half-sweep's file replaces the previous one's).
func loadTable(ctx context.Context, path string, rows, rank int) (*table, error) {
	tables.Lock()
	defer tables.Unlock()
	if t := tables.m[path]; t != nil {
		return t, nil
	}
	t := &table{rank: rank, f: make([]float64, rows*rank), bias: make([]float64, rows)}
	seen := make([]bool, rows)
	err := ReadLines(ctx, path, func(line string) error {
		fs := strings.Split(line, "\t")
		if len(fs) != 2+rank {
			return fmt.Errorf("fixed row %q: want %d fields", line, 2+rank)
		}
		i, err := strconv.Atoi(fs[0])
		if err != nil || i < 0 || i >= rows {
			return fmt.Errorf("fixed row %q: bad index", line)
		}
		if t.bias[i], err = strconv.ParseFloat(fs[1], 64); err != nil {
			return err
		}
		for k := range rank {
			if t.f[i*rank+k], err = strconv.ParseFloat(fs[2+k], 64); err != nil {
				return err
			}
		}
		seen[i] = true
		return nil
	})
	if err != nil {
		return nil, err
	}
	if k := slices.Index(seen, false); k >= 0 {
		return nil, fmt.Errorf("%s: row %d missing", path, k)
	}
	tables.m = map[string]*table{path: t}
	return t, nil
}

// solveBroadcastFn is solveFn with the other mode's rows from the
// broadcast table.
type solveBroadcastFn struct {
	Fixed     string
	FixedRows int
	Rank      int
	Bias      bool
	Mean      float64
	Reg       float64
	RegBias   float64
	Mode      int

	t   *table
	rs  *completion.RowSystem
	buf []obs
	row []float64
}

func (f *solveBroadcastFn) Setup(ctx context.Context) error {
	var err error
	f.t, err = loadTable(ctx, f.Fixed, f.FixedRows, f.Rank)
	f.rs = completion.NewRowSystem(f.Rank, f.Bias)
	f.row = make([]float64, f.Rank)
	return err
}

func (f *solveBroadcastFn) ProcessElement(ctx context.Context, idx int32, iter func(*obs) bool, emit func(string)) error {
	f.buf = f.buf[:0]
	var o obs
	for iter(&o) {
		f.buf = append(f.buf, o)
	}
	slices.SortFunc(f.buf, func(a, b obs) int { return cmpInt64(a.Pos, b.Pos) })
	f.rs.Reset()
	R := f.Rank
	for _, o := range f.buf {
		j := int(o.Row)
		if j < 0 || j >= f.FixedRows {
			return fmt.Errorf("row %d: other-mode index %d outside %d rows", idx, j, f.FixedRows)
		}
		off := 0.0
		if f.Bias {
			// Train's offset: the mean plus the other mode's bias.
			off = f.Mean + f.t.bias[j]
		}
		f.rs.Add(f.t.f[j*R:j*R+R], o.Value, off)
	}
	return emitSolved(f.rs, idx, f.Reg, f.RegBias, f.Mode, f.row, emit)
}

// emitSolved solves a row system and writes "index, count, sse, bias,
// factors".
func emitSolved(rs *completion.RowSystem, idx int32, reg, regBias float64, mode int, row []float64, emit func(string)) error {
	bias, sse, ok := rs.Solve(reg, 0, regBias, row)
	if !ok {
		return fmt.Errorf("ALS row %d of mode %d: normal equations not positive definite (raise the penalties)", idx, mode)
	}
	var b strings.Builder
	b.WriteString(strconv.Itoa(int(idx)))
	b.WriteByte('\t')
	b.WriteString(strconv.Itoa(rs.Count()))
	b.WriteByte('\t')
	b.WriteString(fmtFloat(sse))
	b.WriteByte('\t')
	b.WriteString(fmtFloat(bias))
	appendFloats(&b, row)
	emit(b.String())
	return nil
}
