package data

import (
	"fmt"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
)

// arrowWriteBatch is the number of rows per written record batch (64Ki:
// large enough to amortise per-batch costs, small enough to stay in cache).
const arrowWriteBatch = 1 << 16

// arrowWriteNames returns the output column names.
func arrowWriteNames(c Columns) [4]string {
	names := [4]string{"userId", "movieId", "rating", "timestamp"}
	for role, n := range [4]string{c.User, c.Item, c.Rating, c.Time} {
		if n != "" {
			names[role] = n
		}
	}
	return names
}

// arrowHasTimeColumn reports whether written files carry a time column.
func arrowHasTimeColumn(s *Store) bool {
	return s.Timestamps != nil || (s.Time != nil && len(s.Idx) > 2)
}

// arrowWriteSchema is the schema of a written store: user and item int64
// when their dictionary is integer (else utf8), rating float64, and an int64
// time column of Unix seconds when the store has time.
func arrowWriteSchema(s *Store, opts *WriteOptions) (*arrow.Schema, error) {
	if len(s.Dicts) < 2 || s.Dicts[0] == nil || s.Dicts[1] == nil {
		return nil, fmt.Errorf("data: cannot write a store without user and item dictionaries")
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	names := arrowWriteNames(opts.Columns)
	idType := func(d *Dict) arrow.DataType {
		if d.IsString {
			return arrow.BinaryTypes.String
		}
		return arrow.PrimitiveTypes.Int64
	}
	fields := []arrow.Field{
		{Name: names[0], Type: idType(s.Dicts[0])},
		{Name: names[1], Type: idType(s.Dicts[1])},
		{Name: names[2], Type: arrow.PrimitiveTypes.Float64},
	}
	if arrowHasTimeColumn(s) {
		fields = append(fields, arrow.Field{Name: names[3], Type: arrow.PrimitiveTypes.Int64})
	}
	return arrow.NewSchema(fields, nil), nil
}

// arrowWriteRecords cuts s into record batches of at most batch rows and
// passes each to write (which must not keep it).
func arrowWriteRecords(s *Store, sc *arrow.Schema, batch int, write func(arrow.Record) error) error {
	b := array.NewRecordBuilder(arrowAlloc, sc)
	defer b.Release()
	n := s.NNZ()
	ids := make([]int64, 0, min(batch, n))
	times := make([]int64, 0, min(batch, n))
	for lo := 0; lo < n; lo += batch {
		hi := min(lo+batch, n)
		for m := 0; m < 2; m++ {
			d := s.Dicts[m]
			idx := s.Idx[m][lo:hi]
			if d.IsString {
				sb := b.Field(m).(*array.StringBuilder)
				sb.Reserve(hi - lo)
				for _, k := range idx {
					sb.Append(d.String(k))
				}
				continue
			}
			ints := d.Ints()
			ids = ids[:0]
			for _, k := range idx {
				ids = append(ids, ints[k])
			}
			b.Field(m).(*array.Int64Builder).AppendValues(ids, nil)
		}
		b.Field(2).(*array.Float64Builder).AppendValues(s.Val[lo:hi], nil)
		if sc.NumFields() > 3 {
			tb := b.Field(3).(*array.Int64Builder)
			if s.Timestamps != nil {
				tb.AppendValues(s.Timestamps[lo:hi], nil)
			} else {
				times = times[:0]
				for _, k := range s.Idx[2][lo:hi] {
					times = append(times, s.Time.Start(k))
				}
				tb.AppendValues(times, nil)
			}
		}
		rec := b.NewRecord()
		err := write(rec)
		rec.Release()
		if err != nil {
			return err
		}
	}
	return nil
}
