package models

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/ipc"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
)

// batchRows is the number of rows per record batch: large enough that the
// per-batch metadata is negligible, small enough that a writer never holds
// more than a few megabytes of builders (64Ki rows x (rank+6) columns).
const batchRows = 1 << 16

// Save writes f to path atomically (temporary file, fsync, rename) and
// refuses to replace an existing file unless force is set. It refuses a
// model with non-finite values, and the path "-" (data.ErrNotAFile: the
// library never writes standard output; Write takes an io.Writer).
func Save(path string, f *File, force bool) error {
	if err := f.check(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return data.WriteFileAtomic(path, force, func(w io.Writer) error {
		if err := Write(w, f); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		return nil
	})
}

// Write writes f in the model file format to w.
func Write(w io.Writer, f *File) error {
	return write(w, f, strconv.Itoa(f.version()), nil)
}

// write writes f with the given version string; edit, when set, may alter
// the header JSON after the checksum is computed (tests of bad files).
func write(w io.Writer, f *File, version string, edit func([]byte) []byte) error {
	if err := f.check(); err != nil {
		return err
	}
	h := f.header()
	hdr, err := json.Marshal(&h)
	if err != nil {
		return fmt.Errorf("models: encoding the header: %w", err)
	}
	var seen []byte
	if f.Seen != nil {
		seen = encodeSeen(f.Seen)
	}
	weights := f.weightsRaw()
	sum := payloadSum(hdr, f.Model, f.Dicts, f.Time, seen, weights)
	if edit != nil {
		hdr = edit(hdr)
	}
	keys := []string{metaFormat, metaVersion, metaHeader, metaSHA256, metaSeal}
	vals := []string{FormatName, version, string(hdr), hex.EncodeToString(sum[:]), sealPrefix + string(make([]byte, 64))}
	schema := buildSchema(f.Model, arrow.NewMetadata(keys, vals), f.Seen != nil || f.Weights != nil)
	var file bytes.Buffer
	file.Grow(fileSizeHint(f.Model, len(seen)+len(weights), len(hdr)))
	if err := writeArrow(&file, f, schema, seen, weights); err != nil {
		return err
	}
	b := file.Bytes()
	if err := seal(b); err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// fileSizeHint estimates the bytes of a model file (the Arrow buffers of
// every row, the seen stream and the schema twice), so that the file is
// assembled in one allocation.
func fileSizeHint(m *decomposition.Model, seen, hdr int) int {
	rows := len(m.Core)
	for _, d := range m.Dims {
		rows += d
	}
	for _, p := range m.Pairs {
		rows += len(p.Keys)
	}
	perRow := 8*(maxRank(m)+6) + 24 // values, offsets, validity, id bytes
	return rows*perRow + seen + 2*hdr + 64<<10
}

// writeArrow writes the model as Arrow IPC record batches of at most
// batchRows rows: the factor rows of each mode, then the Tucker core, then
// the pair biases, then (seen not nil) the seen rows, then (weights not
// nil) the weights rows.
func writeArrow(w io.Writer, f *File, schema *arrow.Schema, seen, weights []byte) error {
	pw := &posWriter{w: w}
	fw, err := ipc.NewFileWriter(pw, ipc.WithSchema(schema), ipc.WithAllocator(memory.DefaultAllocator))
	if err != nil {
		return err
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	m := f.Model
	rw := &rowWriter{col: columnsOf(b, maxRank(m), seen != nil || weights != nil), flush: func() error {
		rec := b.NewRecord()
		defer rec.Release()
		return fw.Write(rec)
	}}
	for mo := range m.Dims {
		if err := rw.modeRows(f, mo); err != nil {
			return err
		}
	}
	if m.Kind == decomposition.Tucker {
		if err := rw.coreRows(m); err != nil {
			return err
		}
	}
	if err := rw.pairRows(m); err != nil {
		return err
	}
	if err := rw.seenRows(seen, "seen", seenMode); err != nil {
		return err
	}
	if err := rw.seenRows(weights, "weights", weightsMode); err != nil {
		return err
	}
	return fw.Close()
}

// rowWriter appends model rows to the column builders; flush writes the
// rows appended so far as one record batch.
type rowWriter struct {
	col   builders
	flush func() error
}

// modeRows appends the rows of mode mo: ID, bias and factor row.
func (rw *rowWriter) modeRows(f *File, mo int) error {
	m, col := f.Model, rw.col
	rmax := len(col.f)
	r := m.Ranks[mo]
	d := f.Dicts[mo]
	for i := 0; i < m.Dims[mo]; i++ {
		col.part.Append(modeNames[mo])
		col.mode.Append(int32(mo))
		col.index.Append(int64(i))
		switch {
		case d == nil:
			start := f.Time.Start(int32(i))
			col.id.Append(time.Unix(start, 0).UTC().Format(time.RFC3339))
			col.idInt.Append(start)
		case d.IsString:
			col.id.Append(d.String(int32(i)))
			col.idInt.AppendNull()
		default:
			col.id.Append(d.String(int32(i)))
			col.idInt.Append(d.Int(int32(i)))
		}
		if m.HasBias {
			col.bias.Append(m.Bias[mo][i])
		} else {
			col.bias.AppendNull()
		}
		row := m.Factors[mo][i*r : (i+1)*r]
		for c := 0; c < rmax; c++ {
			if c < r {
				col.f[c].Append(row[c])
			} else {
				col.f[c].AppendNull()
			}
		}
		for _, cb := range col.core {
			cb.AppendNull()
		}
		col.value.AppendNull()
		col.nullSeen()
		if (i+1)%batchRows == 0 || i == m.Dims[mo]-1 {
			if err := rw.flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

// coreRows appends the Tucker core, one entry a row with its multi-index.
func (rw *rowWriter) coreRows(m *decomposition.Model) error {
	col := rw.col
	idx := make([]int, len(m.Ranks))
	for e, v := range m.Core {
		col.part.Append("core")
		col.mode.Append(-1)
		col.index.Append(int64(e))
		col.id.AppendNull()
		col.idInt.AppendNull()
		col.bias.AppendNull()
		for _, fb := range col.f {
			fb.AppendNull()
		}
		for c, cb := range col.core {
			if c < len(idx) {
				cb.Append(int32(idx[c]))
			} else {
				cb.AppendNull()
			}
		}
		col.value.Append(v)
		col.nullSeen()
		// Advance the row-major multi-index (last mode fastest).
		for c := len(idx) - 1; c >= 0; c-- {
			idx[c]++
			if idx[c] < m.Ranks[c] {
				break
			}
			idx[c] = 0
		}
		if (e+1)%batchRows == 0 || e == len(m.Core)-1 {
			if err := rw.flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

// pairRows appends the pair biases, one key a row.
func (rw *rowWriter) pairRows(m *decomposition.Model) error {
	col := rw.col
	for pi, p := range m.Pairs {
		for e, k := range p.Keys {
			col.part.Append("pair")
			col.mode.Append(int32(-2 - pi))
			col.index.Append(int64(k >> 32))
			col.id.AppendNull()
			col.idInt.AppendNull()
			col.bias.AppendNull()
			for _, fb := range col.f {
				fb.AppendNull()
			}
			for c, cb := range col.core {
				if c == 0 {
					cb.Append(int32(uint32(k)))
				} else {
					cb.AppendNull()
				}
			}
			col.value.Append(p.Vals[e])
			col.nullSeen()
			if (e+1)%batchRows == 0 || e == len(p.Keys)-1 {
				if err := rw.flush(); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// seenRows appends the seen stream cut into pieces of seenPieceBytes, one
// row each (part "seen", mode seenMode, index the piece number, the piece
// in the seen column, every other column null), at most seenPiecesPerBatch
// rows a record batch. The weights rows are written the same way (part
// "weights", mode weightsMode).
func (rw *rowWriter) seenRows(seen []byte, part string, mode int32) error {
	col := rw.col
	pieces := 0
	for k := 0; k < len(seen); k += seenPieceBytes {
		col.part.Append(part)
		col.mode.Append(mode)
		col.index.Append(int64(pieces))
		col.id.AppendNull()
		col.idInt.AppendNull()
		col.bias.AppendNull()
		for _, fb := range col.f {
			fb.AppendNull()
		}
		for _, cb := range col.core {
			cb.AppendNull()
		}
		col.value.AppendNull()
		col.seen.Append(seen[k:min(k+seenPieceBytes, len(seen))])
		pieces++
		if pieces%seenPiecesPerBatch == 0 || k+seenPieceBytes >= len(seen) {
			if err := rw.flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

func maxRank(m *decomposition.Model) int {
	r := 0
	for _, x := range m.Ranks {
		r = max(r, x)
	}
	return r
}

// buildSchema returns the schema of a model file with factor columns
// f0..f{rmax-1} and, when seen is set, the seen column (version 2).
func buildSchema(m *decomposition.Model, md arrow.Metadata, seen bool) *arrow.Schema {
	return arrow.NewSchema(schemaFields(maxRank(m), seen), &md)
}

func schemaFields(rmax int, seen bool) []arrow.Field {
	fields := []arrow.Field{
		{Name: "part", Type: arrow.BinaryTypes.String},
		{Name: "mode", Type: arrow.PrimitiveTypes.Int32},
		{Name: "index", Type: arrow.PrimitiveTypes.Int64},
		{Name: "id", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "id_int", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "bias", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}
	for c := 0; c < rmax; c++ {
		fields = append(fields, arrow.Field{Name: "f" + strconv.Itoa(c), Type: arrow.PrimitiveTypes.Float64, Nullable: true})
	}
	for _, n := range []string{"core_p", "core_q", "core_t"} {
		fields = append(fields, arrow.Field{Name: n, Type: arrow.PrimitiveTypes.Int32, Nullable: true})
	}
	fields = append(fields, arrow.Field{Name: "value", Type: arrow.PrimitiveTypes.Float64, Nullable: true})
	if seen {
		fields = append(fields, arrow.Field{Name: "seen", Type: arrow.BinaryTypes.Binary, Nullable: true})
	}
	return fields
}

// Column positions of the fixed columns.
const (
	colPart = iota
	colMode
	colIndex
	colID
	colIDInt
	colBias
	colF0
)

type builders struct {
	part, id     *array.StringBuilder
	mode         *array.Int32Builder
	index, idInt *array.Int64Builder
	bias, value  *array.Float64Builder
	f            []*array.Float64Builder
	core         []*array.Int32Builder
	seen         *array.BinaryBuilder // nil without the seen column
}

// nullSeen appends a null to the seen column, if there is one.
func (c *builders) nullSeen() {
	if c.seen != nil {
		c.seen.AppendNull()
	}
}

func columnsOf(b *array.RecordBuilder, rmax int, seen bool) builders {
	c := builders{
		part:  b.Field(colPart).(*array.StringBuilder),
		mode:  b.Field(colMode).(*array.Int32Builder),
		index: b.Field(colIndex).(*array.Int64Builder),
		id:    b.Field(colID).(*array.StringBuilder),
		idInt: b.Field(colIDInt).(*array.Int64Builder),
		bias:  b.Field(colBias).(*array.Float64Builder),
		value: b.Field(colF0 + rmax + 3).(*array.Float64Builder),
	}
	for i := 0; i < rmax; i++ {
		c.f = append(c.f, b.Field(colF0+i).(*array.Float64Builder))
	}
	for i := 0; i < 3; i++ {
		c.core = append(c.core, b.Field(colF0+rmax+i).(*array.Int32Builder))
	}
	if seen {
		c.seen = b.Field(colF0 + rmax + 4).(*array.BinaryBuilder)
	}
	return c
}

// posWriter gives the Arrow file writer the only Seek it needs (the
// current position) on top of a plain io.Writer.
type posWriter struct {
	w   io.Writer
	pos int64
}

func (p *posWriter) Write(b []byte) (int, error) {
	n, err := p.w.Write(b)
	p.pos += int64(n)
	return n, err
}

func (p *posWriter) Seek(off int64, whence int) (int64, error) {
	if off == 0 && whence == io.SeekCurrent {
		return p.pos, nil
	}
	return 0, errors.New("models: seek not supported")
}
