package models

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/perturb"
)

// seenStore is a training log over 4 users x 5 items with a repeated pair
// (user 0, item 3), unsorted, and a user (3) who saw every item.
func seenStore() *data.Store {
	return &data.Store{Dims: []int{4, 5},
		Idx: [][]int32{{0, 0, 0, 1, 3, 3, 3, 3, 3, 0}, {3, 1, 3, 4, 0, 1, 2, 3, 4, 0}},
		Val: []float64{1, 1, 1, 1, 1, 1, 1, 1, 1, 1}}
}

func TestSeenFromStoreAndRoundTrip(t *testing.T) {
	f := testFile(t, decomposition.CP, []int{4, 5}, []int{2}, true, 3)
	seen, err := SeenFromStore(seenStore(), 4, 5)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]int32{{0, 1, 3}, {4}, nil, {0, 1, 2, 3, 4}}
	for u, w := range want {
		if got := seen.Items(int32(u)); !slices.Equal(got, w) {
			t.Fatalf("user %d: seen %v, want %v", u, got, w)
		}
	}
	f.Seen = seen
	b := encode(t, f)
	g, err := decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if g.Header.Seen == nil || g.Header.Seen.Pairs != 9 || g.Header.Seen.Users != 4 {
		t.Fatalf("header seen %+v", g.Header.Seen)
	}
	for u, w := range want {
		if got := g.Seen.Items(int32(u)); !slices.Equal(got, w) {
			t.Fatalf("decoded user %d: seen %v, want %v", u, got, w)
		}
	}
	// A file without the part decodes with Seen nil.
	f.Seen = nil
	g, err = decode(encode(t, f))
	if err != nil || g.Seen != nil || g.Header.Seen != nil {
		t.Fatalf("file without seen items: %v %+v", err, g.Seen)
	}
	if _, err := SeenFromStore(seenStore(), 4, 6); err == nil {
		t.Fatal("mismatched dims accepted")
	}
}

func TestSeenRefusedForPrivateModels(t *testing.T) {
	f := testFile(t, decomposition.CP, []int{4, 5}, []int{2}, true, 3)
	f.Seen, _ = SeenFromStore(seenStore(), 4, 5)
	f.Privacy = &perturb.Report{Mode: "output", Epsilon: 1}
	var buf bytes.Buffer
	if err := Write(&buf, f); err == nil || !strings.Contains(err.Error(), "private") {
		t.Fatalf("private model with seen items written: %v", err)
	}
}

// TestSeenCorruptionDetected flips every byte of the seen part and
// re-seals the file: the load must fail (checksum or decoding), never
// return other seen items.
func TestSeenCorruptionDetected(t *testing.T) {
	f := testFile(t, decomposition.CP, []int{4, 5}, []int{2}, true, 3)
	f.Seen, _ = SeenFromStore(seenStore(), 4, 5)
	b := encode(t, f)
	enc := encodeSeen(f.Seen)
	at := bytes.Index(b, enc)
	if at < 0 {
		t.Fatal("seen part not found in the file")
	}
	// The stream is stored once, raw, in the seen rows (version 2; version
	// 1 kept it in the schema, which Arrow writes twice).
	spots := []int{at}
	if at2 := bytes.Index(b[at+len(enc):], enc); at2 >= 0 {
		spots = append(spots, at+len(enc)+at2)
	}
	c := make([]byte, len(b))
	rejected := 0
	for _, at := range spots {
		for i := at; i < at+len(enc); i++ {
			copy(c, b)
			c[i] ^= 0x01
			if seal(c) != nil {
				continue
			}
			g, err := decode(c)
			if err != nil {
				rejected++
				continue
			}
			if !slices.Equal(g.Seen.items, f.Seen.items) || !slices.Equal(g.Seen.ptr, f.Seen.ptr) {
				t.Fatalf("byte %d of the seen part flipped and resealed: loaded other seen items", i-at)
			}
		}
	}
	if rejected < len(enc) {
		t.Fatalf("only %d of the %d flips of the read copy rejected", rejected, len(enc))
	}
}

func TestDecodeSeenRejects(t *testing.T) {
	good := &Exclusions{ptr: []int64{0, 2, 2, 3}, items: []int32{1, 4, 0}}
	info := &SeenInfo{Users: 3, Pairs: 3, Encoding: seenEncodingMeta}
	if e, err := decodeSeenBase64(b64(encodeSeen(good)), info, 3, 5); err != nil || !slices.Equal(e.items, good.items) || !slices.Equal(e.ptr, good.ptr) {
		t.Fatalf("good part: %v %+v", err, e)
	}
	raw := func(v ...uint64) string {
		var b []byte
		for _, x := range v {
			b = appendUvarint(b, x)
		}
		return b64(b)
	}
	cases := map[string]struct {
		s     string
		info  SeenInfo
		items int
	}{
		"item beyond":   {raw(3, 3, 2, 0, 1, 1, 3, 0), *info, 4},
		"counts short":  {raw(3, 3, 1, 0, 1, 1, 3), *info, 5},
		"huge count":    {raw(3, 3, 1<<40, 0, 1, 1, 3, 0), *info, 5},
		"huge pairs":    {raw(3, 1<<50), SeenInfo{Users: 3, Pairs: 1 << 50, Encoding: seenEncodingMeta}, 5},
		"trailing":      {raw(3, 3, 2, 0, 1, 1, 3, 0, 9), *info, 5},
		"header counts": {raw(3, 3, 2, 0, 1, 1, 3, 0), SeenInfo{Users: 3, Pairs: 4, Encoding: seenEncodingMeta}, 5},
		"encoding":      {raw(3, 3, 2, 0, 1, 1, 3, 0), SeenInfo{Users: 3, Pairs: 3, Encoding: "x"}, 5},
		"not base64":    {"!!", *info, 5},
		"truncated":     {raw(3), *info, 5},
	}
	for name, c := range cases {
		if _, err := decodeSeenBase64(c.s, &c.info, 3, c.items); !errors.Is(err, ErrFormat) {
			t.Errorf("%s: error %v, want ErrFormat", name, err)
		}
	}
}

func TestExclusionsUnionFor(t *testing.T) {
	a := &Exclusions{ptr: []int64{0, 2, 2}, items: []int32{1, 3}, Unmatched: 1}
	b := &Exclusions{ptr: []int64{0, 2, 3}, items: []int32{0, 3, 2}, Unmatched: 2, Allowed: []bool{true, true, true, false, true}}
	u := a.Union(b)
	if !slices.Equal(u.Items(0), []int32{0, 1, 3}) || !slices.Equal(u.Items(1), []int32{2}) || u.Unmatched != 3 || u.Allowed == nil {
		t.Fatalf("union %v %v %d", u.Items(0), u.Items(1), u.Unmatched)
	}
	if got := u.For(1, 5, []int32{4, 2}); !slices.Equal(got, []int32{2, 3, 4}) {
		t.Fatalf("For(1) = %v", got)
	}
	if got := u.For(-1, 5, nil); !slices.Equal(got, []int32{3}) {
		t.Fatalf("For(unknown) = %v", got)
	}
	if a.Union(nil) != a || (*Exclusions)(nil).Union(b) != b {
		t.Fatal("union with nil")
	}
	if s := b.Support(5); !slices.Equal(s, []int{1, 0, 1, 1, 0}) {
		t.Fatalf("support %v", s)
	}
}

// TestRecommendAllSeenAndCandidates: seen items never appear, a user who
// saw every item gets an empty list, the candidate filter holds.
func TestRecommendAllSeenAndCandidates(t *testing.T) {
	f := testFile(t, decomposition.CP, []int{4, 5}, []int{2}, true, 3)
	f.Seen, _ = SeenFromStore(seenStore(), 4, 5)
	p := NewPredictor(f)
	ex := f.Seen.Union(nil)
	got := map[int32][]Scored{}
	if err := p.RecommendAll(5, nil, 2, ex, func(u int32, recs []Scored) error { got[u] = recs; return nil }); err != nil {
		t.Fatal(err)
	}
	for u := int32(0); u < 4; u++ {
		for _, s := range got[u] {
			if slices.Contains(f.Seen.Items(u), s.Item) {
				t.Fatalf("user %d got seen item %d", u, s.Item)
			}
		}
		if len(got[u]) != 5-len(f.Seen.Items(u)) {
			t.Fatalf("user %d: %d items, want %d", u, len(got[u]), 5-len(f.Seen.Items(u)))
		}
	}
	if len(got[3]) != 0 {
		t.Fatalf("user who saw everything got %v", got[3])
	}
	ex = &Exclusions{ptr: ex.ptr, items: ex.items, Allowed: []bool{false, false, true, false, true}}
	if err := p.RecommendAll(5, nil, 1, ex, func(u int32, recs []Scored) error {
		for _, s := range recs {
			if s.Item != 2 && s.Item != 4 {
				t.Fatalf("user %d got item %d outside the candidates", u, s.Item)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// Single-user path: For builds the same exclusion list.
	recs, _ := p.Recommend(p.UserID(2), nil, 5, ex.For(2, 5, nil))
	if len(recs) != 2 {
		t.Fatalf("user 2 with candidates {2,4}: %v", recs)
	}
}

// TestEvaluateMAPCoveragePopularity checks MAP@k, coverage and the
// popularity baseline against hand computation, with the model's seen
// items excluded by default.
func TestEvaluateMAPCoveragePopularity(t *testing.T) {
	f := testFile(t, decomposition.CP, []int{4, 5}, []int{2}, false, 5)
	f.Model.ClampLo, f.Model.ClampHi = 0, 0
	// Users 0..3 (ids 100, 103, 106, 109); seen: item popularity i0: 2,
	// i1: 2, i2: 1, i3: 2, i4: 2 -> popularity order 0, 1, 3, 4, 2.
	f.Seen, _ = SeenFromStore(seenStore(), 4, 5)
	p := NewPredictor(f)
	ud, _ := data.DictFromInts("u", []int64{100, 103})
	id, _ := data.DictFromStrings("i", []string{"i2", "i4", "i0"})
	// User 100 (seen 0,1,3) relevant {i2, i4}; user 103 (seen 4) relevant {i0}.
	test := &data.Store{Dims: []int{2, 3}, Idx: [][]int32{{0, 0, 1}, {0, 1, 2}}, Val: []float64{5, 4, 4}, Dicts: []*data.Dict{ud, id}}
	res, err := Evaluate(p, test, EvalOptions{K: 2, Threshold: 4})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExcludedSeen != 9 || res.Popularity == nil || res.Catalogue != 5 {
		t.Fatalf("%+v", res)
	}
	// Popularity lists: user 0 -> [4, 2] (0, 1, 3 seen): hits at 1 and 2:
	// P 1, R 1, AP (1/1 + 2/2)/2 = 1. User 1 -> [0, 1]: hit at 1: P 0.5,
	// R 1, AP 1/1 = 1, NDCG 1.
	pop := res.Popularity
	if math.Abs(pop.Precision-0.75) > 1e-12 || math.Abs(pop.Recall-1) > 1e-12 || math.Abs(pop.MAP-1) > 1e-12 || math.Abs(pop.NDCG-1) > 1e-12 {
		t.Fatalf("popularity %+v", pop)
	}
	if pop.Distinct != 4 || math.Abs(pop.Coverage-0.8) > 1e-12 {
		t.Fatalf("popularity coverage %+v", pop)
	}
	// The model: brute-force lists over the unseen items.
	var m RankMetrics
	seenItems := make([]bool, 5)
	for _, c := range []struct {
		u   int
		rel []int32
	}{{0, []int32{2, 4}}, {1, []int32{0}}} {
		top := brute(f, c.u, 0, 2, f.Seen.Items(int32(c.u)))
		rel := map[int32]bool{}
		for _, j := range c.rel {
			rel[j] = true
		}
		hits, ap := 0.0, 0.0
		for r, j := range top {
			if rel[j] {
				hits++
				ap += hits / float64(r+1)
			}
		}
		m.add(rankScore{ap: ap / float64(min(2, len(c.rel)))}, top, seenItems)
	}
	if math.Abs(res.MAP-m.MAP/2) > 1e-12 || res.Distinct != m.Distinct {
		t.Fatalf("model MAP %v distinct %d, want %v %d", res.MAP, res.Distinct, m.MAP/2, m.Distinct)
	}
	// IncludeSeen ranks over every item.
	res2, err := Evaluate(p, test, EvalOptions{K: 2, Threshold: 4, IncludeSeen: true})
	if err != nil || res2.ExcludedSeen != 0 {
		t.Fatalf("%v %+v", err, res2)
	}
	// PopularityCounts replace the support: order 2, 3, 0, 1, 4. User 0 ->
	// [2, 4] (0, 1, 3 seen): both relevant, NDCG 1. User 1 -> [2, 3]: i0
	// missed, NDCG 0. The model's metrics are unchanged.
	res3, err := Evaluate(p, test, EvalOptions{K: 2, Threshold: 4, PopularityCounts: []float64{3, 2.5, 9, 4, 0}})
	if err != nil {
		t.Fatal(err)
	}
	if pop := res3.Popularity; math.Abs(pop.NDCG-0.5) > 1e-12 || pop.Distinct != 3 || res3.NDCG != res.NDCG {
		t.Fatalf("popularity by counts %+v (model NDCG %v, want %v)", pop, res3.NDCG, res.NDCG)
	}
	if _, err := Evaluate(p, test, EvalOptions{K: 2, Threshold: 4, PopularityCounts: []float64{1, 2}}); err == nil {
		t.Error("2 popularity counts for 5 items accepted")
	}
}

func appendUvarint(b []byte, v uint64) []byte { return binary.AppendUvarint(b, v) }

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// FuzzDecodeSeen: any bytes either decode into a valid seen-items part
// (sorted distinct items inside the model, counts as announced) or fail
// with ErrFormat; never a panic or an allocation beyond the input size.
func FuzzDecodeSeen(f *testing.F) {
	good := &Exclusions{ptr: []int64{0, 2, 2, 3}, items: []int32{1, 4, 0}}
	f.Add(encodeSeen(good), 3, 3, 5)
	f.Add([]byte{3, 200, 1, 0}, 3, 3, 5)
	f.Fuzz(func(t *testing.T, raw []byte, users, pairs, items int) {
		if users < 0 || users > 1000 || pairs < 0 || items <= 0 || items > 1000 {
			return
		}
		e, err := decodeSeen(raw, &SeenInfo{Users: users, Pairs: pairs, Encoding: SeenEncoding}, users, items)
		if err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("error %v does not wrap ErrFormat", err)
			}
			return
		}
		if e.Users() != users || e.Pairs() != pairs {
			t.Fatalf("decoded %d users %d pairs, announced %d %d", e.Users(), e.Pairs(), users, pairs)
		}
		for u := 0; u < users; u++ {
			seg := e.Items(int32(u))
			for k, j := range seg {
				if j < 0 || int(j) >= items || (k > 0 && j <= seg[k-1]) {
					t.Fatalf("user %d items %v", u, seg)
				}
			}
		}
	})
}

// TestSeenVersion1FileLoads: a version 1 file (seen items base64'd in the
// schema metadata, written before version 2) still loads, seen items
// included.
func TestSeenVersion1FileLoads(t *testing.T) {
	f := testFile(t, decomposition.CP, []int{4, 5, 2}, []int{2}, true, 3)
	f.Seen, _ = SeenFromStore(seenStore(), 4, 5)
	g, err := Load("testdata/cp3-seen-v1.arrow")
	if err != nil {
		t.Fatal(err)
	}
	if d := sameModel(f, g); d != "" {
		t.Fatalf("version 1 file differs in %s", d)
	}
	if g.Header.Version != 1 || g.Header.Seen == nil || g.Header.Seen.Encoding != seenEncodingMeta {
		t.Fatalf("header version %d seen %+v", g.Header.Version, g.Header.Seen)
	}
	if !slices.Equal(g.Seen.items, f.Seen.items) || !slices.Equal(g.Seen.ptr, f.Seen.ptr) {
		t.Fatalf("seen items %v %v, want %v %v", g.Seen.ptr, g.Seen.items, f.Seen.ptr, f.Seen.items)
	}
	// Written again, it becomes a version 2 file with the same content.
	h, err := decode(encode(t, g))
	if err != nil || h.Header.Version != formatVersionSeenRows || !slices.Equal(h.Seen.items, f.Seen.items) {
		t.Fatalf("rewritten: %v, version %d", err, h.Header.Version)
	}
}

// TestSeenPieces cuts the seen stream into pieces of 3 bytes, 2 pieces a
// record batch: the file round-trips, and two pieces swapped in a resealed
// file are rejected.
func TestSeenPieces(t *testing.T) {
	defer func(p, b int) { seenPieceBytes, seenPiecesPerBatch = p, b }(seenPieceBytes, seenPiecesPerBatch)
	seenPieceBytes, seenPiecesPerBatch = 3, 2
	f := testFile(t, decomposition.CP, []int{4, 5, 2}, []int{2}, true, 3)
	f.Seen, _ = SeenFromStore(seenStore(), 4, 5)
	raw := encodeSeen(f.Seen)
	if len(raw) < 4*seenPieceBytes {
		t.Fatalf("stream of %d bytes: too short for the test", len(raw))
	}
	g, err := decode(encode(t, f))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(g.Seen.items, f.Seen.items) || !slices.Equal(g.Seen.ptr, f.Seen.ptr) || g.Header.Version != formatVersionSeenRows {
		t.Fatalf("seen items %v %v, version %d", g.Seen.ptr, g.Seen.items, g.Header.Version)
	}
	// The pieces are found in the file by content; swapping two of them
	// (different bytes) must fail.
	b := encode(t, f)
	p0, p1 := raw[:3], raw[3:6]
	if bytes.Equal(p0, p1) {
		t.Fatal("pieces 0 and 1 are equal: pick another store")
	}
	i0, i1 := bytes.Index(b, p0), bytes.Index(b, p1)
	if i0 < 0 || i1 < 0 {
		t.Fatal("pieces not found in the file")
	}
	c := slices.Clone(b)
	copy(c[i0:], p1)
	copy(c[i1:], p0)
	if err := seal(c); err != nil {
		t.Fatal(err)
	}
	if _, err := decode(c); err == nil {
		t.Fatal("swapped seen pieces accepted")
	}
}
