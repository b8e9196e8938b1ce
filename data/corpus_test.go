package data

import (
	"errors"
	"math"
	"os"
	"strings"
	"testing"
)

const cdir = "testdata/corpus/"

func TestReadUCI(t *testing.T) {
	t.Parallel()
	for _, path := range []string{cdir + "docword.txt", cdir + "docword.txt.gz"} {
		c, err := ReadUCIBagOfWords(path, cdir+"vocab.txt", CorpusOptions{MinDocLen: 3})
		if err != nil {
			t.Fatal(path, err)
		}
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
		// doc 4 has 2 words: skipped for MinDocLen 3.
		if c.NumDocs() != 3 || c.Stats.SkippedShort != 1 || c.Stats.Tokens != 4+5+3 {
			t.Fatalf("%s: docs %d stats %+v", path, c.NumDocs(), c.Stats)
		}
		ws, cs := c.Doc(1)
		if len(ws) != 3 || c.Vocab[ws[0]] != "goal" || cs[0] != 2 {
			t.Fatalf("doc 2 = %v %v", ws, cs)
		}
	}
	c, err := ReadUCIBagOfWords(cdir+"docword.txt", "", CorpusOptions{})
	if err != nil || c.NumDocs() != 4 || c.Vocab[0] != "1" {
		t.Fatalf("without vocab: %v %v", c, err)
	}
}

func TestReadUCIErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ doc, vocab, want string }{
		{cdir + "docword_badword.txt", "", "line 5: unknown word id 7"},
		{cdir + "docword_trunc.txt", "", "NNZ = 3 but the file has 2"},
		{cdir + "docword.txt", cdir + "rows.csv", "declares W = 5"},
		{cdir + "missing.txt", "", "no such file"},
	} {
		_, err := ReadUCIBagOfWords(tc.doc, tc.vocab, CorpusOptions{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.doc, err, tc.want)
		}
	}
}

func TestReadTextDir(t *testing.T) {
	t.Parallel()
	c, err := ReadTextDir(cdir+"text", CorpusOptions{MinDocLen: 3})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	// 05_stopwords_only.txt has only stop words: empty, skipped.
	if c.NumDocs() != 4 || c.Stats.SkippedEmpty != 1 {
		t.Fatalf("docs %d stats %+v", c.NumDocs(), c.Stats)
	}
	for _, w := range c.Vocab {
		if isStopWord(w) || strings.ToLower(w) != w {
			t.Fatalf("vocabulary holds %q", w)
		}
	}
	p, err := ReadTextDir(cdir+"text", CorpusOptions{MinCount: 2, MaxVocab: 5})
	if err != nil {
		t.Fatal(err)
	}
	if p.V() != 5 || p.Stats.PrunedWords == 0 {
		t.Fatalf("pruned vocab %v stats %+v", p.Vocab, p.Stats)
	}
	// "match" (3), "goal" (3) and "team" (3) are among the most frequent.
	if !strings.Contains(strings.Join(p.Vocab, " "), "match") {
		t.Fatalf("pruned vocab %v lacks a frequent word", p.Vocab)
	}
}

func TestReadTextDirErrors(t *testing.T) {
	t.Parallel()
	_, err := ReadTextDir(cdir+"text_latin1", CorpusOptions{})
	if err == nil || !strings.Contains(err.Error(), "02_latin1.txt: not valid UTF-8") {
		t.Fatalf("latin1: %v", err)
	}
	_, err = ReadTextDir(cdir+"text_short", CorpusOptions{MinDocLen: 3})
	if !errors.Is(err, ErrEmptyCorpus) || !strings.Contains(err.Error(), "2 shorter than 3") {
		t.Fatalf("short docs: %v", err)
	}
}

func TestTokenize(t *testing.T) {
	t.Parallel()
	got := strings.Join(Tokenize("Hello, WORLD! It's 2024: naïve café-au-lait x"), " ")
	if want := "hello world it naïve café au lait"; got != want {
		t.Fatalf("got %q want %q", got, want)
	}
}

func TestReadRows(t *testing.T) {
	t.Parallel()
	r, err := ReadRows(cdir+"rows.csv", RowsOptions{})
	if err != nil || r.N != 3 || r.D != 2 || r.Header[0] != "x" || r.Data[2] != -0.3 {
		t.Fatalf("%+v %v", r, err)
	}
	if _, err := ReadRows(cdir+"rows_big.csv", RowsOptions{}); err == nil || !strings.Contains(err.Error(), "line 2: row norm 5") {
		t.Fatalf("big: %v", err)
	}
	s, err := ReadRows(cdir+"rows_big.csv", RowsOptions{Rescale: true})
	if err != nil || s.Scale != 5 || math.Abs(s.Data[2]-0.6) > 1e-15 {
		t.Fatalf("rescale: %+v %v", s, err)
	}
	if _, err := ReadRows(cdir+"rows_bad.csv", RowsOptions{}); err == nil || !strings.Contains(err.Error(), "line 2 column 2") {
		t.Fatalf("bad: %v", err)
	}
}

func TestCorpusFromCounts(t *testing.T) {
	t.Parallel()
	c, err := CorpusFromCounts([]string{"a", "b"}, [][]int32{{0, 0}, {1, 2}, {1, 0}}, 2)
	if err != nil || c.NumDocs() != 1 || c.Stats.SkippedEmpty != 1 || c.Stats.SkippedShort != 1 {
		t.Fatalf("%+v %v", c, err)
	}
	if _, err := CorpusFromCounts([]string{"a"}, [][]int32{{-1}}, 1); err == nil {
		t.Fatal("negative count accepted")
	}
}

func TestReadUCIEdgeCases(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, s string) string {
		p := dir + "/" + name
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// A huge untrusted header must not allocate D or W sized memory.
	huge := write("huge.txt", "2000000000\n2000000000\n1\n5 7 3\n")
	c, err := ReadUCIBagOfWords(huge, "", CorpusOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c.NumDocs() != 1 || c.V() != 7 || c.Stats.SkippedEmpty != 2000000000-1 {
		t.Fatalf("docs %d V %d stats %+v", c.NumDocs(), c.V(), c.Stats)
	}
	// Repeated (doc, word) pairs are summed; document 2 has no entry.
	rep := write("rep.txt", "3\n2\n3\n1 1 1\n1 1 2\n3 2 4\n")
	c, err = ReadUCIBagOfWords(rep, "", CorpusOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, cs := c.Doc(0); len(cs) != 1 || cs[0] != 3 || c.Stats.SkippedEmpty != 1 {
		t.Fatalf("%+v", c)
	}
	for _, tc := range []struct{ body, want string }{
		{"1\n1\n1\n1 1 0\n", "count 0 must be a positive"},
		{"1\n1\n1\n2 1 1\n", "document id 2 outside"},
		{"1\n1\n1\n1 x 1\n", "field 2 \"x\" is not an integer"},
		{"1\n1\n", "missing header"},
		{"1\n1\n1\n1 1\n", "want \"docID wordID count\""},
	} {
		_, err := ReadUCIBagOfWords(write("bad.txt", tc.body), "", CorpusOptions{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want %q", tc.body, err, tc.want)
		}
	}
}
