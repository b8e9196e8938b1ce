package models

import (
	"io"
	"strconv"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/apache/arrow/go/v15/parquet"
	"github.com/apache/arrow/go/v15/parquet/compress"
	"github.com/apache/arrow/go/v15/parquet/pqarrow"

	"github.com/dprec/dprec/data"
)

// ListWriterBatch is the number of rows a ListWriter buffers before it
// writes them as one row group: memory stays bounded whatever the number
// of users.
const ListWriterBatch = 1 << 17

// ListWriter writes top-N lists as Parquet rows (user, rank, item, score),
// the table of "dprec recommend --all-users --out x.parquet" and of
// dprec-beam's recommend parts. The user and item columns are int64 when
// the model's ids are integers (Header.IDTypes), else strings.
type ListWriter struct {
	fw   *data.ParquetWriter
	b    *array.RecordBuilder
	rows int
}

// NewListWriter starts a Parquet table of the lists of a model with
// header h on w (Snappy-compressed).
func NewListWriter(w io.Writer, h *Header) (*ListWriter, error) {
	idType := func(mo int) arrow.DataType {
		if h.IDTypes[mo] == "int64" {
			return arrow.PrimitiveTypes.Int64
		}
		return arrow.BinaryTypes.String
	}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "user", Type: idType(0)},
		{Name: "rank", Type: arrow.PrimitiveTypes.Int32},
		{Name: "item", Type: idType(1)},
		{Name: "score", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Snappy))
	fw, err := data.NewParquetWriter(schema, w, props, pqarrow.DefaultWriterProps())
	if err != nil {
		return nil, err
	}
	return &ListWriter{fw: fw, b: array.NewRecordBuilder(memory.DefaultAllocator, schema)}, nil
}

func appendID(fb array.Builder, s string) {
	if ib, ok := fb.(*array.Int64Builder); ok {
		v, _ := strconv.ParseInt(s, 10, 64)
		ib.Append(v)
		return
	}
	fb.(*array.StringBuilder).Append(s)
}

// Add appends one user's list, best first (ranks from 1), writing a row
// group once ListWriterBatch rows are buffered.
func (lw *ListWriter) Add(user string, recs []Scored) error {
	b := lw.b
	for i, r := range recs {
		appendID(b.Field(0), user)
		b.Field(1).(*array.Int32Builder).Append(int32(i + 1))
		appendID(b.Field(2), r.ID)
		b.Field(3).(*array.Float64Builder).Append(r.Rating)
	}
	lw.rows += len(recs)
	if lw.rows >= ListWriterBatch {
		return lw.flush()
	}
	return nil
}

func (lw *ListWriter) flush() error {
	lw.rows = 0
	rec := lw.b.NewRecord()
	defer rec.Release()
	if rec.NumRows() == 0 {
		return nil
	}
	return lw.fw.Write(rec)
}

// Close writes the buffered rows and the Parquet footer, and releases the
// buffers; the writer is unusable afterwards.
func (lw *ListWriter) Close() error {
	defer lw.b.Release()
	if err := lw.flush(); err != nil {
		return err
	}
	return lw.fw.Close()
}

// Abort releases the buffers without writing anything more (after an
// error: the output is to be discarded).
func (lw *ListWriter) Abort() { lw.b.Release() }
