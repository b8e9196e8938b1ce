package models

import (
	"bytes"
	"errors"
	"io"
	"syscall"
	"testing"

	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/internal/faultio"
)

// TestExportFullDisk: every Parquet table of export (factor rows, core,
// pair biases) returns "no space left on device" wherever the disk fills
// up, instead of pqarrow's panic "failed to write magic number" (issue 24
// item 10).
func TestExportFullDisk(t *testing.T) {
	f := testFile(t, decomposition.Tucker, []int{5, 4, 3}, []int{2, 2, 2}, true, 3)
	tables := map[string]func(w io.Writer) error{
		"users": func(w io.Writer) error { return exportMode(w, f, 0) },
		"core":  func(w io.Writer) error { return exportCore(w, f.Model) },
		"pairs": func(w io.Writer) error { return exportPairs(w, &f.Model.Pairs[0], "user") },
	}
	for name, write := range tables {
		var whole bytes.Buffer
		if err := write(&whole); err != nil {
			t.Fatal(err)
		}
		size := whole.Len()
		for _, room := range []int{0, 2, 4, size / 2, size - 1} {
			err := func() (err error) {
				defer func() {
					if r := recover(); r != nil {
						t.Errorf("%s, full after %d of %d bytes: panic %v", name, room, size, r)
					}
				}()
				return write(&faultio.FullDisk{Room: room, Path: "/full/.users.parquet.tmp-1"})
			}()
			if !errors.Is(err, syscall.ENOSPC) {
				t.Errorf("%s, full after %d of %d bytes: got %v, want no space left on device", name, room, size, err)
			}
		}
	}
}
