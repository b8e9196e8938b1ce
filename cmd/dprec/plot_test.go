package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestPlotLinesLogSingleValue: a log axis over one value (one epsilon in
// experiment completion-privacy) used to panic in gonum's LogTicks ("Values
// must be greater than 0 for a log scale"), after the axis was padded to
// [0, 2].
func TestPlotLinesLogSingleValue(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name       string
		logX, logY bool
		x, y       []float64
	}{
		{"x.png", true, false, []float64{1, 1}, []float64{2, 3}},
		{"y.svg", false, true, []float64{1, 2}, []float64{5, 5}},
		{"xy.png", true, true, []float64{0.5}, []float64{0.25}},
	} {
		path := filepath.Join(dir, tc.name)
		err := plotLines(path, false, "t", "x", "y", tc.logX, tc.logY, []plotSeries{{Name: "s", X: tc.x, Y: tc.y}})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if st, err := os.Stat(path); err != nil || st.Size() == 0 {
			t.Errorf("%s: no plot written (%v)", tc.name, err)
		}
	}
}
