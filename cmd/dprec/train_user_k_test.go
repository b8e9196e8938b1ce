package main

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dprec/dprec/completion"
)

// TestTrainUserHugeK: --privacy-unit user --max-ratings-per-user far above
// any possible count, without --items, finishes at once (issue 24 item 8:
// the private item selection took time linear in k and never finished);
// on this small log the selection at such a k keeps no item, which is
// said with the k.
func TestTrainUserHugeK(t *testing.T) {
	dir := t.TempDir()
	train, _ := trainTestLog(t, dir)
	done := make(chan error, 1)
	go func() {
		_, _, err := trainTestRun(t, "--quiet", "train", "--data", train, "--privacy", "bias", "--privacy-unit", "user", "--max-ratings-per-user", "1000000000000",
			"--time-unit", "none", "--epsilon", "1", "--delta", "1e-5", "--rank", "2", "--out", filepath.Join(dir, "m.arrow"))
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, completion.ErrDomain) || !strings.Contains(err.Error(), "k = 1000000000000") {
			t.Errorf("got %v, want the selection's empty-domain error naming k", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("train with k = 1e12 did not finish in 30 s")
	}
}
