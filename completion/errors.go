package completion

import (
	"errors"
	"fmt"

	"github.com/dprec/dprec/perturb"
)

// ErrEmpty is returned (wrapped) when the training store has no entries.
var ErrEmpty = errors.New("completion: training store has no observations")

// ErrDiverged is returned when the training loss or a parameter becomes NaN
// or infinite. The model passed to Train is then left at the last finite
// state (the best epoch's snapshot when validating, else the epoch before).
type ErrDiverged struct {
	Epoch int
	Loss  float64
	// Privacy is the report of the private run that diverged (nil for a
	// run without privacy). Its budget is spent: see BudgetNote.
	Privacy *perturb.Report
}

func (e *ErrDiverged) Error() string {
	s := fmt.Sprintf("completion: training diverged in epoch %d (loss %g); lower the learning rate or raise the regularisation", e.Epoch, e.Loss)
	if n := e.BudgetNote(); n != "" {
		s += "; " + n
	}
	return s
}

// BudgetNote says what a diverged private run cost, and that a retry
// composes with it ("" when the run was not private). A private mode draws
// its noise on the private log before or while it trains (input,
// gradient, minibatch DP-SGD), so by the time it diverges its releases
// have happened: not saving the model does not give the budget back, the
// divergence itself is post-processing of those releases, and a retry
// with other settings is a new release on the same log whose guarantee
// adds to this one's (basic composition). Output perturbation draws its
// noise only after training, but it trained on the raw ratings, so the
// divergence is a function of the log that no guarantee covers.
func (e *ErrDiverged) BudgetNote() string {
	r := e.Privacy
	if !r.Private() {
		return ""
	}
	if r.Mode == "output" {
		return "privacy: output perturbation had drawn no noise yet, but it trained on the private ratings without noise, so whether it diverged is a function of the log that no guarantee covers; a retry chosen because of it is an unaccounted release"
	}
	return fmt.Sprintf("privacy: this run's budget (epsilon %g, delta %g, %s relation) is spent: its noise was drawn on the private log before it diverged, and not saving the model does not give it back; a retry with other settings is a new release on the same log whose epsilon and delta add to these (basic composition)", r.Epsilon, r.Delta, r.RelationKind)
}

// ShapeError reports a model that does not fit the data (order, mode sizes
// or ranks).
type ShapeError struct {
	Reason string
}

func (e *ShapeError) Error() string { return "completion: " + e.Reason }
