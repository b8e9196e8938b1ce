// Package faultio holds writers that fail as real destinations do, for
// the tests of dprec's output paths (a full disk at any offset). It is
// imported only by _test.go files and is a leaf package (the standard
// library only).
package faultio

import (
	"os"
	"syscall"
)

// FullDisk accepts Room bytes, then fails every write as a full disk does:
// the write that crosses Room is short and returns a *os.PathError
// wrapping syscall.ENOSPC for Path.
type FullDisk struct {
	Room int
	Path string
	n    int
}

func (d *FullDisk) Write(p []byte) (int, error) {
	if d.n+len(p) <= d.Room {
		d.n += len(p)
		return len(p), nil
	}
	k := d.Room - d.n
	d.n = d.Room
	return k, &os.PathError{Op: "write", Path: d.Path, Err: syscall.ENOSPC}
}
