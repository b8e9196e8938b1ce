package models

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strconv"
	"sync"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/ipc"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
)

// Load reads and verifies a model file. A truncated, corrupt (checksum
// mismatch), wrong-version or non-model file yields an error wrapping
// ErrFormat, ErrChecksum or ErrVersion that names the file; Load never
// panics and never allocates much more than the file size.
func Load(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	f, err := Decode(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// ReadHeader reads and returns the header of a model file after checking
// the whole-file seal (it does not decode the factors; Load verifies the
// payload checksum as well).
func ReadHeader(path string) (*Header, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if err := checkSeal(b); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	h, fr, _, err := readMeta(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	fr.Close()
	return h, nil
}

// budget is an Arrow allocator that refuses (by panicking, recovered by
// Read) to hand out more than limit bytes in total, so that length fields
// in a corrupt file cannot make the reader allocate more than the file
// size implies.
type budget struct {
	mu          sync.Mutex
	used, limit int
	inner       memory.GoAllocator
}

type errBudget struct{ want, limit int }

func (b *budget) take(n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if n < 0 || b.used+n > b.limit {
		panic(errBudget{n, b.limit})
	}
	b.used += n
}

func (b *budget) Allocate(n int) []byte {
	b.take(n)
	return b.inner.Allocate(n)
}

func (b *budget) Reallocate(n int, old []byte) []byte {
	b.take(n)
	return b.inner.Reallocate(n, old)
}

func (b *budget) Free(old []byte) { b.inner.Free(old) }

// guard converts a panic inside the Arrow reader (corrupt flatbuffers,
// out-of-range buffers, the allocation budget) into an error.
func guard(err *error) {
	if r := recover(); r != nil {
		if eb, ok := r.(errBudget); ok {
			*err = fmt.Errorf("%w: corrupt Arrow data (a buffer of %d bytes exceeds what the file size allows)", ErrFormat, eb.want)
			return
		}
		*err = fmt.Errorf("%w: corrupt Arrow data (%v)", ErrFormat, r)
	}
}

// readMeta opens the Arrow file and parses and checks the header.
func readMeta(b []byte) (h *Header, fr *ipc.FileReader, sum []byte, err error) {
	defer guard(&err)
	if err := checkFooter(b); err != nil {
		return nil, nil, nil, err
	}
	size := int64(len(b))
	r := bytes.NewReader(b)
	// The whole file is read at most once by the record reader, plus
	// builder slack; four times the size plus 1 MiB for small files bounds
	// every legitimate allocation.
	limit := 4*size + 1<<20
	if limit > int64(^uint(0)>>1) {
		limit = int64(^uint(0) >> 1)
	}
	fr, err = ipc.NewFileReader(r, ipc.WithAllocator(&budget{limit: int(limit)}))
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%w: not an Arrow IPC file or truncated (%v)", ErrFormat, err)
	}
	md := fr.Schema().Metadata()
	get := func(k string) (string, bool) {
		i := md.FindKey(k)
		if i < 0 {
			return "", false
		}
		return md.Values()[i], true
	}
	name, ok := get(metaFormat)
	if !ok || name != FormatName {
		return nil, nil, nil, fmt.Errorf("%w: an Arrow file but not a dprec model (no %q metadata)", ErrFormat, metaFormat)
	}
	ver, _ := get(metaVersion)
	v, err := strconv.Atoi(ver)
	if err != nil || v < formatVersionNoSeenRows || v > FormatVersion {
		return nil, nil, nil, fmt.Errorf("%w %q (this dprec reads versions %d to %d)", ErrVersion, ver, formatVersionNoSeenRows, FormatVersion)
	}
	raw, _ := get(metaHeader)
	hdr := new(Header)
	if err := json.Unmarshal([]byte(raw), hdr); err != nil {
		return nil, nil, nil, fmt.Errorf("%w: header: %v", ErrFormat, err)
	}
	if hdr.Format != FormatName || hdr.Version != v {
		return nil, nil, nil, fmt.Errorf("%w: header says format %q version %d", ErrVersion, hdr.Format, hdr.Version)
	}
	if err := checkHeader(hdr, size); err != nil {
		return nil, nil, nil, err
	}
	if (v >= FormatVersion) != (hdr.Weights != nil) {
		return nil, nil, nil, fmt.Errorf("%w: a version %d file must have item-item weights exactly when its version is %d", ErrFormat, v, FormatVersion)
	}
	want := schemaFields(maxRanks(hdr.Ranks), v >= formatVersionSeenRows)
	got := fr.Schema().Fields()
	if len(got) != len(want) {
		return nil, nil, nil, fmt.Errorf("%w: %d columns, want %d for ranks %v", ErrFormat, len(got), len(want), hdr.Ranks)
	}
	for i := range want {
		if got[i].Name != want[i].Name || !arrow.TypeEqual(got[i].Type, want[i].Type) {
			return nil, nil, nil, fmt.Errorf("%w: column %d is %s %s, want %s %s", ErrFormat, i, got[i].Name, got[i].Type, want[i].Name, want[i].Type)
		}
	}
	s, _ := get(metaSHA256)
	sum, err = hex.DecodeString(s)
	if err != nil || len(sum) != 32 {
		return nil, nil, nil, fmt.Errorf("%w: missing or malformed %s", ErrFormat, metaSHA256)
	}
	return hdr, fr, sum, nil
}

func maxRanks(r []int) int {
	x := 0
	for _, v := range r {
		x = max(x, v)
	}
	return x
}

// checkHeader validates the shape in the header and that the payload it
// announces fits in a file of the given size (each factor value, bias and
// core value takes at least 8 bytes in the file), before anything is
// allocated from it.
func checkHeader(h *Header, size int64) error {
	n := len(h.Dims)
	if n < 2 || n > 3 || len(h.Ranks) != n || len(h.IDTypes) != n || len(h.Modes) != n {
		return fmt.Errorf("%w: header has %d dims, %d ranks, %d id types", ErrFormat, n, len(h.Ranks), len(h.IDTypes))
	}
	if h.Kind != decomposition.CP && h.Kind != decomposition.Tucker {
		return fmt.Errorf("%w: unknown model kind %q", ErrFormat, h.Kind)
	}
	var cells, core int64 = 0, 1
	for mo := 0; mo < n; mo++ {
		d, r := int64(h.Dims[mo]), int64(h.Ranks[mo])
		if d <= 0 || r <= 0 || d > size || r > size {
			return fmt.Errorf("%w: mode %d has size %d and rank %d", ErrFormat, mo, d, r)
		}
		cells += d * (r + 1)
		core *= r
		if core > size {
			return fmt.Errorf("%w: core of ranks %v larger than the file", ErrFormat, h.Ranks)
		}
		want := "int64"
		if mo == 2 {
			want = "time"
		}
		if h.IDTypes[mo] != want && !(mo < 2 && h.IDTypes[mo] == "string") {
			return fmt.Errorf("%w: mode %d has id type %q", ErrFormat, mo, h.IDTypes[mo])
		}
		if h.Modes[mo] != modeNames[mo] {
			return fmt.Errorf("%w: mode %d is named %q, want %q", ErrFormat, mo, h.Modes[mo], modeNames[mo])
		}
	}
	if h.Kind == decomposition.Tucker {
		cells += core
	}
	for i, p := range h.Pairs {
		if p.A < 0 || p.A >= n || p.B < 0 || p.B >= n || p.A == p.B || p.Div < 1 || p.Count < 0 || int64(p.Count) > size || !h.Bias {
			return fmt.Errorf("%w: pair bias %d is %+v", ErrFormat, i, p)
		}
		cells += 2 * int64(p.Count)
	}
	if cells > size/8+1 {
		return fmt.Errorf("%w: header announces %d values, more than a %d-byte file can hold", ErrFormat, cells, size)
	}
	if w := h.Weights; w != nil && (w.Items != h.Dims[1] || w.NNZ < 0 || int64(w.NNZ) > size/8) {
		return fmt.Errorf("%w: item weights %+v do not fit the model or the file", ErrFormat, *w)
	}
	if (n == 3) != (h.Time != nil) {
		return fmt.Errorf("%w: order %d with time bucketing %v", ErrFormat, n, h.Time)
	}
	if h.Time != nil && (h.Time.Count != h.Dims[2] || h.Time.Unit == data.TimeNone) {
		return fmt.Errorf("%w: time bucketing %+v does not match the time mode of size %d", ErrFormat, *h.Time, h.Dims[2])
	}
	if h.Time != nil {
		if _, err := data.ParseTimeUnit(string(h.Time.Unit)); err != nil {
			return fmt.Errorf("%w: %v", ErrFormat, err)
		}
	}
	return nil
}

// Decode decodes and verifies the bytes of a model file.
func Decode(b []byte) (f *File, err error) {
	if err := checkSeal(b); err != nil {
		return nil, err
	}
	h, fr, sum, err := readMeta(b)
	if err != nil {
		return nil, err
	}
	defer fr.Close()
	defer guard(&err)
	m, err := decomposition.NewModel(h.Kind, h.Dims, h.Ranks, h.Bias)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	m.Mean, m.ClampLo, m.ClampHi = h.Mean, h.ClampLo, h.ClampHi
	rows := newDecodeRows(h, m)
	if err := rows.read(fr, h, m); err != nil {
		return nil, err
	}
	f = &File{Header: *h, Model: m, Dicts: make([]*data.Dict, len(h.Dims)), Privacy: h.Privacy}
	if f.Privacy == nil {
		return nil, fmt.Errorf("%w: header has no privacy section", ErrFormat)
	}
	f.PrivacyCheck = f.Privacy.Check()
	if err := rows.dicts(f, h); err != nil {
		return nil, err
	}
	md := fr.Schema().Metadata()
	raw := md.Values()[md.FindKey(metaHeader)]
	seenRaw, err := decodeSeenPart(md, h, f, rows.seenRaw, rows.seenPieces > 0)
	if err != nil {
		return nil, err
	}
	var weightsRaw []byte
	if h.Weights != nil {
		if f.Weights, err = decodeWeights(rows.weightsRaw, h.Weights, h.Dims[1]); err != nil {
			return nil, err
		}
		weightsRaw = rows.weightsRaw
		if err := f.checkWeights(); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrFormat, err)
		}
	} else if rows.weightsPieces > 0 {
		return nil, fmt.Errorf("%w: item weights without a header entry", ErrFormat)
	}
	got := payloadSum([]byte(raw), m, f.Dicts, f.Time, seenRaw, weightsRaw)
	if hex.EncodeToString(got[:]) != hex.EncodeToString(sum) {
		return nil, ErrChecksum
	}
	return f, nil
}

// decodeRows collects the per-mode rows of a model file while its record
// batches are read: the IDs (integer or string) and which rows (and core
// entries) were seen.
type decodeRows struct {
	ints     [][]int64
	strs     [][]string
	seen     [][]bool
	coreSeen []bool
	// seenRaw is the seen stream (version 2): its pieces in order, of
	// which there are seenPieces.
	seenRaw    []byte
	seenPieces int
	// weightsRaw is the item-item weights stream (version 3), of
	// weightsPieces pieces.
	weightsRaw    []byte
	weightsPieces int
}

func newDecodeRows(h *Header, m *decomposition.Model) *decodeRows {
	n := len(h.Dims)
	r := &decodeRows{ints: make([][]int64, n), strs: make([][]string, n), seen: make([][]bool, n)}
	for mo := 0; mo < n; mo++ {
		r.seen[mo] = make([]bool, h.Dims[mo])
		if h.IDTypes[mo] == "string" {
			r.strs[mo] = make([]string, h.Dims[mo])
		} else {
			r.ints[mo] = make([]int64, h.Dims[mo])
		}
	}
	if h.Kind == decomposition.Tucker {
		r.coreSeen = make([]bool, len(m.Core))
	}
	return r
}

// read reads every record batch into m and r, then checks that every row,
// core entry and pair-bias row the header announces is there.
func (r *decodeRows) read(fr *ipc.FileReader, h *Header, m *decomposition.Model) error {
	for _, p := range h.Pairs {
		m.Pairs = append(m.Pairs, decomposition.PairBias{A: p.A, B: p.B, Div: p.Div,
			Keys: make([]uint64, 0, p.Count), Vals: make([]float64, 0, p.Count)})
	}
	rmax := maxRanks(h.Ranks)
	for b := 0; b < fr.NumRecords(); b++ {
		rec, err := fr.RecordAt(b)
		if err != nil {
			return fmt.Errorf("%w: record batch %d: %v", ErrFormat, b, err)
		}
		err = readBatch(rec, h, m, rmax, r.ints, r.strs, r.seen, r.coreSeen)
		if err == nil {
			err = readPairs(rec, m, rmax, h.Version >= formatVersionSeenRows)
		}
		if err == nil && h.Version >= formatVersionSeenRows {
			err = r.readSeenRows(rec, rmax)
		}
		rec.Release()
		if err != nil {
			return fmt.Errorf("%w: record batch %d: %v", ErrFormat, b, err)
		}
	}
	for mo := range r.seen {
		for i, ok := range r.seen[mo] {
			if !ok {
				return fmt.Errorf("%w: row %d of mode %s is missing", ErrFormat, i, modeNames[mo])
			}
		}
	}
	for e, ok := range r.coreSeen {
		if !ok {
			return fmt.Errorf("%w: core entry %d is missing", ErrFormat, e)
		}
	}
	for i := range m.Pairs {
		p := &m.Pairs[i]
		if len(p.Keys) != h.Pairs[i].Count {
			return fmt.Errorf("%w: pair bias %d has %d rows, the header says %d", ErrFormat, i, len(p.Keys), h.Pairs[i].Count)
		}
		if err := p.Validate(m.Dims); err != nil {
			return fmt.Errorf("%w: %v", ErrFormat, err)
		}
	}
	return nil
}

// dicts builds f's user and item dictionaries from the IDs read and, for a
// time mode, checks the stored bucket starts against the header's
// bucketing.
func (r *decodeRows) dicts(f *File, h *Header) error {
	var err error
	for mo := 0; mo < 2; mo++ {
		if r.strs[mo] != nil {
			f.Dicts[mo], err = data.DictFromStrings(h.IDNames[mo], r.strs[mo])
		} else {
			f.Dicts[mo], err = data.DictFromInts(h.IDNames[mo], r.ints[mo])
		}
		if err != nil {
			return fmt.Errorf("%w: %v", ErrFormat, err)
		}
	}
	if len(h.Dims) == 3 {
		t := *h.Time
		f.Time = &t
		for k, start := range r.ints[2] {
			if f.Time.Start(int32(k)) != start {
				return fmt.Errorf("%w: time bucket %d starts at %d, the header's bucketing says %d", ErrFormat, k, start, f.Time.Start(int32(k)))
			}
		}
	}
	return nil
}

// decodeSeenPart decodes the seen items into f.Seen, checking them against
// the header, and returns the bytes the checksum covers (nil if none): in
// a version 1 file the base64 text in the schema metadata, in a version 2
// file the stream the seen rows' pieces make up.
func decodeSeenPart(md arrow.Metadata, h *Header, f *File, raw []byte, rows bool) ([]byte, error) {
	k := md.FindKey(metaSeen)
	v2 := h.Version >= formatVersionSeenRows
	has := k >= 0
	if v2 {
		if k >= 0 {
			return nil, fmt.Errorf("%w: version %d file with seen items in the metadata", ErrFormat, h.Version)
		}
		has = rows
	}
	switch {
	case has && h.Seen == nil:
		return nil, fmt.Errorf("%w: seen items without a header entry", ErrFormat)
	case !has && h.Seen != nil:
		return nil, fmt.Errorf("%w: the header announces seen items the file does not hold", ErrFormat)
	case !has:
		return nil, nil
	}
	if f.Privacy.Private() {
		return nil, fmt.Errorf("%w: a private model with seen items", ErrFormat)
	}
	var err error
	if !v2 {
		if f.Seen, err = decodeSeenBase64(md.Values()[k], h.Seen, h.Dims[0], h.Dims[1]); err != nil {
			return nil, err
		}
		return []byte(md.Values()[k]), nil
	}
	if h.Seen.Encoding != SeenEncoding {
		return nil, fmt.Errorf("%w: seen items in unknown encoding %q", ErrFormat, h.Seen.Encoding)
	}
	if f.Seen, err = decodeSeen(raw, h.Seen, h.Dims[0], h.Dims[1]); err != nil {
		return nil, err
	}
	return raw, nil
}

// readSeenRows collects the seen rows of a batch (mode seenMode): their
// index numbers the pieces 0, 1, 2, ... in file order, and only they have
// a non-null seen column.
func (r *decodeRows) readSeenRows(rec arrow.Record, rmax int) error {
	mode := rec.Column(colMode).(*array.Int32)
	index := rec.Column(colIndex).(*array.Int64)
	seen := rec.Column(colF0 + rmax + 4).(*array.Binary)
	for row := 0; row < int(rec.NumRows()); row++ {
		if mode.Value(row) == weightsMode {
			if seen.IsNull(row) || seen.ValueLen(row) == 0 || index.Value(row) != int64(r.weightsPieces) {
				return fmt.Errorf("row %d: bad weights row (piece %d, want %d)", row, index.Value(row), r.weightsPieces)
			}
			r.weightsRaw = append(r.weightsRaw, seen.Value(row)...)
			r.weightsPieces++
			continue
		}
		if mode.Value(row) != seenMode {
			if !seen.IsNull(row) {
				return fmt.Errorf("row %d: seen bytes on a model row", row)
			}
			continue
		}
		if seen.IsNull(row) || seen.ValueLen(row) == 0 || index.Value(row) != int64(r.seenPieces) {
			return fmt.Errorf("row %d: bad seen row (piece %d, want %d)", row, index.Value(row), r.seenPieces)
		}
		r.seenRaw = append(r.seenRaw, seen.Value(row)...)
		r.seenPieces++
	}
	return nil
}

func readBatch(rec arrow.Record, h *Header, m *decomposition.Model, rmax int, ints [][]int64, strs [][]string, seen [][]bool, coreSeen []bool) error {
	rows := int(rec.NumRows())
	mode := rec.Column(colMode).(*array.Int32)
	index := rec.Column(colIndex).(*array.Int64)
	id := rec.Column(colID).(*array.String)
	idInt := rec.Column(colIDInt).(*array.Int64)
	bias := rec.Column(colBias).(*array.Float64)
	fs := make([]*array.Float64, rmax)
	for c := range fs {
		fs[c] = rec.Column(colF0 + c).(*array.Float64)
	}
	value := rec.Column(colF0 + rmax + 3).(*array.Float64)
	for c := 0; c < int(rec.NumCols()); c++ {
		if rec.Column(c).Len() != rows {
			return fmt.Errorf("column %d has %d rows, the batch %d", c, rec.Column(c).Len(), rows)
		}
	}
	n := len(h.Dims)
	for row := 0; row < rows; row++ {
		if mode.IsNull(row) || index.IsNull(row) {
			return fmt.Errorf("row %d: null mode or index", row)
		}
		mo, i := int(mode.Value(row)), index.Value(row)
		if mo <= -2 {
			continue // pair rows: readPairs
		}
		if mo == -1 {
			if coreSeen == nil || i < 0 || i >= int64(len(coreSeen)) || coreSeen[i] || value.IsNull(row) {
				return fmt.Errorf("row %d: bad core entry %d", row, i)
			}
			coreSeen[i] = true
			m.Core[i] = value.Value(row)
			continue
		}
		if mo < 0 || mo >= n || i < 0 || i >= int64(h.Dims[mo]) || seen[mo][i] {
			return fmt.Errorf("row %d: bad or repeated row %d of mode %d", row, i, mo)
		}
		seen[mo][i] = true
		switch {
		case strs[mo] != nil:
			if id.IsNull(row) {
				return fmt.Errorf("row %d: null id", row)
			}
			strs[mo][i] = id.Value(row)
		default:
			if idInt.IsNull(row) {
				return fmt.Errorf("row %d: null id_int", row)
			}
			ints[mo][i] = idInt.Value(row)
		}
		if h.Bias {
			if bias.IsNull(row) {
				return fmt.Errorf("row %d: null bias", row)
			}
			m.Bias[mo][i] = bias.Value(row)
		}
		r := h.Ranks[mo]
		dst := m.Factors[mo][int(i)*r : (int(i)+1)*r]
		for c := range dst {
			if fs[c].IsNull(row) {
				return fmt.Errorf("row %d: null factor value f%d", row, c)
			}
			dst[c] = fs[c].Value(row)
		}
	}
	return nil
}

// readPairs reads the pair-bias rows of a batch (mode -2 - p for pair p):
// index is the pair's mode-A index, core_p its period and value its bias;
// rows of one pair come in strictly increasing key order. seenRows says
// the file has seen rows (mode seenMode), which it skips.
func readPairs(rec arrow.Record, m *decomposition.Model, rmax int, seenRows bool) error {
	mode := rec.Column(colMode).(*array.Int32)
	index := rec.Column(colIndex).(*array.Int64)
	period := rec.Column(colF0 + rmax).(*array.Int32)
	value := rec.Column(colF0 + rmax + 3).(*array.Float64)
	for row := 0; row < int(rec.NumRows()); row++ {
		mo := int(mode.Value(row))
		if mo > -2 || seenRows && (mo == seenMode || mo == weightsMode) {
			continue
		}
		pi := -2 - mo
		if pi >= len(m.Pairs) {
			return fmt.Errorf("row %d: pair bias %d not in the header", row, pi)
		}
		p := &m.Pairs[pi]
		a := index.Value(row)
		if period.IsNull(row) || value.IsNull(row) || a < 0 || a > math.MaxUint32 || len(p.Keys) == cap(p.Keys) {
			return fmt.Errorf("row %d: bad pair bias row", row)
		}
		k := uint64(a)<<32 | uint64(uint32(period.Value(row)))
		if n := len(p.Keys); n > 0 && k <= p.Keys[n-1] {
			return fmt.Errorf("row %d: pair bias rows out of order", row)
		}
		p.Keys = append(p.Keys, k)
		p.Vals = append(p.Vals, value.Value(row))
	}
	return nil
}
