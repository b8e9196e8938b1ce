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

// FuzzPruneCorpus checks that any pruning of any corpus never panics, keeps
// the CSR invariants, keeps document ids increasing, and accounts for
// every removed word.
func FuzzPruneCorpus(f *testing.F) {
	f.Add([]byte{3, 0, 1, 2, 1, 0, 4, 0, 0, 2}, uint8(2), uint8(1), uint8(50), uint8(3), false)
	f.Add([]byte{1, 1, 1, 1, 1, 1}, uint8(0), uint8(0), uint8(0), uint8(0), true)
	f.Fuzz(func(t *testing.T, counts []byte, minDF, minCount, maxDFPct, maxVocab uint8, keep bool) {
		const v = 6
		vocab := []string{"the", "of", "hockey", "goal", "bank", "share"}
		var docs [][]int32
		for i := 0; i+v <= len(counts) && len(docs) < 50; i += v {
			d := make([]int32, v)
			for j := range d {
				d[j] = int32(counts[i+j] % 5)
			}
			docs = append(docs, d)
		}
		c, err := CorpusFromCounts(vocab, docs, 1)
		if err != nil {
			return
		}
		opts := PruneOptions{KeepStopWords: keep, MinDF: int(minDF % 5), MinCount: int(minCount % 6),
			MaxDF: float64(maxDFPct%101) / 100, MaxVocab: int(maxVocab % 7), MinDocLen: 2}
		out, rep, err := PruneCorpus(c, opts)
		if err != nil {
			return
		}
		if err := out.Validate(); err != nil {
			t.Fatal(err)
		}
		for i := 1; i < len(out.DocIDs); i++ {
			if out.DocIDs[i] <= out.DocIDs[i-1] {
				t.Fatalf("doc ids %v not increasing", out.DocIDs)
			}
		}
		removed := rep.StopWords + rep.MinCount + rep.MinDF + rep.MaxDF + rep.MaxVocab
		if removed+out.V() != v || out.NumDocs()+rep.EmptiedDocs+rep.ShortDocs != c.NumDocs() {
			t.Fatalf("report %+v does not account for %d words / %d documents", rep, v-out.V(), c.NumDocs()-out.NumDocs())
		}
	})
}
