package perturb

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestCheckEpsilon(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		eps     float64
		wantErr bool
	}{
		{1, false}, {0.1, false}, {MinEpsilon, false}, {MaxEpsilon, false},
		{0, true}, {-1, true}, {math.NaN(), true}, {math.Inf(1), true}, {math.Inf(-1), true},
		{MinEpsilon / 2, true}, {1e-300, true}, {MaxEpsilon * 1.01, true},
	} {
		err := CheckEpsilon(tc.eps)
		if (err != nil) != tc.wantErr {
			t.Errorf("CheckEpsilon(%v) = %v, wantErr %v", tc.eps, err, tc.wantErr)
		}
		if err != nil && (!errors.Is(err, ErrEpsilon) || !strings.Contains(err.Error(), "epsilon")) {
			t.Errorf("CheckEpsilon(%v) error %q does not wrap ErrEpsilon or name the parameter", tc.eps, err)
		}
	}
}

func TestCheckDeltaAndSensitivity(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		d       float64
		wantErr bool
	}{{0, false}, {1e-5, false}, {0.999, false}, {1, true}, {-1e-9, true}, {math.NaN(), true}, {math.Inf(1), true}} {
		if err := CheckDelta(tc.d); (err != nil) != tc.wantErr || (err != nil && !errors.Is(err, ErrDelta)) {
			t.Errorf("CheckDelta(%v) = %v, wantErr %v", tc.d, err, tc.wantErr)
		}
	}
	for _, tc := range []struct {
		s       float64
		wantErr bool
	}{{1, false}, {1e-300, false}, {0, true}, {-1, true}, {math.NaN(), true}, {math.Inf(1), true}} {
		if err := CheckSensitivity(tc.s); (err != nil) != tc.wantErr || (err != nil && !errors.Is(err, ErrSensitivity)) {
			t.Errorf("CheckSensitivity(%v) = %v, wantErr %v", tc.s, err, tc.wantErr)
		}
	}
}

// TestConstructorsValidate is the table test of every constructor against
// bad parameters (RELIABILITY checklist item 1).
func TestConstructorsValidate(t *testing.T) {
	t.Parallel()
	nan, inf := math.NaN(), math.Inf(1)
	type ctor func(sens, eps, delta float64) error
	ctors := map[string]ctor{
		"laplace": func(s, e, d float64) error {
			if err := CheckNoDelta(d); err != nil {
				return err
			}
			_, err := NewLaplace(s, e)
			return err
		},
		"l2": func(s, e, d float64) error {
			if err := CheckNoDelta(d); err != nil {
				return err
			}
			_, err := NewL2Noise(s, e, 3)
			return err
		},
		"gaussian": func(s, e, d float64) error { _, err := NewGaussian(s, e, d, Analytic); return err },
	}
	for name, c := range ctors {
		okDelta := 0.0
		if name == "gaussian" {
			okDelta = 1e-5
		}
		for _, tc := range []struct {
			sens, eps, delta float64
			want             error
		}{
			{1, 1, okDelta, nil},
			{nan, 1, okDelta, ErrSensitivity}, {0, 1, okDelta, ErrSensitivity}, {-1, 1, okDelta, ErrSensitivity}, {inf, 1, okDelta, ErrSensitivity},
			{1, nan, okDelta, ErrEpsilon}, {1, 0, okDelta, ErrEpsilon}, {1, -1, okDelta, ErrEpsilon}, {1, inf, okDelta, ErrEpsilon}, {1, -inf, okDelta, ErrEpsilon}, {1, 1e-20, okDelta, ErrEpsilon},
			{1, 1, 1, ErrDelta}, {1, 1, -0.5, ErrDelta}, {1, 1, nan, ErrDelta},
		} {
			err := c(tc.sens, tc.eps, tc.delta)
			if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("%s(sens=%v, eps=%v, delta=%v) = %v, want %v", name, tc.sens, tc.eps, tc.delta, err, tc.want)
			}
		}
	}
	// Pure mechanisms reject a delta; Gaussian rejects delta = 0.
	if err := CheckNoDelta(1e-5); !errors.Is(err, ErrDelta) {
		t.Errorf("CheckNoDelta(1e-5) = %v", err)
	}
	if _, err := NewGaussian(1, 1, 0, Analytic); !errors.Is(err, ErrDelta) {
		t.Errorf("NewGaussian with delta 0 = %v, want ErrDelta", err)
	}
	if _, err := NewL2Noise(1, 1, 0); !errors.Is(err, ErrDimension) {
		t.Errorf("NewL2Noise dim 0 = %v, want ErrDimension", err)
	}
	if _, err := NewGaussianSigma(1, 0); !errors.Is(err, ErrSensitivity) {
		t.Errorf("NewGaussianSigma sigma 0 = %v", err)
	}
	if _, err := GaussianSigma(1, 2, 1e-5, Classic); !errors.Is(err, ErrEpsilon) {
		t.Errorf("classic with epsilon 2 = %v, want ErrEpsilon", err)
	}
	if _, err := GaussianSigma(1, 1, 1e-5, "bogus"); err == nil {
		t.Error("unknown calibration accepted")
	}
}

// FuzzCheckEpsilon checks over arbitrary float64 that CheckEpsilon accepts
// exactly the finite values in [2^-50, 700] and that NewLaplace agrees.
func FuzzCheckEpsilon(f *testing.F) {
	for _, v := range []float64{0, 1, -1, MinEpsilon, math.NaN(), math.Inf(1), 1e308} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, eps float64) {
		want := !math.IsNaN(eps) && eps >= MinEpsilon && eps <= MaxEpsilon
		if got := CheckEpsilon(eps) == nil; got != want {
			t.Fatalf("CheckEpsilon(%v) accepted=%v, want %v", eps, got, want)
		}
		if _, err := NewLaplace(1, eps); (err == nil) != want {
			t.Fatalf("NewLaplace(1, %v) err=%v", eps, err)
		}
	})
}
