package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// spectralTwoThemes writes a UCI corpus of 40 documents on two themes with
// disjoint words (documents 1-20 sport, 21-40 finance), its vocabulary
// and labels, and returns the docword path.
func spectralTwoThemes(t *testing.T, dir string) string {
	t.Helper()
	vocab := []string{"hockey", "puck", "goal", "team", "skate", "bank", "share", "market", "stock", "bond", "the"}
	var lines []string
	var labels []string
	for d := 0; d < 40; d++ {
		base := 0
		lab := "sport"
		if d >= 20 {
			base, lab = 5, "finance"
		}
		labels = append(labels, lab)
		for j := 0; j < 5; j++ {
			c := 1 + (d+j)%3
			lines = append(lines, fmt.Sprintf("%d %d %d", d+1, base+j+1, c))
		}
		lines = append(lines, fmt.Sprintf("%d %d %d", d+1, 11, 2))
	}
	doc := fmt.Sprintf("40\n%d\n%d\n%s\n", len(vocab), len(lines), strings.Join(lines, "\n"))
	p := filepath.Join(dir, "docword.txt")
	for name, s := range map[string]string{"docword.txt": doc, "vocab.txt": strings.Join(vocab, "\n") + "\n", "labels.txt": strings.Join(labels, "\n") + "\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func TestSpectralDocTopicsInferEval(t *testing.T) {
	dir := t.TempDir()
	corpus := spectralTwoThemes(t, dir)
	model := filepath.Join(dir, "m.arrow")
	dt := filepath.Join(dir, "dt.csv")
	args := []string{"dprec", "--quiet", "spectral", "--corpus", corpus, "--model", "lda", "--topics", "2", "--seed", "1",
		"--refine", "5", "--out", model, "--doc-topics", dt}
	if code := run(args); code != 0 {
		t.Fatalf("spectral exit %d", code)
	}
	rows := readCSV(t, dt)
	if len(rows) != 41 || strings.Join(rows[0], ",") != "doc,topic_1,topic_2" {
		t.Fatalf("doc topics: %d rows, header %v", len(rows), rows[0])
	}
	for _, r := range rows[1:] {
		a, _ := strconv.ParseFloat(r[1], 64)
		b, _ := strconv.ParseFloat(r[2], 64)
		if math.Abs(a+b-1) > 1e-4 {
			t.Fatalf("row %v does not sum to 1", r)
		}
		// Each document is on one theme.
		if math.Max(a, b) < 0.9 {
			t.Errorf("document %s: proportions %v %v", r[0], a, b)
		}
	}
	// infer on the training corpus reproduces --doc-topics.
	inf := filepath.Join(dir, "inf.csv")
	if code := run([]string{"dprec", "--quiet", "spectral", "infer", "--model", model, "--corpus", corpus, "--out", inf}); code != 0 {
		t.Fatalf("infer exit %d", code)
	}
	if got := readCSV(t, inf); fmt.Sprint(got) != fmt.Sprint(rows) {
		t.Errorf("infer on the training corpus differs from --doc-topics:\n%v\n%v", got[:3], rows[:3])
	}
	// A corpus with another vocabulary: mapped by word, unknown words
	// ignored, documents left empty skipped.
	other := t.TempDir()
	os.WriteFile(filepath.Join(other, "vocab.txt"), []byte("unknown\nstock\nhockey\n"), 0o644)
	os.WriteFile(filepath.Join(other, "docword.txt"), []byte("3\n3\n4\n1 3 4\n2 2 5\n2 1 1\n3 1 2\n"), 0o644)
	inf2 := filepath.Join(dir, "inf2.csv")
	if code := run([]string{"dprec", "--quiet", "spectral", "infer", "--model", model, "--corpus", filepath.Join(other, "docword.txt"), "--out", inf2}); code != 0 {
		t.Fatalf("infer (other vocabulary) exit %d", code)
	}
	r2 := readCSV(t, inf2)
	if len(r2) != 3 || r2[1][0] != "1" || r2[2][0] != "2" {
		t.Errorf("other vocabulary: %v (want documents 1 and 2; 3 has only unknown words)", r2)
	}
	// Parquet output.
	pq := filepath.Join(dir, "inf.parquet")
	if code := run([]string{"dprec", "--quiet", "spectral", "infer", "--model", model, "--corpus", corpus, "--out", pq}); code != 0 {
		t.Fatalf("infer parquet exit %d", code)
	}
	if b, _ := os.ReadFile(pq); len(b) < 8 || string(b[:4]) != "PAR1" {
		t.Error("not a Parquet file")
	}
	// eval: coherent topics, labels recovered, a finite held-out score.
	ev := filepath.Join(dir, "eval.json")
	stdout := os.Stdout
	f, _ := os.Create(ev)
	os.Stdout = f
	code := run([]string{"dprec", "--quiet", "spectral", "eval", "--model", model, "--corpus", corpus, "--labels", filepath.Join(dir, "labels.txt"), "--heldout", corpus, "--json", "--top-words", "3", "--random-baseline"})
	os.Stdout = stdout
	f.Close()
	if code != 0 {
		t.Fatalf("eval exit %d", code)
	}
	var o spectralEvalOutput
	b, _ := os.ReadFile(ev)
	if err := json.Unmarshal(b, &o); err != nil {
		t.Fatal(err, string(b))
	}
	if o.NMI == nil || *o.NMI < 0.99 || o.PerWordLL == nil || *o.PerWordLL > 0 || o.ScoredTopics != 2 || o.NPMI <= 0 ||
		o.RandomNPMI == nil || *o.RandomNPMI >= o.NPMI {
		t.Errorf("eval: %s", b)
	}
}

func TestSpectralUsageErrors(t *testing.T) {
	dir := t.TempDir()
	corpus := spectralTwoThemes(t, dir)
	vocab := filepath.Join(dir, "vocab.txt")
	vocabCSV := filepath.Join(dir, "vocab.csv")
	if b, err := os.ReadFile(vocab); err != nil || os.WriteFile(vocabCSV, b, 0o644) != nil {
		t.Fatal(err)
	}
	base := []string{"dprec", "--quiet", "spectral", "--corpus", corpus, "--topics", "2"}
	cases := []struct {
		name string
		args []string
		code int
	}{
		{"missing stop-word file", []string{"--stop-words", filepath.Join(dir, "nope.txt")}, exitUsage},
		{"max-df out of range", []string{"--max-df", "1.5"}, exitUsage},
		// every word is in more than 60% of ... no: "the" is in all 40
		// documents, the others in half: max-df 0.4 leaves nothing.
		{"pruned to nothing", []string{"--max-df", "0.4"}, 1},
		{"vocabulary smaller than K", []string{"--max-vocab", "1"}, 1},
		{"epsilon without method", []string{"--epsilon", "1"}, exitUsage},
		{"private without public vocabulary", []string{"--model", "stm", "--method", "agn", "--epsilon", "1", "--delta", "1e-6"}, exitUsage},
		{"private vocabulary not declared public", []string{"--model", "stm", "--method", "agn", "--epsilon", "1", "--delta", "1e-6", "--vocab", vocab}, exitUsage},
		{"private with data-dependent pruning", []string{"--model", "stm", "--method", "agn", "--epsilon", "1", "--delta", "1e-6", "--vocab", vocab, "--public-vocab", "--min-df", "2"}, exitUsage},
		{"refine with a private method", []string{"--model", "stm", "--method", "agn", "--epsilon", "1", "--delta", "1e-6", "--vocab", vocab, "--public-vocab", "--refine", "3"}, exitUsage},
		{"doc-topics bad extension", []string{"--doc-topics", filepath.Join(dir, "x.txt")}, exitUsage},
		{"--doc-topics is an input", []string{"--vocab", vocabCSV, "--doc-topics", vocabCSV, "--force"}, exitUsage},
		{"no topics", nil, exitUsage},
		{"private with public vocabulary runs", []string{"--model", "stm", "--method", "agn", "--epsilon", "1", "--delta", "1e-6", "--vocab", vocab, "--public-vocab", "--seed", "1"}, 0},
	}
	for _, tc := range cases {
		args := append(append([]string{}, base...), tc.args...)
		if tc.name == "no topics" {
			args = []string{"dprec", "--quiet", "spectral", "--corpus", corpus}
		}
		if code := run(args); code != tc.code {
			t.Errorf("%s: exit %d, want %d", tc.name, code, tc.code)
		}
	}
	if b, _ := os.ReadFile(vocabCSV); !strings.HasPrefix(string(b), "hockey") {
		t.Errorf("an input was overwritten: %q", b)
	}
	// The error for a vocabulary below K names the cause.
	err := spectralCheckVocabK(1, 2, nil)
	if err == nil || !strings.Contains(err.Error(), "fewer than K = 2") {
		t.Errorf("vocabulary below K: %v", err)
	}
}

func TestSpectralInferBadModel(t *testing.T) {
	dir := t.TempDir()
	corpus := spectralTwoThemes(t, dir)
	js := filepath.Join(dir, "m.json")
	if code := run([]string{"dprec", "--quiet", "spectral", "--corpus", corpus, "--topics", "2", "--seed", "1", "--out", js}); code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, m := range []string{js, filepath.Join(dir, "missing.arrow")} {
		if code := run([]string{"dprec", "--quiet", "spectral", "infer", "--model", m, "--corpus", corpus}); code != 1 {
			t.Errorf("%s: exit %d, want 1", m, code)
		}
	}
	if _, err := spectralReadModel(js); err == nil || !strings.Contains(err.Error(), "Arrow") {
		t.Errorf("JSON model: %v", err)
	}
}

func TestSpectralPrintZeroTopic(t *testing.T) {
	var b strings.Builder
	o := spectralOutput{Model: "lda", Method: "lda-output", K: 2, Topics: []spectralTopic{
		{Index: 1, Weight: 1, TopWords: []spectralWordVal{{"hockey", 0.5}}},
		{Index: 2, Weight: 0, Zero: true},
	}}
	spectralPrint(&b, &o)
	if !strings.Contains(b.String(), "zero estimated weight") || strings.Count(b.String(), "hockey") != 1 {
		t.Errorf("output:\n%s", b.String())
	}
}
