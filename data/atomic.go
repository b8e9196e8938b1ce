package data

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/dprec/dprec/internal/atomicfile"
)

// ErrExists is returned (wrapped) when an output file exists and overwriting
// was not allowed.
var ErrExists = errors.New("file exists (use --force to overwrite)")

// ErrNotAFile is returned (wrapped) by WriteFileAtomic, and so by Save and
// the model writers built on it, for the path "-". The library writes
// files only, never standard output: a program that lets "-" mean
// standard output handles it itself and writes to its own stream (Write
// and models.Write take an io.Writer).
var ErrNotAFile = errors.New(`"-" is not a file name here: standard output is the calling program's to write (write to an io.Writer instead)`)

// ErrOutputIsInput is returned (wrapped) when an output path resolves to one
// of the command's input files; --force does not override it.
var ErrOutputIsInput = errors.New("the output is an input of this command (refusing to overwrite it, even with --force)")

// WriteFileAtomic writes path through write: the bytes go to a temporary
// file in the same directory, which is synced and renamed over path only when
// write succeeds, so a reader never sees a half-written file and a failed
// write leaves any previous file intact. Without force it refuses to replace
// an existing path (the error wraps ErrExists). The path "-" is refused
// (the error wraps ErrNotAFile): it usually means standard output, which
// this package never writes to; a file of that name is written as "./-".
//
// The temporary file is named ".BASE.tmp-DIGITS" and created with mode
// 0666 as modified by the process umask (what os.Create gives), the mode
// the output keeps. Temporary files of that naming left next to path by a
// killed writer (kill -9 runs no clean-up) are removed on the next write to
// path, unless another process still holds them open for writing (each
// writer holds an exclusive advisory lock on its temporary file where the
// platform has flock; elsewhere only files older than an hour are removed).
// The implementation is the module's internal/atomicfile.
func WriteFileAtomic(path string, force bool, write func(w io.Writer) error) error {
	if path == "-" {
		return fmt.Errorf("%s: %w", path, ErrNotAFile)
	}
	return atomicfile.Write(path, atomicfile.Options{Force: force, Exists: ErrExists}, write)
}

// createTemp creates a locked temporary file for base in dir, as
// WriteFileAtomic does (mode 0666 minus the umask).
func createTemp(dir, base string) (*os.File, string, error) {
	return atomicfile.CreateTemp(dir, base, 0)
}

// CheckNotInput returns an error wrapping ErrOutputIsInput when the output
// path out names the same file as one of inputs: the same path after
// filepath.Abs and filepath.EvalSymlinks, or the same file by os.SameFile
// (hard links, symbolic links). Empty and "-" paths are ignored. Commands
// call it before writing, whatever --force says.
func CheckNotInput(out string, inputs ...string) error {
	if out == "" || out == "-" {
		return nil
	}
	ro := resolvePath(out)
	so, errOut := os.Stat(out)
	for _, in := range inputs {
		if in == "" || in == "-" {
			continue
		}
		same := resolvePath(in) == ro
		if !same && errOut == nil {
			if si, err := os.Stat(in); err == nil {
				same = os.SameFile(so, si)
			}
		}
		if same {
			return fmt.Errorf("%s: %w (%s)", out, ErrOutputIsInput, in)
		}
	}
	return nil
}

// resolvePath returns the absolute path with symbolic links resolved as
// far as they exist (a missing file resolves through its directory).
func resolvePath(p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		abs = filepath.Clean(p)
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		return r
	}
	dir, base := filepath.Split(abs)
	if r, err := filepath.EvalSymlinks(dir); err == nil {
		return filepath.Join(r, base)
	}
	return abs
}
