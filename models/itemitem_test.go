package models

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/dprec/dprec/data"
)

// testItemItemFile builds a small item-item model: 4 users, 5 items, a
// hand-made weight matrix.
func testItemItemFile(t testing.TB) *File {
	t.Helper()
	ud, id := data.NewIntDict("user"), data.NewStringDict("item")
	for u := 0; u < 4; u++ {
		ud.InternInt(int64(10 + u))
	}
	for j := 0; j < 5; j++ {
		id.InternString("i" + strconv.Itoa(j))
	}
	seen := &Exclusions{ptr: []int64{0, 2, 3, 3, 5}, items: []int32{0, 1, 2, 3, 4}}
	w, err := NewItemWeights(5, []int64{0, 2, 4, 5, 5, 7}, []int32{1, 2, 0, 3, 4, 0, 2}, []float64{0.5, -0.25, 0.75, 0.125, 1, 0.3, 2})
	if err != nil {
		t.Fatal(err)
	}
	f, err := NewItemItemFile(ud, id, seen, w)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestItemItemRoundTrip(t *testing.T) {
	f := testItemItemFile(t)
	b := encode(t, f)
	g, err := decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if g.Header.Version != FormatVersion || g.Header.Weights == nil || !g.ItemItem() ||
		!slices.Equal(g.Weights.vals, f.Weights.vals) || !slices.Equal(g.Weights.pat.items, f.Weights.pat.items) || !slices.Equal(g.Weights.pat.ptr, f.Weights.pat.ptr) {
		t.Fatalf("round trip: %+v", g.Header)
	}
	p := NewPredictor(g)
	// User 10 has items 0 and 1: scores row 0 + row 1.
	recs, _ := p.Recommend("10", nil, 5, g.Seen.Items(0))
	want := map[string]float64{"i2": -0.25, "i3": 0.125}
	if len(recs) != 3 {
		t.Fatalf("recs %v", recs)
	}
	for _, r := range recs {
		if r.ID != "i4" && r.Score != want[r.ID] {
			t.Fatalf("recs %v", recs)
		}
	}
	if v, fb := p.Predict("10", "i3", nil); v != 0.125 || fb != FallbackNone {
		t.Fatalf("Predict %g %v", v, fb)
	}
	// Every flipped byte of the weights stream, resealed, is rejected or
	// loads the same weights.
	enc := encodeWeights(f.Weights)
	at := bytes.Index(b, enc)
	if at < 0 {
		t.Fatal("weights stream not found in the file")
	}
	c := make([]byte, len(b))
	for i := at; i < at+len(enc); i++ {
		copy(c, b)
		c[i] ^= 0x01
		if seal(c) != nil {
			continue
		}
		if g, err := decode(c); err == nil && !slices.Equal(g.Weights.vals, f.Weights.vals) {
			t.Fatalf("byte %d of the weights flipped and resealed: loaded other weights", i-at)
		}
	}
}

func TestItemItemRejects(t *testing.T) {
	f := testItemItemFile(t)
	g := *f
	g.Seen = nil
	if err := g.check(); err == nil {
		t.Fatal("an item-item model without seen items was accepted")
	}
	g = *f
	g.Header.Objective = ObjectiveImplicit
	if err := g.check(); err == nil {
		t.Fatal("weights on an implicit model were accepted")
	}
	g = *f
	g.Model.Factors[0][0] = 1
	if err := g.check(); err == nil {
		t.Fatal("nonzero shell factors were accepted")
	}
	g.Model.Factors[0][0] = 0
	for _, bad := range []struct {
		ptr  []int64
		cols []int32
	}{
		{[]int64{0, 2, 2, 2, 2, 2}, []int32{1, 1}},
		{[]int64{0, 1, 2, 2, 2, 2}, []int32{5, 0}},
		{[]int64{0, 1, 2, 2, 2}, []int32{1, 0}},
	} {
		if _, err := NewItemWeights(5, bad.ptr, bad.cols, make([]float64, len(bad.cols))); err == nil {
			t.Fatalf("bad weights %v %v accepted", bad.ptr, bad.cols)
		}
	}
}

func TestItemItemExport(t *testing.T) {
	f := testItemItemFile(t)
	dir := filepath.Join(t.TempDir(), "out")
	if err := Export(dir, f, false); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	if want := ExportFilesOf(f); !slices.Equal(got, want) || !slices.Contains(got, ExportItemWeights) {
		t.Fatalf("exported %v, want %v", got, want)
	}
}

// TestItemItemTruncated: an item-item file cut at any offset is refused.
func TestItemItemTruncated(t *testing.T) {
	b := encode(t, testItemItemFile(t))
	for n := 0; n < len(b); n++ {
		if _, err := decode(b[:n]); err == nil {
			t.Fatalf("file truncated to %d of %d bytes was accepted", n, len(b))
		}
	}
}
