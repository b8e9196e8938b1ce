package data

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzReadUCIBagOfWords checks that arbitrary docword content never
// panics and that every corpus it accepts satisfies the CSR invariants.
func FuzzReadUCIBagOfWords(f *testing.F) {
	for _, name := range []string{"docword.txt", "docword_badword.txt", "docword_trunc.txt"} {
		b, err := os.ReadFile(filepath.Join("testdata/corpus", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("3\n2\n3\n1 1 1\n1 1 2\n3 2 4\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(t.TempDir(), "docword.txt")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := ReadUCIBagOfWords(p, "", CorpusOptions{MinDocLen: 3})
		if err != nil {
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("accepted an invalid corpus: %v", err)
		}
	})
}
