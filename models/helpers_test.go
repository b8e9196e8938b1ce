package models

import (
	"bytes"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
)

// testFile builds a random model file: users with integer ids 100, 103,
// 106, ..., items with string ids "i0", "i1", ..., and (order 3) daily
// buckets starting 2020-01-01.
func testFile(t testing.TB, kind decomposition.Kind, dims, ranks []int, bias bool, seed uint64) *File {
	t.Helper()
	m, err := decomposition.NewModel(kind, dims, ranks, bias)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 7))
	for _, f := range m.Factors {
		for i := range f {
			f[i] = rng.NormFloat64()
		}
	}
	for i := range m.Core {
		m.Core[i] = rng.NormFloat64()
	}
	for _, b := range m.Bias {
		for i := range b {
			b[i] = 0.3 * rng.NormFloat64()
		}
	}
	if bias {
		m.Mean = 3.5
	}
	if bias && len(dims) == 3 {
		// Sparse pair biases: user x day on about half the pairs, item x
		// period (periods of two days) on about a third.
		for _, spec := range [][3]int{{0, 2, 1}, {1, 2, 2}} {
			pb := decomposition.PairBias{A: spec[0], B: spec[1], Div: spec[2]}
			for a := 0; a < dims[spec[0]]; a++ {
				for b := 0; b < (dims[2]+spec[2]-1)/spec[2]; b++ {
					if rng.IntN(5) < 2 {
						pb.Keys = append(pb.Keys, uint64(a)<<32|uint64(b))
						pb.Vals = append(pb.Vals, 0.5*rng.NormFloat64())
					}
				}
			}
			m.Pairs = append(m.Pairs, pb)
		}
	}
	m.ClampLo, m.ClampHi = 0.5, 5
	users := make([]int64, dims[0])
	for i := range users {
		users[i] = 100 + 3*int64(i)
	}
	items := make([]string, dims[1])
	for i := range items {
		items[i] = "i" + strconv.Itoa(i)
	}
	ud, _ := data.DictFromInts("userId", users)
	id, _ := data.DictFromStrings("movieId", items)
	f := &File{Model: m, Dicts: []*data.Dict{ud, id}}
	if len(dims) == 3 {
		f.Dicts = append(f.Dicts, nil)
		first := data.TimeDay.AbsBucket(time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC).Unix())
		f.Time = &data.TimeBucketing{Unit: data.TimeDay, First: first, Count: dims[2]}
	}
	f.Header.Created = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	f.Header.Software = "dprec test"
	f.Header.Settings = []byte(`{"Epochs":3}`)
	f.Header.History = []byte(`[{"epoch":1,"train_rmse":1.5}]`)
	f.Header.Data = &DataInfo{SHA256: "00", NNZ: 10, Dims: dims, Mean: 3.25, Min: 1, Max: 5}
	return f
}

func encode(t testing.TB, f *File) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := Write(&buf, f); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func decode(b []byte) (*File, error) { return Decode(b) }

// sameModel reports the first difference between two files' models,
// dictionaries and time bucketing, comparing floats bit for bit.
func sameModel(a, b *File) string {
	ma, mb := a.Model, b.Model
	if ma.Kind != mb.Kind || ma.HasBias != mb.HasBias || !eqInts(ma.Dims, mb.Dims) || !eqInts(ma.Ranks, mb.Ranks) {
		return "shape"
	}
	if !eqBits([]float64{ma.Mean, ma.ClampLo, ma.ClampHi}, []float64{mb.Mean, mb.ClampLo, mb.ClampHi}) {
		return "mean/clamp"
	}
	for mo := range ma.Factors {
		if !eqBits(ma.Factors[mo], mb.Factors[mo]) {
			return "factor " + strconv.Itoa(mo)
		}
		if ma.HasBias && !eqBits(ma.Bias[mo], mb.Bias[mo]) {
			return "bias " + strconv.Itoa(mo)
		}
	}
	if !eqBits(ma.Core, mb.Core) {
		return "core"
	}
	if len(ma.Pairs) != len(mb.Pairs) {
		return "pairs"
	}
	for i := range ma.Pairs {
		pa, pb := ma.Pairs[i], mb.Pairs[i]
		if pa.A != pb.A || pa.B != pb.B || pa.Div != pb.Div || !slices.Equal(pa.Keys, pb.Keys) || !eqBits(pa.Vals, pb.Vals) {
			return "pair " + strconv.Itoa(i)
		}
	}
	for mo := range a.Dicts {
		if !a.Dicts[mo].Equal(b.Dicts[mo]) {
			return "dict " + strconv.Itoa(mo)
		}
		if a.Dicts[mo] != nil && (a.Dicts[mo].Name != b.Dicts[mo].Name || a.Dicts[mo].IsString != b.Dicts[mo].IsString) {
			return "dict name/type " + strconv.Itoa(mo)
		}
	}
	if (a.Time == nil) != (b.Time == nil) || (a.Time != nil && *a.Time != *b.Time) {
		return "time"
	}
	return ""
}

func eqInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func eqBits(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return false
		}
	}
	return true
}
