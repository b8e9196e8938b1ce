package dprec_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dprec/dprec"
	"github.com/dprec/dprec/data"
)

// TestFitOneValue: Fit on a log whose ratings all have one value predicts
// that value (issue 24 item 14: Fit left a one-point range unclamped).
func TestFitOneValue(t *testing.T) {
	dir := t.TempDir()
	for _, body := range []string{"1,10,4.5\n", strings.Repeat("1,10,4.5\n2,11,4.5\n3,10,4.5\n", 5)} {
		path := filepath.Join(dir, "one.csv")
		if err := os.WriteFile(path, []byte("userId,movieId,rating\n"+body), 0o644); err != nil {
			t.Fatal(err)
		}
		m, err := dprec.Fit(context.Background(), path, &dprec.Options{Objective: dprec.ObjectiveRating, Rank: 2, Seed: 5, TimeUnit: data.TimeNone})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range [][2]string{{"1", "10"}, {"2", "10"}} {
			if got, _ := m.Predict(p[0], p[1], time.Time{}); got != 4.5 {
				t.Errorf("%q: Predict%v = %g, want 4.5", body[:9], p, got)
			}
		}
	}
}
