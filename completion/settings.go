package completion

import (
	"fmt"
	"github.com/dprec/dprec/decomposition"
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
	// update. Zero means DefaultRegCore; negative means none. ALS charges
	// it per observation, toward the CP core (zero: DefaultALSRegCore);
	// the Gibbs sampler takes alpha RegCore |Omega| as the core's prior
	// precision around the CP core (zero: DefaultALSRegCore), and with
	// RegCore negative learns that precision under a Gamma hyperprior
	// (package doc, "Gibbs for Tucker").
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
	// The private modes refuse it (a SettingsError): their guarantees
	// assume a data-independent initial model.
	WarmStart bool
	// Patience stops training when the validation RMSE has not improved for
	// this many epochs, restoring the best epoch's model. Zero means
	// DefaultPatience; negative disables early stopping. Without a
	// validation store training always runs all Epochs.
	Patience int
	// Privacy is the privacy plug-in; nil means NoPrivacy.
	Privacy Privacy

	// Solver selects the optimiser. The zero value (SolverDefault) means
	// the Gibbs sampler for non-private training (ALS for a Tucker core
	// above MaxGibbsCore entries) and SGD when a privacy plug-in is set
	// (the private modes act on SGD's plug points).
	Solver Solver
	// RegTime is the ALS penalty on the deviation of each time row from
	// all-ones, c_k = 1 + d_k, charged lambda_t n_k |d_k|^2 for a bucket with
	// n_k observations; all-ones time rows make a CP or Tucker model plain
	// matrix factorisation, so a large RegTime falls back to it when time
	// carries no signal. Zero means DefaultALSRegTime; negative means none.
	RegTime float64
	// TimeBiases switches the sparse time-dependent biases of order-3 ALS
	// models: a bias per (user, time bucket) seen in training and a bias
	// per (item, period), with ItemPeriods periods over the time range. The
	// zero value means on for order-3 stores under ALS.
	TimeBiases Toggle
	// ItemPeriods is the number of item-bias periods (0: DefaultItemPeriods).
	ItemPeriods int
	// BurnIn is the number of Gibbs sweeps discarded before samples are
	// averaged (zero: a quarter of Epochs).
	BurnIn int
	// RegPair is the penalty of each pair bias: b = sum(residual)/(n + RegPair).
	// Zero means DefaultALSRegPair; negative means none.
	RegPair float64
	// hasBias is set by Train from the model before Plan, so a privacy
	// plug-in can plan releases that only models with biases need.
	hasBias bool
	// modelKind and modelRank are set by Train from the model before Plan
	// too (the first mode's rank).
	modelKind decomposition.Kind
	modelRank int
}

// Solver is the optimiser Train uses.
type Solver uint8

// Solvers.
const (
	// SolverDefault is the Gibbs sampler without privacy (ALS for a
	// Tucker core above MaxGibbsCore entries), SGD with a privacy plug-in.
	SolverDefault Solver = iota
	// SolverSGD is stratified parallel SGD (the private modes' solver).
	SolverSGD
	// SolverALS is alternating least squares: exact ridge solves of every
	// row of one mode at a time, biases solved jointly with their rows.
	SolverALS
	// SolverGibbs samples a Bayesian CP or Tucker model (Gaussian-Wishart
	// priors on the rows, as in Bayesian PMF/BPTF; a Gaussian prior on the
	// Tucker core) and averages the samples.
	SolverGibbs
)

// String returns the solver's name as the CLI spells it.
func (s Solver) String() string {
	switch s {
	case SolverDefault:
		return "default"
	case SolverSGD:
		return "sgd"
	case SolverALS:
		return "als"
	case SolverGibbs:
		return "gibbs"
	}
	return fmt.Sprintf("Solver(%d)", uint8(s))
}

// MarshalText encodes the solver by name (model headers, JSON).
func (s Solver) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText decodes a solver name.
func (s *Solver) UnmarshalText(b []byte) error {
	v, err := ParseSolver(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// ParseSolver maps "sgd", "als" or "default"/"" to a Solver.
func ParseSolver(name string) (Solver, error) {
	switch name {
	case "", "default":
		return SolverDefault, nil
	case "sgd":
		return SolverSGD, nil
	case "als":
		return SolverALS, nil
	case "gibbs":
		return SolverGibbs, nil
	}
	return 0, fmt.Errorf("unknown solver %q (want als, gibbs or sgd)", name)
}

// Toggle is a three-way switch whose zero value means "the default".
type Toggle uint8

// Toggle values.
const (
	ToggleDefault Toggle = iota
	ToggleOn
	ToggleOff
)

// String returns "default", "on" or "off".
func (t Toggle) String() string {
	switch t {
	case ToggleOn:
		return "on"
	case ToggleOff:
		return "off"
	}
	return "default"
}

// MarshalText encodes the toggle by name.
func (t Toggle) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// UnmarshalText decodes "default", "on" or "off".
func (t *Toggle) UnmarshalText(b []byte) error {
	switch string(b) {
	case "", "default":
		*t = ToggleDefault
	case "on", "true":
		*t = ToggleOn
	case "off", "false":
		*t = ToggleOff
	default:
		return fmt.Errorf("unknown toggle %q (want on or off)", b)
	}
	return nil
}

// resolved returns a copy with every default filled in for a CP model.
func (s *Settings) resolved() Settings { return s.resolvedFor(decomposition.CP) }

// resolvedFor returns a copy with every default filled in for a model of
// the given kind: zero fields take their defaults and negative "off" values
// become 0 (penalties, decay) or stay negative (Patience). The default
// solver is the Gibbs sampler for CP and Tucker without privacy (chosen on
// validation data, package doc "Defaults"; resolvedForModel takes ALS for
// a Tucker core above MaxGibbsCore) and with input perturbation (the
// solver is post-processing of the noisy values, so the non-private
// default applies: InputPerturbation), SGD with the other privacy
// plug-ins.
func (s *Settings) resolvedFor(kind decomposition.Kind) Settings {
	var r Settings
	if s != nil {
		r = *s
	} else {
		s = &r
	}
	if r.Solver == SolverDefault {
		r.Solver = SolverGibbs
		if r.Privacy != nil {
			_, none := r.Privacy.(NoPrivacy)
			_, input := r.Privacy.(*InputPerturbation)
			if !none && !input {
				r.Solver = SolverSGD
			}
		}
	}
	if r.Solver == SolverALS || r.Solver == SolverGibbs {
		r.resolveALS()
	}
	if r.Solver == SolverGibbs {
		if r.Epochs == DefaultALSSweeps && s.Epochs == 0 {
			r.Epochs = DefaultGibbsSweeps
		}
		if r.BurnIn == 0 {
			r.BurnIn = r.Epochs / 4
		}
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

// resolvedForModel is resolvedFor(m.Kind), except that the default solver
// of a Tucker model whose core has more than MaxGibbsCore entries (which
// the Gibbs sampler refuses) is ALS.
func (s *Settings) resolvedForModel(m *decomposition.Model) Settings {
	if s != nil && s.Solver == SolverDefault && len(m.Core) > MaxGibbsCore {
		if _, none := s.Privacy.(NoPrivacy); none || s.Privacy == nil {
			c := *s
			c.Solver = SolverALS
			return c.resolvedFor(m.Kind)
		}
	}
	if s == nil && len(m.Core) > MaxGibbsCore {
		return (&Settings{Solver: SolverALS}).resolvedFor(m.Kind)
	}
	return s.resolvedFor(m.Kind)
}

// Resolved returns the settings with every default filled in, as Train uses
// them for a CP model (penalties given as negative "off" become 0).
func (s *Settings) Resolved() Settings { return s.resolved() }

// ResolvedFor is Resolved for a model of the given kind.
func (s *Settings) ResolvedFor(kind decomposition.Kind) Settings { return s.resolvedFor(kind) }

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
	case r.Epochs > MaxEpochs:
		return bad("Epochs", float64(r.Epochs), fmt.Sprintf("must be at most %d (MaxEpochs)", MaxEpochs))
	case r.Threads < 0:
		return bad("Threads", float64(r.Threads), "must be positive")
	case r.Threads > MaxThreads:
		return bad("Threads", float64(r.Threads), fmt.Sprintf("must be at most %d (MaxThreads: every worker holds its own working space)", MaxThreads))
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
	case r.Solver > SolverGibbs:
		return bad("Solver", float64(r.Solver), "unknown solver")
	case r.Solver == SolverGibbs && (r.BurnIn < 0 || r.BurnIn >= r.Epochs):
		return bad("BurnIn", float64(r.BurnIn), "must be at least 0 and below the number of sweeps")
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

// ALS defaults, chosen on a validation split carved from the training part
// of ml-latest-small and checked on synthetic logs (package doc, "ALS").
// Reg, RegCore and RegTime are per observation (a row seen n times is
// charged n times the penalty, as in ALS-WR); RegBias and RegPair are
// counts of pseudo-observations at zero.
const (
	DefaultALSSweeps   = 60
	DefaultALSReg      = 0.15
	DefaultALSRegBias  = 15
	DefaultALSRegTime  = 10
	DefaultALSRegCore  = 1
	DefaultALSRegPair  = 15
	DefaultItemPeriods = 30
	DefaultALSPatience = 3
	// DefaultGibbsSweeps is the number of sweeps of the Gibbs sampler.
	DefaultGibbsSweeps = 200
)

// resolveALS fills the ALS defaults (before the shared ones).
func (r *Settings) resolveALS() {
	if r.Epochs == 0 {
		r.Epochs = DefaultALSSweeps
	}
	if r.Reg == 0 {
		r.Reg = DefaultALSReg
	}
	if r.RegBias == 0 {
		r.RegBias = DefaultALSRegBias
	}
	if r.RegCore == 0 {
		r.RegCore = DefaultALSRegCore
	}
	r.RegTime = orDefault(r.RegTime, DefaultALSRegTime)
	r.RegPair = orDefault(r.RegPair, DefaultALSRegPair)
	if r.ItemPeriods == 0 {
		r.ItemPeriods = DefaultItemPeriods
	}
	if r.Patience == 0 {
		r.Patience = DefaultALSPatience
	}
}
