package main

import (
	"io"
	"os"

	"github.com/dprec/dprec/data"
	"github.com/urfave/cli/v2"
	"golang.org/x/term"
)

// iostreams is where a command reads its standard input and writes its
// results (Out) and its notes, warnings and progress bars (Err). main
// builds one from the process's streams (systemStreams); a test builds one
// over buffers, with no terminal, and runs commands entirely in process.
// Run functions receive it (runWithOptions gets it with streamsOf) instead
// of naming os.Stdin, os.Stdout or os.Stderr. The path "-" is the
// command's business: the library refuses it (data.ErrNotAFile), and
// writeFile and saveLog send it to Out.
type iostreams struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
	// ErrTTY reports whether Err is a terminal: progress bars are drawn
	// only then (or with --progress), and never with --quiet.
	ErrTTY bool
}

// systemStreams returns the process's standard streams, with ErrTTY from
// terminal detection on standard error.
func systemStreams() *iostreams {
	return &iostreams{
		In:     os.Stdin,
		Out:    os.Stdout,
		Err:    os.Stderr,
		ErrTTY: term.IsTerminal(int(os.Stderr.Fd())),
	}
}

// streamsKey is the cli.App.Metadata key of the application's *iostreams.
const streamsKey = "iostreams"

// streamsOf returns the streams of the application running c (newApp
// stores them in its Metadata, which every command's context reaches
// through c.App). An App not made by newApp (a test's) gets its own
// Reader, Writer and ErrWriter, with no terminal.
func streamsOf(c *cli.Context) *iostreams {
	if s, ok := c.App.Metadata[streamsKey].(*iostreams); ok {
		return s
	}
	return &iostreams{In: c.App.Reader, Out: c.App.Writer, Err: c.App.ErrWriter}
}

// writeFile writes through write to path atomically (data.WriteFileAtomic,
// refusing to replace an existing file unless force), or to s.Out when path
// is "-" (which data.WriteFileAtomic refuses).
func (s *iostreams) writeFile(path string, force bool, write func(w io.Writer) error) error {
	if path == "-" {
		return write(s.Out)
	}
	return data.WriteFileAtomic(path, force, write)
}

// saveLog writes the rating log st to path (data.Save: atomically, in the
// format of opts or path's name), or to s.Out when path is "-" (data.Write:
// opts.Format, CSV by default).
func (s *iostreams) saveLog(path string, st *data.Store, opts data.WriteOptions) error {
	if path == "-" {
		return data.Write(s.Out, st, opts)
	}
	return data.Save(path, st, opts)
}
