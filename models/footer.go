package models

import (
	"encoding/binary"
	"fmt"
)

// checkFooter validates the flatbuffer footer of an Arrow IPC file before
// the Arrow library reads it: every table, vector and string it would
// follow lies inside the footer, and every vector length fits in the bytes
// that remain, so no count in a damaged or crafted footer can size an
// allocation beyond the file. It also restricts the schema to what model
// files use (Int, FloatingPoint, Binary and Utf8 fields, no dictionaries, no
// children), which keeps the Arrow decoder on paths whose lengths are
// checked or allocated through the capped allocator.
//
// Flatbuffer layout (flatbuffers.dev "internals"): a table starts with an
// int32 offset back to its vtable (uint16 vtable size, uint16 table size,
// then one uint16 offset per field, 0 when absent); reference fields hold a
// uint32 offset forward from the field to a table, vector or string; a
// vector (and a string) starts with a uint32 element count. The flatbuffers
// runtime computes these positions in uint32 (int32 for the vtable offset)
// and wraps around; here every position is computed without wrapping and
// must land inside the footer, so an accepted footer is one in which the
// Arrow reader follows exactly the positions checked here.
func checkFooter(b []byte) error {
	if len(b) < 10 {
		return fmt.Errorf("%w: file too small", ErrFormat)
	}
	n := int64(binary.LittleEndian.Uint32(b[len(b)-10:]))
	if n <= 0 || n > int64(len(b))-10-8 {
		return fmt.Errorf("%w: footer length %d out of range", ErrFormat, n)
	}
	fb := flat(b[int64(len(b))-10-n : len(b)-10])
	root, err := fb.uoff(0)
	if err != nil {
		return err
	}
	// Footer: 0 version, 1 schema, 2 dictionaries [Block], 3 recordBatches
	// [Block], 4 custom_metadata [KeyValue]. A Block is a 24-byte struct.
	if _, _, err := fb.vector(root, 2, 24); err != nil {
		return err
	}
	if c, err := fb.count(root, 2); err != nil {
		return err
	} else if c != 0 {
		return fmt.Errorf("%w: dictionary batches in a model file", ErrFormat)
	}
	if _, _, err := fb.vector(root, 3, 24); err != nil {
		return err
	}
	if err := fb.keyValues(root, 4); err != nil {
		return err
	}
	schema, ok, err := fb.table(root, 1)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: footer without schema", ErrFormat)
	}
	// Schema: 0 endianness, 1 fields [Field], 2 custom_metadata, 3 features [long].
	if _, _, err := fb.vector(schema, 3, 8); err != nil {
		return err
	}
	if err := fb.keyValues(schema, 2); err != nil {
		return err
	}
	fields, ok, err := fb.vector(schema, 1, 4)
	if err != nil || !ok {
		return fmt.Errorf("%w: schema without fields (%v)", ErrFormat, err)
	}
	nf, err := fb.count(schema, 1)
	if err != nil {
		return err
	}
	for i := 0; i < nf; i++ {
		f, err := fb.uoff(fields + 4*i)
		if err != nil {
			return err
		}
		// Field: 0 name, 1 nullable, 2 type_type (ubyte), 3 type, 4
		// dictionary, 5 children [Field], 6 custom_metadata.
		if _, _, err := fb.vector(f, 0, 1); err != nil {
			return err
		}
		if err := fb.keyValues(f, 6); err != nil {
			return err
		}
		// Rejecting every child (with a children offset that is itself
		// checked) is what bounds the Arrow decoder's recursion: its
		// fieldFromFB recurses into children without a depth limit, so a
		// crafted children vector pointing back at its own field would
		// overflow the stack (a fatal error, not a recoverable panic), and
		// a wrapped count would size a slice of Fields.
		if _, _, err := fb.vector(f, 5, 4); err != nil {
			return err
		}
		if c, err := fb.count(f, 5); err != nil {
			return err
		} else if c != 0 {
			return fmt.Errorf("%w: nested field in a model file", ErrFormat)
		}
		if _, ok, err := fb.table(f, 4); err != nil || ok {
			return fmt.Errorf("%w: dictionary-encoded field in a model file", ErrFormat)
		}
		tt, err := fb.scalar8(f, 2)
		if err != nil {
			return err
		}
		switch tt {
		case 2, 3, 4, 5: // Int, FloatingPoint, Binary, Utf8 in Arrow's Type union
		default:
			return fmt.Errorf("%w: field type %d not used by model files", ErrFormat, tt)
		}
		if _, ok, err := fb.table(f, 3); err != nil || !ok {
			return fmt.Errorf("%w: field without type table", ErrFormat)
		}
	}
	return nil
}

type flat []byte

func (b flat) bad(what string, at int) error {
	return fmt.Errorf("%w: footer %s at %d outside its %d bytes", ErrFormat, what, at, len(b))
}

// uoff follows the uint32 offset stored at pos.
func (b flat) uoff(pos int) (int, error) {
	if pos < 0 || pos+4 > len(b) {
		return 0, b.bad("offset", pos)
	}
	t := pos + int(binary.LittleEndian.Uint32(b[pos:]))
	if t < 0 || t+4 > len(b) {
		return 0, b.bad("target", t)
	}
	return t, nil
}

// field returns the position of field i of the table at tab (ok false when
// the field is absent).
func (b flat) field(tab, i int) (int, bool, error) {
	if tab < 0 || tab+4 > len(b) {
		return 0, false, b.bad("table", tab)
	}
	vt := tab - int(int32(binary.LittleEndian.Uint32(b[tab:])))
	if vt < 0 || vt+4 > len(b) {
		return 0, false, b.bad("vtable", vt)
	}
	vsize := int(binary.LittleEndian.Uint16(b[vt:]))
	if vsize < 4 || vt+vsize > len(b) {
		return 0, false, b.bad("vtable size", vt)
	}
	slot := 4 + 2*i
	if slot+2 > vsize {
		return 0, false, nil
	}
	off := int(binary.LittleEndian.Uint16(b[vt+slot:]))
	if off == 0 {
		return 0, false, nil
	}
	if tab+off >= len(b) {
		return 0, false, b.bad("field", tab+off)
	}
	return tab + off, true, nil
}

func (b flat) table(tab, i int) (int, bool, error) {
	p, ok, err := b.field(tab, i)
	if err != nil || !ok {
		return 0, ok, err
	}
	t, err := b.uoff(p)
	return t, err == nil, err
}

// vector checks the vector (or string) in field i of elements of elem
// bytes and returns the position of its first element.
func (b flat) vector(tab, i, elem int) (int, bool, error) {
	v, ok, err := b.table(tab, i)
	if err != nil || !ok {
		return 0, ok, err
	}
	n := int64(binary.LittleEndian.Uint32(b[v:]))
	if int64(v)+4+n*int64(elem) > int64(len(b)) {
		return 0, false, fmt.Errorf("%w: footer vector of %d elements does not fit", ErrFormat, n)
	}
	return v + 4, true, nil
}

func (b flat) count(tab, i int) (int, error) {
	v, ok, err := b.table(tab, i)
	if err != nil || !ok {
		return 0, err
	}
	return int(binary.LittleEndian.Uint32(b[v:])), nil
}

func (b flat) scalar8(tab, i int) (byte, error) {
	p, ok, err := b.field(tab, i)
	if err != nil || !ok {
		return 0, err
	}
	return b[p], nil
}

// keyValues checks a [KeyValue] vector (KeyValue: 0 key, 1 value strings).
func (b flat) keyValues(tab, i int) error {
	v, ok, err := b.vector(tab, i, 4)
	if err != nil || !ok {
		return err
	}
	n, err := b.count(tab, i)
	if err != nil {
		return err
	}
	for k := 0; k < n; k++ {
		kv, err := b.uoff(v + 4*k)
		if err != nil {
			return err
		}
		for f := 0; f < 2; f++ {
			if _, _, err := b.vector(kv, f, 1); err != nil {
				return err
			}
		}
	}
	return nil
}
