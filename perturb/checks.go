package perturb

import (
	"errors"
	"fmt"
	"math"
)

// Sentinel errors. Every validation error wraps one of them, so callers can
// test with errors.Is; the message names the parameter, its value and the
// rule it breaks.
var (
	ErrEpsilon     = errors.New("perturb: invalid epsilon")
	ErrDelta       = errors.New("perturb: invalid delta")
	ErrSensitivity = errors.New("perturb: invalid sensitivity")
	ErrDimension   = errors.New("perturb: invalid dimension")
	ErrBudget      = errors.New("perturb: privacy budget exceeded")
)

// MinEpsilon is the smallest accepted epsilon, 2^-50, as in Google's DP
// library (checks.CheckEpsilonVeryStrict): below it the noise scale
// Delta/epsilon exceeds 2^50 Delta and the grid arithmetic of the samplers
// loses its meaning.
const MinEpsilon = 0x1p-50

// MaxEpsilon is the largest accepted epsilon. Above it e^epsilon overflows
// float64 (e^709.78 is the largest finite value), so a guarantee could not
// even be evaluated; such an epsilon is meaningless as a privacy claim.
const MaxEpsilon = 700

// CheckEpsilon returns an error wrapping ErrEpsilon unless eps is finite
// and in [2^-50, 700].
func CheckEpsilon(eps float64) error {
	switch {
	case math.IsNaN(eps) || math.IsInf(eps, 0):
		return fmt.Errorf("%w: epsilon is %v, must be finite", ErrEpsilon, eps)
	case eps < MinEpsilon:
		return fmt.Errorf("%w: epsilon is %v, must be at least 2^-50 (strictly positive)", ErrEpsilon, eps)
	case eps > MaxEpsilon:
		return fmt.Errorf("%w: epsilon is %v, must be at most %v (e^epsilon must be finite)", ErrEpsilon, eps, float64(MaxEpsilon))
	}
	return nil
}

// CheckDelta returns an error wrapping ErrDelta unless d is in [0, 1).
func CheckDelta(d float64) error {
	if math.IsNaN(d) || d < 0 || d >= 1 {
		return fmt.Errorf("%w: delta is %v, must be in [0, 1)", ErrDelta, d)
	}
	return nil
}

// CheckPositiveDelta is CheckDelta with delta = 0 refused too (Gaussian
// mechanisms cannot give pure DP).
func CheckPositiveDelta(d float64) error {
	if err := CheckDelta(d); err != nil {
		return err
	}
	if d == 0 {
		return fmt.Errorf("%w: delta is 0, must be in (0, 1) for a Gaussian mechanism (it cannot give pure epsilon-DP)", ErrDelta)
	}
	return nil
}

// CheckNoDelta returns an error wrapping ErrDelta unless d == 0: pure
// mechanisms (Laplace, l2-norm) reject a delta instead of ignoring it.
func CheckNoDelta(d float64) error {
	if d != 0 {
		return fmt.Errorf("%w: delta is %v, must be 0 for a pure epsilon-DP mechanism", ErrDelta, d)
	}
	return nil
}

// CheckSensitivity returns an error wrapping ErrSensitivity unless s is
// finite and strictly positive.
func CheckSensitivity(s float64) error {
	if math.IsNaN(s) || math.IsInf(s, 0) || s <= 0 {
		return fmt.Errorf("%w: sensitivity is %v, must be strictly positive and finite", ErrSensitivity, s)
	}
	return nil
}

// checkNamedPositive is CheckSensitivity for other positive scalars (clip
// norms, noise scales) with the parameter's name in the message.
func checkNamedPositive(err error, name string, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
		return fmt.Errorf("%w: %s is %v, must be strictly positive and finite", err, name, v)
	}
	return nil
}

// CheckDimension returns an error wrapping ErrDimension unless 1 <= d <= max.
func CheckDimension(name string, d, max int) error {
	if d < 1 || d > max {
		return fmt.Errorf("%w: %s is %d, must be in [1, %d]", ErrDimension, name, d, max)
	}
	return nil
}
