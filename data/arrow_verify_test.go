package data

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/ipc"
	"github.com/apache/arrow/go/v15/parquet"
	"github.com/apache/arrow/go/v15/parquet/pqarrow"
)

// sharedChildrenStream writes an IPC stream whose schema is a chain of
// depth nested structs, each struct{a: next, b: int64}, and then edits
// every children vector so that its second entry points at its first
// child: a DAG in which each level is listed twice, 2^depth fields once
// expanded. It returns the stream bytes and the number of edits.
func sharedChildrenStream(t *testing.T, depth int) ([]byte, int) {
	t.Helper()
	var dt arrow.DataType = arrow.PrimitiveTypes.Int64
	for i := 0; i < depth; i++ {
		dt = arrow.StructOf(arrow.Field{Name: "a", Type: dt}, arrow.Field{Name: "b", Type: arrow.PrimitiveTypes.Int64})
	}
	sc := arrow.NewSchema([]arrow.Field{{Name: "userId", Type: dt}}, nil)
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(sc))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	// The first message: continuation marker, length, flatbuffer Message.
	if binary.LittleEndian.Uint32(b) != 0xFFFFFFFF {
		t.Fatal("no continuation marker")
	}
	ml := int(binary.LittleEndian.Uint32(b[4:]))
	fb := arrowFB(b[8 : 8+ml])
	root, _ := fb.deref(0)
	msg, ok := fb.table(root)
	if !ok {
		t.Fatal("message table")
	}
	sq, _ := fb.deref(msg(8))
	schema, _ := fb.table(sq)
	edits := 0
	var walk func(q int)
	walk = func(q int) {
		f, ok := fb.table(q)
		if !ok {
			t.Fatal("field table")
		}
		p := f(14)
		if p < 0 {
			return
		}
		n, first, ok := fb.vector(p, 4)
		if !ok || n == 0 {
			return
		}
		c0, _ := fb.deref(first)
		if n == 2 {
			binary.LittleEndian.PutUint32(fb[first+4:], uint32(c0-(first+4)))
			edits++
		}
		walk(c0)
	}
	n, first, _ := fb.vector(schema(6), 4)
	for i := 0; i < n; i++ {
		q, _ := fb.deref(first + 4*i)
		walk(q)
	}
	return b, edits
}

// TestVerifySharedChildren: a schema whose children vectors list one field
// twice at every level is rejected at once; the verifier used to bound
// only the depth (64), so 40 levels meant 2^40 steps, and the Arrow
// decoder would expand the same 2^40-field tree.
func TestVerifySharedChildren(t *testing.T) {
	b, edits := sharedChildrenStream(t, 40)
	if edits != 40 {
		t.Fatalf("%d edits, want 40", edits)
	}
	start := time.Now()
	_, err := arrowVerifyStream(bytes.NewReader(b), int64(len(b)))
	if !errors.Is(err, errArrowCorrupt) {
		t.Fatalf("got %v, want errArrowCorrupt", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("verification took %v", d)
	}
	p := filepath.Join(t.TempDir(), "shared.arrows")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Load(p, LoadOptions{}); err == nil {
		t.Fatal("loaded a corrupt schema")
	}
	// The unedited deep schema is legitimate: it passes verification.
	var dt arrow.DataType = arrow.PrimitiveTypes.Int64
	for i := 0; i < 40; i++ {
		dt = arrow.StructOf(arrow.Field{Name: "a", Type: dt}, arrow.Field{Name: "b", Type: arrow.PrimitiveTypes.Int64})
	}
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(arrow.NewSchema([]arrow.Field{{Name: "userId", Type: dt}}, nil)))
	w.Close()
	if _, err := arrowVerifyStream(bytes.NewReader(buf.Bytes()), int64(buf.Len())); err != nil {
		t.Errorf("legitimate deep schema: %v", err)
	}
}

// TestParquetStoredSchemaVerified: the Arrow schema a Parquet file stores
// in its metadata is verified before pqarrow decodes it (the shared-
// children schema would make the decoder expand 2^40 fields).
func TestParquetStoredSchemaVerified(t *testing.T) {
	bad, _ := sharedChildrenStream(t, 40)
	rec := arrowRecord(arrowI64("userId", 1, 2), arrowI64("movieId", 1, 2), arrowF64("rating", 3, 4))
	defer rec.Release()
	md := arrow.NewMetadata([]string{"ARROW:schema"}, []string{base64.StdEncoding.EncodeToString(bad)})
	sc := arrow.NewSchema(rec.Schema().Fields(), &md)
	p := filepath.Join(t.TempDir(), "stored.parquet")
	fh, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	w, err := pqarrow.NewFileWriter(sc, fh, parquet.NewWriterProperties(), pqarrow.NewArrowWriterProperties())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(array.NewRecord(sc, rec.Columns(), rec.NumRows())); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, _, err = Load(p, LoadOptions{})
	if !errors.Is(err, errArrowCorrupt) {
		t.Fatalf("got %v, want the stored schema refused", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %v", d)
	}
}
