package perturb

import (
	"fmt"
	"math"
)

// checkTolerance is the relative disagreement Check accepts between a
// recorded and a recomputed epsilon or delta (the solvers bisect to 1e-9
// or better; grid enlargements are far below it).
const checkTolerance = 1e-6

// Check recomputes a privacy report from its own parts and returns one
// line per disagreement (nil when everything agrees):
//
//   - each release's (epsilon, delta) from its mechanism, scale and
//     sensitivity: Laplace and l2 (K-norm) epsilon = sensitivity/scale;
//     a calibrated Gaussian's delta at its epsilon from Balle and Wang's
//     exact curve (DeltaForGaussian) must not exceed the recorded delta;
//     an RDP-accounted Gaussian ("sigma") records no per-release
//     guarantee;
//   - the total from the composition of the releases (the tightest valid
//     method, Accountant.Total at the report's delta): a report claiming a
//     smaller epsilon or delta than its releases compose to is flagged;
//   - the randomness label, which must be exactly LabelSecure or
//     LabelSeeded;
//   - the relation kind, which must be empty (a report written before the
//     field existed) or one of RelationValueChange, RelationZeroOut and
//     RelationAddRemove, and a value-change epsilon, when given under
//     another relation, at least the headline epsilon (a value change is
//     two zero-out steps).
//
// A non-private report has nothing to check.
func (r *Report) Check() []string {
	if !r.Private() {
		return nil
	}
	var out []string
	bad := func(format string, a ...any) { out = append(out, fmt.Sprintf(format, a...)) }
	if _, ok := r.Provenance(); !ok {
		bad("randomness %q is neither %q nor %q", r.Randomness, LabelSecure, LabelSeeded)
	}
	switch r.RelationKind {
	case "", RelationValueChange, RelationZeroOut, RelationAddRemove:
	default:
		bad("relation kind %q is none of %q, %q, %q", r.RelationKind, RelationValueChange, RelationZeroOut, RelationAddRemove)
	}
	if r.ValueChangeEpsilon != 0 && (r.RelationKind == RelationValueChange || r.ValueChangeEpsilon < r.Epsilon*(1-checkTolerance)) {
		bad("value-change epsilon %.6g under relation kind %q with headline epsilon %.6g", r.ValueChangeEpsilon, r.RelationKind, r.Epsilon)
	}
	if len(r.Releases) == 0 {
		bad("private report (mode %q) lists no release", r.Mode)
		return out
	}
	var acc Accountant
	for i, rel := range r.Releases {
		name := fmt.Sprintf("release %d (%s)", i+1, rel.What)
		count := rel.Count
		if count < 1 {
			count = 1
		}
		switch rel.Mechanism {
		case MechLaplace, MechL2:
			if !(rel.Scale > 0) || !(rel.Sensitivity > 0) {
				bad("%s: %s with scale %v and sensitivity %v", name, rel.Mechanism, rel.Scale, rel.Sensitivity)
				continue
			}
			if e := rel.Sensitivity / rel.Scale; !relClose(e, rel.Epsilon) {
				bad("%s: %s of scale %g at sensitivity %g is epsilon %.6g, the report says %.6g", name, rel.Mechanism, rel.Scale, rel.Sensitivity, e, rel.Epsilon)
			}
		case MechGaussian:
			if !(rel.Scale > 0) || !(rel.Sensitivity > 0) {
				bad("%s: gaussian with sigma %v and sensitivity %v", name, rel.Scale, rel.Sensitivity)
				continue
			}
			if rel.Epsilon != 0 || rel.Delta != 0 {
				if d := DeltaForGaussian(rel.Sensitivity, rel.Scale, rel.Epsilon); d > rel.Delta*(1+checkTolerance)+1e-300 {
					bad("%s: gaussian sigma %g at sensitivity %g gives delta %.3g at epsilon %.6g, the report says %.3g", name, rel.Scale, rel.Sensitivity, d, rel.Epsilon, rel.Delta)
				}
			}
		default:
			bad("%s: unknown mechanism %q", name, rel.Mechanism)
			continue
		}
		if err := acc.Add(rel, count); err != nil {
			bad("%s: %v", name, err)
		}
	}
	if len(out) > 0 {
		return out
	}
	eps, delta, method := acc.Total(r.Delta)
	if delta > r.Delta*(1+checkTolerance) || r.Epsilon < eps*(1-checkTolerance) {
		bad("the releases compose (%s) to epsilon %.6g, delta %.3g; the report claims epsilon %.6g, delta %.3g", method, eps, delta, r.Epsilon, r.Delta)
	}
	return out
}

func relClose(a, b float64) bool {
	return math.Abs(a-b) <= checkTolerance*math.Max(math.Abs(a), math.Abs(b))
}
