package completion

import (
	"errors"
	"fmt"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/perturb"
)

// StatisticsMode is a private training mode that releases noisy
// statistics instead of training by SGD: the bias mode (TrainPrivateBias)
// or private ALS (TrainPrivateALS). It is not an SGD plug-in (Train
// refuses it in Plan); call Fit. It implements Privacy so a caller that
// builds every private mode the same way (the CLI) can hold it as one.
type StatisticsMode struct {
	o      PrivateOptions
	mode   string
	report *perturb.Report
}

var _ Privacy = (*StatisticsMode)(nil)

// NewBiasMode validates opts for the bias mode.
func NewBiasMode(opts *PrivateOptions) (*StatisticsMode, error) {
	return newStatisticsMode(opts, "bias")
}

// NewALSMode validates opts for private ALS (delta must be > 0).
func NewALSMode(opts *PrivateOptions) (*StatisticsMode, error) {
	s, err := newStatisticsMode(opts, "als")
	if err != nil {
		return nil, err
	}
	if err := perturb.CheckPositiveDelta(s.o.Delta); err != nil {
		return nil, fmt.Errorf("completion: private ALS: %w", err)
	}
	return s, nil
}

func newStatisticsMode(opts *PrivateOptions, mode string) (*StatisticsMode, error) {
	if opts == nil {
		return nil, fmt.Errorf("completion: %s mode: nil options", mode)
	}
	oo := *opts
	oo.MeanFraction = 0
	o, err := oo.resolve(mode)
	if err != nil {
		return nil, err
	}
	o.MeanFraction = opts.MeanFraction
	return &StatisticsMode{o: o, mode: mode}, nil
}

// Mode returns "bias" or "als".
func (s *StatisticsMode) Mode() string { return s.mode }

// Fit runs the mode on m and returns a Result with no epochs and the
// privacy report. A mode releases once.
func (s *StatisticsMode) Fit(train *data.Store, m *decomposition.Model, set *Settings) (*Result, error) {
	if s.report != nil {
		return nil, fmt.Errorf("completion: %s mode: %w: this mode already released once (make a new one)", s.mode, perturb.ErrBudget)
	}
	if train != nil && m != nil {
		// The statistics modes use no workers: only the model's shape and
		// the number of ratings count (private ALS's per-item Grams).
		w := Workload{Kind: m.Kind, Dims: m.Dims, Ranks: m.Ranks, Bias: m.HasBias, NNZ: train.NNZ(), Mode: s.mode}
		if s.o.Unbounded != nil {
			// The user unit's weighted item counts and sums, and private
			// ALS's co-occurrence, read the log before the bound
			// (resources.go): the estimate counts its ratings.
			w.NNZ = max(w.NNZ, s.o.Unbounded.NNZ())
		}
		if err := checkEstimate(EstimateTrain(w)); err != nil {
			return nil, err
		}
	}
	var rep *perturb.Report
	var err error
	if s.mode == "als" {
		rep, err = TrainPrivateALS(train, m, &s.o)
	} else {
		rep, err = TrainPrivateBias(train, m, &s.o)
	}
	if err != nil {
		return nil, err
	}
	s.report = rep
	res := &Result{Model: m, Privacy: rep}
	if set != nil {
		res.Settings = set.Resolved()
	}
	res.Settings.Privacy = s
	return res, nil
}

// Plan refuses: these modes do not train by SGD.
func (s *StatisticsMode) Plan(*data.Store, *Settings) error {
	return fmt.Errorf("completion: the %s mode is not an SGD plug-in: call StatisticsMode.Fit", s.mode)
}

// PerturbInput is never reached (Plan refuses).
func (s *StatisticsMode) PerturbInput([]float64, *data.Store) error {
	return errors.New("completion: statistics mode: use StatisticsMode.Fit")
}

// GradientTransform returns nil.
func (s *StatisticsMode) GradientTransform(int) GradientTransform { return nil }

// PerturbOutput is never reached (Plan refuses).
func (s *StatisticsMode) PerturbOutput(*decomposition.Model, *data.Store) error {
	return errors.New("completion: statistics mode: use StatisticsMode.Fit")
}

// Report returns the report of the release (nil before Fit).
func (s *StatisticsMode) Report() *perturb.Report { return s.report }
