// Command dprec trains and uses differentially private tensor-completion
// recommenders and spectral topic / mixture models. Run "dprec help".
package main

import (
	"fmt"
	"os"
	"sort"

	"github.com/urfave/cli/v2"
)

// Exit codes.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// commands is filled by the init functions of the command files, one file
// per top-level command, so that adding a command touches no shared file.
var commands []*cli.Command

func register(c *cli.Command) { commands = append(commands, c) }

func newApp() *cli.App {
	cmds := append([]*cli.Command(nil), commands...)
	sort.Slice(cmds, func(i, j int) bool { return cmds[i].Name < cmds[j].Name })
	return &cli.App{
		Name:                 "dprec",
		Usage:                "differentially private tensor completion and spectral topic models",
		EnableBashCompletion: true,
		Flags:                globalFlags(),
		Commands:             cmds,
		ExitErrHandler:       func(*cli.Context, error) {},
	}
}

func main() {
	os.Exit(run(os.Args))
}

func run(args []string) int {
	app := newApp()
	if err := app.Run(args); err != nil {
		fmt.Fprintf(os.Stderr, "dprec: %v\n", err)
		if ec, ok := err.(cli.ExitCoder); ok && ec.ExitCode() != 0 {
			return ec.ExitCode()
		}
		return exitError
	}
	return exitOK
}
