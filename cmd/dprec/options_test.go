package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dprec/dprec/cmd/dprec/internal/experiment/completionexp"
	"github.com/dprec/dprec/completion"
	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/models"
	"github.com/dprec/dprec/perturb"
)

// TestRunFunctions calls the run functions of eval, predict, recommend, tune,
// pca, similar, data synth, data stats, data split, data convert, inspect,
// export and experiment completion-speed
// with hand-built options and buffer streams: no *cli.Context, no flag
// parsing, no terminal.
func TestRunFunctions(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "r.csv")
	model := filepath.Join(dir, "m.arrow")
	for _, args := range [][]string{
		{"data", "synth", "--users", "30", "--items", "20", "--times", "5", "--ratings", "600", "--seed", "1", "--out", log},
		{"train", "--data", log, "--epochs", "2", "--seed", "1", "--out", model},
	} {
		s, _, errb := testStreams()
		if code := runWith(append([]string{"dprec", "-q"}, args...), s); code != exitOK {
			t.Fatalf("%v: exit %d: %s", args, code, errb)
		}
	}
	quiet := globalOptions{Quiet: true}
	rows := filepath.Join(dir, "rows.csv")
	var b strings.Builder
	for i := range 60 { // three clusters on the first three axes, norm about 0.6
		fmt.Fprintf(&b, "%g,%g,%g\n", 0.6*float64(i%3/2), 0.6*float64(i%3%2), 0.01*float64(i%7))
	}
	if err := os.WriteFile(rows, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		in      string
		run     func(*iostreams) error
		wantOut []string // substrings of the output stream
		wantErr string   // substring of the error stream ("": empty)
	}{
		{"eval json", "", func(s *iostreams) error {
			return evalRun(&evalOptions{globalOptions: quiet, Model: model, Data: log, Eval: models.EvalOptions{K: 5, Threshold: 4}, JSON: true}, s)
		}, []string{`"rmse":`, `"ranked_users": 30`}, ""},
		{"eval text, notes on Err", "", func(s *iostreams) error {
			return evalRun(&evalOptions{Model: model, Data: log, Eval: models.EvalOptions{K: 5, Threshold: 4}}, s)
		}, []string{"test ratings   600\n", "precision@5"}, "header row (detected"},
		{"predict one pair", "", func(s *iostreams) error {
			return predictRun(&predictOptions{globalOptions: quiet, Model: model, User: "1", Item: "2", Format: "json"}, s)
		}, []string{`"user":"1","item":"2"`}, ""},
		{"predict pairs from In", "user,item\n1,2\n3,4\n", func(s *iostreams) error {
			return predictRun(&predictOptions{globalOptions: quiet, Model: model, Input: "-", Format: "csv"}, s)
		}, []string{"user,item,time,prediction,fallback\n1,2,", "\n3,4,"}, ""},
		{"predict rating log", "", func(s *iostreams) error {
			return predictRun(&predictOptions{globalOptions: quiet, Model: model, Input: log, Format: "jsonl"}, s)
		}, []string{`"rating":`}, ""},
		{"recommend user", "", func(s *iostreams) error {
			return recommendRun(&recommendOptions{globalOptions: quiet, Model: model, User: "1", Top: 3}, s)
		}, []string{"user,rank,item,score\n1,1,", "\n1,3,"}, ""},
		{"recommend all users json", "", func(s *iostreams) error {
			return recommendRun(&recommendOptions{globalOptions: quiet, Model: model, AllUsers: true, Top: 2, JSON: true}, s)
		}, []string{`"user":"1"`}, ""},
		{"tune json", "", func(s *iostreams) error {
			grid, err := completion.ParseGrid("reg=0.1,0.2")
			if err != nil {
				return err
			}
			return tuneRun(&tuneOptions{globalOptions: quiet, Data: log, Seed: 1, Seeded: true, JSON: true,
				Config: completion.TuneConfig{Kind: decomposition.CP, Rank: 2, Bias: true, Grid: grid, Fraction: 0.1,
					Base: completion.Settings{Solver: completion.SolverALS, Epochs: 2}}}, s)
		}, []string{`"points": [`, `"reg": "0.1"`}, ""},
		{"pca json", "", func(s *iostreams) error {
			return pcaRun(&pcaOptions{globalOptions: quiet, Files: []string{rows}, Sites: 3, RowScale: 1, K: 2, Epsilon: 1, Delta: 1e-5,
				Calibration: perturb.Analytic, Seed: 1, Seeded: true, JSON: true}, s)
		}, []string{`"sites": 3`, `"k": 2`}, ""},
		{"similar", "", func(s *iostreams) error {
			return similarRun(&similarOptions{globalOptions: quiet, Model: model, Item: "2", Top: 3}, s)
		}, []string{"id,rank,similar,cosine\n2,1,", "\n2,3,"}, ""},
		{"data synth to Out", "", func(s *iostreams) error {
			so := data.DefaultSynthOptions()
			so.Users, so.Items, so.Times, so.Ratings = 10, 8, 0, 40
			return datasynthRun(&datasynthOptions{globalOptions: quiet, Synth: so, Seed: 2, Out: "-"}, s)
		}, []string{"userId,movieId,rating\n"}, ""},
		{"data stats json", "", func(s *iostreams) error {
			return datastatsRun(&datastatsOptions{globalOptions: quiet, File: log, JSON: true}, s)
		}, []string{`"nnz": 600`}, ""},
		{"data split", "", func(s *iostreams) error {
			return datasplitRun(&datasplitOptions{globalOptions: quiet, File: log, Method: "kfold", K: 2, OutDir: dir, Seed: 1, SeedGiven: true}, s)
		}, []string{"train       300 observations  " + filepath.Join(dir, "r.fold1.train.csv")}, ""},
		{"data convert to Out", "", func(s *iostreams) error {
			return dataconvertRun(&dataconvertOptions{globalOptions: quiet, In: log, Out: "-", OutFormat: data.FormatTSV}, s)
		}, []string{"userId\tmovieId\trating\ttimestamp\n"}, ""},
		{"inspect", "", func(s *iostreams) error {
			return inspectRun(&inspectOptions{Model: model}, s)
		}, []string{"WARNING: this model was trained WITHOUT differential privacy"}, ""},
		{"experiment completion-speed", "", func(s *iostreams) error {
			cfg := completionexp.SpeedConfig{Sizes: []completionexp.SpeedSize{{Name: "t", Dims: []int{12, 10, 4}, NNZ: 200}}, Threads: []int{1}, Epochs: 1}
			return expCompletionSpeedRun(&expCompletionSpeedOptions{Config: cfg, Seed: 1}, s)
		}, []string{"size,dims,nnz,kind,rank,threads,epochs,seconds_per_epoch,entries_per_second,train_rmse\nt,12x10x4,200,cp,10,1,1,"}, "t threads 1: "},
		{"export", "", func(s *iostreams) error {
			return exportRun(&exportOptions{Model: model, Dir: filepath.Join(dir, "export")}, s)
		}, nil, "items.parquet"},
	} {
		s, out, errb := testStreams()
		s.In = strings.NewReader(tc.in)
		if err := tc.run(s); err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		for _, w := range tc.wantOut {
			if !strings.Contains(out.String(), w) {
				t.Errorf("%s: output %.300q lacks %q", tc.name, out, w)
			}
		}
		if strings.Contains(tc.name, "json") && !strings.Contains(tc.name, "jsonl") && !json.Valid(out.Bytes()) {
			t.Errorf("%s: not one JSON document: %.200s", tc.name, out)
		}
		if tc.wantErr == "" && errb.Len() > 0 || !strings.Contains(errb.String(), tc.wantErr) {
			t.Errorf("%s: error stream %q, want it to contain %q", tc.name, errb, tc.wantErr)
		}
	}
}
