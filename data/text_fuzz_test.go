package data

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzReadDelimited feeds arbitrary bytes to the delimited-text loader: it
// must never panic, and a successful load must give a consistent store
// whose rows were all accounted for. The seed corpus is in
// testdata/fuzz/FuzzReadDelimited.
func FuzzReadDelimited(f *testing.F) {
	f.Add([]byte("userId,movieId,rating,timestamp\n1,1,4.0,964982703\n"), false)
	f.Add([]byte("196\t242\t3\t881250949\n"), true)
	f.Add([]byte("1::1193::5::978300760\r\n"), false)
	f.Add([]byte("u,i,r\n\"a,\"\"b\",x,1\n"), true)
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, in []byte, skip bool) {
		p := filepath.Join(dir, "in.csv")
		if err := os.WriteFile(p, in, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, th := range []int{1, 2} {
			s, rep, err := Load(p, LoadOptions{SkipInvalid: skip, Threads: th, Builder: BuilderOptions{KeepTimestamps: true}})
			if err != nil {
				continue
			}
			if err := s.Validate(); err != nil {
				t.Fatalf("invalid store: %v", err)
			}
			if s.NNZ()+rep.Skipped+rep.Duplicates.Dropped != rep.Rows {
				t.Fatalf("%d observations + %d skipped + %d merged != %d rows", s.NNZ(), rep.Skipped, rep.Duplicates.Dropped, rep.Rows)
			}
		}
	})
}
