package cape

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"

	"github.com/dprec/dprec/internal/atomicfile"
)

// ErrKeyringExists is returned by SaveKeyring when the file exists and
// force is not set.
var ErrKeyringExists = errors.New("cape: keyring file exists (use force to overwrite)")

// SaveKeyring writes k to path atomically with mode 0600 from creation:
// the bytes go to a temporary file in the same directory created with mode
// 0600 (never wider, whatever the umask), which is synced and then linked
// (force false: refused if path exists) or renamed (force true) into
// place (the module's internal/atomicfile). The key material is therefore
// never readable by group or others at any moment, and a crash leaves
// either the old file or the new one.
func SaveKeyring(path string, k *Keyring, force bool) error {
	return saveKeyring(path, k, force, nil)
}

// saveKeyring is SaveKeyring with a test hook called after the key bytes
// were written to the temporary file (before sync and rename).
func saveKeyring(path string, k *Keyring, force bool, written func(tmp string)) error {
	b, err := json.MarshalIndent(k, "", "  ")
	if err != nil {
		return err
	}
	opt := atomicfile.Options{Force: force, Perm: 0o600, Exists: ErrKeyringExists}
	return atomicfile.Write(path, opt, func(w io.Writer) error {
		if _, err := w.Write(b); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if written != nil {
			written(w.(*os.File).Name())
		}
		return nil
	})
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
