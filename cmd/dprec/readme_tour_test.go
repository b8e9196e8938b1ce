package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadmeTourScratch: the README's tour first changes into a scratch
// folder, and no path it names starts with a folder of the repository
// (it wrote 40 documents into docs/; issue 24 item 16).
func TestReadmeTourScratch(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Skip("README.md not found:", err)
	}
	s := string(b)
	i, j := strings.Index(s, "<!-- tour -->"), strings.Index(s, "<!-- /tour -->")
	if i < 0 || j < i {
		t.Fatal("README.md has no <!-- tour --> ... <!-- /tour --> section")
	}
	var lines []string
	block := false
	for _, l := range strings.Split(s[i:j], "\n") {
		switch {
		case l == "```sh":
			block = true
		case l == "```":
			block = false
		case block:
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 || !strings.HasPrefix(lines[0], "mkdir -p ") || !strings.Contains(lines[0], "&& cd ") {
		t.Fatalf("the tour does not start in a scratch folder: %q", lines[:min(1, len(lines))])
	}
	ents, err := os.ReadDir("../..")
	if err != nil {
		t.Fatal(err)
	}
	repo := map[string]bool{}
	for _, e := range ents {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			repo[e.Name()] = true
		}
	}
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		for k, tok := range f {
			first, _, slash := strings.Cut(strings.Trim(tok, `"'`), "/")
			named := slash || (k > 0 && (f[k-1] == "-p" || f[k-1] == "cd" || strings.HasPrefix(f[k-1], "--")))
			if named && repo[filepath.Clean(first)] {
				t.Errorf("tour line %q names %s, a folder of the repository", l, tok)
			}
		}
	}
}
