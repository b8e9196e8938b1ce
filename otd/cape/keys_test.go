//go:build unix

package cape

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestSaveKeyringMode0600FromCreation: under umask 0 the key bytes must
// never sit in a file readable by others, neither in the temporary file
// while it is written nor after the rename (issue 14, item 7: keyrings were
// renamed into place at 0644 and only then set to 0600). LoadKeyring refuses
// a keyring readable by others.
func TestSaveKeyringMode0600FromCreation(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	rings, err := NewKeyrings(2)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "site-1.json")
	var during os.FileMode
	if err := saveKeyring(p, rings[SiteRole(1)], false, func(tmp string) {
		st, err := os.Stat(tmp)
		if err != nil {
			t.Fatal(err)
		}
		during = st.Mode().Perm()
	}); err != nil {
		t.Fatal(err)
	}
	if during != 0o600 {
		t.Errorf("temporary key file had mode %04o while written, want 0600", during)
	}
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("keyring mode %04o, want 0600", st.Mode().Perm())
	}
	if _, err := LoadKeyring(p); err != nil {
		t.Fatal(err)
	}
	if err := SaveKeyring(p, rings[SiteRole(1)], false); !errors.Is(err, ErrKeyringExists) {
		t.Errorf("overwrite without force: %v", err)
	}
	if err := SaveKeyring(p, rings[SiteRole(2)], true); err != nil {
		t.Fatal(err)
	}
	if k, err := LoadKeyring(p); err != nil || k.Role != SiteRole(2) {
		t.Fatalf("after force: %v %v", k, err)
	}
	if st, _ := os.Stat(p); st.Mode().Perm() != 0o600 {
		t.Errorf("mode after force %04o", st.Mode().Perm())
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*tmp-*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
	if err := os.Chmod(p, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadKeyring(p); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("world-readable keyring accepted: %v", err)
	}
}
