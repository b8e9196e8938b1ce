//go:build !unix

package atomicfile

import (
	"os"
	"time"
)

// closeBeforeRename: other systems (Windows) may not rename an open file.
const closeBeforeRename = true

func lockTemp(*os.File) {}

// staleTemp: without flock, a temporary file untouched for an hour is
// taken to be left by a killed writer.
func staleTemp(p string) bool {
	st, err := os.Stat(p)
	return err == nil && time.Since(st.ModTime()) > time.Hour
}
