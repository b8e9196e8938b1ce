package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/ipc"
)

const spectralFix = "../../data/testdata/corpus/"

func TestSpectralCLI(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name string
		args []string
		code int
		// check inspects the --out file when code == 0.
		check func(t *testing.T, o spectralOutput)
	}{
		{"text lda", []string{"--corpus", spectralFix + "text", "--model", "lda", "--topics", "2", "--seed", "1"}, 0,
			func(t *testing.T, o spectralOutput) {
				if len(o.Topics) != 2 || o.Corpus.SkippedEmpty != 1 || o.Privacy.Mode != "none" {
					t.Errorf("%+v", o)
				}
				// the two fixture themes must be separated
				top := func(i int) string {
					var w []string
					for _, x := range o.Topics[i].TopWords[:3] {
						w = append(w, x.Word)
					}
					return strings.Join(w, " ")
				}
				a, b := top(0), top(1)
				foot := func(s string) bool {
					return strings.Contains(s, "team") || strings.Contains(s, "goal") || strings.Contains(s, "match")
				}
				if foot(a) == foot(b) {
					t.Errorf("topics not separated: %q / %q", a, b)
				}
			}},
		{"uci stm", []string{"--corpus", spectralFix + "docword.txt", "--model", "stm", "--topics", "2", "--seed", "1"}, 0,
			func(t *testing.T, o spectralOutput) {
				if o.Corpus.SkippedShort != 1 || o.VocabSize != 5 || len(o.Vocab) != 5 || len(o.Topics[0].Column) != 5 {
					t.Errorf("%+v", o)
				}
			}},
		{"uci gz", []string{"--corpus", spectralFix + "docword.txt.gz", "--vocab", spectralFix + "vocab.txt", "--model", "stm", "--topics", "2", "--seed", "1"}, 0, nil},
		{"mog", []string{"--corpus", spectralFix + "rows.csv", "--model", "mog", "--topics", "1", "--sigma2", "0.01", "--seed", "1"}, 0,
			func(t *testing.T, o spectralOutput) {
				if len(o.Topics[0].Mean) != 2 {
					t.Errorf("%+v", o)
				}
			}},
		{"mog too big", []string{"--corpus", spectralFix + "rows_big.csv", "--model", "mog", "--topics", "1"}, 1, nil},
		{"mog rescale", []string{"--corpus", spectralFix + "rows_big.csv", "--model", "mog", "--topics", "1", "--rescale", "--seed", "2"}, 0,
			func(t *testing.T, o spectralOutput) {
				if o.Scale != 5 {
					t.Errorf("scale %v", o.Scale)
				}
			}},
		{"latin1", []string{"--corpus", spectralFix + "text_latin1", "--topics", "1"}, 1, nil},
		{"unknown word", []string{"--corpus", spectralFix + "docword_badword.txt", "--topics", "1"}, 1, nil},
		{"too many topics", []string{"--corpus", spectralFix + "docword.txt", "--model", "stm", "--topics", "9"}, 1, nil},
		{"bad model", []string{"--corpus", spectralFix + "docword.txt", "--model", "x", "--topics", "2"}, exitUsage, nil},
		{"bad method", []string{"--corpus", spectralFix + "docword.txt", "--method", "x", "--topics", "2"}, exitUsage, nil},
		{"private needs epsilon", []string{"--corpus", spectralFix + "docword.txt", "--method", "agn", "--topics", "2"}, exitUsage, nil},
		{"epsilon without method", []string{"--corpus", spectralFix + "docword.txt", "--epsilon", "1", "--topics", "2"}, exitUsage, nil},
		{"clip flag needs agn-whitened", []string{"--corpus", spectralFix + "docword.txt", "--vocab", spectralFix + "vocab.txt", "--public-vocab",
			"--method", "lda-whitened", "--epsilon", "1", "--delta", "1e-5", "--clip-len", "10", "--topics", "2"}, exitUsage, nil},
		{"negative private vocab", []string{"--corpus", spectralFix + "docword.txt", "--vocab", spectralFix + "vocab.txt", "--public-vocab",
			"--method", "agn-whitened", "--epsilon", "1", "--delta", "1e-5", "--private-vocab", "-1", "--topics", "2"}, exitUsage, nil},
		{"clip-len in (0,1]", []string{"--corpus", spectralFix + "docword.txt", "--vocab", spectralFix + "vocab.txt", "--public-vocab",
			"--method", "agn-whitened", "--epsilon", "1", "--delta", "1e-5", "--clip-len", "0.5", "--topics", "2"}, exitUsage, nil},
		{"private vocab too large", []string{"--corpus", spectralFix + "docword.txt", "--vocab", spectralFix + "vocab.txt", "--public-vocab",
			"--method", "agn-whitened", "--epsilon", "1", "--delta", "1e-5", "--private-vocab", "3001", "--topics", "2"}, exitUsage, nil},
		{"bad budget split", []string{"--corpus", spectralFix + "docword.txt", "--vocab", spectralFix + "vocab.txt", "--public-vocab",
			"--method", "agn-whitened", "--epsilon", "1", "--delta", "1e-5", "--budget-split", "0.5,0.5", "--topics", "2"}, exitUsage, nil},
		{"agn-whitened stm split", []string{"--corpus", spectralFix + "docword.txt", "--vocab", spectralFix + "vocab.txt", "--public-vocab", "--model", "stm",
			"--method", "agn-whitened", "--epsilon", "2", "--delta", "1e-5", "--private-vocab", "4", "--budget-split", "0.2,0.5,0.3", "--topics", "2", "--seed", "1"}, 0,
			func(t *testing.T, o spectralOutput) {
				if r := o.Privacy.Releases; len(r) != 3 || math.Abs(r[0].Epsilon-0.4) > 1e-12 || math.Abs(r[1].Epsilon-1) > 1e-12 || math.Abs(r[2].Epsilon-0.6) > 1e-12 {
					t.Errorf("%+v", r)
				}
			}},
		{"agn-whitened lda", []string{"--corpus", spectralFix + "docword.txt", "--vocab", spectralFix + "vocab.txt", "--public-vocab", "--model", "lda",
			"--method", "agn-whitened", "--epsilon", "1", "--delta", "1e-5", "--private-vocab", "4", "--clip-len", "5", "--topics", "2", "--seed", "1"}, 0,
			func(t *testing.T, o spectralOutput) {
				p := o.Privacy
				if o.Method != "agn-whitened" || len(p.Releases) != 6 || p.Epsilon < 1-1e-9 || p.Epsilon > 1+1e-9 || p.Randomness == "" {
					t.Errorf("%+v", p)
				}
			}},
	}
	for i, tc := range cases {
		out := filepath.Join(dir, tc.name+".json")
		args := append([]string{"dprec", "--quiet", "spectral", "--out", out}, tc.args...)
		_ = i
		if code := run(args); code != tc.code {
			t.Errorf("%s: exit %d, want %d", tc.name, code, tc.code)
			continue
		}
		if tc.code != 0 || tc.check == nil {
			continue
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		var o spectralOutput
		if err := json.Unmarshal(b, &o); err != nil {
			t.Fatal(err)
		}
		tc.check(t, o)
	}
	// --out refuses to overwrite without --force.
	out := filepath.Join(dir, "text lda.json")
	if code := run([]string{"dprec", "--quiet", "spectral", "--out", out, "--corpus", spectralFix + "text", "--topics", "2"}); code == 0 {
		t.Error("overwrote --out without --force")
	}
	if code := run([]string{"dprec", "--quiet", "spectral", "--force", "--out", out, "--corpus", spectralFix + "text", "--topics", "2"}); code != 0 {
		t.Error("--force did not overwrite")
	}
}

func TestSpectralArrowOut(t *testing.T) {
	out := filepath.Join(t.TempDir(), "r.arrow")
	if code := run([]string{"dprec", "--quiet", "spectral", "--out", out, "--corpus", spectralFix + "docword.txt", "--model", "stm", "--topics", "2", "--seed", "3"}); code != 0 {
		t.Fatalf("exit %d", code)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := ipc.NewFileReader(f)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rec, err := r.Record(0)
	if err != nil {
		t.Fatal(err)
	}
	if rec.NumRows() != 2*5 || rec.NumCols() != 4 {
		t.Fatalf("rows %d cols %d", rec.NumRows(), rec.NumCols())
	}
	md := r.Schema().Metadata()
	if i := md.FindKey("dprec.privacy"); i < 0 || !strings.Contains(md.Values()[i], `"mode":"none"`) {
		t.Fatalf("metadata %v", md)
	}
	if w := rec.Column(2).(*array.String).Value(0); w != "bank" {
		t.Fatalf("first word %q", w)
	}
}
