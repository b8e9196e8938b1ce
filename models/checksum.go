package models

import (
	"crypto/sha256"
	"encoding/binary"
	"hash"
	"math"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
)

// payloadSum is the SHA-256 of the stored header JSON followed by the
// payload in canonical order: for each mode, for each row in index order,
// the id (int64, or uint32 length + UTF-8 bytes, or the bucket start time),
// the bias (when present) and the factor row; then the core; then each
// pair bias's (key, value) in key order. Numbers are
// little endian; floats are their IEEE-754 bits. When the file has a
// seen-items part, its stored (base64) bytes follow, preceded by their
// length; files without one hash exactly as before the part existed. The
// item-item weights stream (version 3) follows the same way.
func payloadSum(hdr []byte, m *decomposition.Model, dicts []*data.Dict, tb *data.TimeBucketing, seen, weights []byte) [32]byte {
	h := sha256.New()
	w := &sumWriter{h: h, buf: make([]byte, 0, 1<<14)}
	w.u64(uint64(len(hdr)))
	w.bytes(hdr)
	for mo := range m.Dims {
		r := m.Ranks[mo]
		var d *data.Dict
		if mo < len(dicts) {
			d = dicts[mo]
		}
		for i := 0; i < m.Dims[mo]; i++ {
			switch {
			case d == nil && tb != nil:
				w.u64(uint64(tb.Start(int32(i))))
			case d == nil:
			case d.IsString:
				s := d.String(int32(i))
				w.u64(uint64(len(s)))
				w.bytes([]byte(s))
			default:
				w.u64(uint64(d.Int(int32(i))))
			}
			if m.HasBias {
				w.f64(m.Bias[mo][i])
			}
			for _, v := range m.Factors[mo][i*r : (i+1)*r] {
				w.f64(v)
			}
		}
	}
	for _, v := range m.Core {
		w.f64(v)
	}
	for _, p := range m.Pairs {
		for i, k := range p.Keys {
			w.u64(k)
			w.f64(p.Vals[i])
		}
	}
	if seen != nil {
		w.u64(uint64(len(seen)))
		w.bytes(seen)
	}
	if weights != nil {
		w.u64(uint64(len(weights)))
		w.bytes(weights)
	}
	w.flush()
	var out [32]byte
	copy(out[:], h.Sum(nil))
	return out
}

type sumWriter struct {
	h   hash.Hash
	buf []byte
}

func (w *sumWriter) u64(v uint64) {
	w.buf = binary.LittleEndian.AppendUint64(w.buf, v)
	if len(w.buf) > cap(w.buf)-8 {
		w.flush()
	}
}

func (w *sumWriter) f64(v float64) { w.u64(math.Float64bits(v)) }

func (w *sumWriter) bytes(b []byte) {
	w.flush()
	w.h.Write(b)
}

func (w *sumWriter) flush() {
	w.h.Write(w.buf)
	w.buf = w.buf[:0]
}
