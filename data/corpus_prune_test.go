package data

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// pruneFixture: 5 documents over words chosen so that each rule removes a
// known set.
func pruneFixture(t *testing.T) *Corpus {
	t.Helper()
	vocab := []string{"the", "hockey", "goal", "rare", "common", "zzz", "of"}
	docs := [][]int32{
		{3, 2, 1, 0, 1, 0, 0}, // the hockey goal common
		{2, 1, 2, 0, 1, 0, 1}, // the hockey goal common of
		{0, 0, 0, 1, 1, 0, 0}, // rare common
		{1, 0, 0, 0, 1, 0, 0}, // the common: empty after stop words + max-df
		{0, 3, 0, 0, 1, 1, 0}, // hockey common zzz
	}
	c, err := CorpusFromCounts(vocab, docs, 1)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestPruneCorpus(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		opts      PruneOptions
		vocab     []string
		docIDs    []int
		rep       PruneReport
		prunedTok int64
	}{
		{"stop words only", PruneOptions{}, []string{"hockey", "goal", "rare", "common", "zzz"}, []int{0, 1, 2, 3, 4},
			PruneReport{StopWords: 2}, 7},
		{"keep stop words", PruneOptions{KeepStopWords: true}, []string{"the", "hockey", "goal", "rare", "common", "zzz", "of"}, []int{0, 1, 2, 3, 4},
			PruneReport{}, 0},
		{"extra list", PruneOptions{KeepStopWords: true, ExtraStopWords: []string{"ZZZ"}}, []string{"the", "hockey", "goal", "rare", "common", "of"}, []int{0, 1, 2, 3, 4},
			PruneReport{StopWords: 1}, 1},
		{"min df", PruneOptions{MinDF: 2}, []string{"hockey", "goal", "common"}, []int{0, 1, 2, 3, 4},
			PruneReport{StopWords: 2, MinDF: 2}, 9},
		// common is in all 5 documents (> 0.8*5): removed; document 4
		// ("the common") becomes empty.
		{"max df", PruneOptions{MaxDF: 0.8}, []string{"hockey", "goal", "rare", "zzz"}, []int{0, 1, 2, 4},
			PruneReport{StopWords: 2, MaxDF: 1, MaxDFWords: []string{"common"}, EmptiedDocs: 1}, 12},
		{"max vocab", PruneOptions{MaxVocab: 2}, []string{"hockey", "common"}, []int{0, 1, 2, 3, 4},
			PruneReport{StopWords: 2, MaxVocab: 3}, 12},
		{"min doc len", PruneOptions{MaxDF: 0.8, MinDocLen: 3}, []string{"hockey", "goal", "rare", "zzz"}, []int{0, 1, 4},
			PruneReport{StopWords: 2, MaxDF: 1, MaxDFWords: []string{"common"}, EmptiedDocs: 1, ShortDocs: 1}, 12},
	}
	for _, tc := range cases {
		c := pruneFixture(t)
		out, rep, err := PruneCorpus(c, tc.opts)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if err := out.Validate(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !reflect.DeepEqual(out.Vocab, tc.vocab) {
			t.Errorf("%s: vocab %v, want %v", tc.name, out.Vocab, tc.vocab)
		}
		if !reflect.DeepEqual(out.DocIDs, tc.docIDs) {
			t.Errorf("%s: doc ids %v, want %v", tc.name, out.DocIDs, tc.docIDs)
		}
		if !reflect.DeepEqual(*rep, tc.rep) {
			t.Errorf("%s: report %+v, want %+v", tc.name, *rep, tc.rep)
		}
		if out.Stats.PrunedTokens != tc.prunedTok || out.Stats.Pruning != rep {
			t.Errorf("%s: pruned tokens %d, want %d", tc.name, out.Stats.PrunedTokens, tc.prunedTok)
		}
		if out.Stats.SkippedEmpty != tc.rep.EmptiedDocs || out.Stats.SkippedShort != tc.rep.ShortDocs {
			t.Errorf("%s: stats %+v", tc.name, out.Stats)
		}
		// Counts are carried over by word.
		for n := 0; n < out.NumDocs(); n++ {
			ws, cs := out.Doc(n)
			ow, oc := c.Doc(out.DocIDs[n])
			for i, w := range ws {
				found := false
				for j, x := range ow {
					if c.Vocab[x] == out.Vocab[w] {
						found = oc[j] == cs[i]
					}
				}
				if !found {
					t.Errorf("%s: doc %d word %s count %d not in the input", tc.name, n, out.Vocab[w], cs[i])
				}
			}
		}
	}
}

func TestPruneCorpusErrors(t *testing.T) {
	t.Parallel()
	c := pruneFixture(t)
	if _, _, err := PruneCorpus(c, PruneOptions{MaxDF: 1.5}); err == nil || !strings.Contains(err.Error(), "max df") {
		t.Errorf("max df 1.5: %v", err)
	}
	if _, _, err := PruneCorpus(c, PruneOptions{MinDF: -1}); err == nil {
		t.Error("negative min df accepted")
	}
	// Every word removed: no document survives.
	_, rep, err := PruneCorpus(c, PruneOptions{MinDF: 10})
	if !errors.Is(err, ErrEmptyCorpus) || rep.EmptiedDocs != 5 {
		t.Errorf("all pruned: %v %+v", err, rep)
	}
}

func TestReadStopWords(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "stop.txt")
	if err := os.WriteFile(p, []byte("# comment\nFoo bar\n\nbaz\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ws, err := ReadStopWords(p)
	if err != nil || !reflect.DeepEqual(ws, []string{"foo", "bar", "baz"}) {
		t.Fatalf("%v %v", ws, err)
	}
	missing := filepath.Join(dir, "nope.txt")
	if _, err := ReadStopWords(missing); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("missing file: %v", err)
	}
	empty := filepath.Join(dir, "empty.txt")
	os.WriteFile(empty, []byte("# nothing\n"), 0o644)
	if _, err := ReadStopWords(empty); err == nil {
		t.Error("empty stop-word file accepted")
	}
}

func TestUCIDocIDs(t *testing.T) {
	t.Parallel()
	c, err := ReadUCIBagOfWords(cdir+"docword.txt", cdir+"vocab.txt", CorpusOptions{MinDocLen: 3})
	if err != nil {
		t.Fatal(err)
	}
	// document 4 (2 words) is skipped: ids 0, 1, 2.
	if !reflect.DeepEqual(c.DocIDs, []int{0, 1, 2}) {
		t.Errorf("doc ids %v", c.DocIDs)
	}
}
