package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dprec/dprec/cmd/dprec/internal/experiment/otdexp"
	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/otd"
	"github.com/dprec/dprec/perturb"
)

// TestSpectralRunFunctions calls the run functions of spectral, spectral
// infer, spectral eval and experiment spectral with hand-built options and
// buffer streams: no *cli.Context, no flag parsing, no terminal. "-" as
// the --doc-topics or infer --out path goes to the output stream.
func TestSpectralRunFunctions(t *testing.T) {
	dir := t.TempDir()
	corpus := spectralTwoThemes(t, dir)
	model := filepath.Join(dir, "m.arrow")
	quiet := globalOptions{Quiet: true}

	// spectral: a refined lda fit, the full result in model, the
	// documents' topic proportions on Out before the result.
	s, out, errb := testStreams()
	err := spectralRun(&spectralOptions{globalOptions: quiet, Seed: 1, Seeded: true, Corpus: corpus,
		Model: otd.ModelLDA, Method: otd.MethodNonPrivate, Est: otd.AllTriples, K: 2, Refine: 5, RefineSet: true,
		Threads: 1, Background: true, Alpha0: 1, TopWords: 3, Out: model, DocTopics: "-"}, s)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"doc,topic_1,topic_2\n", "model lda, method nonprivate, K = 2", "refined by 5 variational EM sweeps", "privacy: mode none"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("spectral: output %.400q lacks %q", out, w)
		}
	}
	if errb.Len() > 0 {
		t.Errorf("spectral --quiet wrote on the error stream: %q", errb)
	}
	if _, err := os.Stat(filepath.Join(dir, "-")); err == nil {
		t.Error(`spectral wrote a file named "-"`)
	}

	// Not quiet: the corpus summary and the default refinement's note go
	// to Err.
	s, out, errb = testStreams()
	err = spectralRun(&spectralOptions{Seed: 1, Seeded: true, Corpus: corpus, Model: otd.ModelSTM, Method: otd.MethodNonPrivate,
		K: 2, Refine: 2, RefineDefault: true, Threads: 1, Alpha0: 1, TopWords: 2}, s)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "model stm, method nonprivate, K = 2") {
		t.Errorf("spectral stm: output %.300q", out)
	}
	for _, w := range []string{"refined with 2 sweeps of variational EM", "corpus: 40 documents", "pruning: removed 1 stop words"} {
		if !strings.Contains(errb.String(), w) {
			t.Errorf("spectral: error stream %q lacks %q", errb, w)
		}
	}

	// A bad pruning value is still refused by the run (as the flags were).
	s, _, _ = testStreams()
	if err := spectralRun(&spectralOptions{globalOptions: quiet, Corpus: corpus, Model: otd.ModelLDA, K: 2, TopWords: 1,
		Prune: data.PruneOptions{MinCount: -1}}, s); err == nil || !strings.Contains(err.Error(), "must be non-negative") {
		t.Errorf("negative --min-count: %v", err)
	}

	// spectral infer: "-" is CSV on Out.
	s, out, errb = testStreams()
	if err := spectralInferRun(&spectralInferOptions{Model: model, Corpus: corpus, Out: "-", Threads: 1}, s); err != nil {
		t.Fatal(err)
	}
	if rows := strings.Count(out.String(), "\n"); !strings.HasPrefix(out.String(), "doc,topic_1,topic_2\n") || rows != 41 {
		t.Errorf("infer: %d lines, output %.200q", rows, out)
	}
	if !strings.Contains(errb.String(), "inferred 40 documents") {
		t.Errorf("infer: error stream %q", errb)
	}

	// spectral eval.
	s, out, _ = testStreams()
	if err := spectralEvalRun(&spectralEvalOptions{globalOptions: quiet, Model: model, Corpus: corpus,
		Labels: filepath.Join(dir, "labels.txt"), TopWords: 3, Random: true, RandomDraws: 2, Seed: 1, JSON: true}, s); err != nil {
		t.Fatal(err)
	}
	var ev spectralEvalOutput
	if err := json.Unmarshal(out.Bytes(), &ev); err != nil || ev.ScoredTopics != 2 || ev.NMI == nil || *ev.NMI < 0.99 || ev.RandomDraws != 2 {
		t.Errorf("eval: %v, %.300s", err, out)
	}

	// experiment spectral: one tiny table pair.
	s, out, errb = testStreams()
	cfg := otdexp.Config{Settings: []otdexp.Setting{{D: 10, K: 5}}, Epsilons: []float64{2}, FixedN: 2000, Ns: []int{2000},
		FixedEpsilon: 1, Delta: 0.01, Runs: 1, Split: 0.5, Calibration: perturb.Analytic, Seed: 1}
	expDir := filepath.Join(dir, "exp")
	if err := expSpectralRun(&expSpectralOptions{Config: cfg, Models: []string{"stm"}, Out: expDir}, s); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "stm_D10_K5_vs_epsilon (N = 2000") || !strings.Contains(errb.String(), "experiment noise is seeded (seed 1)") {
		t.Errorf("experiment spectral: output %.300q, error stream %.300q", out, errb)
	}
	if _, err := os.Stat(filepath.Join(expDir, "stm_D10_K5_vs_n.csv")); err != nil {
		t.Error(err)
	}
}
