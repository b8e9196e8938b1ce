// Command dprec trains and uses differentially private tensor-completion
// recommenders and spectral topic / mixture models. Run "dprec help".
//
// Command-line conventions: flags may be given before or after the
// subcommand and after positional arguments (flags.go); exit codes are 0
// success, 1 runtime or data error, 2 usage error (errors.go); --json
// prints one JSON document, --jsonl a stream of one JSON value per line.
package main

import (
	"os"
	"sync"

	"github.com/urfave/cli/v2"
)

// cliGlobals sets urfave/cli's package-level help settings once (tests
// build Apps concurrently).
var cliGlobals sync.Once

// newApp builds the application with the commands of commandList, reading
// and writing on s.
//
// The streams reach every command through App.Metadata (streamsOf), the
// one value urfave/cli v2 hands to every command's context that can hold
// our own type, so the terminal flag travels with the writers; they are
// also App.Reader, App.Writer and App.ErrWriter, so urfave's own help,
// version and completion output goes to the same place.
func newApp(s *iostreams) *cli.App {
	cliGlobals.Do(func() {
		cli.FlagStringer = flagString
		cli.VersionFlag = &cli.BoolFlag{Name: "version", Usage: "print the version (module version and VCS revision) and exit"}
	})
	cmds := commandList()
	app := &cli.App{
		Name:  "dprec",
		Usage: "differentially private tensor completion and spectral topic models",
		Description: `Flags may come before or after the command and after its arguments; "--" ends
flags. Exit codes: 0 success, 1 runtime or data error, 2 usage error. --json
prints one JSON document, --jsonl one JSON object per line. Start with
"dprec data synth --out ratings.csv" and "dprec train --data ratings.csv";
"dprec CMD --help" ends with an example.`,
		Version:              version(),
		EnableBashCompletion: true,
		Flags:                globalFlags(),
		Commands:             cmds,
		ExitErrHandler:       func(*cli.Context, error) {},
		OnUsageError:         onUsageError,
		Reader:               s.In,
		Writer:               s.Out,
		ErrWriter:            s.Err,
		Metadata:             map[string]any{streamsKey: s},
	}
	// Every App gets its own command values, so hooking them here never
	// wraps a hook twice. urfave adds its help command to the tree when an
	// App runs, so the walks skip it.
	installHooks(cmds, "dprec")
	addExamples(cmds, "dprec")
	return app
}

// installHooks gives every command the usage-error handler (no help dump),
// the output-onto-input check of iocheck.go and the flag checks of
// validate.go and sizeguard.go, run before the command's action.
func installHooks(cmds []*cli.Command, parent string) {
	for _, c := range cmds {
		if c.Name == "help" {
			continue
		}
		path := parent + " " + c.Name
		c.OnUsageError = onUsageError
		if c.Action != nil {
			before := c.Before
			c.Before = func(ctx *cli.Context) error {
				if err := checkIO(ctx, path); err != nil {
					return err
				}
				if err := checkFlags(ctx, path); err != nil {
					return err
				}
				if err := checkSizes(ctx, path); err != nil {
					return err
				}
				if before != nil {
					return before(ctx)
				}
				return nil
			}
		}
		installHooks(c.Subcommands, path)
	}
}

func main() {
	os.Exit(run(os.Args))
}

// run runs dprec on the process's standard streams (systemStreams) and
// returns the exit code.
func run(args []string) int { return runWith(args, systemStreams()) }

// runWith runs the application on the streams s and returns the exit code;
// usage and runtime errors are reported on s.Err.
func runWith(args []string, s *iostreams) int {
	app := newApp(s)
	l, err := normalizeArgs(app, args)
	if err != nil {
		return reportError(s.Err, l, err)
	}
	if err := app.Run(l.args); err != nil {
		return reportError(s.Err, l, err)
	}
	return exitOK
}
