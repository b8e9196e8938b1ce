package data

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestWriteMatchesSave: Write to a stream gives the bytes Save writes to
// a file of the same format.
func TestWriteMatchesSave(t *testing.T) {
	s, _, err := DefaultSynth()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		name   string
		format Format // for Write; Save takes it from name
	}{
		{"r.csv", FormatAuto},
		{"r.tsv", FormatTSV},
		{"r.parquet", FormatParquet},
		{"r.arrow", FormatArrow},
	} {
		path := filepath.Join(dir, tc.name)
		if err := Save(path, s, WriteOptions{}); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		if err := Write(&got, s, WriteOptions{Format: tc.format}); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !bytes.Equal(got.Bytes(), want) {
			t.Errorf("%s: Write gave %d bytes, Save %d, and they differ", tc.name, got.Len(), len(want))
		}
	}
}
