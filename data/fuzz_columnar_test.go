package data

import (
	"os"
	"path/filepath"
	"testing"
)

// fuzzLoad writes b to a file called name and loads it; a load must fail
// cleanly or give a valid store whose rows are all accounted for.
func fuzzLoad(t *testing.T, dir, name string, b []byte, skip bool) {
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	s, rep, err := Load(p, LoadOptions{SkipInvalid: skip, Threads: 2, Builder: BuilderOptions{KeepTimestamps: true}})
	if err != nil {
		return
	}
	if err := s.Validate(); err != nil {
		t.Fatalf("invalid store: %v", err)
	}
	if s.NNZ()+rep.Skipped+rep.Duplicates.Dropped != rep.Rows {
		t.Fatalf("%d observations + %d skipped + %d merged != %d rows", s.NNZ(), rep.Skipped, rep.Duplicates.Dropped, rep.Rows)
	}
}

// FuzzLoadArrow feeds arbitrary bytes to the Arrow IPC loader (file or
// stream format, whichever the content says): it must never panic, crash
// or allocate beyond its cap. Seeds: testdata/fuzz/FuzzLoadArrow (files
// and streams with integer, string, dictionary, decimal, float16 and
// timestamp columns).
func FuzzLoadArrow(f *testing.F) {
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte, skip bool) { fuzzLoad(t, dir, "in.arrow", b, skip) })
}

// FuzzLoadParquet is FuzzLoadArrow for the Parquet loader (seeds in
// testdata/fuzz/FuzzLoadParquet, written by arrow/go with the stored
// Arrow schema).
func FuzzLoadParquet(f *testing.F) {
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte, skip bool) { fuzzLoad(t, dir, "in.parquet", b, skip) })
}

// FuzzReadRows: the numeric-rows reader of the mixture models never
// panics, and accepted rows are N x D finite values of norm at most 1 (or
// rescaled).
func FuzzReadRows(f *testing.F) {
	for _, name := range []string{"rows.csv", "rows_bad.csv"} {
		b, err := os.ReadFile(filepath.Join("testdata/corpus", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, false)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte, rescale bool) {
		p := filepath.Join(dir, "rows.csv")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := ReadRows(p, RowsOptions{Rescale: rescale})
		if err != nil {
			return
		}
		if len(r.Data) != r.N*r.D || r.N <= 0 || r.D <= 0 {
			t.Fatalf("%d values for %d x %d", len(r.Data), r.N, r.D)
		}
		for i := 0; i < r.N; i++ {
			var s float64
			for _, x := range r.Data[i*r.D : (i+1)*r.D] {
				s += x * x
			}
			if !(s <= 1+1e-6) {
				t.Fatalf("row %d has squared norm %v", i, s)
			}
		}
	})
}

// FuzzReadTextDir: the text-directory tokenizer never panics on one
// document of arbitrary bytes (invalid UTF-8 is an error), and an accepted
// corpus satisfies the CSR invariants.
func FuzzReadTextDir(f *testing.F) {
	f.Add([]byte("The quick brown fox jumps over the lazy dog; the dog sleeps."))
	f.Add([]byte("caf\xc3\xa9 na\xc3\xafve r\xc3\xa9sum\xc3\xa9 words words words"))
	f.Add([]byte("latin1 \xe9t\xe9 text"))
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		for i, doc := range [][]byte{b, []byte("alpha beta gamma delta alpha beta")} {
			if err := os.WriteFile(filepath.Join(dir, "doc"+string(rune('0'+i))+".txt"), doc, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		c, err := ReadTextDir(dir, CorpusOptions{MinDocLen: 3})
		if err != nil {
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("accepted an invalid corpus: %v", err)
		}
	})
}
