package data

import (
	"bytes"
	"errors"
	"io"
	"syscall"
	"testing"

	"github.com/dprec/dprec/internal/faultio"
)

// TestParquetWriterFullDisk: writing a store as Parquet to a destination
// that fills up anywhere in the file (at the opening magic number, in a
// column chunk, in the footer) returns the destination's "no space left
// on device" instead of panicking (issue 24 item 10: pqarrow panicked with
// "failed to write magic number"), as the CSV and Arrow writers do.
func TestParquetWriterFullDisk(t *testing.T) {
	s, _, err := DefaultSynth()
	if err != nil {
		t.Fatal(err)
	}
	s = s.Subset([]int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	for _, f := range []Format{FormatParquet, FormatCSV, FormatArrow} {
		var whole bytes.Buffer
		if err := Write(&whole, s, WriteOptions{Format: f}); err != nil {
			t.Fatal(err)
		}
		size := whole.Len()
		for _, room := range []int{0, 1, 3, 4, 5, 64, size / 3, size / 2, size - 12, size - 4, size - 1} {
			err := func() (err error) {
				defer func() {
					if r := recover(); r != nil {
						t.Errorf("format %s, disk full after %d of %d bytes: panic %v", f, room, size, r)
					}
				}()
				return Write(&faultio.FullDisk{Room: room, Path: "/full/.out.tmp-1"}, s, WriteOptions{Format: f})
			}()
			if !errors.Is(err, syscall.ENOSPC) {
				t.Errorf("format %s, disk full after %d of %d bytes: got %v, want no space left on device", f, room, size, err)
			}
		}
	}
}

// TestParquetWriterShortWrite: a destination that writes less than asked
// without an error is io.ErrShortWrite, not a panic.
func TestParquetWriterShortWrite(t *testing.T) {
	s, _, err := DefaultSynth()
	if err != nil {
		t.Fatal(err)
	}
	err = Write(shortWriter{}, s.Subset([]int{0, 1}), WriteOptions{Format: FormatParquet})
	if !errors.Is(err, io.ErrShortWrite) {
		t.Errorf("got %v, want a short write", err)
	}
}

type shortWriter struct{}

func (shortWriter) Write(p []byte) (int, error) { return len(p) / 2, nil }
