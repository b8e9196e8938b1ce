package data

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ErrExists is returned (wrapped) when an output file exists and overwriting
// was not allowed.
var ErrExists = errors.New("file exists (use --force to overwrite)")

// ErrOutputIsInput is returned (wrapped) when an output path resolves to one
// of the command's input files; --force does not override it.
var ErrOutputIsInput = errors.New("the output is an input of this command (refusing to overwrite it, even with --force)")

// WriteFileAtomic writes path through write: the bytes go to a temporary
// file in the same directory, which is synced and renamed over path only when
// write succeeds, so a reader never sees a half-written file and a failed
// write leaves any previous file intact. Without force it refuses to replace
// an existing path. A path of "-" writes to standard output directly.
//
// The temporary file is named ".BASE.tmp-DIGITS" and created with mode
// 0666 as modified by the process umask (what os.Create gives), the mode
// the output keeps. Temporary files of that naming left next to path by a
// killed writer (kill -9 runs no clean-up) are removed on the next write to
// path, unless another process still holds them open for writing (each
// writer holds an exclusive advisory lock on its temporary file where the
// platform has flock; elsewhere only files older than an hour are removed).
func WriteFileAtomic(path string, force bool, write func(w io.Writer) error) (err error) {
	if path == "-" {
		return write(os.Stdout)
	}
	if !force {
		if _, err := os.Lstat(path); err == nil {
			return fmt.Errorf("%s: %w", path, ErrExists)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	removeStaleTemps(dir, base)
	f, tmp, err := createTemp(dir, base)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err = write(f); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if closeBeforeRename {
		if err = f.Close(); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	if !force {
		// Re-check just before the rename: link fails if path now exists.
		if err = os.Link(tmp, path); err != nil {
			if errors.Is(err, fs.ErrExist) {
				err = fmt.Errorf("%s: %w", path, ErrExists)
			}
			return err
		}
		os.Remove(tmp)
	} else if err = os.Rename(tmp, path); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	// Closing releases the lock only once the temporary name is gone, so
	// a concurrent clean-up never removes a file still being written.
	if !closeBeforeRename {
		if err := f.Close(); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	return nil
}

// tempPrefix is the name prefix of WriteFileAtomic's temporary files for
// base; the rest of the name is decimal digits.
func tempPrefix(base string) string { return "." + base + ".tmp-" }

// createTemp creates a new temporary file for base in dir with mode 0666
// (minus the umask) and locks it.
func createTemp(dir, base string) (*os.File, string, error) {
	for try := 0; ; try++ {
		name := filepath.Join(dir, tempPrefix(base)+strconv.FormatUint(uint64(rand.Uint32()), 10))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
		if errors.Is(err, fs.ErrExist) && try < 100 {
			continue
		}
		if err != nil {
			return nil, "", err
		}
		lockTemp(f)
		return f, name, nil
	}
}

// removeStaleTemps removes temporary files of WriteFileAtomic's naming for
// base in dir that no live writer holds. Errors are ignored: the clean-up
// is best effort and never stops a write.
func removeStaleTemps(dir, base string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	prefix := tempPrefix(base)
	for _, e := range ents {
		name := e.Name()
		digits, ok := strings.CutPrefix(name, prefix)
		if !ok || digits == "" || strings.Trim(digits, "0123456789") != "" || !e.Type().IsRegular() {
			continue
		}
		p := filepath.Join(dir, name)
		if staleTemp(p) {
			os.Remove(p)
		}
	}
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
