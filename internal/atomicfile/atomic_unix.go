//go:build unix

package atomicfile

import (
	"os"
	"syscall"
)

// closeBeforeRename: Unix renames open files, so the temporary file stays
// open (and locked) until it has its final name.
const closeBeforeRename = false

// lockTemp takes an exclusive advisory lock on a temporary output file for
// as long as it is open (the kernel drops it when the process dies).
func lockTemp(f *os.File) { syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) }

// staleTemp reports whether no process holds the lock of the temporary
// file at p, i.e. its writer is gone.
func staleTemp(p string) bool {
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil
}
