// Package atomicfile writes files atomically: the bytes go to a temporary
// file in the destination's directory, which is synced and then linked
// (refusing to replace an existing file) or renamed (replacing it) into
// place. A reader never sees a half-written file and a failed or killed
// write leaves any previous file intact.
//
// It is the one implementation behind data.WriteFileAtomic (rating logs,
// models, exports) and cape.SaveKeyring (key material, mode 0600 from
// creation). It is a leaf package: the standard library only, so perturb,
// data and every other dprec package may import it.
//
// # Temporary files
//
// The temporary file for path DIR/BASE is DIR/.BASE.tmp-DIGITS, created
// with O_EXCL and Options.Perm (0666 when zero) as modified by the process
// umask. Temporary files of that naming left by a killed writer (kill -9
// runs no clean-up) are removed on the next write to the same path, unless
// another process still holds them open for writing: each writer holds an
// exclusive advisory lock (flock) on its temporary file where the platform
// has it; elsewhere only files older than an hour are removed.
package atomicfile

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

// ErrExists is the error wrapped when the destination exists and
// Options.Force is false, unless Options.Exists names another one.
var ErrExists = errors.New("file exists")

// Options are the settings of Write; the zero value refuses to replace an
// existing file and creates it with mode 0666 minus the umask (what
// os.Create gives).
type Options struct {
	// Force allows replacing an existing file.
	Force bool
	// Perm is the mode the temporary file, and so the result, is created
	// with (before the umask); 0 means 0666. Use 0600 for secrets: the
	// bytes are then never readable by group or others at any moment.
	Perm os.FileMode
	// Exists is the error wrapped (as "PATH: %w") when the file exists and
	// Force is false; nil means ErrExists. Packages pass their own
	// exported sentinel so callers can test for it with errors.Is.
	Exists error
}

// Write writes path through write as described in the package doc. The
// io.Writer passed to write is the temporary *os.File (its Name is the
// temporary path). Errors returned by write are returned unchanged; the
// others are wrapped with path.
func Write(path string, o Options, write func(w io.Writer) error) (err error) {
	exists := o.Exists
	if exists == nil {
		exists = ErrExists
	}
	if !o.Force {
		if _, err := os.Lstat(path); err == nil {
			return fmt.Errorf("%s: %w", path, exists)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	RemoveStaleTemps(dir, base)
	f, tmp, err := CreateTemp(dir, base, o.Perm)
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
	if !o.Force {
		// Re-check just before the rename: link fails if path now exists.
		if err = os.Link(tmp, path); err != nil {
			if errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("%s: %w", path, exists)
			}
			return fmt.Errorf("%s: %w", path, err)
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

// tempPrefix is the name prefix of the temporary files for base; the rest
// of the name is decimal digits.
func tempPrefix(base string) string { return "." + base + ".tmp-" }

// CreateTemp creates a new temporary file for base in dir with mode perm
// (0 means 0666; minus the umask) and locks it. It returns the open file
// and its path.
func CreateTemp(dir, base string, perm os.FileMode) (*os.File, string, error) {
	if perm == 0 {
		perm = 0o666
	}
	for try := 0; ; try++ {
		name := filepath.Join(dir, tempPrefix(base)+strconv.FormatUint(uint64(rand.Uint32()), 10))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, perm)
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

// RemoveStaleTemps removes temporary files of this package's naming for
// base in dir that no live writer holds. Errors are ignored: the clean-up
// is best effort and never stops a write.
func RemoveStaleTemps(dir, base string) {
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
