package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// cliRun runs dprec as the binary does and returns stdout, stderr and the
// exit code.
func cliRun(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	s, out, errb := testStreams()
	code := runWith(append([]string{"dprec"}, args...), s)
	return out.String(), errb.String(), code
}

func TestNormalizeArgs(t *testing.T) {
	for _, tc := range []struct {
		in, want string
	}{
		// Global flags before, after the subcommand and after positionals.
		{"--quiet inspect m.arrow", "--quiet inspect m.arrow"},
		{"inspect m.arrow --quiet", "--quiet inspect m.arrow"},
		{"inspect m.arrow --json", "inspect --json m.arrow"},
		{"--json inspect m.arrow", "inspect --json m.arrow"},
		{"inspect --json m.arrow -q --progress", "-q --progress inspect --json m.arrow"},
		// A command's own --seed wins over the global one.
		{"train --seed 3 --quiet", "--quiet train --seed 3"},
		{"--seed 3 train", "--seed 3 train"}, // seedOf reads either
		// The global --seed stays global for a command without its own.
		{"predict -m m.arrow --seed=4 --user 1 --item 2", "--seed=4 predict -m m.arrow --user 1 --item 2"},
		// Nested groups; values are never taken for commands or flags.
		{"data split r.csv --method random --train tr.csv -q", "-q data split --method random --train tr.csv r.csv"},
		{"data stats r.csv --columns user,item,rating --json", "data stats --columns user,item,rating --json r.csv"},
		{"train --data data --out train", "train --data data --out train"},
		// "--" ends flags; a later dash-led positional keeps its "--".
		{"data stats --json -- -odd.csv", "data stats --json -- -odd.csv"},
		{"data convert a.csv - --force", "data convert --force a.csv -"},
		// Help and version are left to urfave.
		{"train --help", "train --help"},
		{"help train", "train --help"},
		{"help data split", "data split --help"},
		{"data help split", "data split --help"},
		{"help", "--help"},
		{"inspect --version", "--version inspect"},
	} {
		app := newApp(discardStreams())
		l, err := normalizeArgs(app, append([]string{"dprec"}, strings.Fields(tc.in)...))
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if got := strings.Join(l.args[1:], " "); got != tc.want {
			t.Errorf("%q: got %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestUsageErrors checks the exit-code scheme and the shape of usage
// errors: code 2, at most 3 lines on stderr, nothing on stdout, the
// suggestion and the pointer to the command's help. --data names a file
// that does not exist: a flag check that ran after loading would report
// the missing file (code 1) instead.
func TestUsageErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "absent.csv")
	for _, tc := range []struct {
		args string
		want []string
	}{
		{"trian", []string{`unknown command "trian"`, `did you mean "train"?`, "see `dprec --help`"}},
		{"data splt r.csv", []string{`unknown command "splt"`, `did you mean "split"?`, "see `dprec data --help`"}},
		{"train --rnak 5", []string{"unknown flag --rnak", "did you mean --rank?", "see `dprec train --help`"}},
		{"train --data " + missing + " --rnak 5", []string{"did you mean --rank?"}},
		{"inspect m.arrow --jsno", []string{"did you mean --json?", "see `dprec inspect --help`"}},
		{"train --data " + missing + " --model cpp", []string{`--model "cpp"`, `did you mean "cp"?`}},
		{"train --data " + missing + " --time-unit weeks", []string{"--time-unit", `"weeks"`}},
		{"train --data " + missing + " --solver gibs", []string{`did you mean "gibbs"?`}},
		{"train --data " + missing + " --solver als --burn-in 5", []string{"--burn-in is for --solver gibbs"}},
		{"train --data " + missing + " --epochs 20 --burn-in 20", []string{"--burn-in 20: must be below --epochs 20"}},
		{"tune --data " + missing + " --grid reg=0.1 --solver sdg", []string{`did you mean "sgd"?`}},
		{"train --data " + missing + " --rank 0", []string{"--rank 0: must be positive"}},
		{"train --data " + missing + " --rank abc", []string{`invalid value "abc" for --rank`}},
		{"train --data " + missing + " --privacy inptu --epsilon 1 --validation 0", []string{`did you mean "input"?`}},
		{"train --data " + missing + " --privacy input --validation 0", []string{"needs --epsilon"}},
		{"train --data " + missing + " --epsilon 1", []string{"--epsilon needs --privacy"}},
		{"train --data " + missing + " --quiet --rank", []string{"flag --rank needs a value"}},
		{"data stats " + missing + " --duplicates sometimes", []string{"--duplicates"}},
		{"predict --user 1 --item 2", []string{"missing required flag --model"}},
		{"predict -m " + missing + " --user 1 --item 2 --time yesterday", []string{"--time"}},
		{"recommend -m " + missing + " --user 1 --top 0", []string{"--top 0"}},
		{"spectral --corpus " + missing + " --topics 3 --model lad", []string{`did you mean "lda"?`}},
		{"spectral --corpus " + missing + " --topics 3 --method agm", []string{`did you mean "agn"?`}},
		{"inspect", []string{"dprec inspect MODEL", "see `dprec inspect --help`"}},
		{"help trian", []string{`did you mean "train"?`}},
		{"cape aggregate --keys " + missing + " --sites 3 --dim 4 --job pcaa", []string{`did you mean "pca"?`}},
		{"cape site --keys " + missing + " --id 1 --epsilon 0", []string{"--epsilon 0"}},
		{"experiment completion-synthetic --kind cpp", []string{`did you mean "cp"?`}},
		{"recommend -m " + missing + " --all-users --out recs.json", []string{"want a .csv or .parquet"}},
		{"train --data " + missing + " --bias false", []string{`unexpected argument "false"`, "write --bias=false"}},
		{"train tr.csv", []string{`unexpected argument "tr.csv"`}},
		{"help data splt", []string{`did you mean "split"?`}},
		{"train --data " + missing + " --bias=maybe", []string{`invalid value "maybe" for --bias`}},
		{"predict -m " + missing + " --user 1", []string{"give --user and --item"}},
		{"recommend -m " + missing, []string{"give --user ID"}},
		{"recommend -m " + missing + " --user 1 --out r.csv", []string{"--out is for --all-users"}},
		{"spectral --corpus " + missing + " --topics 3 --epsilon 1", []string{"give a private --method"}},
		{"pca --data " + missing + " --data " + missing + " --k 2 --epsilon -1", []string{"--epsilon -1"}},
		{"data split " + missing + " --fraction 2", []string{"--fraction 2"}},
		{"data synth --out " + missing + " --kind cpp", []string{`did you mean "cp"?`}},
	} {
		out, errs, code := cliRun(t, strings.Fields(tc.args)...)
		if code != exitUsage {
			t.Errorf("%q: exit code %d, want %d (stderr %q)", tc.args, code, exitUsage, errs)
			continue
		}
		if out != "" {
			t.Errorf("%q: wrote %q on stdout", tc.args, out)
		}
		if n := strings.Count(errs, "\n"); n > 3 {
			t.Errorf("%q: %d lines on stderr:\n%s", tc.args, n, errs)
		}
		for _, w := range tc.want {
			if !strings.Contains(errs, w) {
				t.Errorf("%q: stderr %q lacks %q", tc.args, errs, w)
			}
		}
	}
}

func TestRuntimeErrorExitCode(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "absent.arrow")
	_, errs, code := cliRun(t, "inspect", missing, "--json")
	if code != exitError || !strings.Contains(errs, "absent.arrow") || strings.Contains(errs, "--help") {
		t.Fatalf("exit %d, stderr %q: want 1 and the file named, no help pointer", code, errs)
	}
}

func TestVersion(t *testing.T) {
	out, _, code := cliRun(t, "--version")
	if code != exitOK || !strings.HasPrefix(out, "dprec version ") {
		t.Fatalf("exit %d, stdout %q", code, out)
	}
}

func TestSuggest(t *testing.T) {
	cands := []string{"train", "predict", "recommend", "rank", "ranks", "json", "time-unit"}
	for _, tc := range []struct{ in, want string }{
		{"trian", "train"}, {"rnak", "rank"}, {"predcit", "predict"}, {"recomend", "recommend"},
		{"jsno", "json"}, {"time-uint", "time-unit"}, {"rec", "recommend"}, {"xyz", ""}, {"zzzzzzzz", ""},
	} {
		if got := suggest(tc.in, cands); got != tc.want {
			t.Errorf("suggest(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if !slices.Equal([]int{editDistance("ab", "ba"), editDistance("", "abc"), editDistance("kitten", "sitting")}, []int{1, 3, 3}) {
		t.Error("editDistance")
	}
}

// TestCommandExamples: every command has an example in its help, and the
// example parses: known commands and flags, values present, required
// flags given.
func TestCommandExamples(t *testing.T) {
	app := newApp(discardStreams())
	var walk func(cmds []*cli.Command, parent string)
	walk = func(cmds []*cli.Command, parent string) {
		for _, c := range cmds {
			if c.Name == "help" {
				continue
			}
			path := parent + " " + c.Name
			walk(c.Subcommands, path)
			if c.Action == nil {
				continue
			}
			ex, ok := commandExamples[path]
			if !ok {
				t.Errorf("%s has no example", path)
				continue
			}
			if !strings.Contains(c.Description, ex) {
				t.Errorf("%s: example not in the help", path)
			}
			if !strings.HasPrefix(ex, path+" ") && ex != path {
				t.Errorf("%s: example %q runs another command", path, ex)
			}
			if _, err := normalizeArgs(app, strings.Fields(ex)); err != nil {
				t.Errorf("%s: example %q: %v", path, ex, err)
			}
		}
	}
	walk(app.Commands, "dprec")
	for path := range commandExamples {
		cmds := app.Commands
		for _, name := range strings.Fields(path)[1:] {
			c := findCommand(cmds, name)
			if c == nil {
				t.Errorf("example for a command that does not exist: %s", path)
				break
			}
			cmds = c.Subcommands
		}
	}
}

var doubledDefault = regexp.MustCompile(`(?i)\(default[^)\n]*\)\s*\(default`)

// TestHelpText: no doubled defaults, required flags marked, no internal
// names or paper file numbers in any command's help.
func TestHelpText(t *testing.T) {
	app := newApp(discardStreams())
	var walk func(cmds []*cli.Command, parent []string)
	walk = func(cmds []*cli.Command, parent []string) {
		for _, c := range cmds {
			if c.Name == "help" {
				continue
			}
			path := append(slices.Clone(parent), c.Name)
			walk(c.Subcommands, path)
			out, _, code := cliRun(t, append(path, "--help")...)
			if code != exitOK {
				t.Errorf("%v --help: exit %d", path, code)
			}
			if m := doubledDefault.FindString(out); m != "" {
				t.Errorf("dprec %s --help: doubled default in %q", strings.Join(path, " "), m)
			}
			for _, bad := range []string{"completion.Default", "issue ", "seed 0", "seed's", "(seed "} {
				if strings.Contains(out, bad) {
					t.Errorf("dprec %s --help contains %q", strings.Join(path, " "), bad)
				}
			}
			for _, f := range c.Flags {
				if rf, ok := f.(cli.RequiredFlag); ok && rf.IsRequired() {
					line := flagString(f)
					if !strings.Contains(line, "(required)") || strings.Contains(line, "(default") {
						t.Errorf("%v: required flag line %q", path, line)
					}
				}
			}
		}
	}
	walk(app.Commands, nil)
}

// TestHelpWarnsTuningOnPrivateLog: train --help and tune --help warn that
// choosing a private run's flags by looking at the private log is a
// release no report accounts for (issue 24), and train --help that a
// diverged private run has spent its budget.
func TestHelpWarnsTuningOnPrivateLog(t *testing.T) {
	for cmd, wants := range map[string][]string{
		"train": {"Choosing its flags", "no report accounts for", "diverges has spent its budget"},
		"tune":  {"tune has no privacy mode", "no privacy report accounts for"},
	} {
		out, _, code := cliRun(t, cmd, "--help")
		if code != exitOK {
			t.Fatalf("%s --help: exit %d", cmd, code)
		}
		flat := strings.Join(strings.Fields(out), " ")
		for _, w := range wants {
			if !strings.Contains(flat, w) {
				t.Errorf("dprec %s --help lacks %q", cmd, w)
			}
		}
	}
}

// TestReadmeTourParses: every dprec command of the README's tour, and of
// the examples in docs/*.md (between <!-- examples --> and
// <!-- /examples -->: the commands moved there from the tour when the
// README was shortened, issue 21; CI does not run them), parses (known
// commands and flags, values and required flags present), so neither can
// drift from the CLI between CI runs of the tour itself. The tour keeps
// the main jobs: train, a private training run, predict, recommend and
// spectral.
func TestReadmeTourParses(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Skip("README.md not found:", err)
	}
	s := string(b)
	i, j := strings.Index(s, "<!-- tour -->"), strings.Index(s, "<!-- /tour -->")
	if i < 0 || j < i {
		t.Fatal("README.md has no <!-- tour --> ... <!-- /tour --> section")
	}
	type section struct{ where, text string }
	sections := []section{{"README tour", s[i:j]}}
	pages, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pages {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		where := "docs/" + filepath.Base(p) + " examples"
		for rest := string(b); ; {
			i := strings.Index(rest, "<!-- examples -->")
			if i < 0 {
				break
			}
			j := strings.Index(rest[i:], "<!-- /examples -->")
			if j < 0 {
				t.Fatalf("%s: <!-- examples --> without <!-- /examples -->", where)
			}
			sections = append(sections, section{where, rest[i : i+j]})
			rest = rest[i+j:]
		}
	}
	if len(sections) == 1 {
		t.Error("no <!-- examples --> section in docs/*.md")
	}
	app := newApp(discardStreams())
	n := 0
	tourCmds := map[string]bool{}
	for _, sec := range sections {
		for _, line := range strings.Split(strings.ReplaceAll(sec.text, "\\\n", " "), "\n") {
			line = strings.TrimSpace(line)
			if !strings.HasPrefix(line, "./dprec ") {
				continue
			}
			for _, cut := range []string{" #", " >", " ||", " &", " |"} {
				if k := strings.Index(line, cut); k >= 0 {
					line = line[:k]
				}
			}
			args := shellFields(strings.ReplaceAll(line, "$s", "1"))
			args[0] = "dprec"
			l, err := normalizeArgs(app, args)
			// "trian" and "--rnak" are the deliberate mistakes of docs/cli.md.
			if deliberate := slices.Contains(args, "trian") || slices.Contains(args, "--rnak"); (err != nil) != deliberate {
				t.Errorf("%s: %q: %v", sec.where, line, err)
			} else if err == nil && len(l.path) == 0 && !slices.Contains(args, "--version") {
				t.Errorf("%s: %q names no command", sec.where, line)
			}
			if sec.where == "README tour" && len(args) > 1 {
				tourCmds[args[1]] = true
				if slices.Contains(args, "--privacy") {
					tourCmds["--privacy"] = true
				}
			}
			n++
		}
	}
	if n < 20 {
		t.Errorf("only %d dprec commands found in the tour and the docs examples", n)
	}
	for _, c := range []string{"train", "--privacy", "predict", "recommend", "spectral"} {
		if !tourCmds[c] {
			t.Errorf("the README tour has no %s command", c)
		}
	}
}

// shellFields splits a command line into words as the shell does for the
// docs' commands: on blanks, with "double" or 'single' quoted parts kept
// whole (quotes removed).
func shellFields(line string) []string {
	var out []string
	var cur strings.Builder
	in, quote := false, rune(0)
	for _, r := range line {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '"' || r == '\'':
			quote, in = r, true
		case r == ' ' || r == '\t':
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if in {
		out = append(out, cur.String())
	}
	return out
}
