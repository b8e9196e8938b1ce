package data

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// textFastLayouts are the layouts the parseFast tests run on: a sample
// line, the delimiter and the column order.
var textFastLayouts = []struct {
	name, sample, delim string
	order               []string
}{
	{"csv user,item,time,rating", "1,2,86400,3.5\n", ",", []string{"user", "item", "time", "rating"}},
	{"tsv user,item,rating,time", "1\t2\t3.5\t86400\n", "\t", []string{"user", "item", "rating", "time"}},
	{"csv ignored column", "1,x,2,4\n", ",", []string{"user", "-", "item", "rating"}},
	{"csv no rating", "1,2\n", ",", []string{"user", "item"}},
	{"semicolon no time", "1;2;4\n", ";", []string{"user", "item", "rating"}},
}

// textFastTokens are the field values the random lines are made of: plain
// numbers the fast path takes and everything it must leave to parseRow.
var textFastTokens = []string{
	"0", "7", "007", "12", "3.5", "4.", ".5", "4.0", "1.2.3", "", " 7", "7 ", " ", "\"5\"", "\"a", "\"", "-3", "+3", "-0",
	"1e3", "NaN", "abc", "x", "99999999999999999999", "123456789012345678", "12345678901234567",
	"1234567890123456", "123456789012345", "1.23456789012345", "1.234567890123456", "86400", "1700000000.5", "2024-01-02",
	"12345678", "123456789", "0.12345678", "12345678.5", "1234567.12345678", "99999999", "00000000", "000000001",
}

// TestParseFastMatchesParseRow checks the fast path against the general
// row parser on random lines: whenever parseFast takes a line, parseRow
// must take it too, without an error, and append exactly the same row.
func TestParseFastMatchesParseRow(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, lc := range textFastLayouts {
		opts := &LoadOptions{Delimiter: lc.delim, Header: "no", Columns: Columns{Order: lc.order}}
		rep := &LoadReport{}
		lay, err := textSniff("x.csv", []byte(lc.sample), true, FormatAuto, opts, rep)
		if err != nil {
			t.Fatalf("%s: %v", lc.name, err)
		}
		r := &textReader{path: "x.csv", opts: opts, rep: rep, lay: lay, maxLine: DefaultMaxLine}
		roles := r.fastRoles()
		if roles == nil {
			t.Fatalf("%s: no fast path", lc.name)
		}
		fields := make([][]byte, lay.need)
		took := 0
		for n := 0; n < 20000; n++ {
			nf := 1 + rng.IntN(lay.need+2)
			parts := make([]string, nf)
			for k := range parts {
				if rng.IntN(3) == 0 {
					parts[k] = textFastTokens[rng.IntN(len(textFastTokens))]
				} else {
					parts[k] = fmt.Sprint(rng.IntN(100000))
				}
			}
			ln := []byte(strings.Join(parts, lc.delim))
			if rng.IntN(10) == 0 {
				ln = append(ln, lc.delim...)
			}
			var a, b textChunk
			if !r.parseFast(&a, ln, roles) {
				if len(a.val)+len(a.uid)+len(a.iid)+len(a.ts) != 0 {
					t.Fatalf("%s: %q: parseFast declined after appending", lc.name, ln)
				}
				continue
			}
			took++
			r.parseRow(&b, 1, ln, fields, make([]byte, 0, len(ln)))
			switch {
			case b.nbad != 0:
				t.Fatalf("%s: %q: parseFast took a line parseRow rejects (%v)", lc.name, ln, b.errs[0])
			case b.needWhy != [2]string{}:
				t.Fatalf("%s: %q: parseFast took a line with a non-integer ID", lc.name, ln)
			case !slices.Equal(a.uid, b.uid) || !slices.Equal(a.iid, b.iid) || !slices.Equal(a.ts, b.ts) || !slices.Equal(a.val, b.val):
				t.Fatalf("%s: %q: parseFast gives %v %v %v %v, parseRow %v %v %v %v", lc.name, ln, a.uid, a.iid, a.ts, a.val, b.uid, b.iid, b.ts, b.val)
			}
		}
		if took < 1000 {
			t.Fatalf("%s: the fast path took only %d lines", lc.name, took)
		}
	}
}

// textFastFile writes a log of rows lines (user, item, time, rating) with
// the given extra lines inserted before the 0-based row positions in at;
// some ordinary rows take the slow path (blanks, quotes, signs, CRLF).
func textFastFile(t *testing.T, dir, name string, rows int, at map[int]string) string {
	t.Helper()
	rng := rand.New(rand.NewPCG(5, 6))
	var sb strings.Builder
	for k := 0; k < rows; k++ {
		if s, ok := at[k]; ok {
			sb.WriteString(s + "\n")
		}
		u, i := rng.IntN(300), rng.IntN(200)
		day := 86400 * int64(rng.IntN(40))
		r := float64(1+rng.IntN(10)) / 2
		switch k % 97 {
		case 3:
			fmt.Fprintf(&sb, " %d , %d ,%d,%g\n", u, i, day, r)
		case 5:
			fmt.Fprintf(&sb, "\"%d\",%d,%d,\"%g\"\n", u, i, day, r)
		case 7:
			fmt.Fprintf(&sb, "+%d,%d,%d.0,%g\r\n", u, i, day, r)
		case 11:
			sb.WriteString("\n")
			fmt.Fprintf(&sb, "%d,%d,%d,%ge0\n", u, i, day, r)
		default:
			fmt.Fprintf(&sb, "%d,%d,%d,%g\n", u, i, day, r)
		}
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(sb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestLoadParallelMatchesSequential loads logs with malformed lines spread
// over many chunks, with one thread and several, small and large chunks,
// with and without the fast path: the stores, reports and errors (with
// their line numbers) must be identical to those of the sequential load.
func TestLoadParallelMatchesSequential(t *testing.T) {
	dir := t.TempDir()
	const rows = 6000
	bad := map[int]string{
		40:   "1,2,86400,x",                // bad rating
		1500: "3,4,86400",                  // too few fields
		2999: "-5,4,86400,3",               // negative ID
		3000: "5,4,yesterday,3",            // bad time
		4700: "\"6,4,86400,3",              // no closing quote
		5990: "7,99999999999999999999,0,1", // overflowing ID
	}
	files := map[string]string{
		"clean": textFastFile(t, dir, "clean.csv", rows, nil),
		"bad":   textFastFile(t, dir, "bad.csv", rows, bad),
		// A string item ID late in the file restarts the load with
		// string items: the other malformed lines still count.
		"restart": textFastFile(t, dir, "restart.csv", rows, map[int]string{100: "1,2,86400,x", 5000: "1,abc,86400,3"}),
	}
	defer func(n int) { textChunkSize = n }(textChunkSize)
	defer func(f bool) { textFast = f }(textFast)
	type result struct {
		s   *Store
		rep LoadReport
		err string
	}
	load := func(path string, skip bool, threads, chunk int, fast bool) result {
		textChunkSize, textFast = chunk, fast
		s, rep, err := Load(path, LoadOptions{SkipInvalid: skip, Threads: threads, Columns: Columns{Order: []string{"user", "item", "time", "rating"}}, Builder: BuilderOptions{KeepTimestamps: true}})
		res := result{s: s}
		if rep != nil {
			res.rep = *rep
		}
		if err != nil {
			res.err = err.Error()
		}
		return res
	}
	for name, path := range files {
		for _, skip := range []bool{false, true} {
			want := load(path, skip, 1, 2<<20, false)
			if name == "bad" && !skip && !strings.Contains(want.err, "bad.csv:42:") {
				t.Fatalf("%s: sequential error %q, want the bad rating on line 42", name, want.err)
			}
			if name == "bad" && skip && (want.rep.Skipped != len(bad) || len(want.rep.SkipReasons) != textMaxReasons) {
				t.Fatalf("%s: sequential report %+v", name, want.rep)
			}
			for _, threads := range []int{1, 2, 4} {
				for _, chunk := range []int{64, 1000, 4096, 2 << 20} {
					for _, fast := range []bool{false, true} {
						what := fmt.Sprintf("%s skip=%v threads=%d chunk=%d fast=%v", name, skip, threads, chunk, fast)
						got := load(path, skip, threads, chunk, fast)
						if got.err != want.err {
							t.Fatalf("%s: error %q, sequential %q", what, got.err, want.err)
						}
						// (After an error the report says how far the load
						// got, which depends on the chunks.)
						if got.err == "" && (!slices.Equal(got.rep.SkipReasons, want.rep.SkipReasons) || got.rep.Rows != want.rep.Rows || got.rep.Skipped != want.rep.Skipped || got.rep.Duplicates != want.rep.Duplicates || !slices.Equal(got.rep.Detected, want.rep.Detected)) {
							t.Fatalf("%s: report %+v, sequential %+v", what, got.rep, want.rep)
						}
						if (got.s == nil) != (want.s == nil) {
							t.Fatalf("%s: store %v, sequential %v", what, got.s != nil, want.s != nil)
						}
						if got.s != nil {
							if err := textStoresEqual(got.s, want.s); err != nil {
								t.Fatalf("%s: %v", what, err)
							}
						}
					}
				}
			}
		}
	}
}
