package data

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// RowsOptions controls ReadRows.
type RowsOptions struct {
	// Rescale divides every row by the largest row norm when that norm
	// exceeds 1, so that ||t|| <= 1 as the mixture-of-Gaussians moments
	// and sensitivities assume (Imtiaz and Sarwate 2018b app. B). Without it such a row is
	// an error. The factor is returned: the component means come out
	// divided by it and the model's sigma^2 must be divided by its square.
	// Note the factor is computed from the data, which a private release
	// must account for (prefer a public bound).
	Rescale bool
	// MaxLine is the longest line accepted, in bytes; zero means
	// DefaultMaxLine. A longer line fails with ErrLineTooLong before it is
	// buffered whole.
	MaxLine int
}

// Rows holds numeric observations, one per row.
type Rows struct {
	// Data is row-major, N x D.
	Data []float64
	N, D int
	// Header holds column names when the first line was not numeric.
	Header []string
	// Scale is the factor the rows were divided by (1: not rescaled).
	Scale float64
}

// ReadRows reads a CSV of numeric rows (comma-separated; a first line that
// is not all numbers is taken as a header; blank lines are skipped). Every
// row must have the same number of finite values and, unless
// opts.Rescale, Euclidean norm at most 1 (1e-9 slack). Errors name the
// file, line and column.
func ReadRows(path string, opts RowsOptions) (*Rows, error) {
	r, closeFn, err := openMaybeGzip(path)
	if err != nil {
		return nil, err
	}
	defer closeFn()
	max := opts.MaxLine
	if max <= 0 {
		max = DefaultMaxLine
	}
	cr := csv.NewReader(&lineLimitReader{r: r, max: max, line: 1})
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	out := &Rows{Scale: 1}
	first := true
	maxNorm := 0.0
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		line, _ := cr.FieldPos(0)
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			continue
		}
		vals := make([]float64, len(rec))
		bad := -1
		for i, f := range rec {
			v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
			if err != nil {
				bad = i
				break
			}
			vals[i] = v
		}
		if bad >= 0 {
			if first {
				out.Header = rec
				first = false
				continue
			}
			return nil, fmt.Errorf("%s: line %d column %d: %q is not a number", path, line, bad+1, rec[bad])
		}
		first = false
		if out.D == 0 {
			out.D = len(vals)
		} else if len(vals) != out.D {
			return nil, fmt.Errorf("%s: line %d: %d values, earlier rows have %d", path, line, len(vals), out.D)
		}
		var s float64
		for i, v := range vals {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("%s: line %d column %d: %v is not finite", path, line, i+1, v)
			}
			s += v * v
		}
		n := math.Sqrt(s)
		if n > 1+1e-9 && !opts.Rescale {
			return nil, fmt.Errorf("%s: line %d: row norm %.4g > 1; the mixture model assumes ||t|| <= 1: rescale the data (and sigma^2 by the square of the factor) or use --rescale", path, line, n)
		}
		if n > maxNorm {
			maxNorm = n
		}
		out.Data = append(out.Data, vals...)
		out.N++
	}
	if out.N == 0 {
		return nil, fmt.Errorf("%s: no numeric rows", path)
	}
	if opts.Rescale && maxNorm > 1 {
		out.Scale = maxNorm
		for i := range out.Data {
			out.Data[i] /= maxNorm
		}
	}
	return out, nil
}

// lineLimitReader fails with ErrLineTooLong as soon as a line runs past max
// bytes, so that a reader above it (csv.Reader) never buffers such a line.
type lineLimitReader struct {
	r         io.Reader
	max, run  int
	line      int
	tooLongAt int
}

func (l *lineLimitReader) Read(p []byte) (int, error) {
	if l.tooLongAt > 0 {
		return 0, fmt.Errorf("line %d: %w: longer than %d bytes", l.tooLongAt, ErrLineTooLong, l.max)
	}
	n, err := l.r.Read(p)
	for _, c := range p[:n] {
		if c == '\n' {
			l.run = 0
			l.line++
			continue
		}
		if l.run++; l.run > l.max {
			l.tooLongAt = l.line
			return 0, fmt.Errorf("line %d: %w: longer than %d bytes", l.line, ErrLineTooLong, l.max)
		}
	}
	return n, err
}
