package completion

import (
	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/perturb"
)

// Privacy is the plug-in through which a training mode makes SGD training
// differentially private. The trainer calls, in order:
//
//  1. Plan, once, before anything else, with the training set and the
//     settings; a mode refuses here when its releases would exceed the
//     budget, and solves for its per-step noise.
//  2. PerturbInput, once, with a private copy of the training values
//     (input perturbation); the trainer trains on whatever it leaves there.
//  3. GradientTransform, once per worker, for a transform applied to every
//     per-entry gradient that worker computes (nil: no transform).
//  4. PerturbOutput, once, on the trained model before it is returned
//     (output perturbation); it may refit a factor with RefitFactor.
//  5. Report, for the privacy report stored with the model.
//
// Non-private training uses NoPrivacy, whose every step is a no-op.
type Privacy interface {
	Plan(train *data.Store, s *Settings) error
	PerturbInput(vals []float64, train *data.Store) error
	GradientTransform(worker int) GradientTransform
	PerturbOutput(m *decomposition.Model, train *data.Store) error
	Report() *perturb.Report
}

// EntryGrad is the data-dependent gradient of the squared error of one
// observed entry (the loss term of objective (4) for that entry, without
// the regularisation terms, which do not depend on the data and are added
// by the trainer after the transform).
//
// Factor[m] is the gradient with respect to the factor row of mode m at
// index Idx[m] (length Ranks[m]); Core the gradient with respect to the
// Tucker core (nil for CP); Bias[m] the gradient with respect to the bias of
// mode m at Idx[m] (nil when the model has no biases). The trainer then
// applies row -= lr * (Factor[m] + reg * row), and likewise for the core
// and biases.
type EntryGrad struct {
	Idx    []int32
	Factor [][]float64
	Core   []float64
	Bias   []float64
}

// GradientTransform modifies per-entry gradients in place (clipping and
// noise for gradient perturbation). Each worker gets its own transform and
// calls it from one goroutine only, so a transform may own a *rand.Rand.
type GradientTransform interface {
	Transform(g *EntryGrad)
}

// NoPrivacy is the non-private plug-in: every step is a no-op and the report
// says "none".
type NoPrivacy struct{}

var _ Privacy = NoPrivacy{}

func (NoPrivacy) Plan(*data.Store, *Settings) error                     { return nil }
func (NoPrivacy) PerturbInput([]float64, *data.Store) error             { return nil }
func (NoPrivacy) GradientTransform(int) GradientTransform               { return nil }
func (NoPrivacy) PerturbOutput(*decomposition.Model, *data.Store) error { return nil }
func (NoPrivacy) Report() *perturb.Report                               { return perturb.NonPrivate() }

// meanReleaser is implemented by a plug-in that releases a noisy global
// mean: Train sets the model's mean to it right after initialisation, so
// nothing the trainer computes (losses, validation RMSE) uses the raw mean.
type meanReleaser interface {
	ReleasedMean() (float64, bool)
}
