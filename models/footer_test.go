package models

import (
	"encoding/binary"
	"errors"
	"runtime/debug"
	"testing"

	"github.com/dprec/dprec/decomposition"
)

// footerField returns the footer bytes of an encoded model, their offset
// in the file, the position (in the footer) of the schema's fields vector
// and of the children slot of field k.
func footerField(t *testing.T, b []byte, k int) (base, fieldsVec, childSlot int) {
	t.Helper()
	n := int(binary.LittleEndian.Uint32(b[len(b)-10:]))
	base = len(b) - 10 - n
	fb := flat(b[base : len(b)-10])
	root, err := fb.uoff(0)
	if err != nil {
		t.Fatal(err)
	}
	schema, ok, err := fb.table(root, 1)
	if err != nil || !ok {
		t.Fatalf("no schema: %v", err)
	}
	fieldsVec, ok, err = fb.vector(schema, 1, 4)
	if err != nil || !ok {
		t.Fatalf("no fields: %v", err)
	}
	fieldsVec -= 4 // the count
	f, err := fb.uoff(fieldsVec + 4 + 4*k)
	if err != nil {
		t.Fatal(err)
	}
	childSlot, ok, err = fb.field(f, 5)
	if err != nil || !ok {
		t.Fatalf("field %d has no children slot (%v)", k, err)
	}
	return base, fieldsVec, childSlot
}

// TestFooterCyclicChildren crafts the file of issue 14 case 1: the children
// offset of a field is edited so that, with the flatbuffers runtime's
// wrapping uint32 arithmetic, it points back at the schema's own fields
// vector (which holds the field itself), and the seal is recomputed. The
// Arrow decoder would recurse into the field forever (a fatal stack
// overflow, not a recoverable panic); Decode must reject the file with
// ErrFormat. The stack is capped during the test so that a regression
// fails fast instead of growing a 1 GB stack.
func TestFooterCyclicChildren(t *testing.T) {
	f := testFile(t, decomposition.Tucker, []int{3, 2, 2}, []int{2, 1, 2}, true, 10)
	b := encode(t, f)
	defer debug.SetMaxStack(debug.SetMaxStack(32 << 20))
	tried := 0
	for k := 0; k < 3; k++ {
		c := append([]byte(nil), b...)
		base, fieldsVec, slot := footerField(t, c, k)
		// The offset is relative to the slot; uint32 arithmetic wraps a
		// target before the slot around to a huge forward offset.
		off := uint32(int64(fieldsVec) - int64(slot))
		if fieldsVec > slot {
			t.Logf("field %d: fields vector after the slot, no wrap needed", k)
		}
		binary.LittleEndian.PutUint32(c[base+slot:], off)
		if err := seal(c); err != nil {
			t.Fatal(err)
		}
		tried++
		if _, err := decode(c); !errors.Is(err, ErrFormat) {
			t.Fatalf("field %d with cyclic children: got %v, want ErrFormat", k, err)
		} else {
			t.Logf("field %d: %v", k, err)
		}
	}
	if tried == 0 {
		t.Fatal("no field edited")
	}
}

// TestFooterWrappedChildCount points a field's children offset (wrapping)
// at a word whose value is a huge count: the Arrow decoder would make a
// slice of that many Fields (a fatal out-of-memory); Decode rejects it.
func TestFooterWrappedChildCount(t *testing.T) {
	f := testFile(t, decomposition.CP, []int{4, 3}, []int{2, 2}, false, 3)
	b := encode(t, f)
	c := append([]byte(nil), b...)
	base, _, slot := footerField(t, c, 1)
	// Write a huge count 8 bytes before the slot and point at it.
	target := slot - 8
	binary.LittleEndian.PutUint32(c[base+target:], 0x7fffffff)
	binary.LittleEndian.PutUint32(c[base+slot:], uint32(int64(target)-int64(slot)))
	if err := seal(c); err != nil {
		t.Fatal(err)
	}
	if _, err := decode(c); !errors.Is(err, ErrFormat) {
		t.Fatalf("got %v, want ErrFormat", err)
	}
}
