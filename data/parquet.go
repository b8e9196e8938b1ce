package data

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"os"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/apache/arrow/go/v15/parquet"
	"github.com/apache/arrow/go/v15/parquet/compress"
	"github.com/apache/arrow/go/v15/parquet/file"
	"github.com/apache/arrow/go/v15/parquet/pqarrow"
)

// parquetReadBatch is the number of rows per record batch read from a
// Parquet row group (128Ki rows, about 4 MiB for four 8-byte columns).
// It is a variable only so that tests can shrink it.
var parquetReadBatch int64 = 1 << 17

// parquetRowGroup is the number of rows per written row group (1Mi rows:
// the usual Parquet sweet spot between metadata overhead and memory).
// It is a variable only so that tests can shrink it.
var parquetRowGroup int64 = 1 << 20

// readParquet loads a Parquet file, reading only the needed columns, one
// row group after another, in record batches.
func readParquet(path string, opts *LoadOptions, rep *LoadReport) (s *Store, err error) {
	defer arrowRecover(path, &err)
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() == 0 {
		return nil, fmt.Errorf("%s: empty file (not Parquet)", path)
	}
	head := make([]byte, 6)
	if nh, _ := fh.ReadAt(head, 0); bytes.HasPrefix(head[:nh], arrowFileMagic) || (nh >= 4 && string(head[:4]) == "\xff\xff\xff\xff") {
		rep.Detected = append(rep.Detected, "Arrow IPC content: reading as Arrow")
		fh.Close()
		return readArrow(path, FormatArrow, opts, rep)
	}
	rep.Format = FormatParquet
	mem := &arrowCappedAllocator{Allocator: arrowAlloc, limit: arrowAllocLimit(st.Size())}
	pf, err := file.NewParquetReader(fh, file.WithReadProps(parquet.NewReaderProperties(mem)))
	if err != nil {
		return nil, fmt.Errorf("%s: not a valid Parquet file: %w", path, err)
	}
	if err := parquetVerifyStoredSchema(pf); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: parquetReadBatch}, mem)
	if err != nil {
		return nil, fmt.Errorf("%s: unreadable Parquet schema: %w", path, err)
	}
	sc, err := fr.Schema()
	if err != nil {
		return nil, fmt.Errorf("%s: unreadable Parquet schema: %w", path, err)
	}
	cols, err := arrowResolveColumns(path, sc, opts.Columns)
	if err != nil {
		return nil, err
	}
	var leaves []int
	for _, c := range cols {
		if c < 0 {
			continue
		}
		f := fr.Manifest.Fields[c]
		if !f.IsLeaf() {
			return nil, fmt.Errorf("%s: column %q is nested, not a plain column", path, sc.Field(c).Name)
		}
		leaves = append(leaves, f.ColIndex)
	}
	total := pf.NumRows()
	l, err := newArrowLoader(path, sc, cols, total, st.Size(), opts, rep)
	if err != nil {
		return nil, err
	}
	src := &parquetSource{path: path, pf: pf, fr: fr, cols: cols, leaves: leaves, size: st.Size(), mem: mem}
	err = l.pipeline(opts.Threads, func(emit func(*arrowBatch) bool) error {
		var fileRow int64
		for g := 0; g < pf.NumRowGroups(); g++ {
			if ok, err := src.emitRowGroup(l, emit, g, &fileRow); !ok {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return l.finish()
}

// parquetSource is an open Parquet file and the columns a load reads.
type parquetSource struct {
	path   string
	pf     *file.Reader
	fr     *pqarrow.FileReader
	cols   [4]int // schema field per role, -1 if absent
	leaves []int  // the leaf column indices of the read fields
	size   int64
	mem    memory.Allocator
}

// emitRowGroup reads row group g in record batches and emits them;
// fileRow counts the rows of the file emitted so far. It returns false
// when the load must end, with the error (nil when the consumer stopped).
func (p *parquetSource) emitRowGroup(l *arrowLoader, emit func(*arrowBatch) bool, g int, fileRow *int64) (bool, error) {
	where := fmt.Sprintf("row group %d", g)
	want := p.pf.MetaData().RowGroup(g).NumRows()
	// The field readers are made here, one after another, rather than
	// by GetRecordReader, which makes them on goroutines of its own
	// where a panic on a corrupt file could not be recovered.
	if err := parquetCheckChunks(p.pf, g, p.leaves, p.size); err != nil {
		return false, fmt.Errorf("%s: %s: corrupt file: %w", p.path, where, err)
	}
	var (
		readers []*pqarrow.ColumnReader
		fields  []arrow.Field
	)
	defer func() {
		for _, r := range readers {
			r.Release()
		}
	}()
	for _, c := range p.cols {
		if c < 0 {
			continue
		}
		cr, err := p.fr.GetFieldReader(context.Background(), c, map[int]bool{p.fr.Manifest.Fields[c].ColIndex: true}, []int{g})
		if err != nil {
			return false, fmt.Errorf("%s: %s: %w", p.path, where, err)
		}
		readers = append(readers, cr)
		fields = append(fields, *cr.Field())
	}
	rsc := arrow.NewSchema(fields, nil)
	var first int64
	for first < want {
		rec, err := parquetNextRecord(readers, rsc, min(parquetReadBatch, want-first), p.mem)
		if err != nil {
			return false, fmt.Errorf("%s: %s near row %d: corrupt or truncated file: %w", p.path, where, first, err)
		}
		n := rec.NumRows()
		if ok, err := arrowEmitRecord(l, emit, rec, where, first, *fileRow); !ok {
			return false, err
		}
		first += n
		*fileRow += n
	}
	return true, nil
}

// writeParquet writes s as Parquet: snappy-compressed (pure Go, fast to
// decode), row groups of parquetRowGroup rows, the Arrow schema stored so
// that Arrow readers get the same types back.
func writeParquet(w io.Writer, s *Store, opts *WriteOptions) error {
	sc, err := arrowWriteSchema(s, opts)
	if err != nil {
		return err
	}
	props := parquet.NewWriterProperties(
		parquet.WithAllocator(arrowAlloc),
		parquet.WithCompression(compress.Codecs.Snappy),
		parquet.WithMaxRowGroupLength(parquetRowGroup),
	)
	// NewParquetWriter never closes w (the caller owns it) and returns its
	// error rather than pqarrow's panic when it cannot be written.
	pw, err := NewParquetWriter(sc, w, props,
		pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema(), pqarrow.WithAllocator(arrowAlloc)))
	if err != nil {
		return err
	}
	if err := arrowWriteRecords(s, sc, arrowWriteBatch, pw.WriteBuffered); err != nil {
		pw.Close()
		return err
	}
	return pw.Close()
}

// parquetCheckChunks checks the metadata of the column chunks to be read:
// present, and inside the file.
func parquetCheckChunks(pf *file.Reader, g int, leaves []int, size int64) error {
	rg := pf.MetaData().RowGroup(g)
	if rg.NumRows() < 0 {
		return fmt.Errorf("negative row count %d", rg.NumRows())
	}
	for _, c := range leaves {
		cc, err := rg.ColumnChunk(c)
		if err != nil {
			return err
		}
		off, n := cc.DataPageOffset(), cc.TotalCompressedSize()
		if cc.HasDictionaryPage() && cc.DictionaryPageOffset() > 0 {
			off = min(off, cc.DictionaryPageOffset())
		}
		if off < 0 || n < 0 || off > size || n > size || off+n > size {
			return fmt.Errorf("column chunk %d lies outside the file", c)
		}
	}
	return nil
}

// parquetNextRecord reads the next n rows of every column into one record.
func parquetNextRecord(readers []*pqarrow.ColumnReader, sc *arrow.Schema, n int64, mem memory.Allocator) (arrow.Record, error) {
	cols := make([]arrow.Array, 0, len(readers))
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	for _, r := range readers {
		ch, err := r.NextBatch(n)
		if err != nil {
			return nil, err
		}
		var a arrow.Array
		switch len(ch.Chunks()) {
		case 0:
			ch.Release()
			return nil, fmt.Errorf("column %q ended early", r.Field().Name)
		case 1:
			a = ch.Chunk(0)
			a.Retain()
		default:
			a, err = array.Concatenate(ch.Chunks(), mem)
		}
		ch.Release()
		if err != nil {
			return nil, err
		}
		cols = append(cols, a)
		if int64(a.Len()) != n {
			return nil, fmt.Errorf("column %q has %d rows where %d were expected", r.Field().Name, a.Len(), n)
		}
	}
	return array.NewRecord(sc, cols, n), nil
}

// parquetVerifyStoredSchema checks the Arrow schema a Parquet writer may
// store in the key-value metadata ("ARROW:schema", a base64 IPC stream)
// with the IPC verifier before pqarrow decodes it: the Arrow decoder
// recurses into field children without a limit, so a crafted stored schema
// could otherwise overflow the stack or size a slice from a corrupt count
// (fatal errors, not recoverable panics). The decoding mirrors pqarrow's.
func parquetVerifyStoredSchema(pf *file.Reader) error {
	kv := pf.MetaData().KeyValueMetadata()
	if kv == nil {
		return nil
	}
	v := kv.FindValue("ARROW:schema")
	if v == nil {
		return nil
	}
	var decoded []byte
	var err error
	if len(*v)%4 == 0 {
		decoded, err = base64.StdEncoding.DecodeString(*v)
	}
	if len(decoded) == 0 || err != nil {
		decoded, err = base64.RawStdEncoding.DecodeString(*v)
	}
	if err != nil {
		return nil // pqarrow fails on it the same way, before decoding
	}
	if _, err := arrowVerifyStream(bytes.NewReader(decoded), int64(len(decoded))); err != nil {
		return fmt.Errorf("corrupt Arrow schema stored in the Parquet metadata: %w", err)
	}
	return nil
}
