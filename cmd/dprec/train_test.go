package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/apache/arrow/go/v15/parquet/file"
	"github.com/apache/arrow/go/v15/parquet/pqarrow"
	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/models"
	"github.com/urfave/cli/v2"
)

// trainTestRun runs dprec with args and returns stdout, stderr and the error.
func trainTestRun(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	s, out, errb := testStreams()
	app := newApp(s)
	err := app.Run(append([]string{"dprec"}, args...))
	return out.String(), errb.String(), err
}

// trainTestLog writes a small synthetic rating log (40 users x 25 items,
// rank-1 structure plus noise, daily timestamps over 30 days) split into
// train and test CSV files.
func trainTestLog(t *testing.T, dir string) (train, test string) {
	t.Helper()
	rng := rand.New(rand.NewPCG(3, 4))
	ua, ib := make([]float64, 40), make([]float64, 25)
	for i := range ua {
		ua[i] = rng.NormFloat64()
	}
	for i := range ib {
		ib[i] = rng.NormFloat64()
	}
	var tr, te bytes.Buffer
	tr.WriteString("userId,movieId,rating,timestamp\n")
	te.WriteString("userId,movieId,rating,timestamp\n")
	for u := 0; u < 40; u++ {
		for j := 0; j < 25; j++ {
			if rng.Float64() > 0.6 {
				continue
			}
			r := 3 + ua[u]*ib[j] + 0.2*rng.NormFloat64()
			r = float64(int(min(5, max(1, r))*2)) / 2
			line := fmt.Sprintf("%d,%d,%g,%d\n", 1000+u, 500+j, r, 1600000000+int64(rng.IntN(30))*86400)
			if rng.Float64() < 0.15 {
				te.WriteString(line)
			} else {
				tr.WriteString(line)
			}
		}
	}
	train, test = filepath.Join(dir, "train.csv"), filepath.Join(dir, "test.csv")
	if err := os.WriteFile(train, tr.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(test, te.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return train, test
}

func TestTrainPredictRecommendEval(t *testing.T) {
	dir := t.TempDir()
	train, test := trainTestLog(t, dir)
	model := filepath.Join(dir, "m.arrow")
	out, _, err := trainTestRun(t, "-q", "train", "--data", train, "--rank", "3", "--epochs", "30", "--seed", "7", "--threads", "1", "--out", model, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var sum trainSummary
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if sum.ValidRMSE == nil || *sum.ValidRMSE <= 0 || *sum.ValidRMSE > 1.5 || sum.Privacy.Mode != "none" || len(sum.Warnings) == 0 {
		t.Fatalf("summary %+v", sum)
	}
	// Same seed and threads: bit-identical model file content.
	model2 := filepath.Join(dir, "m2.arrow")
	if _, _, err := trainTestRun(t, "-q", "train", "--data", train, "--rank", "3", "--epochs", "30", "--seed", "7", "--threads", "1", "--out", model2); err != nil {
		t.Fatal(err)
	}
	f1, _ := models.Load(model)
	f2, _ := models.Load(model2)
	for mo := range f1.Model.Factors {
		for i, v := range f1.Model.Factors[mo] {
			if f2.Model.Factors[mo][i] != v {
				t.Fatalf("same seed, different factors")
			}
		}
	}
	// Overwrite refusal, then --force.
	if _, _, err := trainTestRun(t, "-q", "train", "--data", train, "--epochs", "1", "--out", model); !errors.Is(err, data.ErrExists) {
		t.Errorf("overwrite without --force: %v", err)
	}
	if _, _, err := trainTestRun(t, "-q", "train", "--data", train, "--rank", "3", "--epochs", "30", "--seed", "7", "--threads", "1", "--out", model, "--force"); err != nil {
		t.Errorf("--force: %v", err)
	}

	// inspect: text and JSON, with the non-private warning.
	out, _, err = trainTestRun(t, "inspect", model)
	if err != nil || !strings.Contains(out, "cp, ranks [3 3 3]") || !strings.Contains(out, "WARNING: this model was trained WITHOUT differential privacy") {
		t.Errorf("inspect: %v\n%s", err, out)
	}
	out, _, err = trainTestRun(t, "inspect", "--json", model)
	var hdr struct {
		Kind     string   `json:"kind"`
		Dims     []int    `json:"dims"`
		Warnings []string `json:"warnings"`
		Privacy  struct{ Mode string }
	}
	if err != nil || json.Unmarshal([]byte(out), &hdr) != nil || hdr.Kind != "cp" || hdr.Privacy.Mode != "none" || len(hdr.Warnings) != 1 || hdr.Dims[0] == 0 {
		t.Errorf("inspect --json: %v %+v\n%s", err, hdr, out)
	}

	// predict: one known pair agrees with the library; unknown ids fall back.
	p := models.NewPredictor(f2)
	tm := int64(1600000000 + 5*86400)
	want, _ := p.Predict("1003", "507", &tm)
	out, errOut, err := trainTestRun(t, "predict", "-m", model, "--user", "1003", "--item", "507", "--time", strconv.FormatInt(tm, 10))
	rows := trainTestCSV(t, out)
	if err != nil || len(rows) != 2 || rows[1][4] != "none" || strings.Contains(errOut, "WARNING") { // non-private: no warning on every predict
		t.Fatalf("predict: %v %q %q", err, out, errOut)
	}
	if got, _ := strconv.ParseFloat(rows[1][3], 64); fmt.Sprintf("%.6g", got) != fmt.Sprintf("%.6g", want) {
		t.Errorf("predict %v, library %v", got, want)
	}
	out, _, err = trainTestRun(t, "-q", "predict", "-m", model, "--user", "nobody", "--item", "nothing", "--json")
	var pr predictResult
	if err != nil || json.Unmarshal([]byte(out), &pr) != nil || pr.Fallback != "unknown-user+unknown-item+time-averaged" || pr.Prediction < 1 || pr.Prediction > 5 {
		t.Errorf("unknown ids: %v %s", err, out)
	}
	if _, _, err := trainTestRun(t, "-q", "predict", "-m", model, "--user", "nobody", "--item", "507", "--strict"); err == nil {
		t.Error("--strict accepted an unknown user")
	}
	pairs := filepath.Join(dir, "pairs.csv")
	os.WriteFile(pairs, []byte("user,item,time\n1003,507,2020-09-18\nzz,507,\n1003,999999,1\n"), 0o644)
	out, _, err = trainTestRun(t, "-q", "predict", "-m", model, "--input", pairs)
	rows = trainTestCSV(t, out)
	if err != nil || len(rows) != 4 || rows[1][4] != "none" || rows[2][4] != "unknown-user+time-averaged" || rows[3][4] != "unknown-item+time-clamped" {
		t.Errorf("--input: %v\n%s", err, out)
	}
	os.WriteFile(pairs, []byte("1003,507\nbad\n"), 0o644)
	if _, _, err := trainTestRun(t, "-q", "predict", "-m", model, "--input", pairs); err == nil || !strings.Contains(err.Error(), "pairs.csv:2") {
		t.Errorf("bad input row: %v", err)
	}
	// Fold-in: a new user who loves item 507.
	ratings := filepath.Join(dir, "new.csv")
	os.WriteFile(ratings, []byte("item,rating\n507,5\n508,1\n510,4.5\n"), 0o644)
	out, _, err = trainTestRun(t, "-q", "predict", "-m", model, "--ratings", ratings, "--item", "507", "--json")
	if err != nil || json.Unmarshal([]byte(out), &pr) != nil || pr.Prediction < 3 {
		t.Errorf("fold-in predict: %v %s", err, out)
	}

	// recommend: one user, excluding their training items.
	out, _, err = trainTestRun(t, "-q", "recommend", "-m", model, "--user", "1003", "--top", "4", "--exclude-rated", train)
	rows = trainTestCSV(t, out)
	if err != nil || len(rows) != 5 || strings.Join(rows[0], ",") != "user,rank,item,score" {
		t.Fatalf("recommend: %v\n%s", err, out)
	}
	rated := trainTestRated(t, train, "1003")
	for _, r := range rows[1:] {
		if rated[r[2]] {
			t.Errorf("recommended already-rated item %s", r[2])
		}
	}
	out, _, err = trainTestRun(t, "-q", "recommend", "-m", model, "--ratings", ratings, "--top", "3", "--json")
	if err != nil || strings.Contains(out, `"item":"507"`) || !strings.Contains(out, `"items"`) {
		t.Errorf("fold-in recommend: %v %s", err, out)
	}
	// All users, CSV and Parquet.
	recs := filepath.Join(dir, "recs.csv")
	if _, _, err := trainTestRun(t, "-q", "recommend", "-m", model, "--all-users", "--top", "2", "--out", recs); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(recs)
	rows = trainTestCSV(t, string(b))
	if len(rows) != 1+2*len(f1.Dicts[0].Ints()) {
		t.Errorf("all-users CSV has %d rows for %d users", len(rows), len(f1.Dicts[0].Ints()))
	}
	if _, _, err := trainTestRun(t, "-q", "recommend", "-m", model, "--all-users", "--top", "2", "--out", recs); !errors.Is(err, data.ErrExists) {
		t.Errorf("recs overwrite: %v", err)
	}
	pq := filepath.Join(dir, "recs.parquet")
	if _, _, err := trainTestRun(t, "-q", "recommend", "-m", model, "--all-users", "--top", "2", "--out", pq); err != nil {
		t.Fatal(err)
	}
	if n := trainTestParquetRows(t, pq); n != len(rows)-1 {
		t.Errorf("parquet has %d rows, CSV %d", n, len(rows)-1)
	}

	// eval: text and JSON.
	out, _, err = trainTestRun(t, "-q", "eval", "-m", model, "--data", test, "--train", train, "--k", "5", "--threshold", "4", "--json")
	var ev models.EvalResult
	if err != nil || json.Unmarshal([]byte(out), &ev) != nil {
		t.Fatalf("eval: %v %s", err, out)
	}
	if ev.N == 0 || ev.RMSE <= 0 || ev.RMSE > 1.5 || ev.K != 5 || ev.RankedUsers == 0 || ev.ExcludedTrain == 0 || ev.NDCG < 0 || ev.NDCG > 1 {
		t.Errorf("eval %+v", ev)
	}
	out, _, err = trainTestRun(t, "-q", "eval", "-m", model, "--data", test)
	if err != nil || !strings.Contains(out, "RMSE") || !strings.Contains(out, "NDCG@10") {
		t.Errorf("eval text: %v %s", err, out)
	}
}

func TestTrainTucker(t *testing.T) {
	dir := t.TempDir()
	train, _ := trainTestLog(t, dir)
	model := filepath.Join(dir, "t.arrow")
	out, _, err := trainTestRun(t, "-q", "train", "--data", train, "--model", "tucker", "--ranks", "2,3,2", "--epochs", "5", "--time-unit", "week", "--seed", "1", "--out", model)
	if err != nil || !strings.Contains(out, "validation RMSE") {
		t.Fatalf("%v %s", err, out)
	}
	out, _, _ = trainTestRun(t, "inspect", model)
	if !strings.Contains(out, "tucker, ranks [2 3 2]") || !strings.Contains(out, "week buckets") {
		t.Errorf("inspect: %s", out)
	}
	// The Gibbs sampler fits Tucker models (it refused them before).
	out, _, err = trainTestRun(t, "train", "--data", train, "--model", "tucker", "--ranks", "2,3,2", "--solver", "gibbs", "--epochs", "8", "--seed", "1", "--out", filepath.Join(dir, "g.arrow"))
	if err != nil || !regexp.MustCompile(`solver +gibbs`).MatchString(out) {
		t.Fatalf("--solver gibbs --model tucker: %v %s", err, out)
	}
	// A core above completion.MaxGibbsCore (13^3 = 2197) is a usage error
	// naming the flags to change.
	_, _, err = trainTestRun(t, "-q", "train", "--data", train, "--model", "tucker", "--rank", "13", "--solver", "gibbs", "--out", filepath.Join(dir, "g13.arrow"))
	var ec cli.ExitCoder
	if !errors.As(err, &ec) || ec.ExitCode() != exitUsage || !strings.Contains(err.Error(), "lower --rank or --ranks") {
		t.Errorf("--solver gibbs --rank 13 --model tucker: %v", err)
	}
	for _, bad := range [][]string{
		{"--model", "cp", "--ranks", "2,2,2"},
		{"--model", "tucker", "--ranks", "2,2"},
		{"--model", "svd"},
		{"--validation", "1.5"},
		{"--clamp", "5,1"},
	} {
		args := append([]string{"-q", "train", "--data", train, "--epochs", "1", "--out", filepath.Join(dir, "x.arrow")}, bad...)
		if _, _, err := trainTestRun(t, args...); err == nil {
			t.Errorf("train %v accepted", bad)
		}
	}
}

// TestTrainDefault is the README's first command: no data file.
func TestTrainDefault(t *testing.T) {
	if testing.Short() {
		t.Skip("trains on the 100,000-rating embedded log")
	}
	model := filepath.Join(t.TempDir(), "model.arrow")
	out, _, err := trainTestRun(t, "-q", "train", "--epochs", "2", "--rank", "2", "--out", model)
	if err != nil || !strings.Contains(out, "validation RMSE") || !strings.Contains(out, "embedded synthetic log") {
		t.Fatalf("%v %s", err, out)
	}
}

func TestBadModelFiles(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "text.arrow")
	os.WriteFile(text, []byte("not a model"), 0o644)
	for _, cmd := range [][]string{
		{"inspect", text},
		{"predict", "-m", text, "--user", "1", "--item", "2"},
		{"recommend", "-m", text, "--user", "1"},
		{"eval", "-m", text, "--data", text},
		{"inspect", filepath.Join(dir, "missing.arrow")},
	} {
		_, _, err := trainTestRun(t, append([]string{"-q"}, cmd...)...)
		if err == nil || !strings.Contains(err.Error(), dir) {
			t.Errorf("%v: error %v does not name the file", cmd, err)
		}
	}
	// A truncated real model.
	train, _ := trainTestLog(t, dir)
	model := filepath.Join(dir, "m.arrow")
	if _, _, err := trainTestRun(t, "-q", "train", "--data", train, "--epochs", "1", "--rank", "2", "--out", model); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(model)
	os.WriteFile(model, b[:len(b)/2], 0o644)
	if _, _, err := trainTestRun(t, "inspect", model); err == nil || !strings.Contains(err.Error(), "truncated") {
		t.Errorf("truncated model: %v", err)
	}
}

func trainTestCSV(t *testing.T, s string) [][]string {
	t.Helper()
	r := csv.NewReader(strings.NewReader(s))
	r.FieldsPerRecord = -1
	rows, err := r.ReadAll()
	if err != nil {
		t.Fatalf("%v in %q", err, s)
	}
	return rows
}

func trainTestRated(t *testing.T, path, user string) map[string]bool {
	b, _ := os.ReadFile(path)
	out := map[string]bool{}
	for _, r := range trainTestCSV(t, string(b))[1:] {
		if r[0] == user {
			out[r[1]] = true
		}
	}
	return out
}

func trainTestParquetRows(t *testing.T, path string) int {
	t.Helper()
	rd, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	fr, err := pqarrow.NewFileReader(rd, pqarrow.ArrowReadProperties{}, memory.NewGoAllocator())
	if err != nil {
		t.Fatal(err)
	}
	sc, _ := fr.Schema()
	if sc.Field(0).Name != "user" || sc.Field(0).Type.ID().String() != "INT64" || sc.Field(3).Name != "score" {
		t.Errorf("parquet schema %v", sc)
	}
	return int(rd.NumRows())
}
