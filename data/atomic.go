package data

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// ErrExists is returned (wrapped) when an output file exists and overwriting
// was not allowed.
var ErrExists = errors.New("file exists (use --force to overwrite)")

// WriteFileAtomic writes path through write: the bytes go to a temporary
// file in the same directory, which is synced and renamed over path only when
// write succeeds, so a reader never sees a half-written file and a failed
// write leaves any previous file intact. Without force it refuses to replace
// an existing path. A path of "-" writes to standard output directly.
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
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	tmp := f.Name()
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
	if err = f.Close(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err = os.Chmod(tmp, 0o644); err != nil {
		return fmt.Errorf("%s: %w", path, err)
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
		return nil
	}
	if err = os.Rename(tmp, path); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
