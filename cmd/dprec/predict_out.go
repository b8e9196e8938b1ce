package main

import (
	"encoding/csv"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/apache/arrow/go/v15/parquet"
	"github.com/apache/arrow/go/v15/parquet/compress"
	"github.com/apache/arrow/go/v15/parquet/pqarrow"
	"github.com/dprec/dprec/data"
	"github.com/urfave/cli/v2"
)

// Output of predict: CSV (default), one JSON document (--json), JSON Lines
// (--jsonl) or Parquet, on standard output or in --out (format by its
// name: .csv, .json, .jsonl, .parquet; written atomically).

// predictSink receives the predictions of one run.
type predictSink interface {
	Write(r predictResult) error
	Close() error
}

// predictFormat returns the output format: from the name of out (--out)
// when given (where --json/--jsonl must agree), else from --json/--jsonl,
// else csv.
func predictFormat(json, jsonl bool, out string) (string, error) {
	flag := "csv"
	switch {
	case json:
		flag = "json"
	case jsonl:
		flag = "jsonl"
	}
	if out == "" || out == "-" {
		return flag, nil
	}
	name := strings.ToLower(strings.TrimSuffix(out, ".gz"))
	var f string
	switch filepath.Ext(name) {
	case ".csv":
		f = "csv"
	case ".json":
		f = "json"
	case ".jsonl", ".ndjson":
		f = "jsonl"
	case ".parquet":
		f = "parquet"
	default:
		return "", fmt.Errorf("--out %s: want a .csv, .json, .jsonl or .parquet file name", out)
	}
	if strings.HasSuffix(strings.ToLower(out), ".gz") {
		return "", fmt.Errorf("--out %s: compressed output is not supported", out)
	}
	if flag != "csv" && flag != f {
		return "", fmt.Errorf("--%s with --out %s: the file name says %s", flag, out, f)
	}
	return f, nil
}

// checkPredictOut is the flag check of --out.
func checkPredictOut(c *cli.Context) error {
	_, err := predictFormat(c.Bool("json"), c.Bool("jsonl"), c.String("out"))
	return err
}

// newPredictSink returns a sink of the given format on w; withRating adds
// the observed rating column (rating-log input).
func newPredictSink(format string, w io.Writer, withRating bool) (predictSink, error) {
	switch format {
	case "json", "jsonl":
		return jsonSink{newRecordWriter(w, format == "jsonl")}, nil
	case "parquet":
		return newParquetSink(w, withRating)
	}
	s := &csvSink{w: csv.NewWriter(w), withRating: withRating}
	head := []string{"user", "item", "time", "prediction", "fallback"}
	if withRating {
		head = []string{"user", "item", "time", "rating", "prediction", "fallback"}
	}
	return s, s.w.Write(head)
}

type jsonSink struct{ rw *recordWriter }

func (s jsonSink) Write(r predictResult) error { return s.rw.Write(r) }
func (s jsonSink) Close() error                { return s.rw.Close() }

type csvSink struct {
	w          *csv.Writer
	withRating bool
}

func (s *csvSink) Write(r predictResult) error {
	ts := ""
	if r.Time != nil {
		ts = strconv.FormatInt(*r.Time, 10)
	}
	rec := []string{r.User, r.Item, ts}
	if s.withRating {
		rs := ""
		if r.Rating != nil {
			rs = strconv.FormatFloat(*r.Rating, 'g', -1, 64)
		}
		rec = append(rec, rs)
	}
	return s.w.Write(append(rec, strconv.FormatFloat(r.Prediction, 'g', 8, 64), r.Fallback))
}

func (s *csvSink) Close() error {
	s.w.Flush()
	return s.w.Error()
}

// parquetSink writes user, item, time (nullable int64 Unix seconds),
// [rating,] prediction, fallback in row groups of predictParquetBatch rows.
type parquetSink struct {
	fw         *data.ParquetWriter
	b          *array.RecordBuilder
	withRating bool
	rows       int
}

const predictParquetBatch = 1 << 16

func newParquetSink(w io.Writer, withRating bool) (*parquetSink, error) {
	fields := []arrow.Field{
		{Name: "user", Type: arrow.BinaryTypes.String},
		{Name: "item", Type: arrow.BinaryTypes.String},
		{Name: "time", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}
	if withRating {
		fields = append(fields, arrow.Field{Name: "rating", Type: arrow.PrimitiveTypes.Float64})
	}
	fields = append(fields,
		arrow.Field{Name: "prediction", Type: arrow.PrimitiveTypes.Float64},
		arrow.Field{Name: "fallback", Type: arrow.BinaryTypes.String})
	sc := arrow.NewSchema(fields, nil)
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Snappy))
	fw, err := data.NewParquetWriter(sc, w, props, pqarrow.DefaultWriterProps())
	if err != nil {
		return nil, err
	}
	return &parquetSink{fw: fw, b: array.NewRecordBuilder(memory.DefaultAllocator, sc), withRating: withRating}, nil
}

func (s *parquetSink) Write(r predictResult) error {
	f := 0
	s.b.Field(f).(*array.StringBuilder).Append(r.User)
	s.b.Field(f + 1).(*array.StringBuilder).Append(r.Item)
	tb := s.b.Field(f + 2).(*array.Int64Builder)
	if r.Time != nil {
		tb.Append(*r.Time)
	} else {
		tb.AppendNull()
	}
	f += 3
	if s.withRating {
		v := 0.0
		if r.Rating != nil {
			v = *r.Rating
		}
		s.b.Field(f).(*array.Float64Builder).Append(v)
		f++
	}
	s.b.Field(f).(*array.Float64Builder).Append(r.Prediction)
	s.b.Field(f + 1).(*array.StringBuilder).Append(r.Fallback)
	if s.rows++; s.rows >= predictParquetBatch {
		return s.flush()
	}
	return nil
}

func (s *parquetSink) flush() error {
	rec := s.b.NewRecord()
	defer rec.Release()
	s.rows = 0
	if rec.NumRows() == 0 {
		return nil
	}
	return s.fw.Write(rec)
}

func (s *parquetSink) Close() error {
	defer s.b.Release()
	if err := s.flush(); err != nil {
		s.fw.Close()
		return err
	}
	return s.fw.Close()
}
