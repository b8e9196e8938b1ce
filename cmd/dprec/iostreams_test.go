package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// testStreams returns streams over buffers (empty input, no terminal) and
// the buffers behind Out and Err.
func testStreams() (s *iostreams, out, errb *bytes.Buffer) {
	out, errb = new(bytes.Buffer), new(bytes.Buffer)
	return &iostreams{In: strings.NewReader(""), Out: out, Err: errb}, out, errb
}

// discardStreams returns streams for Apps built only to walk their commands
// or parse arguments.
func discardStreams() *iostreams {
	return &iostreams{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard}
}

// swapStdio points os.Stdout and os.Stderr at temporary files until the
// returned function is called, which restores them and returns what was
// written to each. Tests using it must not call t.Parallel.
func swapStdio(t *testing.T) func() (stdout, stderr string) {
	t.Helper()
	dir := t.TempDir()
	fo, err := os.Create(filepath.Join(dir, "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	fe, err := os.Create(filepath.Join(dir, "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	savedOut, savedErr := os.Stdout, os.Stderr
	os.Stdout, os.Stderr = fo, fe
	return func() (string, string) {
		os.Stdout, os.Stderr = savedOut, savedErr
		fo.Close()
		fe.Close()
		o, _ := os.ReadFile(fo.Name())
		e, _ := os.ReadFile(fe.Name())
		return string(o), string(e)
	}
}

// TestCommandsInProcess runs commands with buffers for streams and no
// terminal: their results and notes land in the buffers, and nothing in
// the process's own stdout or stderr. A command writing to os.Stdout or
// os.Stderr directly fails it.
func TestCommandsInProcess(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "r.csv")
	model := filepath.Join(dir, "m.arrow")
	restore := swapStdio(t)
	defer func() {
		if o, e := restore(); o != "" || e != "" {
			t.Errorf("output on the process's streams:\nstdout: %q\nstderr: %q", o, e)
		}
	}()
	for _, tc := range []struct {
		name    string
		args    []string
		in      string // standard input
		errTTY  bool   // the error stream is a terminal
		wantOut string // substring of the output stream ("": empty)
		wantErr string // substring of the error stream ("": empty)
		code    int    // exit code
	}{
		{"synth", []string{"data", "synth", "--users", "30", "--items", "20", "--times", "5", "--ratings", "600", "--seed", "1", "--out", log},
			"", false, "", "wrote 600 ratings", exitOK},
		{"synth --out -", []string{"data", "synth", "--users", "30", "--items", "20", "--times", "5", "--ratings", "600", "--seed", "1", "--out", "-", "-q"},
			"", false, "userId,movieId,rating,timestamp\n", "", exitOK},
		{"convert to -", []string{"data", "convert", log, "-", "--out-format", "tsv", "-q"},
			"", false, "userId\tmovieId\trating\ttimestamp\n", "", exitOK},
		{"stats", []string{"data", "stats", log, "--json", "-q"}, "", false, `"nnz": 600`, "", exitOK},
		// A terminal on the error stream: the progress bars are drawn there.
		{"train", []string{"train", "--data", log, "--epochs", "2", "--seed", "1", "--out", model},
			"", true, "trained cp model", "| (2/2)", exitOK},
		{"train --quiet", []string{"train", "--data", log, "--epochs", "2", "--seed", "1", "--out", model, "--force", "--quiet"},
			"", false, "trained cp model", "", exitOK},
		{"train --privacy", []string{"train", "--data", log, "--privacy", "input", "--epsilon", "1", "--epochs", "1", "--out", filepath.Join(dir, "mi.arrow")},
			"", false, "privacy     input", "implies --validation 0", exitOK},
		{"inspect --json", []string{"inspect", model, "--json"}, "", false, `"format": "dprec-model"`, "", exitOK},
		{"predict stdin", []string{"predict", "-m", model, "--input", "-", "-q"}, "user,item\n1,2\n", false, "user,item,time,prediction,fallback\n1,2,", "", exitOK},
		{"usage error", []string{"train", "--rnak", "5"}, "", false, "", "did you mean --rank?", exitUsage},
	} {
		s, out, errb := testStreams()
		s.In, s.ErrTTY = strings.NewReader(tc.in), tc.errTTY
		code := runWith(append([]string{"dprec"}, tc.args...), s)
		if code != tc.code {
			t.Fatalf("%s: exit %d, want %d\nstderr: %s", tc.name, code, tc.code, errb)
		}
		if tc.wantOut == "" && out.Len() > 0 || !strings.Contains(out.String(), tc.wantOut) {
			t.Errorf("%s: output stream %q, want it to contain %q", tc.name, out, tc.wantOut)
		}
		if tc.wantErr == "" && errb.Len() > 0 || !strings.Contains(errb.String(), tc.wantErr) {
			t.Errorf("%s: error stream %q, want it to contain %q", tc.name, errb, tc.wantErr)
		}
		if strings.HasSuffix(tc.name, "--json") && !json.Valid(out.Bytes()) {
			t.Errorf("%s: not one JSON document: %.200s", tc.name, out)
		}
	}
}
