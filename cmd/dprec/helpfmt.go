package main

// Help text: one line per flag with its value placeholder, usage, default
// (only when the usage does not already state one and it is not a zero
// value) and "(required)" for required flags; and one example per command.

import (
	"regexp"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
)

// fileFlags are string flags whose value is a path.
var fileFlags = []string{"data", "out", "input", "corpus", "vocab", "ratings", "exclude-rated", "train", "test",
	"keys", "truth", "plot", "real-ratings"}

// placeholders name the values of other string flags.
var placeholders = map[string]string{"out-dir": "DIR", "dir": "DIR", "aggregator": "URL", "noise": "URL",
	"listen": "ADDR", "time": "TIME", "cutoff": "TIME", "start": "TIME"}

var statedDefault = regexp.MustCompile(`(?i)\(default[ :]`)

// flagString formats one flag for help output (cli.FlagStringer).
func flagString(f cli.Flag) string {
	df, ok := f.(cli.DocGenerationFlag)
	if !ok {
		return strings.Join(f.Names(), ", ")
	}
	placeholder, usage := "", df.GetUsage()
	if i := strings.IndexByte(usage, '`'); i >= 0 {
		if j := strings.IndexByte(usage[i+1:], '`'); j >= 0 {
			placeholder = usage[i+1 : i+1+j]
			usage = usage[:i] + placeholder + usage[i+2+j:]
		}
	}
	if df.TakesValue() && placeholder == "" {
		placeholder = flagPlaceholder(f)
	}
	var names []string
	for _, n := range f.Names() {
		s := dashed(n)
		if placeholder != "" {
			s += " " + placeholder
		}
		names = append(names, s)
	}
	if rf, ok := f.(cli.RequiredFlag); ok && rf.IsRequired() {
		usage += " (required)"
	} else if def := strings.Trim(df.GetDefaultText(), `"`); !statedDefault.MatchString(usage) && !zeroDefault(def) {
		usage += " (default: " + def + ")"
	}
	return strings.Join(names, ", ") + "\t" + usage
}

// flagPlaceholder names a flag's value by its type.
func flagPlaceholder(f cli.Flag) string {
	switch f.(type) {
	case *cli.IntFlag, *cli.Int64Flag, *cli.UintFlag, *cli.Uint64Flag:
		return "N"
	case *cli.Float64Flag:
		return "X"
	case *cli.DurationFlag:
		return "DURATION"
	}
	name := f.Names()[0]
	switch {
	case slices.Contains(fileFlags, name), name == "model" && slices.Contains(f.Names(), "m"):
		return "FILE"
	case placeholders[name] != "":
		return placeholders[name]
	}
	// As argparse does: the flag's name in capitals (--method METHOD).
	return strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// zeroDefault reports whether a default is not worth printing.
func zeroDefault(s string) bool {
	switch s {
	case "", "0", "false", "[]", "0s":
		return true
	}
	return false
}

// commandExamples gives one example per command, by command path, shown
// at the end of its description. TestCommandExamples checks that every
// command has one and that it parses.
var commandExamples = map[string]string{
	"dprec data stats":                      "dprec data stats ratings.csv --json",
	"dprec data split":                      "dprec data split ratings.csv --method random --fraction 0.1 --train tr.csv --test te.csv",
	"dprec data convert":                    "dprec data convert ratings.csv ratings.parquet",
	"dprec data synth":                      "dprec data synth --users 200 --items 150 --ratings 8000 --out ratings.csv",
	"dprec train":                           "dprec train --data tr.csv --time-unit week --rank 10 --out m.arrow",
	"dprec tune":                            "dprec tune --data tr.csv --grid reg=0.1,0.15,0.2 --folds 3 --out best.arrow",
	"dprec similar":                         "dprec similar -m topn.arrow --item 31 --top 10",
	"dprec inspect":                         "dprec inspect m.arrow --json",
	"dprec predict":                         "dprec predict -m m.arrow --user 1 --item 31 --time 2015-03-01",
	"dprec recommend":                       "dprec recommend -m m.arrow --user 1 --top 10 --exclude-rated tr.csv",
	"dprec eval":                            "dprec eval -m m.arrow --data te.csv --train tr.csv --k 10 --threshold 4",
	"dprec export":                          "dprec export m.arrow m-export",
	"dprec spectral":                        "dprec spectral --corpus docword.txt --vocab vocab.txt --model lda --topics 10 --alpha0 1",
	"dprec spectral infer":                  "dprec spectral infer --model topics.arrow --corpus new-docs --out theta.csv",
	"dprec spectral eval":                   "dprec spectral eval --model topics.arrow --corpus docword.txt --heldout test-docword.txt",
	"dprec pca":                             "dprec pca --data site1.csv --data site2.csv --k 5 --epsilon 1 --delta 1e-5",
	"dprec cape keys":                       "dprec cape keys --sites 3 --dir keys",
	"dprec cape aggregate":                  "dprec cape aggregate --keys keys/aggregator.json --sites 3 --dim 20 --k 5",
	"dprec cape noise":                      "dprec cape noise --keys keys/noise.json",
	"dprec cape site":                       "dprec cape site --keys keys/site-1.json --id 1 --data site1.csv --epsilon 1",
	"dprec experiment completion-synthetic": "dprec experiment completion-synthetic --out figures",
	"dprec experiment completion-speed":     "dprec experiment completion-speed",
	"dprec experiment completion-privacy":   "dprec experiment completion-privacy --datasets synthetic-cp --seeds 1 --epochs 10 --out figures",
	"dprec experiment spectral":             "dprec experiment spectral --quick --out figures",
	"dprec experiment cape":                 "dprec experiment cape --quick --out figures",
}

// addExamples appends each command's example to its description.
func addExamples(cmds []*cli.Command, parent string) {
	for _, c := range cmds {
		if c.Name == "help" {
			continue
		}
		path := parent + " " + c.Name
		if ex, ok := commandExamples[path]; ok && !strings.Contains(c.Description, "Example:") {
			if c.Description != "" {
				c.Description = strings.TrimRight(c.Description, "\n") + "\n\n"
			}
			c.Description += "Example:\n  " + ex
		}
		addExamples(c.Subcommands, path)
	}
}
