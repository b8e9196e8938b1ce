package data

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// The Arrow Go library sizes some slices straight from flatbuffer vector
// lengths (schema fields and children, custom metadata, union type IDs) and
// from stream message lengths, so a corrupt length can make it allocate
// hundreds of gigabytes, which is fatal rather than a recoverable panic.
// arrowVerifyIPC checks those lengths against the bytes that are actually
// there before the library sees the file. It is a structural check of the
// IPC framing and schema only; record batch contents are checked by the
// library (its panics are recovered by arrowRecover).

var errArrowCorrupt = errors.New("corrupt Arrow IPC metadata")

// arrowFB is a flatbuffer being verified.
type arrowFB []byte

func (b arrowFB) u32(p int) (uint32, bool) {
	if p < 0 || p+4 > len(b) {
		return 0, false
	}
	return binary.LittleEndian.Uint32(b[p:]), true
}

func (b arrowFB) u16(p int) (int, bool) {
	if p < 0 || p+2 > len(b) {
		return 0, false
	}
	return int(binary.LittleEndian.Uint16(b[p:])), true
}

// table checks the table at p and returns a field lookup: the absolute
// position of slot (vtable offset 4, 6, ...) or -1 when absent.
func (b arrowFB) table(p int) (func(slot int) int, bool) {
	so, ok := b.u32(p)
	if !ok {
		return nil, false
	}
	vt := p - int(int32(so))
	vtLen, ok1 := b.u16(vt)
	objLen, ok2 := b.u16(vt + 2)
	if !ok1 || !ok2 || vtLen < 4 || vt+vtLen > len(b) || p+objLen > len(b) {
		return nil, false
	}
	return func(slot int) int {
		if slot+2 > vtLen {
			return -1
		}
		off, _ := b.u16(vt + slot)
		if off == 0 {
			return -1
		}
		return p + off
	}, true
}

// deref follows the offset stored at p.
func (b arrowFB) deref(p int) (int, bool) {
	o, ok := b.u32(p)
	if !ok {
		return 0, false
	}
	q := p + int(o)
	return q, q >= 0 && q < len(b)
}

// vector checks the vector whose offset is stored at p (elem bytes per
// element) and returns its element count and the position of element 0.
func (b arrowFB) vector(p, elem int) (n, first int, ok bool) {
	q, ok := b.deref(p)
	if !ok {
		return 0, 0, false
	}
	l, ok := b.u32(q)
	if !ok || int64(q)+4+int64(l)*int64(elem) > int64(len(b)) {
		return 0, 0, false
	}
	return int(l), q + 4, true
}

// tables checks a vector of tables stored at field position p with check.
func (b arrowFB) tables(p int, check func(pos int) bool) bool {
	if p < 0 {
		return true
	}
	n, first, ok := b.vector(p, 4)
	if !ok {
		return false
	}
	for i := 0; i < n; i++ {
		q, ok := b.deref(first + 4*i)
		if !ok || !check(q) {
			return false
		}
	}
	return true
}

func (b arrowFB) keyValues(p int) bool {
	return b.tables(p, func(q int) bool {
		f, ok := b.table(q)
		if !ok {
			return false
		}
		for _, slot := range []int{4, 6} {
			if s := f(slot); s >= 0 {
				if _, _, ok := b.vector(s, 1); !ok {
					return false
				}
			}
		}
		return true
	})
}

// field verifies a Field table (name 4, type_type 8, type 10, dictionary
// 12, children 14, custom_metadata 16). depth bounds the nesting and
// budget the number of fields visited in the whole schema: a children
// vector may list one field several times (or itself), and the Arrow
// decoder expands such a graph into a tree, so a 64-deep chain of two-way
// shared children would otherwise cost 2^64 steps here and in the decoder.
// A real schema stores every field separately (at least 8 bytes each: its
// table and its slot in a vector), so it never needs more than len(b)/8.
func (b arrowFB) field(q, depth int, budget *int) bool {
	*budget--
	if depth > 64 || *budget < 0 {
		return false
	}
	f, ok := b.table(q)
	if !ok {
		return false
	}
	if s := f(4); s >= 0 {
		if _, _, ok := b.vector(s, 1); !ok {
			return false
		}
	}
	if s := f(10); s >= 0 {
		tq, ok := b.deref(s)
		if !ok {
			return false
		}
		tf, ok := b.table(tq)
		if !ok {
			return false
		}
		// Union (type 14) keeps its type IDs in a vector of int32 at slot 6.
		if tt := f(8); tt >= 0 && tt < len(b) && b[tt] == 14 {
			if s := tf(6); s >= 0 {
				if _, _, ok := b.vector(s, 4); !ok {
					return false
				}
			}
		}
	}
	if s := f(12); s >= 0 {
		dq, ok := b.deref(s)
		if !ok {
			return false
		}
		if _, ok := b.table(dq); !ok {
			return false
		}
	}
	if !b.tables(f(14), func(c int) bool { return b.field(c, depth+1, budget) }) {
		return false
	}
	return b.keyValues(f(16))
}

// schema verifies a Schema table (fields 6, custom_metadata 8, features 10).
func (b arrowFB) schema(q int) bool {
	f, ok := b.table(q)
	if !ok {
		return false
	}
	budget := len(b)/8 + 1
	if !b.tables(f(6), func(c int) bool { return b.field(c, 0, &budget) }) || !b.keyValues(f(8)) {
		return false
	}
	if s := f(10); s >= 0 {
		if _, _, ok := b.vector(s, 8); !ok {
			return false
		}
	}
	return true
}

// arrowVerifyFooter checks an IPC file's footer: its length, its schema and
// that every block lies inside the file. It returns the number of rows, read
// from the record batch messages' metadata.
func arrowVerifyFooter(r io.ReaderAt, size int64) (rows int64, err error) {
	const magicLen = 6
	if size < 2*8+4 {
		return 0, fmt.Errorf("%w: file too small", errArrowCorrupt)
	}
	tail := make([]byte, 4+magicLen)
	if _, err := r.ReadAt(tail, size-int64(len(tail))); err != nil {
		return 0, err
	}
	if string(tail[4:]) != string(arrowFileMagic) {
		return 0, fmt.Errorf("%w: no ARROW1 magic at the end (truncated file?)", errArrowCorrupt)
	}
	fl := int64(binary.LittleEndian.Uint32(tail))
	if fl <= 0 || fl+int64(len(tail))+8 > size {
		return 0, fmt.Errorf("%w: footer length %d does not fit the file", errArrowCorrupt, fl)
	}
	buf := make([]byte, fl)
	if _, err := r.ReadAt(buf, size-int64(len(tail))-fl); err != nil {
		return 0, err
	}
	b := arrowFB(buf)
	root, ok := b.deref(0)
	if !ok {
		return 0, fmt.Errorf("%w: footer", errArrowCorrupt)
	}
	f, ok := b.table(root)
	if !ok {
		return 0, fmt.Errorf("%w: footer", errArrowCorrupt)
	}
	// Footer: version 4, schema 6, dictionaries 8, recordBatches 10.
	s := f(6)
	if s < 0 {
		return 0, fmt.Errorf("%w: footer has no schema", errArrowCorrupt)
	}
	sq, ok := b.deref(s)
	if !ok || !b.schema(sq) {
		return 0, fmt.Errorf("%w: schema", errArrowCorrupt)
	}
	for _, slot := range []int{8, 10} {
		p := f(slot)
		if p < 0 {
			continue
		}
		// Block structs: offset int64, metaDataLength int32 (+4 padding),
		// bodyLength int64: 24 bytes.
		n, first, ok := b.vector(p, 24)
		if !ok {
			return 0, fmt.Errorf("%w: footer block list", errArrowCorrupt)
		}
		for i := 0; i < n; i++ {
			e := buf[first+24*i:]
			off := int64(binary.LittleEndian.Uint64(e))
			meta := int64(int32(binary.LittleEndian.Uint32(e[8:])))
			body := int64(binary.LittleEndian.Uint64(e[16:]))
			if off < 0 || meta < 0 || body < 0 || off > size || meta > size || body > size || off+meta+body > size {
				return 0, fmt.Errorf("%w: block %d lies outside the file", errArrowCorrupt, i)
			}
			if slot == 10 {
				mb := make([]byte, meta)
				if _, err := r.ReadAt(mb, off); err != nil {
					return 0, err
				}
				n, ok := arrowMessageRows(mb)
				if !ok {
					return 0, fmt.Errorf("%w: record batch %d", errArrowCorrupt, i)
				}
				rows += n
			}
		}
	}
	return rows, nil
}

// arrowMessageRows returns the row count of an encapsulated record batch
// message (continuation marker and length prefix included).
func arrowMessageRows(mb []byte) (int64, bool) {
	if len(mb) < 8 {
		return 0, false
	}
	if binary.LittleEndian.Uint32(mb) == 0xFFFFFFFF {
		mb = mb[8:]
	} else {
		mb = mb[4:]
	}
	b := arrowFB(mb)
	root, ok := b.deref(0)
	if !ok {
		return 0, false
	}
	f, ok := b.table(root)
	if !ok {
		return 0, false
	}
	return b.batchRows(f)
}

// batchRows returns the length of a Message whose header is a RecordBatch
// (header_type 6 == 3, header 8; RecordBatch length at slot 4).
func (b arrowFB) batchRows(f func(int) int) (int64, bool) {
	ht := f(6)
	if ht < 0 || ht >= len(b) || b[ht] != 3 {
		return 0, false
	}
	hp := f(8)
	if hp < 0 {
		return 0, false
	}
	q, ok := b.deref(hp)
	if !ok {
		return 0, false
	}
	rf, ok := b.table(q)
	if !ok {
		return 0, false
	}
	lp := rf(4)
	if lp < 0 {
		return 0, true
	}
	if lp+8 > len(b) {
		return 0, false
	}
	n := int64(binary.LittleEndian.Uint64(b[lp:]))
	return n, n >= 0
}

// arrowVerifyStream walks an IPC stream's message framing: every message
// length must fit the file and schema messages must be well formed.
func arrowVerifyStream(r io.ReaderAt, size int64) (rows int64, err error) {
	var pos int64
	hdr := make([]byte, 8)
	for i := 0; ; i++ {
		if pos == size {
			return rows, nil // a stream may end without an end-of-stream marker
		}
		if pos+4 > size {
			return 0, fmt.Errorf("%w: message %d: truncated length", errArrowCorrupt, i)
		}
		if _, err := r.ReadAt(hdr[:4], pos); err != nil {
			return 0, err
		}
		prefix := int64(4)
		l := binary.LittleEndian.Uint32(hdr)
		if l == 0xFFFFFFFF {
			if pos+8 > size {
				return 0, fmt.Errorf("%w: message %d: truncated length", errArrowCorrupt, i)
			}
			if _, err := r.ReadAt(hdr[:4], pos+4); err != nil {
				return 0, err
			}
			prefix = 8
			l = binary.LittleEndian.Uint32(hdr)
		}
		if l == 0 {
			return rows, nil // end-of-stream marker
		}
		ml := int64(int32(l))
		if ml < 0 || pos+prefix+ml > size {
			return 0, fmt.Errorf("%w: message %d: metadata length %d runs past the end of the file", errArrowCorrupt, i, ml)
		}
		buf := make([]byte, ml)
		if _, err := r.ReadAt(buf, pos+prefix); err != nil {
			return 0, err
		}
		b := arrowFB(buf)
		root, ok := b.deref(0)
		if !ok {
			return 0, fmt.Errorf("%w: message %d", errArrowCorrupt, i)
		}
		f, ok := b.table(root)
		if !ok {
			return 0, fmt.Errorf("%w: message %d", errArrowCorrupt, i)
		}
		// Message: version 4, header_type 6, header 8, bodyLength 10.
		var body int64
		if p := f(10); p >= 0 {
			if p+8 > len(buf) {
				return 0, fmt.Errorf("%w: message %d", errArrowCorrupt, i)
			}
			body = int64(binary.LittleEndian.Uint64(buf[p:]))
		}
		if ht := f(6); ht >= 0 && ht < len(buf) && buf[ht] == 1 { // Schema
			hp := f(8)
			if hp < 0 {
				return 0, fmt.Errorf("%w: message %d: schema missing", errArrowCorrupt, i)
			}
			sq, ok := b.deref(hp)
			if !ok || !b.schema(sq) {
				return 0, fmt.Errorf("%w: message %d: schema", errArrowCorrupt, i)
			}
		}
		if n, ok := b.batchRows(f); ok {
			rows += n
		}
		next := pos + prefix + ml + body
		if body < 0 || body > size || next > size {
			return 0, fmt.Errorf("%w: message %d: body length %d runs past the end of the file", errArrowCorrupt, i, body)
		}
		pos = next
	}
}
