package main

import (
	"io"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/urfave/cli/v2"
)

func globalFlags() []cli.Flag {
	return []cli.Flag{
		&cli.Uint64Flag{Name: "seed", Usage: "seed all randomness: results become reproducible and private noise is NOT private (never use for a release)"},
		&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "no progress bars or summaries on stderr"},
		&cli.BoolFlag{Name: "progress", Usage: "show progress bars even when stderr is not a terminal"},
	}
}

// seedOf returns the --seed value and whether it was given (global or local).
func seedOf(c *cli.Context) (uint64, bool) {
	for _, cc := range c.Lineage() {
		if cc.IsSet("seed") {
			return cc.Uint64("seed"), true
		}
	}
	return 0, false
}

// boolOf looks a boolean flag up on the command or any parent.
func boolOf(c *cli.Context, name string) bool {
	for _, cc := range c.Lineage() {
		if cc.IsSet(name) {
			return cc.Bool(name)
		}
	}
	return false
}

// globalOptions are the global flags every run function needs, read at
// parse time (the seed is read by the commands that use it, into their
// own options).
type globalOptions struct {
	Quiet    bool // --quiet: no progress bars, notes or summaries on the error stream
	Progress bool // --progress: progress bars even when the error stream is not a terminal
}

// globalOptionsOf reads the global flags, given anywhere on the command line.
func globalOptionsOf(c *cli.Context) globalOptions {
	return globalOptions{Quiet: boolOf(c, "quiet"), Progress: boolOf(c, "progress")}
}

// runWithOptions adapts a command's options parser and run function to an
// action: the flags are read once into the options, and the run function
// sees only them and the streams (so a test can call it with neither a
// *cli.Context nor a terminal).
func runWithOptions[O any](parse func(*cli.Context) (O, error), run func(O, *iostreams) error) cli.ActionFunc {
	return func(c *cli.Context) error {
		o, err := parse(c)
		if err != nil {
			return err
		}
		return run(o, streamsOf(c))
	}
}

// bar returns a progress bar on the error stream for max steps (-1:
// unknown), shown only when that stream is a terminal or --progress was
// given, and never with --quiet. A hidden bar accepts the same calls and
// prints nothing.
func (s *iostreams) bar(g globalOptions, max int64, desc string) *progressbar.ProgressBar {
	visible := !g.Quiet && (g.Progress || s.ErrTTY)
	w := s.Err
	if !visible {
		w = io.Discard
	}
	return progressbar.NewOptions64(max,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionThrottle(65*time.Millisecond),
		progressbar.OptionShowCount(),
		progressbar.OptionSetVisibility(visible),
		progressbar.OptionOnCompletion(func() {
			if visible {
				io.WriteString(s.Err, "\n")
			}
		}),
		progressbar.OptionSetPredictTime(true),
	)
}
