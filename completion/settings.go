package completion

import (
	"fmt"
	"math"
	"runtime"
)

// Default hyper-parameters for rating logs (1-5 star scales), tuned on
// ml-latest-small (random 90/10 split, weekly time buckets, CP rank 10 with
// biases; the package doc has the resulting RMSE table). The step sizes
// are for the exact gradient of eq. (4), which carries a factor 2 (so
// DefaultLearningRate 0.005 is the "0.01" of Funk-SVD style code that drops it).
const (
	DefaultEpochs       = 60
	DefaultLearningRate = 0.005
	DefaultDecay        = 0.05
	DefaultReg          = 0.1
	DefaultRegCore      = 0.01 // 1e-4 let a rank-20 Tucker core overfit ml-latest-small (test RMSE 0.8632 vs 0.8577)
	DefaultInitScale    = 0.1
	DefaultPatience     = 5
	// DefaultCoreStepFactor scales LearningRate into CoreLearningRate.
	DefaultCoreStepFactor = 0.01
)

// Settings configure Train. Following the gonum optimize.Settings shape, the
// zero value of every field means its documented default, so
// &Settings{} trains with the defaults for rating logs.
type Settings struct {
	// Epochs is the maximum number of passes over the observed entries.
	// Zero means DefaultEpochs.
	Epochs int
	// Threads is the number of workers, which is also the number p of blocks
	// each mode is split into for stratified SGD. Zero means GOMAXPROCS.
	// Results are bit-identical run to run for a fixed seed and Threads.
	Threads int
	// LearningRate is the initial step size lr0. Zero means
	// DefaultLearningRate.
	LearningRate float64
	// Decay sets the schedule lr_t = lr0 / (1 + Decay*t) for epoch t = 0, 1, ...
	// Zero means DefaultDecay; a negative value means a constant step.
	Decay float64
	// Reg is lambda_o of eq. (4), the factor-matrix penalty, applied per
	// update to the rows an entry touches. Zero means DefaultReg; a negative
	// value means no penalty.
	Reg float64
	// CoreLearningRate is the initial step size of the Tucker core (it
	// follows the same decay). The core is touched by every entry, so it
	// takes |Omega| steps per epoch where a factor row takes only its own
	// entries' steps; a smaller step keeps it from racing ahead of the
	// factors. Zero means LearningRate * DefaultCoreStepFactor.
	CoreLearningRate float64
	// RegCore is lambda_g of eq. (4), the Tucker core penalty, applied per
	// update. Zero means DefaultRegCore; negative means none.
	RegCore float64
	// RegBias is the penalty on the bias terms (which eq. (4) does not
	// have). Zero means the value of Reg; negative means none.
	RegBias float64
	// InitScale is the standard deviation of the Gaussian initial factor
	// entries; the Tucker core starts at the superdiagonal identity plus
	// Gaussian noise of this standard deviation. Zero means DefaultInitScale.
	InitScale float64
	// WarmStart keeps the factors, core and biases already in the model
	// instead of initialising them (the global mean is still recomputed).
	WarmStart bool
	// Patience stops training when the validation RMSE has not improved for
	// this many epochs, restoring the best epoch's model. Zero means
	// DefaultPatience; negative disables early stopping. Without a
	// validation store training always runs all Epochs.
	Patience int
	// Privacy is the privacy plug-in; nil means NoPrivacy.
	Privacy Privacy
}

// resolved returns a copy with every default filled in: zero fields take
// their defaults and negative "off" values become 0 (penalties, decay) or
// stay negative (Patience).
func (s *Settings) resolved() Settings {
	var r Settings
	if s != nil {
		r = *s
	}
	if r.Epochs == 0 {
		r.Epochs = DefaultEpochs
	}
	if r.Threads == 0 {
		r.Threads = runtime.GOMAXPROCS(0)
	}
	if r.LearningRate == 0 {
		r.LearningRate = DefaultLearningRate
	}
	if r.CoreLearningRate == 0 {
		r.CoreLearningRate = r.LearningRate * DefaultCoreStepFactor
	}
	r.Decay = orDefault(r.Decay, DefaultDecay)
	r.Reg = orDefault(r.Reg, DefaultReg)
	r.RegCore = orDefault(r.RegCore, DefaultRegCore)
	if r.RegBias == 0 {
		r.RegBias = r.Reg
	} else if r.RegBias < 0 {
		r.RegBias = 0
	}
	if r.InitScale == 0 {
		r.InitScale = DefaultInitScale
	}
	if r.Patience == 0 {
		r.Patience = DefaultPatience
	}
	if r.Privacy == nil {
		r.Privacy = NoPrivacy{}
	}
	return r
}

// Resolved returns the settings with every default filled in, as Train uses
// them (penalties given as negative "off" become 0).
func (s *Settings) Resolved() Settings { return s.resolved() }

func orDefault(v, def float64) float64 {
	switch {
	case v == 0:
		return def
	case v < 0:
		return 0
	}
	return v
}

// validate checks resolved settings.
func (r *Settings) validate() error {
	bad := func(name string, v float64, rule string) error {
		return &SettingsError{Field: name, Value: v, Rule: rule}
	}
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	switch {
	case r.Epochs < 0:
		return bad("Epochs", float64(r.Epochs), "must be positive")
	case r.Threads < 0:
		return bad("Threads", float64(r.Threads), "must be positive")
	case !finite(r.LearningRate) || r.LearningRate <= 0:
		return bad("LearningRate", r.LearningRate, "must be positive and finite")
	case r.LearningRate > 1:
		return bad("LearningRate", r.LearningRate, "must be at most 1 (larger steps diverge)")
	case !finite(r.CoreLearningRate) || r.CoreLearningRate <= 0 || r.CoreLearningRate > 1:
		return bad("CoreLearningRate", r.CoreLearningRate, "must be in (0, 1]")
	case !finite(r.Decay):
		return bad("Decay", r.Decay, "must be finite")
	case !finite(r.Reg):
		return bad("Reg", r.Reg, "must be finite")
	case !finite(r.RegCore):
		return bad("RegCore", r.RegCore, "must be finite")
	case !finite(r.RegBias):
		return bad("RegBias", r.RegBias, "must be finite")
	case !finite(r.InitScale) || r.InitScale < 0:
		return bad("InitScale", r.InitScale, "must be positive and finite")
	}
	return nil
}

// SettingsError reports an invalid setting.
type SettingsError struct {
	Field string
	Value float64
	Rule  string
}

func (e *SettingsError) Error() string {
	return fmt.Sprintf("completion: setting %s is %g, %s", e.Field, e.Value, e.Rule)
}
