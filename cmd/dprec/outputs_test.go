package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dprec/dprec/data"
)

// TestOutputOntoInput: with --force, no command may write over one of its
// own input files (issue 14 case 10: data convert and data split replaced
// the input; issue 24 items 4 and 5: tune replaced its training log, predict
// its pairs, --ratings or .csv-named model file, recommend its --items
// list); the refusal is a usage error (exit 2; review 7 L3: train gave 1)
// and the input stays byte for byte. TestEveryCommandRefusesOutputOntoInput
// runs every command this way.
func TestOutputOntoInput(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "x.csv")
	if err := os.WriteFile(in, []byte(dataTestCSV), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.csv")
	if err := os.Symlink(in, link); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	other := filepath.Join(dir, "other.csv")
	cases := [][]string{
		{"data", "convert", "--force", in, in},
		{"data", "convert", "--force", "x.csv", "./x.csv"},
		{"data", "convert", "--force", in, link},
		{"data", "split", in, "--method", "random", "--train", in, "--test", other, "--force"},
		{"data", "split", in, "--method", "random", "--train", other, "--test", link, "--force"},
		{"train", "--data", in, "--out", in, "--force", "--rank", "1", "--epochs", "1"},
		{"tune", "--data", in, "--grid", "reg=0.1", "--out", in, "--force"},
		{"tune", "--data", in, "--grid", "reg=0.1", "--out", link, "--force"},
		{"predict", "-m", other, "--input", in, "--out", in, "--force"},
		{"predict", "-m", other, "--ratings", in, "--item", "10", "--out", link, "--force"},
		{"predict", "-m", in, "--user", "1", "--item", "10", "--out", in, "--force"},
		{"recommend", "-m", other, "--all-users", "--items", in, "--out", in, "--force"},
	}
	for _, args := range cases {
		_, err := dataTestRun(t, args...)
		if !errors.Is(err, data.ErrOutputIsInput) {
			t.Errorf("%v: got %v, want ErrOutputIsInput", args, err)
		}
		if code := exitCode(err); code != exitUsage {
			t.Errorf("%v: exit %d, want %d (a usage error, as spectral's)", args, code, exitUsage)
		}
		if b, _ := os.ReadFile(in); string(b) != dataTestCSV {
			t.Fatalf("%v: the input was changed", args)
		}
	}
	// A different output is still written.
	if _, err := dataTestRun(t, "data", "convert", "--force", in, other); err != nil {
		t.Fatal(err)
	}
}

// TestDataSplitSameOutput: data split refuses (exit 2), before it reads
// the input, two parts that name one file (review 7 H1: --train X --test X
// --force kept only the test part, exit 0) and a part that is the input;
// nothing is written and the input stays byte for byte.
func TestDataSplitSameOutput(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "x.csv")
	if err := os.WriteFile(in, []byte(dataTestCSV), 0o644); err != nil {
		t.Fatal(err)
	}
	// An existing output with a symbolic and a hard link to it.
	old := filepath.Join(dir, "old.csv")
	if err := os.WriteFile(old, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(old, filepath.Join(dir, "sym.csv")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(old, filepath.Join(dir, "hard.csv")); err != nil {
		t.Fatal(err)
	}
	// kfold's parts under --out-dir, fold 1's train and test hard-linked.
	kdir := filepath.Join(dir, "k")
	if err := os.Mkdir(kdir, 0o755); err != nil {
		t.Fatal(err)
	}
	ktrain, ktest := filepath.Join(kdir, "x.fold1.train.csv"), filepath.Join(kdir, "x.fold1.test.csv")
	if err := os.WriteFile(ktrain, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(ktrain, ktest); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	split := []string{"data", "split", "x.csv", "--method", "random", "--fraction", "0.3", "--seed", "1"}
	for _, tc := range []struct {
		name   string
		args   []string
		absent string // a path that must still not exist
	}{
		{"same path, --force", []string{"--train", "d.csv", "--test", "d.csv", "--force"}, "d.csv"},
		{"same path", []string{"--train", "d.csv", "--test", "d.csv"}, "d.csv"},
		{"same after Clean", []string{"--train", "d.csv", "--test", "./sub/../d.csv", "--force"}, "d.csv"},
		{"absolute and relative", []string{"--train", filepath.Join(dir, "d.csv"), "--test", "d.csv", "--force"}, "d.csv"},
		{"both stdout", []string{"--train", "-", "--test", "-"}, ""},
		{"symbolic link", []string{"--train", "old.csv", "--test", "sym.csv", "--force"}, ""},
		{"hard link", []string{"--train", "hard.csv", "--test", "old.csv", "--force"}, ""},
		{"train is the input", []string{"--train", "x.csv", "--test", "d.csv", "--force"}, "d.csv"},
		{"test is the input", []string{"--train", "d.csv", "--test", "./x.csv", "--force"}, "d.csv"},
		{"kfold parts hard-linked", []string{"--method", "kfold", "--k", "2", "--out-dir", "k", "--force"}, filepath.Join("k", "x.fold2.test.csv")},
	} {
		out, errs, code := cliRun(t, append(split, tc.args...)...)
		if code != exitUsage {
			t.Errorf("%s: exit %d, want %d\n%s%s", tc.name, code, exitUsage, out, errs)
		}
		if strings.Contains(out, "observations") {
			t.Errorf("%s: parts were written:\n%s", tc.name, out)
		}
		if tc.absent != "" {
			if _, err := os.Lstat(tc.absent); err == nil {
				t.Errorf("%s: %s was written", tc.name, tc.absent)
				os.Remove(tc.absent)
			}
		}
		for p, want := range map[string]string{in: dataTestCSV, old: "old\n", ktrain: "old\n", ktest: "old\n"} {
			if b, _ := os.ReadFile(p); string(b) != want {
				t.Fatalf("%s: %s was changed:\n%s", tc.name, p, b)
			}
		}
	}
	// Distinct outputs are still written.
	if _, errs, code := cliRun(t, append(split, "--train", "a.csv", "--test", "b.csv")...); code != exitOK {
		t.Fatalf("distinct outputs: exit %d\n%s", code, errs)
	}
}
