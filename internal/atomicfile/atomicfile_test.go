//go:build unix

package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestWrite: the zero Options refuse to replace a file (wrapping
// ErrExists or the caller's sentinel), Force replaces it, Perm 0600 gives
// a 0600 file, and a failing write leaves the old content and no
// temporary file.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	mine := errors.New("mine")
	put := func(s string) func(io.Writer) error {
		return func(w io.Writer) error { _, err := io.WriteString(w, s); return err }
	}
	for _, tc := range []struct {
		name    string
		opt     Options
		write   func(io.Writer) error
		wantErr error
		want    string
	}{
		{"create", Options{Perm: 0o600}, put("a"), nil, "a"},
		{"exists", Options{}, put("b"), ErrExists, "a"},
		{"exists sentinel", Options{Exists: mine}, put("b"), mine, "a"},
		{"force", Options{Force: true, Perm: 0o600}, put("c"), nil, "c"},
		{"failed write", Options{Force: true}, func(io.Writer) error { return mine }, mine, "c"},
	} {
		err := Write(p, tc.opt, tc.write)
		if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
			t.Errorf("%s: error %v, want %v", tc.name, err, tc.wantErr)
		}
		if b, _ := os.ReadFile(p); string(b) != tc.want {
			t.Errorf("%s: content %q, want %q", tc.name, b, tc.want)
		}
		if st, err := os.Stat(p); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v (%v), want 0600", tc.name, st.Mode().Perm(), err)
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 1 {
			t.Errorf("%s: %d files left in the directory, want 1", tc.name, len(ents))
		}
	}
}
