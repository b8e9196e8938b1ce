package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/dprec/dprec/models"
)

// TestREADMECoverageTable checks the table of private modes in
// docs/privacy.md (moved there from the README, issue 21) against the
// privacy reports themselves: for every row it trains the mode
// named in the row's first cell on a small log and compares the "covers"
// cell with the report's Covered and NotCovered lists ("everything" when
// every released parameter is covered, "**nothing**" when none is,
// otherwise the covered parameters, in the report's order, before the
// first ";"). Every privacy mode of --privacy has a row. An audit found the
// table claiming coverage the reports denied; this keeps the two in step.
func TestREADMECoverageTable(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "docs", "privacy.md"))
	if err != nil {
		t.Fatal(err)
	}
	const header = "| mode | mechanism | sensitivity | covers (as the report says) |"
	text := string(raw)
	at := strings.Index(text, header)
	if at < 0 {
		t.Fatalf("docs/privacy.md has no coverage table (header %q)", header)
	}
	var rows [][]string
	for _, line := range strings.Split(text[at:], "\n")[2:] {
		if !strings.HasPrefix(line, "|") {
			break
		}
		cells := strings.Split(strings.Trim(line, "|"), " | ")
		if len(cells) != 4 {
			t.Fatalf("row %q has %d cells, want 4", line, len(cells))
		}
		rows = append(rows, cells)
	}
	dir := t.TempDir()
	train, _ := trainTestLog(t, dir)
	code := regexp.MustCompile("`([^`]+)`")
	var modes []string
	for i, row := range rows {
		m := code.FindStringSubmatch(row[0])
		if m == nil {
			t.Fatalf("row %d: no mode in %q", i, row[0])
		}
		words := strings.Fields(m[1])
		modes = append(modes, words[0])
		out := filepath.Join(dir, strings.Join(words, "-")+".arrow")
		args := append([]string{"--quiet", "train", "--data", train, "--epochs", "3", "--epsilon", "2", "--delta", "1e-5", "--seed", "1", "--out", out, "--privacy"}, words...)
		if _, stderr, err := trainTestRun(t, args...); err != nil {
			t.Fatalf("%s: %v\n%s", m[1], err, stderr)
		}
		f, err := models.Load(out)
		if err != nil {
			t.Fatalf("%s: %v", m[1], err)
		}
		rep := f.Privacy
		cell := strings.TrimSpace(row[3])
		switch {
		case rep.FullyCovered() && len(rep.Covered) > 0 && !isBillboard(rep.Covered):
			if !strings.HasPrefix(cell, "everything") {
				t.Errorf("%s: the report covers every parameter %q; docs/privacy.md says %q", m[1], rep.Covered, cell)
			}
		case len(rep.Covered) == 0:
			if !strings.HasPrefix(cell, "**nothing**") {
				t.Errorf("%s: the report covers nothing (not covered: %q); docs/privacy.md says %q", m[1], rep.NotCovered, cell)
			}
		default:
			var want []string
			for _, c := range rep.Covered {
				want = append(want, readmeParamName(c))
			}
			got := strings.Split(strings.SplitN(cell, ";", 2)[0], ", ")
			for k := range got {
				got[k] = strings.TrimSpace(regexp.MustCompile(`\s*\([^)]*\)`).ReplaceAllString(got[k], ""))
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s: the report covers %q (the table names %q); docs/privacy.md says %q", m[1], rep.Covered, want, got)
			}
		}
	}
	for _, mode := range []string{"bias", "als", "input", "gradient", "output"} {
		if !slices.Contains(modes, mode) {
			t.Errorf("--privacy %s has no row in the coverage table of docs/privacy.md", mode)
		}
	}
}

// isBillboard reports whether a coverage list is a billboard model's (no
// user rows released: the table lists what is covered instead of
// "everything").
func isBillboard(covered []string) bool {
	for _, c := range covered {
		if strings.HasPrefix(c, "A (") {
			return false
		}
	}
	return true
}

// readmeParamName is the coverage table's name of a parameter in a report's
// coverage list: the words in brackets before any colon ("B (item rows)"
// is "item rows", "C (time rows: constant ones, data-independent)" is
// "time rows"), else the name itself.
func readmeParamName(s string) string {
	if i := strings.Index(s, "("); i >= 0 {
		s = s[i+1:]
		if j := strings.IndexAny(s, ":)"); j >= 0 {
			s = s[:j]
		}
	}
	return strings.TrimSpace(s)
}
