package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dprec/dprec/data"
)

// dataTestRun runs dprec with args and returns stdout and the error.
func dataTestRun(t *testing.T, args ...string) (string, error) {
	t.Helper()
	s, out, _ := testStreams()
	app := newApp(s)
	err := app.Run(append([]string{"dprec", "--quiet"}, args...))
	return out.String(), err
}

const dataTestCSV = "userId,movieId,rating,timestamp\n" +
	"1,10,4,1000000000\n1,20,3.5,1000086400\n1,30,5,1000172800\n1,40,2,1000259200\n" +
	"2,10,1,1000000000\n2,20,2.5,1000086400\n2,30,3,1000172800\n2,40,4,1000259200\n" +
	"3,10,5,1000000000\n"

func TestDataCommands(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "r.csv")
	os.WriteFile(in, []byte(dataTestCSV), 0o644)

	out, err := dataTestRun(t, "data", "stats", in)
	if err != nil || !strings.Contains(out, "observations  9") || !strings.Contains(out, "dims          3 x 4 x 4") {
		t.Fatalf("stats: %v\n%s", err, out)
	}
	out, err = dataTestRun(t, "data", "stats", in, "--json", "--time-unit", "none")
	var js struct {
		Stats data.Stats `json:"stats"`
	}
	if err != nil || json.Unmarshal([]byte(out), &js) != nil || js.Stats.NNZ != 9 || js.Stats.Order != 2 {
		t.Fatalf("stats --json --time-unit none: %v\n%s", err, out)
	}

	// Flags after the file; per-user k=2 holds out 2 of users 1 and 2.
	out, err = dataTestRun(t, "data", "split", in, "--method", "user", "--per-user-k", "2", "--out-dir", dir, "--seed", "3")
	if err != nil {
		t.Fatalf("split: %v", err)
	}
	train, _, err := data.Load(filepath.Join(dir, "r.train.csv"), data.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	test, _, err := data.Load(filepath.Join(dir, "r.test.csv"), data.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if train.NNZ() != 5 || test.NNZ() != 4 {
		t.Errorf("split sizes %d + %d, want 5 + 4\n%s", train.NNZ(), test.NNZ(), out)
	}
	// A missing --out-dir is made; one under a file is refused by name.
	nested := filepath.Join(dir, "new", "parts")
	if _, err := dataTestRun(t, "data", "split", in, "--method", "user", "--per-user-k", "2", "--out-dir", nested); err != nil {
		t.Errorf("split into a new folder: %v", err)
	} else if _, err := os.Stat(filepath.Join(nested, "r.test.csv")); err != nil {
		t.Error(err)
	}
	if _, err := dataTestRun(t, "data", "split", in, "--method", "user", "--per-user-k", "2", "--out-dir", filepath.Join(in, "x")); err == nil || !strings.Contains(err.Error(), "--out-dir") {
		t.Errorf("split into a folder under a file: %v", err)
	}
	if _, err := dataTestRun(t, "data", "split", in, "--method", "user", "--per-user-k", "2", "--out-dir", dir); !errors.Is(err, data.ErrExists) {
		t.Errorf("split over existing files: %v", err)
	}
	if _, err := dataTestRun(t, "data", "split", in, "--method", "kfold", "--k", "3", "--out-dir", dir, "--out-format", "tsv"); err != nil {
		t.Errorf("kfold: %v", err)
	}
	for f := 1; f <= 3; f++ {
		if _, err := os.Stat(filepath.Join(dir, "r.fold"+string(rune('0'+f))+".test.tsv")); err != nil {
			t.Error(err)
		}
	}
	if _, err := dataTestRun(t, "data", "split", in, "--method", "time", "--cutoff", "2001-09-10", "--train", filepath.Join(dir, "a.dat"), "--test", filepath.Join(dir, "b.dat")); err != nil {
		t.Errorf("time cutoff split: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "b.dat")); strings.Count(string(b), "\n") != 6 || !strings.HasPrefix(string(b), "1::20::3.5::1000086400\n") {
		t.Errorf("cutoff test part:\n%s", b)
	}

	// convert keeps everything, and refuses to overwrite.
	out2 := filepath.Join(dir, "copy.csv")
	if _, err := dataTestRun(t, "data", "convert", in, out2); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(out2); string(b) != strings.ReplaceAll(dataTestCSV, ",4,", ",4,") {
		t.Errorf("converted copy differs:\n%s", b)
	}
	if _, err := dataTestRun(t, "data", "convert", in, out2); !errors.Is(err, data.ErrExists) {
		t.Errorf("convert over an existing file: %v", err)
	}

	bad := filepath.Join(dir, "bad.csv")
	os.WriteFile(bad, []byte("userId,movieId,rating\n1,2,x\n"), 0o644)
	if _, err := dataTestRun(t, "data", "stats", bad); err == nil || !strings.Contains(err.Error(), "bad.csv:2: column \"rating\"") {
		t.Errorf("bad file: %v", err)
	}
	if _, err := dataTestRun(t, "data", "stats", bad, "--columns", "user,item,bogus"); err == nil || !strings.Contains(err.Error(), "unknown role") {
		t.Errorf("bad --columns: %v", err)
	}
}
