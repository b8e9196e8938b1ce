//go:build unix

package data

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestWriteFileAtomicUmask: outputs get 0666 minus the umask, like
// os.Create (issue 14 case 7: they were forced to 0644).
func TestWriteFileAtomicUmask(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ umask, want os.FileMode }{{0o022, 0o644}, {0o077, 0o600}, {0o002, 0o664}, {0o027, 0o640}} {
		old := syscall.Umask(int(tc.umask))
		p := filepath.Join(dir, "out.csv")
		err := WriteFileAtomic(p, true, func(w io.Writer) error { _, err := w.Write([]byte("x\n")); return err })
		syscall.Umask(old)
		if err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := st.Mode().Perm(); got != tc.want {
			t.Errorf("umask %04o: mode %04o, want %04o", tc.umask, got, tc.want)
		}
		os.Remove(p)
	}
}

// TestWriteFileAtomicStaleTemps: temporary files of our naming left by a
// killed writer are removed on the next write to the same path; files of
// other names, and a temporary file a live writer holds, are kept.
func TestWriteFileAtomicStaleTemps(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out.csv")
	stale := []string{".out.csv.tmp-123", ".out.csv.tmp-4294967295"}
	keep := []string{".out.csv.tmp-abc", ".other.csv.tmp-1", "out.csv.tmp-5", ".out.csv.tmp-"}
	for _, n := range append(append([]string(nil), stale...), keep...) {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("partial"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A live writer: holds its temporary file open and locked.
	live, name, err := createTemp(dir, "out.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	keep = append(keep, filepath.Base(name))
	if err := WriteFileAtomic(p, false, func(w io.Writer) error { _, err := w.Write([]byte("x\n")); return err }); err != nil {
		t.Fatal(err)
	}
	for _, n := range stale {
		if _, err := os.Lstat(filepath.Join(dir, n)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("stale %s not removed (%v)", n, err)
		}
	}
	for _, n := range keep {
		if _, err := os.Lstat(filepath.Join(dir, n)); err != nil {
			t.Errorf("%s removed: %v", n, err)
		}
	}
}

// TestCheckNotInput: an output that resolves to an input is refused
// (issue 14 case 10), by path, relative path, symbolic and hard link.
func TestCheckNotInput(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "x.csv")
	other := filepath.Join(dir, "y.csv")
	for _, p := range []string{in, other} {
		if err := os.WriteFile(p, []byte("1,1,1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sym := filepath.Join(dir, "sym.csv")
	hard := filepath.Join(dir, "hard.csv")
	if err := os.Symlink(in, sym); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(in, hard); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "sub")
	os.Mkdir(sub, 0o755)
	t.Chdir(sub)
	for _, tc := range []struct {
		out  string
		bad  bool
		name string
	}{
		{in, true, "same path"},
		{"../x.csv", true, "relative path"},
		{filepath.Join(dir, "sub", "..", "x.csv"), true, "dot-dot"},
		{sym, true, "symbolic link"},
		{hard, true, "hard link"},
		{other, false, "other file"},
		{filepath.Join(dir, "new.csv"), false, "new file"},
		{"-", false, "stdout"},
	} {
		err := CheckNotInput(tc.out, "-", "", in)
		if got := errors.Is(err, ErrOutputIsInput); got != tc.bad {
			t.Errorf("%s: got %v, want refusal %v", tc.name, err, tc.bad)
		}
	}
}
