package data

import (
	"bytes"
	"compress/gzip"
	"errors"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/decimal128"
	"github.com/apache/arrow/go/v15/arrow/decimal256"
	"github.com/apache/arrow/go/v15/arrow/float16"
)

// TestTimeSpanLimit: two rows whose time stamps lie 28,500 years apart
// (issue 14 case 4) used to ask for a dense time mode of 10 million days;
// the load now fails before allocating it, naming --time-unit.
func TestTimeSpanLimit(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "far.csv")
	if err := os.WriteFile(path, []byte("userId,movieId,rating,timestamp\n1,1,4,0\n2,2,3,900000000000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, u := range []TimeUnit{TimeHour, TimeDay, TimeWeek, TimeMonth} {
		_, _, err := Load(path, LoadOptions{Builder: BuilderOptions{TimeUnit: u}})
		if !errors.Is(err, ErrTimeSpan) || !strings.Contains(err.Error(), "--time-unit") || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: got %v, want ErrTimeSpan naming the file and --time-unit", u, err)
		}
	}
	// Without a time mode the same file loads.
	if _, _, err := Load(path, LoadOptions{Builder: BuilderOptions{TimeUnit: TimeNone}}); err != nil {
		t.Errorf("time unit none: %v", err)
	}
	// A span just inside the limit loads; one bucket more does not.
	for _, tc := range []struct {
		days int64
		ok   bool
	}{{int64(TimeDay.MaxBuckets()) - 1, true}, {int64(TimeDay.MaxBuckets()), false}} {
		csv := "userId,movieId,rating,timestamp\n1,1,4,0\n2,2,3," + arrowItoa(tc.days*86400) + "\n"
		if err := os.WriteFile(path, []byte(csv), 0o644); err != nil {
			t.Fatal(err)
		}
		s, _, err := Load(path, LoadOptions{})
		if tc.ok && (err != nil || s.Dims[2] != TimeDay.MaxBuckets()) {
			t.Errorf("span of %d days: %v", tc.days+1, err)
		}
		if !tc.ok && !errors.Is(err, ErrTimeSpan) {
			t.Errorf("span of %d days: got %v, want ErrTimeSpan", tc.days+1, err)
		}
	}
}

// TestTimeSpanLimitParquet: ten Parquet rows with nanosecond time stamps
// at about +-290,000 years used to ask for 16.9 GB.
func TestTimeSpanLimitParquet(t *testing.T) {
	dir := t.TempDir()
	const far = 9_100_000_000_000_000 // microseconds, about 288,000 years
	ts := make([]arrow.Timestamp, 10)
	users, items := make([]int64, 10), make([]int64, 10)
	vals := make([]float64, 10)
	for i := range ts {
		// Microseconds at the ends of the int64 range: +-292,000 years.
		if i%2 == 0 {
			ts[i] = arrow.Timestamp(far)
		} else {
			ts[i] = arrow.Timestamp(-far)
		}
		users[i], items[i], vals[i] = int64(i), int64(i), 3
	}
	rec := arrowRecord(arrowI64("userId", users...), arrowI64("movieId", items...), arrowF64("rating", vals...),
		arrowColumn{"timestamp", &arrow.TimestampType{Unit: arrow.Microsecond}, func(b array.Builder) {
			b.(*array.TimestampBuilder).AppendValues(ts, nil)
		}})
	defer rec.Release()
	path := filepath.Join(dir, "far.parquet")
	arrowWriteRecord(t, path, FormatParquet, rec)
	_, _, err := Load(path, LoadOptions{})
	if !errors.Is(err, ErrTimeSpan) || !strings.Contains(err.Error(), "--time-unit") {
		t.Fatalf("got %v, want ErrTimeSpan naming --time-unit", err)
	}
}

// TestMaxLine: a line longer than MaxLine is a malformed row naming its
// line (issue 14 case 5), skipped under SkipInvalid, in plain and gzip
// input, at the start, in the middle and at the end of the file, across
// read-block boundaries.
func TestMaxLine(t *testing.T) {
	dir := t.TempDir()
	long := "x" + strings.Repeat("9", 300) + ",5"
	var sb strings.Builder
	sb.WriteString("userId,movieId,rating,timestamp\n")
	for i := 0; i < 200; i++ {
		sb.WriteString(arrowItoa(int64(i%7)) + "," + arrowItoa(int64(i)) + ",3,86400\n")
		if i == 50 || i == 120 {
			sb.WriteString("1,2," + long + "\n")
		}
	}
	sb.WriteString("1,2," + long) // last line, no line end
	body := sb.String()
	// Line numbers of the long lines: header is line 1, row i is line
	// i+2 plus the long lines before it.
	wantLines := []int{53, 124, 204}
	defer func(n int) { textChunkSize = n }(textChunkSize)
	for _, chunk := range []int{64, 1000, 2 << 20} {
		textChunkSize = chunk
		for _, gz := range []bool{false, true} {
			path := filepath.Join(dir, "long.csv")
			if gz {
				path += ".gz"
				limitsWriteGzip(t, path, body)
			} else if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, threads := range []int{1, 3} {
				opts := LoadOptions{MaxLine: 100, Threads: threads}
				_, _, err := Load(path, opts)
				var pe *ParseError
				if !errors.Is(err, ErrLineTooLong) || !errors.As(err, &pe) || pe.Line != wantLines[0] {
					t.Fatalf("chunk %d gz %v: got %v, want ErrLineTooLong on line %d", chunk, gz, err, wantLines[0])
				}
				opts.SkipInvalid = true
				s, rep, err := Load(path, opts)
				if err != nil {
					t.Fatalf("chunk %d gz %v skip: %v", chunk, gz, err)
				}
				if s.NNZ() != 200 || rep.Skipped != 3 || rep.Rows != 203 {
					t.Fatalf("chunk %d gz %v skip: %d entries, %d rows, %d skipped; want 200, 203, 3", chunk, gz, s.NNZ(), rep.Rows, rep.Skipped)
				}
				for k, want := range wantLines {
					if !strings.Contains(rep.SkipReasons[k], ":"+arrowItoa(int64(want))+":") {
						t.Errorf("chunk %d gz %v: reason %d is %q, want line %d", chunk, gz, k, rep.SkipReasons[k], want)
					}
				}
				// The default limit (1 MiB) accepts these lines.
				if _, _, err := Load(path, LoadOptions{Threads: threads}); !errors.Is(err, ErrBadRating) {
					t.Fatalf("default limit: got %v, want the rating error of the long line", err)
				}
			}
		}
	}
}

// TestMaxLineFirstLine: a too-long first line fails, or is skipped before
// the layout is sniffed.
func TestMaxLineFirstLine(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "first.csv")
	body := strings.Repeat("x", 5000) + "\n1,1,4\n2,1,3\n"
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	defer func(n int) { textChunkSize = n }(textChunkSize)
	textChunkSize = 512
	_, _, err := Load(path, LoadOptions{MaxLine: 1000})
	var pe *ParseError
	if !errors.Is(err, ErrLineTooLong) || !errors.As(err, &pe) || pe.Line != 1 {
		t.Fatalf("got %v, want ErrLineTooLong on line 1", err)
	}
	s, rep, err := Load(path, LoadOptions{MaxLine: 1000, SkipInvalid: true})
	if err != nil || s.NNZ() != 2 || rep.Skipped != 1 {
		t.Fatalf("skip: %v, report %+v", err, rep)
	}
}

// TestMaxLineBounded: a gzip file expanding to one 64 MiB line is
// refused, and skipped under SkipInvalid, without buffering the line: the
// load allocates a small fraction of the line (the old reader grew its
// block to the whole line and died at 1.9 GB on a 4 GiB line).
func TestMaxLineBounded(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "oneline.csv.gz")
	fh, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(fh)
	if _, err := zw.Write([]byte("userId,movieId,rating\n1,1,4\n")); err != nil {
		t.Fatal(err)
	}
	block := []byte(strings.Repeat("7", 1<<20))
	for i := 0; i < 64; i++ {
		if _, err := zw.Write(block); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := zw.Write([]byte("\n2,2,5\n")); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	fh.Close()
	for _, skip := range []bool{false, true} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		s, rep, err := Load(path, LoadOptions{SkipInvalid: skip, Threads: 2})
		runtime.ReadMemStats(&after)
		alloc := after.TotalAlloc - before.TotalAlloc
		if skip {
			if err != nil || s.NNZ() != 2 || rep.Skipped != 1 {
				t.Fatalf("skip: %v %+v", err, rep)
			}
		} else if !errors.Is(err, ErrLineTooLong) {
			t.Fatalf("got %v, want ErrLineTooLong", err)
		}
		if alloc > 24<<20 {
			t.Errorf("skip %v: the load allocated %d MiB for a 64 MiB line", skip, alloc>>20)
		}
		t.Logf("skip %v: allocated %.1f MiB", skip, float64(alloc)/(1<<20))
	}
}

func limitsWriteGzip(t *testing.T, path, body string) {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write([]byte(body))
	zw.Close()
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestDuplicateColumnNames: a role whose column name appears twice is an
// error naming the column (issue 14 case 12: the first was used silently).
func TestDuplicateColumnNames(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		header string
		cols   Columns
		dup    string // "" = loads
	}{
		{"userId,movieId,rating,rating", Columns{}, `"rating"`},
		{"userId,movieId,Rating,RATING", Columns{}, `"rating"`},
		{"userId,movieId,rating,RATING", Columns{}, ""},
		{"userId,userId,movieId,rating", Columns{}, `"userId"`},
		{"u,u,movieId,rating", Columns{User: "u"}, `"u"`},
		{"userId,movieId,rating,x,x", Columns{}, ""}, // unused duplicates are harmless
	} {
		path := filepath.Join(dir, "dup.csv")
		if err := os.WriteFile(path, []byte(tc.header+"\n1,2,3,4,5\n2,3,4,5,6\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, _, err := Load(path, LoadOptions{Columns: tc.cols})
		if tc.dup == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.header, err)
			}
			continue
		}
		if !errors.Is(err, ErrDuplicateColumn) || !strings.Contains(err.Error(), tc.dup) {
			t.Errorf("%s: got %v, want ErrDuplicateColumn naming %s", tc.header, err, tc.dup)
		}
	}
	for _, f := range arrowFormats {
		rec := arrowRecord(arrowI64("userId", 1, 2), arrowI64("movieId", 1, 2), arrowF64("rating", 1, 2), arrowF64("rating", 5, 5))
		path := filepath.Join(dir, "dup"+f.ext)
		arrowWriteRecord(t, path, f.f, rec)
		rec.Release()
		_, _, err := Load(path, LoadOptions{})
		if !errors.Is(err, ErrDuplicateColumn) || !strings.Contains(err.Error(), `"rating"`) {
			t.Errorf("%s: got %v, want ErrDuplicateColumn naming rating", f.ext, err)
		}
	}
}

// TestDecimalAndFloat16Ratings: DECIMAL ratings (what DuckDB writes for
// 4.0) and float16 ratings load (issue 14 case 12: they were refused).
func TestDecimalAndFloat16Ratings(t *testing.T) {
	dir := t.TempDir()
	want := []float64{4, 3.5, 0.5}
	dec128 := arrowColumn{"rating", &arrow.Decimal128Type{Precision: 2, Scale: 1}, func(b array.Builder) {
		for _, v := range []int64{40, 35, 5} {
			b.(*array.Decimal128Builder).Append(decimal128.FromI64(v))
		}
	}}
	dec256 := arrowColumn{"rating", &arrow.Decimal256Type{Precision: 40, Scale: 2}, func(b array.Builder) {
		for _, v := range []uint64{400, 350, 50} {
			b.(*array.Decimal256Builder).Append(decimal256.FromU64(v))
		}
	}}
	f16 := arrowColumn{"rating", arrow.FixedWidthTypes.Float16, func(b array.Builder) {
		for _, v := range want {
			b.(*array.Float16Builder).Append(float16.New(float32(v)))
		}
	}}
	for _, tc := range []struct {
		name string
		col  arrowColumn
	}{{"decimal128", dec128}, {"decimal256", dec256}, {"float16", f16}} {
		for _, f := range arrowFormats {
			if tc.name == "float16" && f.f == FormatParquet {
				continue // arrow/go v15 writes no Parquet FLOAT16
			}
			t.Run(tc.name+f.ext, func(t *testing.T) {
				rec := arrowRecord(arrowI64("userId", 1, 2, 3), arrowI64("movieId", 1, 2, 3), tc.col)
				defer rec.Release()
				path := filepath.Join(dir, tc.name+f.ext)
				arrowWriteRecord(t, path, f.f, rec)
				s, _, err := Load(path, LoadOptions{})
				if err != nil {
					t.Fatal(err)
				}
				for e, v := range want {
					if s.Val[e] != v {
						t.Errorf("row %d: rating %v, want %v", e, s.Val[e], v)
					}
				}
			})
		}
	}
}

// TestMaxMemory: a load whose estimate exceeds MaxMemory is refused with
// the estimate (issue 14 case 6: large inputs died instead). Text checks
// the rows read so far; Arrow and Parquet refuse from the announced row
// count before reading a row.
func TestMaxMemory(t *testing.T) {
	dir := t.TempDir()
	const n = 20000
	var sb strings.Builder
	sb.WriteString("userId,movieId,rating,timestamp\n")
	users, items, vals, ts := make([]int64, n), make([]int64, n), make([]float64, n), make([]int64, n)
	for i := 0; i < n; i++ {
		users[i], items[i], vals[i], ts[i] = int64(i%100), int64(i), 3, 86400
		sb.WriteString(arrowItoa(users[i]) + "," + arrowItoa(items[i]) + ",3,86400\n")
	}
	csv := filepath.Join(dir, "m.csv")
	if err := os.WriteFile(csv, []byte(sb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	rec := arrowRecord(arrowI64("userId", users...), arrowI64("movieId", items...), arrowF64("rating", vals...), arrowI64("timestamp", ts...))
	defer rec.Release()
	paths := []string{csv}
	for _, f := range arrowFormats {
		p := filepath.Join(dir, "m"+f.ext)
		arrowWriteRecord(t, p, f.f, rec)
		paths = append(paths, p)
	}
	defer func(n int) { textChunkSize = n }(textChunkSize)
	textChunkSize = 4096
	// The estimate of the whole file: 20,000 rows x 64 bytes plus
	// 20,100 integer IDs x 80 bytes = 2.89 MB.
	for _, p := range paths {
		_, _, err := Load(p, LoadOptions{MaxMemory: 1 << 20})
		if !errors.Is(err, ErrMemoryLimit) || !strings.Contains(err.Error(), "1.0 MiB") || !strings.Contains(err.Error(), "--max-memory") {
			t.Errorf("%s: got %v, want ErrMemoryLimit with the estimate and the limit", filepath.Base(p), err)
		} else {
			t.Logf("%s: %v", filepath.Base(p), err)
		}
		if _, _, err := Load(p, LoadOptions{MaxMemory: 4 << 20}); err != nil {
			t.Errorf("%s under a 4 MiB limit: %v", filepath.Base(p), err)
		}
		if _, _, err := Load(p, LoadOptions{MaxMemory: -1}); err != nil {
			t.Errorf("%s without a limit: %v", filepath.Base(p), err)
		}
	}
	if PhysicalMemory() <= 0 {
		t.Error("physical memory unknown: no default limit")
	}
	if got := (&LoadOptions{}).memLimit(); got != int64(float64(PhysicalMemory())*DefaultMemoryFraction) {
		t.Errorf("default limit %d", got)
	}
}

// TestBoundedDuplicateMerge: a log of 300,000 rows over 12 distinct cells
// loads under a memory limit far below what its rows would need (issue 14
// case 6: duplicates were stored before merging, 300M rows died at
// 2.4 GB): duplicates are merged as the rows come in, and the result and
// the report equal an unlimited load, for every policy and format.
func TestBoundedDuplicateMerge(t *testing.T) {
	dir := t.TempDir()
	const n = 300000
	users, items, vals, ts := make([]int64, n), make([]int64, n), make([]float64, n), make([]int64, n)
	var sb strings.Builder
	sb.WriteString("userId,movieId,rating,timestamp\n")
	for e := 0; e < n; e++ {
		users[e], items[e], vals[e], ts[e] = int64(e%3+1), int64(e/3%4+1), float64(e%5+1), 86400+int64(e%1000)
		sb.WriteString(arrowItoa(users[e]) + "," + arrowItoa(items[e]) + "," + arrowItoa(int64(vals[e])) + "," + arrowItoa(ts[e]) + "\n")
	}
	paths := []string{filepath.Join(dir, "dups.csv.gz")}
	limitsWriteGzip(t, paths[0], sb.String())
	var recs []arrow.Record
	for lo := 0; lo < n; lo += 50000 {
		recs = append(recs, arrowRecord(arrowI64("userId", users[lo:lo+50000]...), arrowI64("movieId", items[lo:lo+50000]...),
			arrowF64("rating", vals[lo:lo+50000]...), arrowI64("timestamp", ts[lo:lo+50000]...)))
	}
	for _, f := range arrowFormats {
		p := filepath.Join(dir, "dups"+f.ext)
		arrowWriteRecord(t, p, f.f, recs...)
		paths = append(paths, p)
	}
	for _, r := range recs {
		r.Release()
	}
	defer func(n int) { textChunkSize = n }(textChunkSize)
	textChunkSize = 256 << 10
	const limit = 4 << 20 // the rows alone: 300,000 x 64 bytes = 18 MiB
	for _, p := range paths {
		for _, pol := range []DuplicatePolicy{DupLast, DupMean} {
			bo := BuilderOptions{Duplicates: pol, KeepTimestamps: true}
			want, wrep, err := Load(p, LoadOptions{MaxMemory: -1, Builder: bo})
			if err != nil {
				t.Fatal(err)
			}
			got, grep, err := Load(p, LoadOptions{MaxMemory: limit, Builder: bo})
			if err != nil {
				t.Fatalf("%s %s: %v", filepath.Base(p), pol, err)
			}
			if got.NNZ() != 12 || want.NNZ() != 12 {
				t.Fatalf("%s %s: %d and %d cells, want 12", filepath.Base(p), pol, got.NNZ(), want.NNZ())
			}
			if grep.Duplicates != wrep.Duplicates || grep.Rows != n || grep.Duplicates.Dropped != n-12 || grep.Duplicates.Cells != 12 {
				t.Errorf("%s %s: report %+v rows %d, unlimited %+v", filepath.Base(p), pol, grep.Duplicates, grep.Rows, wrep.Duplicates)
			}
			for e := range want.Val {
				for m := range want.Idx {
					if got.Idx[m][e] != want.Idx[m][e] {
						t.Fatalf("%s %s: entry %d differs in mode %d", filepath.Base(p), pol, e, m)
					}
				}
				if math.Abs(got.Val[e]-want.Val[e]) > 1e-12 || got.Timestamps[e] != want.Timestamps[e] {
					t.Errorf("%s %s: entry %d: %v at %d, unlimited %v at %d", filepath.Base(p), pol, e, got.Val[e], got.Timestamps[e], want.Val[e], want.Timestamps[e])
				}
			}
		}
		// DupError still fails on the first repeat.
		if _, _, err := Load(p, LoadOptions{MaxMemory: limit, Builder: BuilderOptions{Duplicates: DupError}}); !errors.Is(err, ErrDuplicate) {
			t.Errorf("%s: duplicates=error: %v", filepath.Base(p), err)
		}
	}
}

// TestUCIGeneratedVocabLimit: a 40-byte docword naming word id 2^31-1
// without a vocab.txt made the reader allocate 2^31 word names (a fatal
// out-of-memory); it is now refused with the estimate.
func TestUCIGeneratedVocabLimit(t *testing.T) {
	p := filepath.Join(t.TempDir(), "docword.txt")
	if err := os.WriteFile(p, []byte("1\n2147483647\n3\n1 2147483647 1\n1 1 1\n1 2 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ReadUCIBagOfWords(p, "", CorpusOptions{MinDocLen: 3})
	if !errors.Is(err, ErrMemoryLimit) {
		t.Fatalf("got %v, want ErrMemoryLimit", err)
	}
	// Ids up to 100,000 generate 3.2 MB of names.
	if err := os.WriteFile(p, []byte("1\n100000\n3\n1 100000 1\n1 1 1\n1 2 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadUCIBagOfWords(p, "", CorpusOptions{MinDocLen: 3, MaxMemory: 1 << 20}); !errors.Is(err, ErrMemoryLimit) {
		t.Errorf("1 MiB limit: got %v, want ErrMemoryLimit", err)
	}
	c, err := ReadUCIBagOfWords(p, "", CorpusOptions{MinDocLen: 3, MaxMemory: 8 << 20})
	if err != nil || c.V() != 100000 {
		t.Errorf("8 MiB limit: %v", err)
	}
}

// TestReadRowsMaxLine: the numeric-rows reader refuses a line longer than
// MaxLine without buffering it.
func TestReadRowsMaxLine(t *testing.T) {
	p := filepath.Join(t.TempDir(), "rows.csv")
	body := "0.1,0.2\n0.3,0.1\n" + strings.Repeat("0", 5000) + ",0.1\n0.2,0.2\n"
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ReadRows(p, RowsOptions{MaxLine: 1000})
	if !errors.Is(err, ErrLineTooLong) || !strings.Contains(err.Error(), "line 3") {
		t.Fatalf("got %v, want ErrLineTooLong on line 3", err)
	}
	if r, err := ReadRows(p, RowsOptions{}); err != nil || r.N != 4 {
		t.Fatalf("default limit: %v", err)
	}
}

// TestReadTextDirMemoryLimit: a text directory larger than the memory
// limit allows is refused before its files are read.
func TestReadTextDirMemoryLimit(t *testing.T) {
	dir := t.TempDir()
	for i := 0; i < 3; i++ {
		if err := os.WriteFile(filepath.Join(dir, "d"+arrowItoa(int64(i))+".txt"), []byte(strings.Repeat("alpha beta gamma ", 4000)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ReadTextDir(dir, CorpusOptions{MaxMemory: 1 << 20}); !errors.Is(err, ErrMemoryLimit) {
		t.Fatalf("got %v, want ErrMemoryLimit", err)
	}
	if c, err := ReadTextDir(dir, CorpusOptions{MaxMemory: 8 << 20}); err != nil || c.NumDocs() != 3 {
		t.Fatalf("8 MiB: %v", err)
	}
}
