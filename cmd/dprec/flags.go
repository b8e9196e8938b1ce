package main

// Flags anywhere.
//
// urfave/cli v2 parses a command's flags with the standard library's flag
// package, which stops at the first positional argument, and it accepts a
// global flag (--quiet, --seed, --progress) only before the subcommand. So
// "dprec inspect m.arrow --json" and "dprec train --quiet" used to fail.
//
// dprec reorders the command line before urfave sees it (normalizeArgs):
// it walks the command tree along the given subcommand names, finds every
// flag wherever it was typed, and moves it to the deepest command on that
// path that defines it (the command's own --seed wins over the global one;
// --quiet lands on the application), keeping positional arguments in their
// order after the last command's flags. This was chosen over moving to
// urfave/cli v3 (which supports interspersed flags) because v3 changes the
// Command, Context and Flag APIs every command file uses, and other files
// are being changed at the same time; the reordering is one function, needs
// no change in any command, and gives one place for the usage checks that
// must happen before a command runs: unknown commands and flags (with "did
// you mean"), missing flag values and missing required flags, all reported
// as one short line with exit code 2 instead of urfave's full help dump.
//
// "--" ends flag parsing: everything after it is positional. Flag values
// are never mistaken for flags or commands: whether a flag takes a value is
// read from its definition.

import (
	"fmt"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
)

// cmdLine is the result of normalizeArgs.
type cmdLine struct {
	args []string       // reordered arguments for app.Run
	path []*cli.Command // commands named, outermost first (may be empty)
	help bool           // --help/-h or the help command was given
}

// name returns the command path as typed by a user, e.g. "dprec data split".
func (l *cmdLine) name() string {
	s := "dprec"
	for _, c := range l.path {
		s += " " + c.Name
	}
	return s
}

// flagDef finds the flag named name (without dashes) in flags.
func flagDef(flags []cli.Flag, name string) cli.Flag {
	for _, f := range flags {
		if slices.Contains(f.Names(), name) {
			return f
		}
	}
	return nil
}

// takesValue reports whether f needs a value (every flag but booleans).
func takesValue(f cli.Flag) bool {
	if dg, ok := f.(cli.DocGenerationFlag); ok {
		return dg.TakesValue()
	}
	return true
}

// builtinFlag reports whether name is a flag urfave adds by itself.
func builtinFlag(name string, root bool) bool {
	switch name {
	case "help", "h":
		return true
	case "version":
		return root
	}
	return false
}

// descendantFlags returns the flags of every command below cmds.
func descendantFlags(cmds []*cli.Command) []cli.Flag {
	var out []cli.Flag
	for _, c := range cmds {
		if c.Name == "help" {
			continue // urfave's, which contains itself once an App has run
		}
		out = append(out, c.Flags...)
		out = append(out, descendantFlags(c.Subcommands)...)
	}
	return out
}

// findCommand returns the command of cmds named (or aliased) name.
func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if slices.Contains(c.Names(), name) {
			return c
		}
	}
	return nil
}

// flagOcc is one flag as typed: its name, and the argument(s) it took.
type flagOcc struct {
	name   string
	tokens []string
}

// argLevel is one command of the path (the app at level 0): its flags,
// its subcommands and the flags typed for it.
type argLevel struct {
	flags []cli.Flag
	subs  []*cli.Command
	occ   []flagOcc
}

// normalizeArgs reorders args (args[0] is the program name) so that every
// flag sits with the command that defines it; see the comment at the top of
// this file. Usage mistakes are returned as *usageError.
func normalizeArgs(app *cli.App, args []string) (*cmdLine, error) {
	l := &cmdLine{args: args}
	if len(args) == 0 {
		return l, nil
	}
	for _, a := range args[1:] {
		if a == "--generate-bash-completion" {
			return l, nil // shell completion: leave urfave's protocol alone
		}
	}
	levels := []*argLevel{{flags: app.Flags, subs: app.Commands}}
	var pos []string
	var afterBool, boolHint string // a boolean flag just before; hint for "--bias false"
	rest := args[1:]
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		cur := levels[len(levels)-1]
		if a == "--" {
			pos = append(pos, rest[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			// A command name while the current level has subcommands and
			// no positional argument has been seen.
			if len(cur.subs) > 0 && len(pos) == 0 {
				if a == "help" || a == "h" {
					return helpArgs(l, args[0], cur.subs, rest[i+1:])
				}
				if c := findCommand(cur.subs, a); c != nil {
					l.path = append(l.path, c)
					levels = append(levels, &argLevel{flags: c.Flags, subs: c.Subcommands})
					continue
				}
				if len(l.path) == 0 || l.path[len(l.path)-1].Action == nil {
					return l, unknownCommand(l, cur.subs, a)
				}
			}
			if afterBool != "" && boolWord(a) && boolHint == "" {
				boolHint = fmt.Sprintf("; write %s=%s (a boolean flag takes no separate value)", afterBool, a)
			}
			pos = append(pos, a)
			afterBool = ""
			continue
		}
		var err error
		if i, afterBool, err = placeFlag(l, levels, rest, i); err != nil {
			return l, err
		}
	}
	if err := moveEarlyFlags(l, levels); err != nil {
		return l, err
	}
	if n := len(l.path); !l.help && n > 0 && l.path[n-1].Action != nil && len(pos) > 0 && !takesArgs(l.path[n-1]) {
		return l, &usageError{cmd: l.name(), msg: fmt.Sprintf("unexpected argument %q: %s takes only flags%s", pos[0], l.name(), boolHint)}
	}
	if !l.help {
		if err := checkRequired(l, levels[len(levels)-1].flags, levels[len(levels)-1].occ); err != nil {
			return l, err
		}
	}
	out := []string{args[0]}
	for j, lv := range levels {
		if j > 0 {
			out = append(out, l.path[j-1].Name)
		}
		for _, o := range lv.occ {
			out = append(out, o.tokens...)
		}
	}
	for _, p := range pos {
		if len(p) > 1 && p[0] == '-' {
			out = append(out, "--")
			break
		}
	}
	l.args = append(out, pos...)
	return l, nil
}

// helpArgs handles urfave's help command ("help data split", topics after
// it): it checks the topic's path and rewrites the line to what "data
// split --help" shows (urfave's help command looks one level down).
func helpArgs(l *cmdLine, prog string, subs []*cli.Command, topics []string) (*cmdLine, error) {
	l.help = true
	for _, name := range topics {
		if strings.HasPrefix(name, "-") || len(subs) == 0 {
			break
		}
		c := findCommand(subs, name)
		if c == nil {
			return l, unknownCommand(l, subs, name)
		}
		l.path = append(l.path, c)
		subs = c.Subcommands
	}
	l.args = []string{prog}
	for _, c := range l.path {
		l.args = append(l.args, c.Name)
	}
	l.args = append(l.args, "--help")
	return l, nil
}

// placeFlag files the flag rest[i] (with its value, if it takes one) under
// the deepest command on the path so far that defines it; a flag only a
// later subcommand defines is marked for moveEarlyFlags. It returns the
// index of the last token used and, for a boolean flag without a value,
// the flag (for the "--bias false" hint).
func placeFlag(l *cmdLine, levels []*argLevel, rest []string, i int) (int, string, error) {
	a := rest[i]
	cur := levels[len(levels)-1]
	afterBool := ""
	name, _, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
	if name == "" || strings.HasPrefix(a, "---") {
		return i, "", &usageError{cmd: l.name(), msg: fmt.Sprintf("malformed flag %s", a)}
	}
	if builtinFlag(name, true) {
		if name == "version" {
			levels[0].occ = append(levels[0].occ, flagOcc{name, []string{a}})
		} else {
			l.help = true
			cur.occ = append(cur.occ, flagOcc{name, []string{a}})
		}
		return i, "", nil
	}
	// The deepest command on the path so far that defines the flag,
	// else (before the subcommand is named) any command below.
	var def cli.Flag
	at := -1
	for j := len(levels) - 1; j >= 0 && def == nil; j-- {
		if def = flagDef(levels[j].flags, name); def != nil {
			at = j
		}
	}
	if def == nil {
		def = flagDef(descendantFlags(cur.subs), name)
	}
	if def == nil {
		return i, "", unknownFlag(l, levels[len(levels)-1].flags, levels[0].flags, cur.subs, a, name)
	}
	o := flagOcc{name: name, tokens: []string{a}}
	if !takesValue(def) && !hasVal {
		afterBool = a
	}
	if takesValue(def) && !hasVal {
		if i+1 >= len(rest) {
			return i, "", &usageError{cmd: l.name(), msg: fmt.Sprintf("flag %s needs a value", a)}
		}
		i++
		o.tokens = append(o.tokens, rest[i])
	}
	if at < 0 {
		// Not defined on the path yet: it belongs to a subcommand
		// named later; resolved by moveEarlyFlags.
		at = len(levels) - 1
		o.name = "\x00" + name
	}
	levels[at].occ = append(levels[at].occ, o)
	return i, afterBool, nil
}

// moveEarlyFlags moves flags typed before the command that defines them
// down to the deepest command of the path that defines them.
func moveEarlyFlags(l *cmdLine, levels []*argLevel) error {
	for j, lv := range levels {
		kept := lv.occ[:0:0]
		for _, o := range lv.occ {
			if !strings.HasPrefix(o.name, "\x00") {
				kept = append(kept, o)
				continue
			}
			o.name = o.name[1:]
			to := -1
			for k := len(levels) - 1; k > j; k-- {
				if flagDef(levels[k].flags, o.name) != nil {
					to = k
					break
				}
			}
			if to < 0 {
				return unknownFlag(l, levels[len(levels)-1].flags, levels[0].flags, nil, o.tokens[0], o.name)
			}
			levels[to].occ = append(levels[to].occ, o)
		}
		lv.occ = kept
	}
	return nil
}

// checkRequired refuses a command line that lacks a required flag of the
// command, before urfave would print the whole help for it.
func checkRequired(l *cmdLine, flags []cli.Flag, occ []flagOcc) error {
	for _, f := range flags {
		rf, ok := f.(cli.RequiredFlag)
		if !ok || !rf.IsRequired() {
			continue
		}
		given := slices.ContainsFunc(occ, func(o flagOcc) bool { return slices.Contains(f.Names(), o.name) })
		if !given {
			return &usageError{cmd: l.name(), msg: "missing required flag " + dashed(f.Names()[0])}
		}
	}
	return nil
}

// dashed writes a flag name as typed: -m, --model.
func dashed(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

func unknownCommand(l *cmdLine, subs []*cli.Command, name string) error {
	var names []string
	for _, c := range subs {
		if !c.Hidden {
			names = append(names, c.Names()...)
		}
	}
	msg := fmt.Sprintf("unknown command %q for %q", name, l.name())
	if s := suggest(name, names); s != "" {
		msg += fmt.Sprintf("; did you mean %q?", s)
	}
	return &usageError{cmd: l.name(), msg: msg}
}

func unknownFlag(l *cmdLine, own, global []cli.Flag, subs []*cli.Command, typed, name string) error {
	var names []string
	for _, fs := range [][]cli.Flag{own, global, descendantFlags(subs)} {
		for _, f := range fs {
			names = append(names, f.Names()...)
		}
	}
	msg := fmt.Sprintf("unknown flag %s", typed)
	if s := suggest(name, names); s != "" {
		msg += fmt.Sprintf("; did you mean %s?", dashed(s))
	}
	return &usageError{cmd: l.name(), msg: msg}
}

// suggest returns the candidate closest to s by Damerau-Levenshtein
// distance (adjacent transpositions count 1: "trian" -> "train"), when it
// is close enough to be a likely typo: at most 1 edit for short names, 2
// for names of 6 or more letters; or a candidate that s is a prefix of.
func suggest(s string, candidates []string) string {
	best, bestD := "", 1<<30
	for _, c := range candidates {
		if d := editDistance(s, c); d < bestD {
			best, bestD = c, d
		}
	}
	limit := 1
	if len(s) >= 6 {
		limit = 2
	}
	if bestD <= limit {
		return best
	}
	if len(s) >= 3 {
		for _, c := range candidates {
			if strings.HasPrefix(c, s) {
				return c
			}
		}
	}
	return ""
}

// editDistance is the optimal-string-alignment distance between a and b.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}

// argCommands take positional arguments besides those that declare
// ArgsUsage; every other command refuses them (a stray word is usually a
// value given to a boolean flag, "--bias false", or a missing "--").
var argCommands = []string{"stats", "split", "convert"}

func takesArgs(c *cli.Command) bool {
	return c.ArgsUsage != "" || slices.Contains(argCommands, c.Name)
}

// boolWord reports whether s reads as a boolean value.
func boolWord(s string) bool {
	switch strings.ToLower(s) {
	case "true", "false", "yes", "no", "1", "0", "t", "f":
		return true
	}
	return false
}

// forceFlag is the one --force (-f) of every command that writes files:
// usage says what it overwrites, category groups it in the help ("" for
// none).
func forceFlag(usage, category string) *cli.BoolFlag {
	return &cli.BoolFlag{Name: "force", Aliases: []string{"f"}, Category: category, Usage: usage}
}
