package data

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadWithoutRatings reads implicit-feedback logs with no rating
// column (headerless role lists and header files with Rating "-"): every
// row counts 1, and DupSum adds repeated events up.
func TestLoadWithoutRatings(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name, text string
		cols       Columns
		hasTime    bool
	}{
		{"pairs", "1,10\n1,11\n2,10\n1,10\n", Columns{Order: []string{"user", "item"}}, false},
		{"pairs+time", "1,10,1600000000\n1,11,1600000000\n2,10,1600000000\n1,10,1600000100\n", Columns{Order: []string{"user", "item", "time"}}, true},
		{"header", "uid,iid\n1,10\n1,11\n2,10\n1,10\n", Columns{User: "uid", Item: "iid", Rating: "-"}, false},
	}
	for _, c := range cases {
		p := filepath.Join(dir, c.name+".csv")
		if err := os.WriteFile(p, []byte(c.text), 0o644); err != nil {
			t.Fatal(err)
		}
		unit := TimeDay
		if !c.hasTime {
			unit = TimeNone
		}
		for _, pol := range []DuplicatePolicy{DupSum, DupLast} {
			st, rep, err := Load(p, LoadOptions{Columns: c.cols, Builder: BuilderOptions{TimeUnit: unit, Duplicates: pol}})
			if err != nil {
				t.Fatalf("%s %s: %v", c.name, pol, err)
			}
			if st.NNZ() != 3 || rep.RatingColumn != "" {
				t.Fatalf("%s %s: %d cells, rating column %q", c.name, pol, st.NNZ(), rep.RatingColumn)
			}
			total := 0.0
			for _, v := range st.Val {
				total += v
			}
			want := 3.0
			if pol == DupSum {
				want = 4
			}
			if total != want {
				t.Fatalf("%s %s: values %v, want total %g", c.name, pol, st.Val, want)
			}
		}
	}
	// A two-column file without column options is a click log (issue
	// 23: a log as users have it), and the report says so; one column is
	// still refused.
	p := filepath.Join(dir, "short.csv")
	os.WriteFile(p, []byte("1,10\n2,11\n2,11\n"), 0o644)
	st, rep, err := Load(p, LoadOptions{Builder: BuilderOptions{Duplicates: DupSum}})
	if err != nil || rep.RatingColumn != "" || st.NNZ() != 2 || st.Val[0] != 1 || st.Val[1] != 2 ||
		!strings.Contains(strings.Join(rep.Detected, "; "), "two columns: read as user and item") {
		t.Fatalf("two-column log: %v %+v %v", err, rep, st)
	}
	os.WriteFile(p, []byte("1\n2\n"), 0o644)
	if _, _, err := Load(p, LoadOptions{}); !errors.Is(err, ErrFieldCount) {
		t.Fatalf("one-column log: %v", err)
	}
}
