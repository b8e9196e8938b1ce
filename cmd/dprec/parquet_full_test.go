package main

import (
	"bytes"
	"errors"
	"io"
	"syscall"
	"testing"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/internal/faultio"
	"github.com/dprec/dprec/models"
	"gonum.org/v1/gonum/mat"
)

// TestParquetOutputsFullDisk: the Parquet outputs of recommend
// --all-users --out, predict --out and spectral --doc-topics return "no
// space left on device" wherever the disk fills up, instead of pqarrow's
// panic "failed to write magic number" (issue 24 item 10; data convert and
// export are covered by TestParquetWriterFullDisk and TestExportFullDisk).
func TestParquetOutputsFullDisk(t *testing.T) {
	_, model, _ := outputTestModel(t)
	f, err := models.Load(model)
	if err != nil {
		t.Fatal(err)
	}
	p := models.NewPredictor(f)
	corpus := &data.Corpus{DocIDs: []int{0, 1, 2}}
	outputs := map[string]func(w io.Writer) error{
		"recommend": func(w io.Writer) error {
			return recommendParquet(struct{ io.Writer }{w}, p, 3, nil, 1, nil, func() {})
		},
		"predict": func(w io.Writer) error {
			s, err := newParquetSink(w, true)
			if err != nil {
				return err
			}
			r := 4.0
			if err := s.Write(predictResult{User: "1", Item: "2", Rating: &r, Prediction: 3.5}); err != nil {
				s.Close()
				return err
			}
			return s.Close()
		},
		"doc-topics": func(w io.Writer) error {
			return spectralDocTopicsParquet(w, corpus, mat.NewDense(3, 2, []float64{0.1, 0.9, 0.5, 0.5, 0.7, 0.3}), []string{"doc", "topic_1", "topic_2"})
		},
	}
	for name, write := range outputs {
		var whole bytes.Buffer
		if err := write(&whole); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		size := whole.Len()
		for _, room := range []int{0, 2, 4, size / 2, size - 1} {
			err := func() (err error) {
				defer func() {
					if r := recover(); r != nil {
						t.Errorf("%s, full after %d of %d bytes: panic %v", name, room, size, r)
					}
				}()
				return write(&faultio.FullDisk{Room: room, Path: "/full/.out.parquet.tmp-1"})
			}()
			if !errors.Is(err, syscall.ENOSPC) {
				t.Errorf("%s, full after %d of %d bytes: got %v, want no space left on device", name, room, size, err)
			}
		}
	}
}
