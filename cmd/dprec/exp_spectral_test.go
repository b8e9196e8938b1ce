package main

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"testing"
)

func TestExpSpectralQuick(t *testing.T) {
	dir := t.TempDir()
	if code := run([]string{"dprec", "--quiet", "experiment", "spectral", "--quick", "--runs", "1", "--model", "stm", "--out", dir}); code != exitOK {
		t.Fatalf("exit code %d", code)
	}
	for _, name := range []string{"stm_D10_K5_vs_epsilon", "stm_D10_K5_vs_n"} {
		f, err := os.Open(filepath.Join(dir, name+".csv"))
		if err != nil {
			t.Fatal(err)
		}
		rows, err := csv.NewReader(f).ReadAll()
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		// header + 5 methods x grid points (3 epsilons or 2 sizes)
		want := 1 + 5*3
		if name == "stm_D10_K5_vs_n" {
			want = 1 + 5*2
		}
		if len(rows) != want || rows[0][1] != "method" {
			t.Errorf("%s: %d rows, header %v", name, len(rows), rows[0])
		}
		if _, err := os.Stat(filepath.Join(dir, name+".png")); err != nil {
			t.Error(err)
		}
	}
	// A second run without --force must refuse to overwrite.
	if code := run([]string{"dprec", "--quiet", "experiment", "spectral", "--quick", "--runs", "1", "--model", "stm", "--out", dir}); code == exitOK {
		t.Error("overwrote existing files without --force")
	}
	for _, args := range [][]string{
		{"--model", "hmm"},
		{"--epsilons", "1,-2"},
		{"--ns", "10,2.5"},
		{"--calibration", "fancy"},
	} {
		a := append([]string{"dprec", "--quiet", "experiment", "spectral", "--quick", "--out", t.TempDir()}, args...)
		if code := run(a); code == exitOK {
			t.Errorf("%v accepted", args)
		}
	}
}
