package models

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/apache/arrow/go/v15/parquet/file"
	"github.com/apache/arrow/go/v15/parquet/pqarrow"
	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
)

// exportTestTable reads a Parquet file with the Arrow Parquet reader into
// columns by name: []int64, []float64 or []string (timestamps as int64 ms).
func exportTestTable(t *testing.T, path string) map[string]any {
	t.Helper()
	pf, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 1 << 10}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	out := map[string]any{}
	for c := 0; c < int(tbl.NumCols()); c++ {
		col := tbl.Column(c)
		var i64 []int64
		var f64 []float64
		var str []string
		for _, ch := range col.Data().Chunks() {
			if ch.NullN() > 0 {
				t.Fatalf("%s: column %s has nulls", path, col.Name())
			}
			switch a := ch.(type) {
			case *array.Int64:
				i64 = append(i64, a.Int64Values()...)
			case *array.Int32:
				for _, v := range a.Int32Values() {
					i64 = append(i64, int64(v))
				}
			case *array.Timestamp:
				if a.DataType().(*arrow.TimestampType).Unit != arrow.Millisecond {
					t.Fatalf("%s: timestamp unit %v", col.Name(), a.DataType())
				}
				for _, v := range a.TimestampValues() {
					i64 = append(i64, int64(v))
				}
			case *array.Float64:
				f64 = append(f64, a.Float64Values()...)
			case *array.String:
				for i := 0; i < a.Len(); i++ {
					str = append(str, a.Value(i))
				}
			default:
				t.Fatalf("%s: column %s of type %v", path, col.Name(), ch.DataType())
			}
		}
		switch {
		case f64 != nil:
			out[col.Name()] = f64
		case str != nil:
			out[col.Name()] = str
		default:
			out[col.Name()] = i64
		}
	}
	return out
}

// TestExport writes CP and Tucker models, reads every table back with the
// Parquet reader and recomputes every prediction from the tables by the
// formula header.json states: they must equal the Predictor's.
func TestExport(t *testing.T) {
	for _, tc := range []struct {
		name  string
		kind  decomposition.Kind
		dims  []int
		ranks []int
		bias  bool
	}{
		{"cp3-bias", decomposition.CP, []int{7, 5, 4}, []int{3}, true},
		{"tucker3", decomposition.Tucker, []int{6, 5, 3}, []int{2, 3, 2}, false},
		{"tucker2-bias", decomposition.Tucker, []int{4, 6}, []int{3, 2}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := testFile(t, tc.kind, tc.dims, tc.ranks, tc.bias, 5)
			dir := filepath.Join(t.TempDir(), "export")
			if err := Export(dir, f, false); err != nil {
				t.Fatal(err)
			}
			var h ExportedHeader
			b, err := os.ReadFile(filepath.Join(dir, ExportHeader))
			if err != nil || json.Unmarshal(b, &h) != nil {
				t.Fatalf("header.json: %v\n%s", err, b)
			}
			if h.Kind != tc.kind || h.Mean != f.Model.Mean || len(h.Tables) != len(tc.dims)+1+len(f.Model.Pairs) {
				t.Fatalf("header: %+v", h)
			}
			n := len(tc.dims)
			tabs := make([]map[string]any, n)
			for mo := 0; mo < n; mo++ {
				tabs[mo] = exportTestTable(t, filepath.Join(dir, ExportTable(mo)))
				if idx := tabs[mo]["index"].([]int64); len(idx) != tc.dims[mo] || idx[len(idx)-1] != int64(tc.dims[mo]-1) {
					t.Fatalf("mode %d index column %v", mo, idx)
				}
			}
			core := exportTestTable(t, filepath.Join(dir, ExportCore))
			// Pair biases (user x day, item x period) as lookup maps.
			type pairTab struct {
				a   int
				div int
				val map[[2]int64]float64
			}
			var pairs []pairTab
			for i, pb := range f.Model.Pairs {
				tab := exportTestTable(t, filepath.Join(dir, ExportPairTable(f.Model, i)))
				pt := pairTab{a: pb.A, div: pb.Div, val: map[[2]int64]float64{}}
				ids := tab[modeNames[pb.A]].([]int64)
				for e, v := range tab["bias"].([]float64) {
					pt.val[[2]int64{ids[e], tab["period"].([]int64)[e]}] = v
				}
				pairs = append(pairs, pt)
			}
			users := tabs[0]["id"].([]int64)
			items := tabs[1]["id"].([]string)
			p := NewPredictor(f)
			col := func(mo int, name string) []float64 { return tabs[mo][name].([]float64) }
			for i := range users {
				for j := range items {
					for k := 0; k < max(1, tc.dims[min(2, n-1)]*(n-2)); k++ {
						var tm *int64
						x := h.Mean
						if tc.bias {
							x += col(0, "bias")[i] + col(1, "bias")[j]
						}
						if n == 3 {
							s := tabs[2]["id"].([]int64)[k]
							if tabs[2]["start"].([]int64)[k] != s*1000 {
								t.Fatalf("time start %d for id %d", tabs[2]["start"].([]int64)[k], s)
							}
							tm = &s
							if tc.bias {
								x += col(2, "bias")[k]
							}
							for _, pt := range pairs {
								row := int64(i)
								if pt.a == 1 {
									row = int64(j)
								}
								x += pt.val[[2]int64{row, int64(k / pt.div)}]
							}
						}
						vals := core["value"].([]float64)
						for e, v := range vals {
							prod := v * col(0, "f"+strconv.FormatInt(core["p"].([]int64)[e], 10))[i] *
								col(1, "f"+strconv.FormatInt(core["q"].([]int64)[e], 10))[j]
							if n == 3 {
								prod *= col(2, "f"+strconv.FormatInt(core["t"].([]int64)[e], 10))[k]
							}
							x += prod
						}
						if h.ClampLo < h.ClampHi {
							x = min(max(x, h.ClampLo), h.ClampHi)
						}
						want, fb := p.Predict(strconv.FormatInt(users[i], 10), items[j], tm)
						if fb != 0 || math.Abs(x-want) > 1e-12 {
							t.Fatalf("(%d,%s,%d): tables give %v, predictor %v (fallback %v)", users[i], items[j], k, x, want, fb)
						}
					}
				}
			}
			// Existing files are not replaced without force.
			if err := Export(dir, f, false); !errors.Is(err, data.ErrExists) {
				t.Fatalf("second export: %v", err)
			}
			if err := Export(dir, f, true); err != nil {
				t.Fatalf("forced export: %v", err)
			}
		})
	}
}
