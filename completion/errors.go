package completion

import (
	"errors"
	"fmt"
)

// ErrEmpty is returned (wrapped) when the training store has no entries.
var ErrEmpty = errors.New("completion: training store has no observations")

// ErrDiverged is returned when the training loss or a parameter becomes NaN
// or infinite. The model passed to Train is then left at the last finite
// state (the best epoch's snapshot when validating, else the epoch before).
type ErrDiverged struct {
	Epoch int
	Loss  float64
}

func (e *ErrDiverged) Error() string {
	return fmt.Sprintf("completion: training diverged in epoch %d (loss %g); lower the learning rate or raise the regularisation", e.Epoch, e.Loss)
}

// ShapeError reports a model that does not fit the data (order, mode sizes
// or ranks).
type ShapeError struct {
	Reason string
}

func (e *ShapeError) Error() string { return "completion: " + e.Reason }
