package main

import (
	"strings"
	"testing"

	"github.com/dprec/dprec"
	"github.com/dprec/dprec/completion"
	"github.com/dprec/dprec/data"
	"github.com/urfave/cli/v2"
)

// trainPrivacyStore is a 4-user log in which user 0 has 6 ratings.
func trainPrivacyStore() *data.Store {
	s := &data.Store{Dims: []int{4, 8}, Idx: [][]int32{{}, {}}}
	add := func(u, i int32, v float64) {
		s.Idx[0] = append(s.Idx[0], u)
		s.Idx[1] = append(s.Idx[1], i)
		s.Val = append(s.Val, v)
	}
	for i := int32(0); i < 6; i++ {
		add(0, i, 4)
	}
	for u := int32(1); u < 4; u++ {
		add(u, u, 3)
		add(u, u+1, 2)
	}
	return s
}

// trainPrivacyParse runs trainPrivacy on args with the train command's
// privacy flags (plus --validation and --seed, which train.go defines).
func trainPrivacyParse(t *testing.T, st *data.Store, args ...string) (completion.Privacy, error) {
	t.Helper()
	var p completion.Privacy
	var perr error
	flags := append(trainPrivacyFlags(),
		&cli.Float64Flag{Name: "validation"}, &cli.Uint64Flag{Name: "seed"}, &cli.BoolFlag{Name: "quiet"})
	app := &cli.App{Name: "t", Flags: flags, Action: func(c *cli.Context) error {
		var dp *dprec.Privacy
		dp, _, perr = trainPrivacyOf(c)
		switch {
		case perr != nil:
		case dp == nil:
			p = completion.NoPrivacy{}
		default:
			p, perr = dp.Plugin()
		}
		return nil
	}}
	if err := app.Run(append([]string{"t", "--quiet"}, args...)); err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return p, perr
}

func TestTrainPrivacyFlags(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		wantErr string
		check   func(completion.Privacy) bool
	}{
		{nil, "", func(p completion.Privacy) bool { _, ok := p.(completion.NoPrivacy); return ok }},
		{[]string{"--epsilon", "1"}, "needs --privacy", nil},
		{[]string{"--privacy", "input"}, "needs --epsilon", nil},
		{[]string{"--privacy", "bias", "--epsilon", "1"}, "", func(p completion.Privacy) bool { _, ok := p.(*completion.StatisticsMode); return ok }},
		{[]string{"--privacy", "bias", "--epsilon", "1", "--mechanism", "gaussian", "--delta", "1e-5"}, "", func(p completion.Privacy) bool { _, ok := p.(*completion.StatisticsMode); return ok }},
		{[]string{"--privacy", "input", "--epsilon", "1"}, "", func(p completion.Privacy) bool { _, ok := p.(*completion.InputPerturbation); return ok }},
		{[]string{"--privacy", "input", "--epsilon", "1", "--mechanism", "gaussian"}, "delta", nil},
		{[]string{"--privacy", "gradient", "--epsilon", "1", "--delta", "1e-5", "--protect", "all", "--dp-sgd", "per-entry", "--accounting", "basic", "--calibration", "tight"}, "", func(p completion.Privacy) bool { _, ok := p.(*completion.GradientPerturbation); return ok }},
		{[]string{"--privacy", "gradient", "--epsilon", "1", "--protect", "most"}, "protect", nil},
		// --protect all is the default: Gaussian, so --delta is required;
		// --protect C is pure.
		{[]string{"--privacy", "gradient", "--epsilon", "1"}, "needs --delta", nil},
		{[]string{"--privacy", "als", "--epsilon", "1"}, "needs --delta", nil},
		{[]string{"--privacy", "bias", "--epsilon", "1e300"}, "--epsilon/--delta", nil},
		{[]string{"--privacy", "als", "--epsilon", "1", "--delta", "1.5"}, "--epsilon/--delta", nil},
		{[]string{"--privacy", "bias", "--epsilon", "1", "--mechanism", "gaussian"}, "needs --delta", nil},
		{[]string{"--privacy", "bias", "--epsilon", "1", "--privacy-unit", "user", "--max-ratings-per-user", "5"}, "needs --delta", nil},
		// A privacy flag the mode would ignore is refused, not dropped.
		{[]string{"--privacy", "bias", "--epsilon", "1", "--clip", "2"}, "does not apply", nil},
		{[]string{"--privacy", "bias", "--epsilon", "1", "--protect", "C"}, "does not apply", nil},
		{[]string{"--privacy", "bias", "--epsilon", "1", "--output-lambda", "3"}, "does not apply", nil},
		{[]string{"--privacy", "bias", "--epsilon", "1", "--calibration", "classic"}, "does not apply", nil},
		{[]string{"--privacy", "als", "--epsilon", "1", "--delta", "1e-5", "--mechanism", "gaussian"}, "does not apply", nil},
		{[]string{"--privacy", "als", "--epsilon", "1", "--delta", "1e-5", "--calibration", "classic"}, "does not apply", nil},
		{[]string{"--privacy", "als", "--epsilon", "5", "--delta", "1e-5", "--privacy-unit", "user", "--max-ratings-per-user", "100", "--calibration", "classic"}, "does not apply", nil},
		{[]string{"--privacy", "bias", "--epsilon", "5", "--delta", "1e-5", "--privacy-unit", "user", "--max-ratings-per-user", "100", "--mechanism", "gaussian", "--calibration", "classic"}, "does not apply", nil},
		{[]string{"--privacy", "bias", "--epsilon", "1", "--delta", "1e-5", "--mechanism", "gaussian", "--calibration", "tight"}, "", func(p completion.Privacy) bool { _, ok := p.(*completion.StatisticsMode); return ok }},
		{[]string{"--privacy", "gradient", "--epsilon", "1", "--protect", "C", "--dp-sgd", "per-entry"}, "does not apply", nil},
		{[]string{"--privacy", "gradient", "--epsilon", "1", "--delta", "1e-5", "--calibration", "tight"}, "does not apply", nil},
		{[]string{"--privacy", "input", "--epsilon", "1", "--dp-sgd", "minibatch"}, "does not apply", nil},
		{[]string{"--privacy", "output", "--epsilon", "1", "--mechanism", "laplace"}, "does not apply", nil},
		{[]string{"--privacy", "output", "--epsilon", "1", "--clip", "2", "--output-lambda", "3"}, "", func(p completion.Privacy) bool { _, ok := p.(*completion.OutputPerturbation); return ok }},
		{[]string{"--privacy", "gradient", "--epsilon", "1", "--delta", "1e-5"}, "", func(p completion.Privacy) bool {
			g, ok := p.(*completion.GradientPerturbation)
			return ok && g.Protect() == completion.ProtectAll
		}},
		{[]string{"--privacy", "gradient", "--epsilon", "1", "--protect", "C"}, "", func(p completion.Privacy) bool {
			g, ok := p.(*completion.GradientPerturbation)
			return ok && g.Protect() == completion.ProtectC
		}},
		{[]string{"--privacy", "output", "--epsilon", "1"}, "", func(p completion.Privacy) bool { _, ok := p.(*completion.OutputPerturbation); return ok }},
		{[]string{"--privacy", "output", "--epsilon", "1", "--privacy-unit", "user", "--max-ratings-per-user", "2"}, "bias and als only", nil},
		{[]string{"--privacy", "input", "--epsilon", "1", "--privacy-unit", "user", "--max-ratings-per-user", "100"}, "bias and als only", nil},
		{[]string{"--privacy", "gradient", "--epsilon", "1", "--delta", "1e-5", "--protect", "all", "--privacy-unit", "user", "--max-ratings-per-user", "100"}, "bias and als only", nil},
		{[]string{"--privacy", "als", "--epsilon", "1", "--delta", "1e-5"}, "", func(p completion.Privacy) bool {
			s, ok := p.(*completion.StatisticsMode)
			return ok && s.Mode() == "als"
		}},
		{[]string{"--privacy", "als", "--epsilon", "1"}, "delta", nil},
		{[]string{"--privacy", "als", "--epsilon", "1", "--delta", "1e-5", "--als-positions", "off"}, "", func(p completion.Privacy) bool {
			s, ok := p.(*completion.StatisticsMode)
			return ok && s.Mode() == "als"
		}},
		{[]string{"--privacy", "als", "--epsilon", "1", "--delta", "1e-5", "--als-positions", "on"}, "want auto or off", nil},
		{[]string{"--privacy", "bias", "--epsilon", "1", "--als-positions", "off"}, "does not apply", nil},
		{[]string{"--privacy", "als", "--epsilon", "1", "--delta", "1e-5", "--privacy-unit", "user", "--max-ratings-per-user", "100", "--als-positions", "off"}, "", func(p completion.Privacy) bool {
			s, ok := p.(*completion.StatisticsMode)
			return ok && s.Mode() == "als"
		}},
		{[]string{"--als-positions", "off"}, "needs --privacy", nil},
		{[]string{"--privacy", "bias", "--epsilon", "1", "--delta", "1e-5", "--privacy-unit", "user", "--max-ratings-per-user", "100"}, "", func(p completion.Privacy) bool { _, ok := p.(*completion.StatisticsMode); return ok }},
		{[]string{"--privacy", "bias", "--epsilon", "1", "--privacy-unit", "user"}, "needs --max-ratings-per-user", nil},
		{[]string{"--privacy", "input", "--epsilon", "1", "--max-ratings-per-user", "2"}, "belongs to --privacy-unit user", nil},
		{[]string{"--privacy", "bias", "--epsilon", "1", "--items", "x.csv"}, "belongs to --privacy-unit user", nil},
		{[]string{"--privacy", "input", "--epsilon", "nan"}, "epsilon", nil},
		{[]string{"--privacy", "input", "--epsilon", "1", "--rating-min", "5", "--rating-max", "1"}, "range", nil},
		{[]string{"--privacy", "input", "--epsilon", "1", "--calibration", "optimal"}, "calibration", nil},
		{[]string{"--privacy", "input", "--epsilon", "1", "--accounting", "moments"}, "accounting", nil},
		{[]string{"--privacy", "everything", "--epsilon", "1"}, "want none", nil},
	} {
		p, err := trainPrivacyParse(t, trainPrivacyStore(), tc.args...)
		switch {
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%v: err = %v, want one containing %q", tc.args, err, tc.wantErr)
		case tc.wantErr == "" && err != nil:
			t.Errorf("%v: %v", tc.args, err)
		case tc.check != nil && err == nil && !tc.check(p):
			t.Errorf("%v: plug-in %T", tc.args, p)
		}
	}
}

// TestTrainPrivacyValidation: a private run without --validation holds
// nothing out (the default 0.1 is not used), an explicit --validation 0 is
// accepted, an explicit positive fraction is refused, and a non-private
// run keeps its fraction.
func TestTrainPrivacyValidation(t *testing.T) {
	run := func(args ...string) (float64, error) {
		o, err := trainOptionsParse(t, args...)
		if err != nil {
			return 0, err
		}
		return o.Fit.Validation, nil
	}
	for _, tc := range []struct {
		args    []string
		want    float64
		wantErr bool
	}{
		{nil, 0.1, false},
		{[]string{"--privacy", "bias", "--epsilon", "1"}, 0, false},
		{[]string{"--privacy", "input", "--epsilon", "1", "--validation", "0"}, 0, false},
		{[]string{"--privacy", "gradient", "--epsilon", "1", "--validation", "0.2"}, 0, true},
		{[]string{"--validation", "0.2"}, 0.2, false},
	} {
		got, err := run(tc.args...)
		if (err != nil) != tc.wantErr || (err == nil && got != tc.want) {
			t.Errorf("%v: fraction %v, err %v; want %v, error %v", tc.args, got, err, tc.want, tc.wantErr)
		}
	}
}

// trainOptionsParse parses args with train's flags into its options (the
// run function's input), without running it.
func trainOptionsParse(t *testing.T, args ...string) (*trainOptions, error) {
	t.Helper()
	var o *trainOptions
	var perr error
	cmd := trainCmd()
	flags := append(cmd.Flags, &cli.BoolFlag{Name: "quiet"}, &cli.BoolFlag{Name: "progress"})
	app := &cli.App{Name: "t", Flags: flags, Action: func(c *cli.Context) error {
		o, perr = trainOptionsOf(c)
		return nil
	}}
	if err := app.Run(append([]string{"t"}, args...)); err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return o, perr
}
