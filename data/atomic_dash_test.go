package data

import (
	"errors"
	"io"
	"os"
	"testing"
)

// TestWriteFileAtomicDash: the library never writes to standard output.
// "-" is refused (ErrNotAFile) by WriteFileAtomic and Save before
// anything is written; a file of that name is written as "./-".
func TestWriteFileAtomicDash(t *testing.T) {
	t.Chdir(t.TempDir())
	called := false
	err := WriteFileAtomic("-", true, func(w io.Writer) error { called = true; return nil })
	if !errors.Is(err, ErrNotAFile) || called {
		t.Errorf(`WriteFileAtomic("-"): %v, write called %v; want ErrNotAFile before any write`, err, called)
	}
	st := &Store{Dims: []int{1, 1}}
	if err := Save("-", st, WriteOptions{Force: true}); !errors.Is(err, ErrNotAFile) {
		t.Errorf(`Save("-"): %v, want ErrNotAFile`, err)
	}
	if _, err := os.Stat("-"); err == nil {
		t.Error(`a file named "-" was written`)
	}
	if err := WriteFileAtomic("./-", false, func(w io.Writer) error { _, err := io.WriteString(w, "x\n"); return err }); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile("-"); err != nil || string(b) != "x\n" {
		t.Errorf(`"./-": %q, %v`, b, err)
	}
}
