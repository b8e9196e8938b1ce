package cape

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
)

// ErrKeyringExists is returned by SaveKeyring when the file exists and
// force is not set.
var ErrKeyringExists = errors.New("cape: keyring file exists (use force to overwrite)")

// SaveKeyring writes k to path atomically with mode 0600 from creation:
// the bytes go to a temporary file in the same directory that
// os.CreateTemp creates with mode 0600 (never wider, whatever the umask),
// which is synced and then linked (force false: refused if path exists) or
// renamed (force true) into place. The key material is therefore never
// readable by group or others at any moment, and a crash leaves either the
// old file or the new one.
func SaveKeyring(path string, k *Keyring, force bool) error {
	return saveKeyring(path, k, force, nil)
}

// saveKeyring is SaveKeyring with a test hook called after the key bytes
// were written to the temporary file (before sync and rename).
func saveKeyring(path string, k *Keyring, force bool, written func(tmp string)) (err error) {
	b, err := json.MarshalIndent(k, "", "  ")
	if err != nil {
		return err
	}
	if !force {
		if _, err := os.Lstat(path); err == nil {
			return fmt.Errorf("%s: %w", path, ErrKeyringExists)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp-*") // mode 0600
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
	if _, err = f.Write(b); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if written != nil {
		written(tmp)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if !force {
		// Link fails if path appeared since the check above.
		if err = os.Link(tmp, path); err != nil {
			if errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("%s: %w", path, ErrKeyringExists)
			}
			return fmt.Errorf("%s: %w", path, err)
		}
		return os.Remove(tmp)
	}
	if err = os.Rename(tmp, path); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// checkKeyringMode refuses a keyring file that group or others may read or
// write (on systems with Unix permissions), as ssh does for private keys.
func checkKeyringMode(path string) error {
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" {
		return nil
	}
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if m := st.Mode().Perm(); m&0o077 != 0 {
		return fmt.Errorf("%s: keyring has mode %04o, readable or writable by others; restrict it with chmod 600 (and consider the keys compromised)", path, m)
	}
	return nil
}
