package perturb

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Laplace is the Laplace mechanism (Dwork, McSherry, Nissim and Smith
// 2006): adding i.i.d. Laplace(b) noise with b = Delta_1/epsilon to a
// vector of l1 sensitivity Delta_1 is epsilon-DP. It is sampled on a
// power-of-two grid (see the package doc, "Floating point"): AddTo snaps
// its input to the grid and adds a discrete Laplace (two-sided geometric)
// multiple of the grid step, with the scale enlarged to cover the rounding.
//
// A Laplace value is immutable and safe for concurrent use; the *rand.Rand
// passed to Sample and AddTo is not.
type Laplace struct {
	sens, eps, scale, g float64
}

// NewLaplace returns the Laplace mechanism for l1 sensitivity
// l1Sensitivity and privacy parameter epsilon (pure epsilon-DP, delta = 0).
func NewLaplace(l1Sensitivity, epsilon float64) (*Laplace, error) {
	if err := CheckSensitivity(l1Sensitivity); err != nil {
		return nil, fmt.Errorf("laplace: %w", err)
	}
	if err := CheckEpsilon(epsilon); err != nil {
		return nil, fmt.Errorf("laplace: %w", err)
	}
	b := l1Sensitivity / epsilon
	if math.IsInf(b, 0) {
		return nil, fmt.Errorf("laplace: %w: sensitivity/epsilon = %v/%v overflows", ErrSensitivity, l1Sensitivity, epsilon)
	}
	return &Laplace{sens: l1Sensitivity, eps: epsilon, scale: b, g: Granularity(b)}, nil
}

// Scale returns the Laplace scale b = Delta_1/epsilon (standard deviation
// sqrt(2) b).
func (l *Laplace) Scale() float64 { return l.scale }

// Epsilon returns the privacy parameter.
func (l *Laplace) Epsilon() float64 { return l.eps }

// Sensitivity returns the l1 sensitivity.
func (l *Laplace) Sensitivity() float64 { return l.sens }

// Granularity returns the grid step of the noise, a power of two near
// Scale()/2^40.
func (l *Laplace) Granularity() float64 { return l.g }

// Sample returns one Laplace(Scale()) noise value, an exact multiple of
// Granularity() drawn from the discrete Laplace on that grid. Adding it to
// an unsnapped value forfeits the floating-point mitigation; release data
// with AddTo.
func (l *Laplace) Sample(r *rand.Rand) float64 {
	return float64(twoSidedGeometric(r, l.g/l.scale)) * l.g
}

// AddTo adds i.i.d. Laplace noise to every element of x in place, so that
// releasing x is epsilon-DP when x has l1 sensitivity Delta_1. Each x[i] is
// first snapped to the grid; since snapping moves each coordinate by at most
// g/2, the snapped vectors of neighbours differ by at most Delta_1 + len(x)
// g in l1, and the noise scale is enlarged to (Delta_1 + len(x) g)/epsilon
// (a relative change of about len(x) 2^-40/epsilon) so the guarantee is
// exact for the snapped mechanism. Every output is an exact multiple of g.
func (l *Laplace) AddTo(x []float64, r *rand.Rand) {
	if len(x) == 0 {
		return
	}
	bEff := (l.sens + float64(len(x))*l.g) / l.eps
	lambda := l.g / bEff
	for i, v := range x {
		x[i] = Snap(v, l.g) + float64(twoSidedGeometric(r, lambda))*l.g
	}
}

// Release returns the record of one release of this mechanism, for the
// accountant and the privacy report.
func (l *Laplace) Release(what string) Release {
	return Release{What: what, Mechanism: MechLaplace, SensitivityNorm: "l1", Sensitivity: l.sens,
		Scale: l.scale, Epsilon: l.eps, Count: 1}
}

// Mechanism names used in Release.Mechanism.
const (
	MechLaplace  = "laplace"
	MechGaussian = "gaussian"
	MechL2       = "l2"
)
