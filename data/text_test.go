package data

import (
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// textWriteTemp writes content to name in a fresh temporary directory.
func textWriteTemp(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestReadDelimitedFormats loads each accepted layout and checks the
// resulting store against the values written in the file.
func TestReadDelimitedFormats(t *testing.T) {
	tests := []struct {
		name, file, content string
		opts                LoadOptions
		delim               string
		header              bool
		users, items        []string
		vals                []float64
		times               []int64 // nil: no time column
	}{
		{name: "ml100k u.data", file: "u.data", content: "196\t242\t3\t881250949\n186\t302\t3\t891717742\n196\t377\t1\t878887116\n",
			delim: "\t", users: []string{"196", "186"}, items: []string{"242", "302", "377"}, vals: []float64{3, 3, 1}, times: []int64{881250949, 891717742, 878887116}},
		{name: "ml1m ratings.dat", file: "ratings.dat", content: "1::1193::5::978300760\r\n1::661::3::978302109\r\n",
			delim: "::", users: []string{"1"}, items: []string{"1193", "661"}, vals: []float64{5, 3}, times: []int64{978300760, 978302109}},
		{name: "ml-latest ratings.csv", file: "ratings.csv", content: "userId,movieId,rating,timestamp\n1,1,4.0,964982703\n\n1,3,3.5,964981247\n",
			delim: ",", header: true, users: []string{"1"}, items: []string{"1", "3"}, vals: []float64{4, 3.5}, times: []int64{964982703, 964981247}},
		{name: "generic header reordered with string IDs", file: "x.txt", content: "\xef\xbb\xbfts;stars;uid;mid\n2020-01-02;4.5;alice;m1\n2020-01-03T00:00:00Z;2;bob;\"m;2\"\n",
			opts:  LoadOptions{Columns: Columns{User: "uid", Item: "mid", Rating: "stars", Time: "ts"}},
			delim: ";", header: true, users: []string{"alice", "bob"}, items: []string{"m1", "m;2"}, vals: []float64{4.5, 2}, times: []int64{1577923200, 1578009600}},
		{name: "headerless role order", file: "r.csv", content: "4,7,1.5\n5,8,2.5\n",
			opts:  LoadOptions{Columns: Columns{Order: []string{"rating", "user", "item"}}},
			delim: ",", users: []string{"7", "8"}, items: []string{"1.5", "2.5"}, vals: []float64{4, 5}},
		{name: "quoted string IDs with doubled quotes", file: "q.csv", content: "user,item,rating\n\"a \"\"x\"\"\",\"i,1\",1e0\n",
			delim: ",", header: true, users: []string{`a "x"`}, items: []string{"i,1"}, vals: []float64{1}},
		{name: "decimal seconds and space delimiter", file: "s.txt", content: "1  2 3 100.9\n2 3  4   -0.5\n",
			delim: " ", users: []string{"1", "2"}, items: []string{"2", "3"}, vals: []float64{3, 4}, times: []int64{100, -1}},
		{name: "late string ID turns the column to strings", file: "late.csv", content: "1,1,5\n2,1,4\nu3,2,3\n",
			delim: ",", users: []string{"1", "2", "u3"}, items: []string{"1", "2"}, vals: []float64{5, 4, 3}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := textWriteTemp(t, tc.file, tc.content)
			tc.opts.Builder.KeepTimestamps = true
			s, rep, err := Load(p, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Validate(); err != nil {
				t.Fatal(err)
			}
			if rep.Delimiter != tc.delim || rep.Header != tc.header {
				t.Errorf("detected delimiter %q header %v, want %q %v (%v)", rep.Delimiter, rep.Header, tc.delim, tc.header, rep.Detected)
			}
			for m, want := range [][]string{tc.users, tc.items} {
				d := s.Dicts[m]
				var got []string
				for i := 0; i < d.Len(); i++ {
					got = append(got, d.String(int32(i)))
				}
				if strings.Join(got, "|") != strings.Join(want, "|") {
					t.Errorf("mode %d IDs %q, want %q", m, got, want)
				}
			}
			if len(s.Val) != len(tc.vals) {
				t.Fatalf("values %v, want %v", s.Val, tc.vals)
			}
			for e, v := range tc.vals {
				if s.Val[e] != v {
					t.Errorf("value %d = %v, want %v", e, s.Val[e], v)
				}
			}
			if tc.times == nil {
				if s.Order() != 2 || s.Timestamps != nil {
					t.Errorf("order %d with timestamps %v, want a 2-way store", s.Order(), s.Timestamps)
				}
			} else {
				if s.Order() != 3 {
					t.Fatalf("order %d, want 3", s.Order())
				}
				for e, ts := range tc.times {
					if s.Timestamps[e] != ts {
						t.Errorf("time %d = %d, want %d", e, s.Timestamps[e], ts)
					}
				}
			}
		})
	}
}

// TestReadDelimitedBadInput checks that each kind of bad input fails with
// its own error naming the file, line and column, and that SkipInvalid
// skips exactly the malformed rows.
func TestReadDelimitedBadInput(t *testing.T) {
	const head = "userId,movieId,rating,timestamp\n1,1,4,100\n"
	tests := []struct {
		name, content string
		opts          LoadOptions
		sentinel      error
		line          int    // 0: no line in the error
		column        string // expected ParseError column ("" none)
		msg           string // substring of the message
		skipRows      int    // rows kept under SkipInvalid (-1: still an error)
	}{
		{"NaN rating", head + "2,2,NaN,100\n", LoadOptions{}, ErrBadRating, 3, `"rating"`, "NaN", 1},
		{"Inf rating", head + "2,2,+Inf,100\n", LoadOptions{}, ErrBadRating, 3, `"rating"`, "infinite", 1},
		{"empty rating", head + "2,2,,100\n", LoadOptions{}, ErrBadRating, 3, `"rating"`, "empty rating", 1},
		{"non-numeric rating", head + "2,2,good,100\n", LoadOptions{}, ErrBadRating, 3, `"rating"`, "not a number", 1},
		{"overflowing rating", head + "2,2,1e999,100\n", LoadOptions{}, ErrBadRating, 3, `"rating"`, "out of the float64 range", 1},
		{"negative user ID", head + "-2,2,3,100\n", LoadOptions{}, ErrBadID, 3, `"userId"`, "negative ID -2", 1},
		{"overflowing item ID", head + "2,99999999999999999999,3,100\n", LoadOptions{}, ErrBadID, 3, `"movieId"`, "overflows int64", 1},
		{"empty ID", head + ",2,3,100\n", LoadOptions{}, ErrBadID, 3, `"userId"`, "empty ID", 1},
		{"bad time stamp", head + "2,2,3,yesterday\n", LoadOptions{}, ErrBadTime, 3, `"timestamp"`, "neither Unix seconds", 1},
		{"bad date", head + "2,2,3,2020-13-45\n", LoadOptions{}, ErrBadTime, 3, `"timestamp"`, "ISO-8601", 1},
		{"too few fields in a row", head + "2,2\n3,3,3,3\n", LoadOptions{}, ErrFieldCount, 3, "", "has 2 field(s), need 4", 2},
		{"unterminated quote", head + "\"2,2,3,100\n", LoadOptions{}, ErrQuote, 3, "", "no closing quote", 1},
		{"empty file", "", LoadOptions{}, ErrNoData, 0, "", "the file is empty", -1},
		{"blank lines only", "\n\r\n  \n", LoadOptions{}, ErrNoData, 0, "", "the file is empty", -1},
		{"header only", "userId,movieId,rating,timestamp\n", LoadOptions{}, ErrNoData, 0, "", "only a header line (userId,movieId,rating,timestamp)", -1},
		{"header only with blank lines", "userId,movieId,rating\n\n\n", LoadOptions{}, ErrNoData, 0, "", "only a header line", -1},
		{"wrong column name", head, LoadOptions{Columns: Columns{Rating: "stars"}}, ErrNoColumn, 0, "", `no rating column "stars" in the header (columns: userId, movieId, rating, timestamp)`, -1},
		{"no default column", "uid,mid,stars\n1,2,3\n", LoadOptions{}, ErrNoColumn, 0, "", "no user column (tried userId, user_id, user; header has uid, mid, stars)", -1},
		{"too few columns", "1\n3\n", LoadOptions{}, ErrFieldCount, 1, "", "at most 1 field(s)", -1},
		{"too few columns given delimiter", "1\n3\n", LoadOptions{Delimiter: ","}, ErrFieldCount, 1, "", "only 1 column(s)", -1},
		{"two columns with a rating column named", "1,2\n3,4\n", LoadOptions{Columns: Columns{Order: []string{"user", "item", "rating"}}}, ErrFieldCount, 0, "", "", -1},
		{"duplicates with error policy", head + "1,1,5,100\n", LoadOptions{Builder: BuilderOptions{Duplicates: DupError}}, ErrDuplicate, 0, "", "appears 2 times", -1},
		{"all rows bad", "userId,movieId,rating\n1,1,x\n", LoadOptions{}, ErrBadRating, 2, `"rating"`, "not a number", -2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := textWriteTemp(t, "in.csv", tc.content)
			s, _, err := Load(p, tc.opts)
			if err == nil {
				t.Fatalf("no error; store %+v", s)
			}
			if !errors.Is(err, tc.sentinel) {
				t.Errorf("error %q does not wrap %v", err, tc.sentinel)
			}
			if !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %q lacks the file name or %q", err, tc.msg)
			}
			var pe *ParseError
			if tc.line > 0 || tc.column != "" {
				if !errors.As(err, &pe) {
					t.Fatalf("error %q is not a *ParseError", err)
				}
				if pe.Line != tc.line || pe.Column != tc.column {
					t.Errorf("ParseError line %d column %q, want %d %q", pe.Line, pe.Column, tc.line, tc.column)
				}
			}
			opts := tc.opts
			opts.SkipInvalid = true
			s, rep, err := Load(p, opts)
			switch {
			case tc.skipRows == -1:
				if err == nil {
					t.Errorf("SkipInvalid: no error")
				}
			case tc.skipRows == -2:
				if !errors.Is(err, ErrEmpty) || !strings.Contains(err.Error(), "all 1 rows were malformed") {
					t.Errorf("SkipInvalid: error %v, want all rows skipped", err)
				}
			case err != nil:
				t.Errorf("SkipInvalid: %v", err)
			default:
				if s.NNZ() != tc.skipRows || rep.Skipped != 1 || len(rep.SkipReasons) != 1 || !strings.Contains(rep.SkipReasons[0], tc.msg) {
					t.Errorf("SkipInvalid: nnz %d skipped %d reasons %q, want %d, 1, one with %q", s.NNZ(), rep.Skipped, rep.SkipReasons, tc.skipRows, tc.msg)
				}
			}
		})
	}
}

func TestReadDelimitedMissingFile(t *testing.T) {
	_, _, err := Load(filepath.Join(t.TempDir(), "absent.csv"), LoadOptions{})
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("error %v, want not-exist", err)
	}
}

// TestReadDelimitedGzip checks that gzip input is read transparently,
// whatever its name.
func TestReadDelimitedGzip(t *testing.T) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write([]byte("userId,movieId,rating,timestamp\n1,2,3.5,100\n2,2,4,200\n"))
	zw.Close()
	for _, name := range []string{"r.csv.gz", "r.csv"} {
		p := filepath.Join(t.TempDir(), name)
		os.WriteFile(p, buf.Bytes(), 0o644)
		s, rep, err := Load(p, LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if s.NNZ() != 2 || s.Val[0] != 3.5 || rep.Detected[0] != "gzip-compressed" {
			t.Errorf("%s: nnz %d vals %v detected %v", name, s.NNZ(), s.Val, rep.Detected)
		}
	}
	p := textWriteTemp(t, "bad.csv.gz", "\x1f\x8bnot really gzip")
	if _, _, err := Load(p, LoadOptions{}); err == nil || !strings.Contains(err.Error(), "gzip") {
		t.Errorf("corrupt gzip: error %v", err)
	}
}
