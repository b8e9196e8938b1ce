package models

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/ipc"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/perturb"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		kind  decomposition.Kind
		dims  []int
		ranks []int
		bias  bool
	}{
		{"cp3-bias", decomposition.CP, []int{7, 5, 4}, []int{3}, true},
		{"cp2-nobias", decomposition.CP, []int{6, 9}, []int{2}, false},
		{"tucker3-bias", decomposition.Tucker, []int{7, 5, 4}, []int{3, 2, 4}, true},
		{"tucker2", decomposition.Tucker, []int{4, 3}, []int{2, 3}, false},
		{"multi-batch", decomposition.CP, []int{batchRows + 3, 2}, []int{1}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := testFile(t, c.kind, c.dims, c.ranks, c.bias, 1)
			f.Privacy = &perturb.Report{Mode: "output", Epsilon: 1, Covered: []string{"A"}, NotCovered: []string{"B"}}
			path := filepath.Join(t.TempDir(), "m.arrow")
			if err := Save(path, f, false); err != nil {
				t.Fatal(err)
			}
			g, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			if d := sameModel(f, g); d != "" {
				t.Fatalf("round trip differs in %s", d)
			}
			h := g.Header
			if h.Format != FormatName || h.Version != formatVersionNoSeenRows || h.Kind != c.kind || !eqInts(h.Dims, c.dims) {
				t.Errorf("header %+v", h)
			}
			if !h.Created.Equal(f.Header.Created) || string(h.Settings) != string(f.Header.Settings) || string(h.History) != string(f.Header.History) || h.Data.Mean != 3.25 {
				t.Errorf("caller header fields lost: %+v", h)
			}
			if g.Privacy.Mode != "output" || len(g.Privacy.NotCovered) != 1 {
				t.Errorf("privacy %+v", g.Privacy)
			}
			rh, err := ReadHeader(path)
			if err != nil || rh.Kind != c.kind || rh.Privacy.Mode != "output" {
				t.Errorf("ReadHeader = %+v, %v", rh, err)
			}
		})
	}
}

func TestNonPrivateDefault(t *testing.T) {
	f := testFile(t, decomposition.CP, []int{3, 3}, []int{1}, true, 2)
	g, err := decode(encode(t, f))
	if err != nil {
		t.Fatal(err)
	}
	if g.Privacy == nil || g.Privacy.Mode != "none" || g.Privacy.Private() {
		t.Fatalf("nil privacy saved as %+v, want mode none", g.Privacy)
	}
}

// TestGolden pins the byte layout: the golden file was written by this
// code (go test -run Golden -update) and must keep loading bit for bit.
func TestGolden(t *testing.T) {
	// tucker3.arrow predates pair biases (files without them must keep
	// loading bit for bit); tucker3-pairs.arrow has them.
	for _, name := range []string{"tucker3.arrow", "tucker3-pairs.arrow"} {
		f := testFile(t, decomposition.Tucker, []int{3, 4, 2}, []int{2, 2, 2}, true, 3)
		if name == "tucker3.arrow" {
			f.Model.Pairs = nil
		}
		golden(t, f, name)
	}
	// A version 2 file: seen items in the seen column.
	f := testFile(t, decomposition.CP, []int{4, 5, 2}, []int{2}, true, 3)
	f.Seen, _ = SeenFromStore(seenStore(), 4, 5)
	golden(t, f, "cp3-seen-v2.arrow")
}

func golden(t *testing.T, f *File, name string) {
	b := encode(t, f)
	golden := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(golden, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create)", err)
	}
	if !bytes.Equal(b, want) {
		t.Errorf("encoding changed: %d bytes, golden %d", len(b), len(want))
	}
	g, err := Load(golden)
	if err != nil {
		t.Fatal(err)
	}
	if d := sameModel(f, g); d != "" {
		t.Fatalf("golden differs in %s", d)
	}
}

func TestPyarrowLayout(t *testing.T) {
	// An independent Arrow reader sees plain columns: the factor of mode 1
	// row 2 is readable by filtering mode == 1 and index == 2.
	f := testFile(t, decomposition.CP, []int{3, 4, 2}, []int{2}, true, 4)
	b := encode(t, f)
	r, err := ipc.NewFileReader(bytes.NewReader(b), ipc.WithAllocator(memory.NewGoAllocator()))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	found := 0
	for i := 0; i < r.NumRecords(); i++ {
		rec, err := r.Record(i)
		if err != nil {
			t.Fatal(err)
		}
		part := rec.Column(0).(*array.String)
		mode := rec.Column(1).(*array.Int32)
		idx := rec.Column(2).(*array.Int64)
		id := rec.Column(3).(*array.String)
		f1 := rec.Column(7).(*array.Float64)
		for row := 0; row < int(rec.NumRows()); row++ {
			if mode.Value(row) == 1 && idx.Value(row) == 2 {
				found++
				if part.Value(row) != "item" || id.Value(row) != "i2" || f1.Value(row) != f.Model.Row(1, 2)[1] {
					t.Errorf("item row 2: part %q id %q f1 %v", part.Value(row), id.Value(row), f1.Value(row))
				}
			}
			if mode.Value(row) == 2 && idx.Value(row) == 0 {
				found++
				if id.Value(row) != "2020-01-01T00:00:00Z" || rec.Column(4).(*array.Int64).Value(row) != 1577836800 {
					t.Errorf("time row 0: %q", id.Value(row))
				}
			}
		}
	}
	if found != 2 {
		t.Fatalf("found %d rows, want 2", found)
	}
	if r.Schema().Field(6).Name != "f0" || r.Schema().Field(1).Name != "mode" {
		t.Errorf("schema %v", r.Schema())
	}
}

func TestTruncatedEveryOffset(t *testing.T) {
	t.Parallel()
	f := testFile(t, decomposition.Tucker, []int{3, 2, 2}, []int{2, 1, 2}, true, 5)
	b := encode(t, f)
	for n := 0; n < len(b); n++ {
		if _, err := decode(b[:n]); err == nil {
			t.Fatalf("file truncated to %d of %d bytes loaded without error", n, len(b))
		} else if !errors.Is(err, ErrFormat) && !errors.Is(err, ErrChecksum) && !errors.Is(err, ErrVersion) {
			t.Fatalf("truncated to %d: error %v does not wrap ErrFormat", n, err)
		}
	}
}

// TestFlippedEveryByte flips each byte of a small model file: loading
// either fails with an error or (for bytes the format does not use, such as
// padding) returns exactly the original model. It never panics.
func TestFlippedEveryByte(t *testing.T) {
	t.Parallel()
	f := testFile(t, decomposition.CP, []int{3, 2, 2}, []int{2}, true, 6)
	b := encode(t, f)
	c := make([]byte, len(b))
	failed := 0
	for i := range b {
		copy(c, b)
		c[i] ^= 0xA5
		g, err := decode(c)
		if err != nil {
			failed++
			continue
		}
		if d := sameModel(f, g); d != "" {
			t.Fatalf("byte %d flipped: loaded a different model (%s) without error", i, d)
		}
	}
	t.Logf("%d of %d flips rejected, the rest were harmless", failed, len(b))
}

func TestCorruptFactorIsChecksumError(t *testing.T) {
	f := testFile(t, decomposition.CP, []int{3, 2, 2}, []int{2}, true, 7)
	b := encode(t, f)
	var key [8]byte
	binary.LittleEndian.PutUint64(key[:], math.Float64bits(f.Model.Factors[1][3]))
	i := bytes.Index(b, key[:])
	if i < 0 {
		t.Fatal("factor value not found in the file")
	}
	b[i] ^= 1 // the lowest mantissa bit: a tiny, plausible change
	_, err := decode(b)
	if !errors.Is(err, ErrChecksum) {
		t.Fatalf("err = %v, want ErrChecksum", err)
	}
}

func TestBadFiles(t *testing.T) {
	f := testFile(t, decomposition.CP, []int{3, 2, 2}, []int{2}, true, 8)
	var v2 bytes.Buffer
	if err := write(&v2, f, "2", nil); err != nil {
		t.Fatal(err)
	}
	var huge bytes.Buffer
	if err := write(&huge, f, "1", func(h []byte) []byte {
		return bytes.Replace(h, []byte(`"dims":[3,2,2]`), []byte(`"dims":[1000,2,2]`), 1)
	}); err != nil {
		t.Fatal(err)
	}
	var edited bytes.Buffer
	if err := write(&edited, f, "1", func(h []byte) []byte {
		return bytes.Replace(h, []byte(`"Epochs":3`), []byte(`"Epochs":4`), 1)
	}); err != nil {
		t.Fatal(err)
	}
	// An Arrow file that is not a model.
	var other bytes.Buffer
	sc := arrow.NewSchema([]arrow.Field{{Name: "userId", Type: arrow.PrimitiveTypes.Int64}}, nil)
	w, _ := ipc.NewFileWriter(&posWriter{w: &other}, ipc.WithSchema(sc))
	rb := array.NewRecordBuilder(memory.NewGoAllocator(), sc)
	rb.Field(0).(*array.Int64Builder).Append(1)
	rec := rb.NewRecord()
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	w.Close()
	cases := []struct {
		name string
		b    []byte
		want error
		msg  string
	}{
		{"empty", nil, ErrFormat, "not an Arrow IPC file"},
		{"text", []byte("userId,movieId,rating\n1,2,3\n"), ErrFormat, "not an Arrow IPC file"},
		{"version 2", v2.Bytes(), ErrVersion, "version"},
		{"huge dims", huge.Bytes(), ErrFormat, "more than"},
		{"edited header", edited.Bytes(), ErrChecksum, "checksum"},
		{"other arrow", other.Bytes(), ErrFormat, "not a dprec model"},
	}
	for _, c := range cases {
		_, err := decode(c.b)
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: err = %v, want %v containing %q", c.name, err, c.want, c.msg)
		}
	}
	// Load names the file.
	path := filepath.Join(t.TempDir(), "bad.arrow")
	os.WriteFile(path, []byte("garbage"), 0o644)
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("Load error %v does not name the file", err)
	}
}

func TestSaveRefusals(t *testing.T) {
	f := testFile(t, decomposition.CP, []int{3, 2}, []int{2}, false, 9)
	path := filepath.Join(t.TempDir(), "m.arrow")
	if err := Save(path, f, false); err != nil {
		t.Fatal(err)
	}
	if err := Save(path, f, false); !errors.Is(err, data.ErrExists) {
		t.Errorf("overwrite without force: %v", err)
	}
	if err := Save(path, f, true); err != nil {
		t.Errorf("overwrite with force: %v", err)
	}
	f.Model.Factors[0][1] = math.NaN()
	if err := Save(filepath.Join(t.TempDir(), "nan.arrow"), f, false); err == nil || !strings.Contains(err.Error(), "non-finite") {
		t.Errorf("NaN model saved: %v", err)
	}
	f.Model.Factors[0][1] = 0
	f.Dicts[1] = nil
	if err := Save(filepath.Join(t.TempDir(), "x.arrow"), f, false); err == nil {
		t.Error("model without item dictionary saved")
	}
}

func TestFingerprint(t *testing.T) {
	s := &data.Store{Dims: []int{2, 2}, Idx: [][]int32{{0, 1}, {1, 0}}, Val: []float64{4, 2}}
	a := Fingerprint(s)
	if a.NNZ != 2 || a.Mean != 3 || a.Min != 2 || a.Max != 4 || len(a.SHA256) != 64 {
		t.Fatalf("%+v", a)
	}
	s.Val[0] = 4.000000001
	if Fingerprint(s).SHA256 == a.SHA256 {
		t.Error("fingerprint ignores values")
	}
	s.Val[0] = 4
	s.Idx[1][0] = 0
	if Fingerprint(s).SHA256 == a.SHA256 {
		t.Error("fingerprint ignores indices")
	}
}

// TestResealedFlips flips every byte of the file and re-seals it, as a
// deliberately edited file would be: the footer validation, the capped
// Arrow decoder and the payload checksum must still fail cleanly, never
// panic, over-allocate or load a different model.
func TestResealedFlips(t *testing.T) {
	t.Parallel()
	f := testFile(t, decomposition.Tucker, []int{3, 2, 2}, []int{2, 1, 2}, true, 10)
	b := encode(t, f)
	spots := sealSpots(b)
	if len(spots) != 2 {
		t.Fatalf("%d seal copies, want 2", len(spots))
	}
	// Every byte of the footer (what the Arrow reader parses first) and
	// every fifth byte elsewhere (keeps the race-detector run short).
	footer := len(b) - 10 - int(binary.LittleEndian.Uint32(b[len(b)-10:]))
	c := make([]byte, len(b))
	rejected, tried := 0, 0
	for i := 0; i < len(b); i++ {
		if i < footer && i%5 != 0 {
			continue
		}
		copy(c, b)
		c[i] ^= 0xA5
		tried++
		if seal(c) != nil {
			rejected++ // the flip destroyed the seal marker itself
			continue
		}
		g, err := decode(c)
		if err != nil {
			rejected++
			continue
		}
		if d := sameModel(f, g); d != "" {
			t.Fatalf("byte %d flipped and resealed: loaded a different model (%s)", i, d)
		}
	}
	t.Logf("%d of %d resealed flips rejected, the rest harmless", rejected, tried)
}
