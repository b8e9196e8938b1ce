package dprec

import (
	"testing"

	"github.com/dprec/dprec/perturb"
)

// TestTrainDeltaWarning: an entry-level delta not below 1/n is warned
// about; a small one, a pure run, a user-level run and a non-private one
// are not.
func TestTrainDeltaWarning(t *testing.T) {
	for _, tc := range []struct {
		r    *perturb.Report
		n    int
		warn bool
	}{
		{&perturb.Report{Mode: "als", Unit: "entry", Delta: 0.5}, 100, true},
		{&perturb.Report{Mode: "als", Unit: "entry", Delta: 0.01}, 100, true},
		{&perturb.Report{Mode: "als", Unit: "entry", Delta: 0.009}, 100, false},
		{&perturb.Report{Mode: "bias", Unit: "entry"}, 100, false},
		{&perturb.Report{Mode: "bias", Unit: "user", Delta: 0.5}, 100, false},
		{&perturb.Report{Mode: "none"}, 100, false},
		{nil, 100, false},
	} {
		if got := deltaWarning(tc.r, tc.n) != ""; got != tc.warn {
			t.Errorf("%+v, n %d: warned %v, want %v", tc.r, tc.n, got, tc.warn)
		}
	}
}
