package main

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/dprec/dprec/data"
)

// TestOutputOntoInput: with --force, no command may write over one of its
// own input files (issue 14 case 10: data convert and data split replaced
// the input); the input stays byte for byte.
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
	}
	for _, args := range cases {
		_, err := dataTestRun(t, args...)
		if !errors.Is(err, data.ErrOutputIsInput) {
			t.Errorf("%v: got %v, want ErrOutputIsInput", args, err)
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
