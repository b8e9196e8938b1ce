package main

// Exit codes and error reporting.
//
// Every dprec command exits with one of three codes: 0 success, 1 a
// runtime or data error (a file that cannot be read, a malformed row, a
// diverged training run), 2 a usage error (an unknown command or flag, a
// missing or invalid flag value, a wrong number of arguments). A usage
// error prints one line naming the problem, with a suggestion when the
// input looks like a typo, and a pointer to the command's help:
//
//	dprec: unknown flag --rnak; did you mean --rank?
//	see `dprec train --help`
//
// never the whole help text. Usage errors are found before any file is
// read: normalizeArgs checks the command line's shape, and the flag checks
// of validate.go check flag values before the command's action runs.

import (
	"errors"
	"fmt"
	"io"
	"regexp"

	"github.com/urfave/cli/v2"
)

// Exit codes.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// usageError is a mistake on the command line (exit code 2).
type usageError struct {
	cmd string // command path, e.g. "dprec train"; empty: taken from the command line
	msg string
}

func (e *usageError) Error() string { return e.msg }
func (e *usageError) ExitCode() int { return exitUsage }

// usagef returns a usage error with a formatted message.
func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// exitCode maps an error returned by a command to the process exit code.
func exitCode(err error) int {
	if err == nil {
		return exitOK
	}
	var ec cli.ExitCoder
	if errors.As(err, &ec) {
		switch ec.ExitCode() {
		case exitOK:
			return exitError // an error is never success
		case exitUsage:
			return exitUsage
		}
	}
	return exitError
}

// flagErrRe matches the standard flag package's value errors, whose flag
// names have a single dash.
var flagErrRe = regexp.MustCompile(`^invalid (?:boolean )?value "(.*)" for (?:flag )?-(-?[\w-]+): (.*)$`)

// reportError prints err on w as described at the top of this file and
// returns the exit code.
func reportError(w io.Writer, l *cmdLine, err error) int {
	code := exitCode(err)
	msg := err.Error()
	if m := flagErrRe.FindStringSubmatch(msg); m != nil {
		msg = fmt.Sprintf("invalid value %q for %s: %s", m[1], dashed(m[2]), m[3])
	}
	fmt.Fprintf(w, "dprec: %s\n", msg)
	if code == exitUsage {
		cmd := "dprec"
		var ue *usageError
		if errors.As(err, &ue) && ue.cmd != "" {
			cmd = ue.cmd
		} else if l != nil {
			cmd = l.name()
		}
		fmt.Fprintf(w, "see `%s --help`\n", cmd)
	}
	return code
}

// onUsageError turns urfave's flag-parsing errors into usage errors (so it
// prints no help text).
func onUsageError(_ *cli.Context, err error, _ bool) error {
	return &usageError{msg: err.Error()}
}
