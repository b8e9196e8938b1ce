package data

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/ipc"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/apache/arrow/go/v15/parquet"
	"github.com/apache/arrow/go/v15/parquet/pqarrow"
)

// arrowLoad loads path with a checked allocator behind the reader and
// asserts that every Arrow buffer the load allocated was released. Tests
// using it must not run in parallel with other Arrow tests.
func arrowLoad(t *testing.T, path string, opts LoadOptions) (*Store, *LoadReport, error) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	old := arrowAlloc
	arrowAlloc = mem
	defer func() { arrowAlloc = old }()
	s, rep, err := Load(path, opts)
	mem.AssertSize(t, 0)
	return s, rep, err
}

// arrowLoadUnchecked is Load with arrowLoad's signature, for the cases
// where the Arrow library itself does not release everything.
func arrowLoadUnchecked(_ *testing.T, path string, opts LoadOptions) (*Store, *LoadReport, error) {
	return Load(path, opts)
}

// arrowTestStore builds a small order-3 store with raw time stamps and
// either integer or string IDs.
func arrowTestStore(t *testing.T, stringIDs bool, n int) *Store {
	t.Helper()
	var users, items *Dict
	if stringIDs {
		users, items = NewStringDict("userId"), NewStringDict("movieId")
	} else {
		users, items = NewIntDict("userId"), NewIntDict("movieId")
	}
	b := NewBuilder(users, items, true, BuilderOptions{KeepTimestamps: true})
	for e := 0; e < n; e++ {
		u, it := int64((e*7)%13+1), int64((e*5)%11*1000+3)
		var ui, ii int32
		if stringIDs {
			ui, ii = users.InternString("u"+arrowItoa(u)), items.InternString("item "+arrowItoa(it))
		} else {
			ui, ii = users.InternInt(u), items.InternInt(it)
		}
		b.Add(ui, ii, float64(e%10)/2+0.5, 1_600_000_000+int64(e)*3607)
	}
	s, _, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func arrowItoa(v int64) string { return strconv.FormatInt(v, 10) }

// storesEqual compares two stores exactly.
func arrowStoresEqual(t *testing.T, what string, a, b *Store) {
	t.Helper()
	if !slices.Equal(a.Dims, b.Dims) {
		t.Fatalf("%s: dims %v != %v", what, a.Dims, b.Dims)
	}
	for m := range a.Idx {
		if !slices.Equal(a.Idx[m], b.Idx[m]) {
			t.Fatalf("%s: mode %d indices differ", what, m)
		}
	}
	if !slices.Equal(a.Val, b.Val) {
		t.Fatalf("%s: values differ", what)
	}
	if !slices.Equal(a.Timestamps, b.Timestamps) {
		t.Fatalf("%s: timestamps differ", what)
	}
	for m := 0; m < 2; m++ {
		if !a.Dicts[m].Equal(b.Dicts[m]) {
			t.Fatalf("%s: dictionary %d differs", what, m)
		}
	}
	if (a.Time == nil) != (b.Time == nil) || (a.Time != nil && *a.Time != *b.Time) {
		t.Fatalf("%s: time bucketing %+v != %+v", what, a.Time, b.Time)
	}
}

var arrowFormats = []struct {
	f   Format
	ext string
}{{FormatArrow, ".arrow"}, {FormatArrowStream, ".arrows"}, {FormatParquet, ".parquet"}}

func TestArrowRoundTrip(t *testing.T) {
	oldRG, oldBatch := parquetRowGroup, parquetReadBatch
	parquetRowGroup, parquetReadBatch = 30_000, 20_000
	defer func() { parquetRowGroup, parquetReadBatch = oldRG, oldBatch }()
	dir := t.TempDir()
	for _, str := range []bool{false, true} {
		// 70,000 rows span two write batches and, with the sizes set
		// below, three Parquet row groups of two read batches each.
		n := 70_000
		if str {
			n = 3000
		}
		s := arrowTestStore(t, str, n)
		for _, f := range arrowFormats {
			for _, threads := range []int{1, 2} {
				path := filepath.Join(dir, "rt"+arrowItoa(int64(threads))+map[bool]string{true: "s", false: "i"}[str]+f.ext)
				if err := Save(path, s, WriteOptions{}); err != nil {
					t.Fatalf("%s: %v", path, err)
				}
				var done, total int64
				progress := func(d, t int64) { done, total = d, t }
				got, rep, err := arrowLoad(t, path, LoadOptions{Threads: threads, Progress: progress, Builder: BuilderOptions{KeepTimestamps: true}})
				if err != nil {
					t.Fatalf("%s: %v", path, err)
				}
				if done != int64(n) || total != int64(n) {
					t.Errorf("%s: progress ended at %d of %d, want %d", path, done, total, n)
				}
				arrowStoresEqual(t, path, s, got)
				if rep.Rows != n || rep.Format != f.f || rep.TimeColumn != "timestamp" {
					t.Errorf("%s: report %+v", path, rep)
				}
			}
		}
	}
}

func TestArrowWriteWithoutTimestamps(t *testing.T) {
	dir := t.TempDir()
	s := arrowTestStore(t, false, 500)
	s.Timestamps = nil // the writer falls back to bucket starts
	for _, f := range arrowFormats {
		path := filepath.Join(dir, "b"+f.ext)
		if err := Save(path, s, WriteOptions{Columns: Columns{User: "u", Item: "i", Rating: "r", Time: "t"}}); err != nil {
			t.Fatal(err)
		}
		got, rep, err := arrowLoad(t, path, LoadOptions{Columns: Columns{User: "u", Item: "i", Rating: "r", Time: "t"}})
		if err != nil {
			t.Fatal(err)
		}
		arrowStoresEqual(t, path, s, got)
		if rep.UserColumn != "u" {
			t.Errorf("user column %q", rep.UserColumn)
		}
		// Order 2: no time column is written, and reading gives order 2.
		s2 := s.Subset([]int{0, 1, 2})
		s2.Dims, s2.Idx, s2.Dicts, s2.Time = s2.Dims[:2], s2.Idx[:2], s2.Dicts[:2], nil
		p2 := filepath.Join(dir, "o2"+f.ext)
		if err := Save(p2, s2, WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		got2, rep2, err := arrowLoad(t, p2, LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got2.Order() != 2 || rep2.TimeColumn != "" || !slices.Equal(got2.Val, s2.Val) {
			t.Errorf("%s: order %d, time column %q", p2, got2.Order(), rep2.TimeColumn)
		}
	}
}

// arrowWriteRecord writes one record to path in format f.
func arrowWriteRecord(t *testing.T, path string, f Format, recs ...arrow.Record) {
	t.Helper()
	fh, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	sc := recs[0].Schema()
	switch f {
	case FormatArrow:
		w, err := ipc.NewFileWriter(fh, ipc.WithSchema(sc), ipc.WithAllocator(arrowAlloc))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if err := w.Write(r); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	case FormatArrowStream:
		w := ipc.NewWriter(fh, ipc.WithSchema(sc), ipc.WithAllocator(arrowAlloc))
		for _, r := range recs {
			if err := w.Write(r); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	case FormatParquet:
		w, err := pqarrow.NewFileWriter(sc, fh, parquet.NewWriterProperties(parquet.WithAllocator(arrowAlloc)),
			pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema(), pqarrow.WithAllocator(arrowAlloc)))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if err := w.Write(r); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// arrowColumn is a named test column built by fill.
type arrowColumn struct {
	name string
	dt   arrow.DataType
	fill func(b array.Builder)
}

func arrowRecord(cols ...arrowColumn) arrow.Record {
	fields := make([]arrow.Field, len(cols))
	for i, c := range cols {
		fields[i] = arrow.Field{Name: c.name, Type: c.dt, Nullable: true}
	}
	rb := array.NewRecordBuilder(arrowAlloc, arrow.NewSchema(fields, nil))
	defer rb.Release()
	for i, c := range cols {
		c.fill(rb.Field(i))
	}
	return rb.NewRecord()
}

func arrowI64(name string, v ...int64) arrowColumn {
	return arrowColumn{name, arrow.PrimitiveTypes.Int64, func(b array.Builder) { b.(*array.Int64Builder).AppendValues(v, nil) }}
}

func arrowF64(name string, v ...float64) arrowColumn {
	return arrowColumn{name, arrow.PrimitiveTypes.Float64, func(b array.Builder) { b.(*array.Float64Builder).AppendValues(v, nil) }}
}

func TestArrowColumnTypes(t *testing.T) {
	dir := t.TempDir()
	want := func(users, items []string, vals []float64, times []int64) func(*testing.T, *Store) {
		return func(t *testing.T, s *Store) {
			t.Helper()
			for e := range s.Val {
				if got := s.Dicts[0].String(s.Idx[0][e]); got != users[e] {
					t.Errorf("row %d user %q want %q", e, got, users[e])
				}
				if got := s.Dicts[1].String(s.Idx[1][e]); got != items[e] {
					t.Errorf("row %d item %q want %q", e, got, items[e])
				}
				if s.Val[e] != vals[e] {
					t.Errorf("row %d rating %v want %v", e, s.Val[e], vals[e])
				}
				if times != nil && s.Timestamps[e] != times[e] {
					t.Errorf("row %d time %d want %d", e, s.Timestamps[e], times[e])
				}
			}
			if s.NNZ() != len(vals) {
				t.Errorf("nnz %d want %d", s.NNZ(), len(vals))
			}
		}
	}
	tsType := func(u arrow.TimeUnit) arrow.DataType { return &arrow.TimestampType{Unit: u} }
	cases := []struct {
		name  string
		cols  []arrowColumn
		check func(*testing.T, *Store)
	}{
		{"int32 ids, float32 rating, int32 time", []arrowColumn{
			{"user", arrow.PrimitiveTypes.Int32, func(b array.Builder) { b.(*array.Int32Builder).AppendValues([]int32{5, 9, 5}, nil) }},
			{"ITEM", arrow.PrimitiveTypes.Uint16, func(b array.Builder) { b.(*array.Uint16Builder).AppendValues([]uint16{1, 1, 65535}, nil) }},
			{"Score", arrow.PrimitiveTypes.Float32, func(b array.Builder) { b.(*array.Float32Builder).AppendValues([]float32{1.5, 2, 3}, nil) }},
			{"ts", arrow.PrimitiveTypes.Int32, func(b array.Builder) { b.(*array.Int32Builder).AppendValues([]int32{86400, 2 * 86400, 3 * 86400}, nil) }},
		}, want([]string{"5", "9", "5"}, []string{"1", "1", "65535"}, []float64{1.5, 2, 3}, []int64{86400, 2 * 86400, 3 * 86400})},
		{"strings, int8 rating, timestamp ms floors", []arrowColumn{
			{"user_id", arrow.BinaryTypes.String, func(b array.Builder) { b.(*array.StringBuilder).AppendValues([]string{"ann", "bob", "ann"}, nil) }},
			{"movie", arrow.BinaryTypes.LargeString, func(b array.Builder) { b.(*array.LargeStringBuilder).AppendValues([]string{"x", "y", "z"}, nil) }},
			{"rating", arrow.PrimitiveTypes.Int8, func(b array.Builder) { b.(*array.Int8Builder).AppendValues([]int8{1, 5, 3}, nil) }},
			{"time", tsType(arrow.Millisecond), func(b array.Builder) {
				b.(*array.TimestampBuilder).AppendValues([]arrow.Timestamp{1500, -1500, 86_400_000}, nil)
			}},
		}, want([]string{"ann", "bob", "ann"}, []string{"x", "y", "z"}, []float64{1, 5, 3}, []int64{1, -2, 86400})},
		{"dictionary strings, uint64 ids, date32 and ns timestamps", []arrowColumn{
			{"userId", &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int16, ValueType: arrow.BinaryTypes.String}, func(b array.Builder) {
				db := b.(*array.BinaryDictionaryBuilder)
				for _, s := range []string{"q", "p", "q"} {
					db.AppendString(s)
				}
			}},
			{"itemId", arrow.PrimitiveTypes.Uint64, func(b array.Builder) { b.(*array.Uint64Builder).AppendValues([]uint64{math.MaxInt64, 0, 7}, nil) }},
			{"value", arrow.PrimitiveTypes.Uint32, func(b array.Builder) { b.(*array.Uint32Builder).AppendValues([]uint32{4, 4, 2}, nil) }},
			{"timestamp", arrow.FixedWidthTypes.Date32, func(b array.Builder) {
				b.(*array.Date32Builder).AppendValues([]arrow.Date32{1, 2, 3}, nil)
			}},
		}, want([]string{"q", "p", "q"}, []string{"9223372036854775807", "0", "7"}, []float64{4, 4, 2}, []int64{86400, 2 * 86400, 3 * 86400})},
		{"timestamp us, date64, dictionary ints", []arrowColumn{
			{"userId", &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.PrimitiveTypes.Int64}, func(b array.Builder) {
				db := b.(*array.Int64DictionaryBuilder)
				for _, v := range []int64{40, 30, 40} {
					db.Append(v)
				}
			}},
			arrowI64("movieId", 1, 2, 3),
			arrowF64("rating", 0.5, 1, 1.5),
			{"timestamp", tsType(arrow.Microsecond), func(b array.Builder) {
				b.(*array.TimestampBuilder).AppendValues([]arrow.Timestamp{1_000_000, 2_500_000, 3_000_001}, nil)
			}},
		}, want([]string{"40", "30", "40"}, []string{"1", "2", "3"}, []float64{0.5, 1, 1.5}, []int64{1, 2, 3})},
		{"date64", []arrowColumn{
			arrowI64("userId", 1, 2, 3), arrowI64("movieId", 1, 2, 3), arrowF64("rating", 1, 2, 3),
			{"timestamp", arrow.FixedWidthTypes.Date64, func(b array.Builder) {
				b.(*array.Date64Builder).AppendValues([]arrow.Date64{86_400_000, -1, 0}, nil)
			}},
		}, want([]string{"1", "2", "3"}, []string{"1", "2", "3"}, []float64{1, 2, 3}, []int64{86400, -1, 0})},
	}
	for _, tc := range cases {
		for _, f := range arrowFormats {
			t.Run(tc.name+f.ext, func(t *testing.T) {
				rec := arrowRecord(tc.cols...)
				defer rec.Release()
				path := filepath.Join(dir, "types"+f.ext)
				arrowWriteRecord(t, path, f.f, rec)
				opts := LoadOptions{Builder: BuilderOptions{KeepTimestamps: true, TimeUnit: TimeHour}}
				load := arrowLoad
				if f.f == FormatArrow && strings.Contains(tc.name, "dictionary") {
					// arrow/go v15's ipc.FileReader.Close never releases its
					// dictionary memo (a library leak, collected by the GC
					// with the Go allocator), so the checked allocator
					// cannot balance here.
					load = arrowLoadUnchecked
				}
				s, _, err := load(t, path, opts)
				if err != nil {
					t.Fatal(err)
				}
				tc.check(t, s)
			})
		}
	}
}

func TestArrowBadValues(t *testing.T) {
	dir := t.TempDir()
	nullRating := arrowColumn{"rating", arrow.PrimitiveTypes.Float64, func(b array.Builder) {
		b.(*array.Float64Builder).AppendValues([]float64{1, 0, 3}, []bool{true, false, true})
	}}
	cases := []struct {
		name     string
		cols     []arrowColumn
		opts     LoadOptions
		want     []string // substrings of the error
		sentinel error
	}{
		{"NaN rating", []arrowColumn{arrowI64("userId", 1, 2, 3), arrowI64("movieId", 1, 2, 3), arrowF64("rating", 1, math.NaN(), 3)},
			LoadOptions{}, []string{"row 2 ", "0, offset 1", `column "rating"`, "NaN"}, ErrBadRating},
		{"Inf rating", []arrowColumn{arrowI64("userId", 1, 2, 3), arrowI64("movieId", 1, 2, 3), arrowF64("rating", 1, 2, math.Inf(-1))},
			LoadOptions{}, []string{"row 3 ", "-Inf"}, ErrBadRating},
		{"null rating", []arrowColumn{arrowI64("userId", 1, 2, 3), arrowI64("movieId", 1, 2, 3), nullRating},
			LoadOptions{}, []string{"row 2 ", "null"}, ErrBadRating},
		{"negative user", []arrowColumn{arrowI64("userId", 1, -2, 3), arrowI64("movieId", 1, 2, 3), arrowF64("rating", 1, 2, 3)},
			LoadOptions{}, []string{`column "userId"`, "negative ID -2"}, ErrBadID},
		{"uint64 overflow", []arrowColumn{arrowI64("userId", 1, 2, 3),
			{"movieId", arrow.PrimitiveTypes.Uint64, func(b array.Builder) { b.(*array.Uint64Builder).AppendValues([]uint64{1, 2, math.MaxUint64}, nil) }},
			arrowF64("rating", 1, 2, 3)},
			LoadOptions{}, []string{`column "movieId"`, "overflows int64"}, ErrBadID},
		{"empty string ID", []arrowColumn{
			{"userId", arrow.BinaryTypes.String, func(b array.Builder) { b.(*array.StringBuilder).AppendValues([]string{"a", "", "c"}, nil) }},
			arrowI64("movieId", 1, 2, 3), arrowF64("rating", 1, 2, 3)},
			LoadOptions{}, []string{"row 2 ", "empty ID"}, ErrBadID},
		{"missing rating column", []arrowColumn{arrowI64("userId", 1), arrowI64("movieId", 1), arrowF64("stars", 1)},
			LoadOptions{}, []string{"no rating column", "columns: userId (int64), movieId (int64), stars (float64)"}, ErrNoColumn},
		{"wrong column name", []arrowColumn{arrowI64("userId", 1), arrowI64("movieId", 1), arrowF64("rating", 1)},
			LoadOptions{Columns: Columns{Time: "when"}}, []string{`no time column "when"`, "columns: userId"}, ErrNoColumn},
		{"unsupported rating type", []arrowColumn{arrowI64("userId", 1), arrowI64("movieId", 1),
			{"rating", arrow.FixedWidthTypes.Boolean, func(b array.Builder) { b.(*array.BooleanBuilder).Append(true) }}},
			LoadOptions{}, []string{`rating column "rating" has unsupported type bool`}, nil},
		{"float user ID", []arrowColumn{arrowF64("userId", 1), arrowI64("movieId", 1), arrowF64("rating", 1)},
			LoadOptions{}, []string{`user column "userId" has unsupported type float64`}, nil},
		{"negative ID in a dictionary", []arrowColumn{
			{"userId", &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.PrimitiveTypes.Int64}, func(b array.Builder) {
				db := b.(*array.Int64DictionaryBuilder)
				for _, v := range []int64{4, -3, 4} {
					db.Append(v)
				}
			}},
			arrowI64("movieId", 1, 2, 3), arrowF64("rating", 1, 2, 3)},
			LoadOptions{}, []string{"row 2 ", `column "userId"`, "negative ID -3"}, ErrBadID},
		{"all rows skipped", []arrowColumn{arrowI64("userId", -1), arrowI64("movieId", 1), arrowF64("rating", 1)},
			LoadOptions{SkipInvalid: true}, []string{"all 1 rows were invalid", "negative ID"}, ErrEmpty},
		{"no rows", []arrowColumn{arrowI64("userId"), arrowI64("movieId"), arrowF64("rating")},
			LoadOptions{}, []string{"no rows"}, ErrNoData},
	}
	for _, tc := range cases {
		for _, f := range arrowFormats {
			t.Run(tc.name+f.ext, func(t *testing.T) {
				rec := arrowRecord(tc.cols...)
				defer rec.Release()
				path := filepath.Join(dir, "bad"+f.ext)
				arrowWriteRecord(t, path, f.f, rec)
				load := arrowLoad
				if f.f == FormatArrow && strings.Contains(tc.name, "dictionary") {
					load = arrowLoadUnchecked // see TestArrowColumnTypes
				}
				_, _, err := load(t, path, tc.opts)
				if err == nil {
					t.Fatal("no error")
				}
				for _, w := range append(tc.want, path) {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q lacks %q", err, w)
					}
				}
				if tc.sentinel != nil && !errors.Is(err, tc.sentinel) {
					t.Errorf("error %q does not wrap %v", err, tc.sentinel)
				}
			})
		}
	}
}

func TestArrowSkipInvalid(t *testing.T) {
	dir := t.TempDir()
	for _, f := range arrowFormats {
		rec := arrowRecord(arrowI64("userId", 1, -2, 3, 4, 5), arrowI64("movieId", 10, 20, 30, 40, 50),
			arrowColumn{"rating", arrow.PrimitiveTypes.Float64, func(b array.Builder) {
				b.(*array.Float64Builder).AppendValues([]float64{1, 2, math.NaN(), 0, 5}, []bool{true, true, true, false, true})
			}})
		path := filepath.Join(dir, "skip"+f.ext)
		arrowWriteRecord(t, path, f.f, rec)
		rec.Release()
		s, rep, err := arrowLoad(t, path, LoadOptions{SkipInvalid: true})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Skipped != 3 || len(rep.SkipReasons) != 3 || rep.Rows != 5 {
			t.Fatalf("%s: skipped %d, reasons %q", path, rep.Skipped, rep.SkipReasons)
		}
		// Skipped rows intern no ID: only users 1 and 5 exist.
		if !slices.Equal(s.Dicts[0].Ints(), []int64{1, 5}) || !slices.Equal(s.Dicts[1].Ints(), []int64{10, 50}) || !slices.Equal(s.Val, []float64{1, 5}) {
			t.Errorf("%s: users %v items %v values %v", path, s.Dicts[0].Ints(), s.Dicts[1].Ints(), s.Val)
		}
	}
}

func TestArrowDetectsOtherIPCFormat(t *testing.T) {
	dir := t.TempDir()
	s := arrowTestStore(t, false, 100)
	for _, c := range []struct{ write, read Format }{{FormatArrowStream, FormatArrow}, {FormatArrow, FormatArrowStream}} {
		path := filepath.Join(dir, "x.ipc")
		os.Remove(path)
		if err := Save(path, s, WriteOptions{Format: c.write}); err != nil {
			t.Fatal(err)
		}
		got, rep, err := arrowLoad(t, path, LoadOptions{Format: c.read, Builder: BuilderOptions{KeepTimestamps: true}})
		if err != nil {
			t.Fatal(err)
		}
		arrowStoresEqual(t, path, s, got)
		if rep.Format != c.write || len(rep.Detected) != 1 {
			t.Errorf("format %s, detected %q", rep.Format, rep.Detected)
		}
	}
	// Parquet named .arrow and Arrow named .parquet load by content.
	for _, c := range []struct{ write, name Format }{{FormatParquet, FormatArrow}, {FormatArrow, FormatParquet}, {FormatArrowStream, FormatParquet}} {
		path := filepath.Join(dir, "misnamed."+string(c.name))
		os.Remove(path)
		if err := Save(path, s, WriteOptions{Format: c.write}); err != nil {
			t.Fatal(err)
		}
		got, rep, err := arrowLoad(t, path, LoadOptions{Builder: BuilderOptions{KeepTimestamps: true}})
		if err != nil {
			t.Fatal(err)
		}
		arrowStoresEqual(t, path, s, got)
		if rep.Format != c.write || len(rep.Detected) == 0 {
			t.Errorf("%s: format %s, detected %q", path, rep.Format, rep.Detected)
		}
	}
	fea := filepath.Join(dir, "old.feather")
	os.WriteFile(fea, []byte("FEA1\x00\x00\x00\x00"), 0o644)
	if _, _, err := Load(fea, LoadOptions{}); err == nil || !strings.Contains(err.Error(), "Feather version 1") {
		t.Errorf("Feather v1: %v", err)
	}
}

func TestArrowDuplicatesAndTimeUnits(t *testing.T) {
	dir := t.TempDir()
	rec := arrowRecord(arrowI64("userId", 1, 1, 2), arrowI64("movieId", 7, 7, 7), arrowF64("rating", 1, 4, 2), arrowI64("timestamp", 10, 20, 86400*3))
	defer rec.Release()
	path := filepath.Join(dir, "dup.parquet")
	arrowWriteRecord(t, path, FormatParquet, rec)
	s, rep, err := arrowLoad(t, path, LoadOptions{Builder: BuilderOptions{Duplicates: DupMean}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Duplicates.Dropped != 1 || !slices.Equal(s.Val, []float64{2.5, 2}) || s.Dims[2] != 4 {
		t.Errorf("dups %+v values %v dims %v", rep.Duplicates, s.Val, s.Dims)
	}
	if _, _, err := arrowLoad(t, path, LoadOptions{Builder: BuilderOptions{Duplicates: DupError}}); !errors.Is(err, ErrDuplicate) {
		t.Errorf("DupError: %v", err)
	}
	s, _, err = arrowLoad(t, path, LoadOptions{Builder: BuilderOptions{TimeUnit: TimeNone}})
	if err != nil || s.Order() != 2 {
		t.Errorf("TimeNone: %v", err)
	}
}

// TestArrowCorrupt truncates and flips bytes of small valid files: every
// load must fail or succeed cleanly, never panic or leak.
func TestArrowCorrupt(t *testing.T) {
	dir := t.TempDir()
	s := arrowTestStore(t, true, 40)
	for _, f := range arrowFormats {
		src := filepath.Join(dir, "good"+f.ext)
		if err := Save(src, s, WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		good, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		bad := filepath.Join(dir, "bad"+f.ext)
		try := func(b []byte, what string) {
			if err := os.WriteFile(bad, b, 0o644); err != nil {
				t.Fatal(err)
			}
			got, _, err := Load(bad, LoadOptions{Format: f.f})
			if err == nil {
				if verr := got.Validate(); verr != nil {
					t.Errorf("%s %s: invalid store: %v", f.ext, what, verr)
				}
				return
			}
			if !strings.Contains(err.Error(), bad) {
				t.Errorf("%s %s: error %q does not name the file", f.ext, what, err)
			}
		}
		// Every cut in the first and last 256 bytes (headers, footers,
		// metadata), every 9th elsewhere; a flipped byte every 11 bytes.
		for cut := 0; cut < len(good); cut++ {
			if cut < 256 || cut > len(good)-256 || cut%9 == 0 {
				try(good[:cut], "truncated at "+arrowItoa(int64(cut)))
			}
		}
		for i := 0; i < len(good); i += 11 {
			b := slices.Clone(good)
			b[i] ^= 0xA5
			try(b, "flipped at "+arrowItoa(int64(i)))
		}
	}
}
