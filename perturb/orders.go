package perturb

import "math"

// EXACT SHORTCUTS OVER THE ORDER GRID. Every RDP curve the accountant
// composes is non-decreasing in the order alpha: a Renyi divergence
// D_alpha(P||Q) of a fixed pair is (van Erven and Harremoes 2014, Theorem
// 3), which covers the Gaussian curve alpha mu^2/2 and the sampled
// Gaussian's log(A_alpha)/(alpha - 1) (the divergence of the mixture
// pair of Mironov, Talwar and Zhang 2019; past maxSampledOrder the larger
// Gaussian curve, itself non-decreasing), and the capped curves
// min(curve, epsilon, alpha epsilon^2/2) are minima of non-decreasing
// functions. So at a fractional order alpha the composed RDP is at least
// its value at floor(alpha) (or 0 below 2), and since the conversion
// rdpToDP is non-decreasing in the RDP value,
//
//	lb(alpha) = rdpToDP(alpha, rho(floor alpha), delta) <= rdpToDP(alpha, rho(alpha), delta).
//
// The fractional orders of the sampled Gaussian (logAFrac, series with up
// to maxFracTerms terms) cost milliseconds at small noise multipliers,
// the integer ones (logAInt, alpha terms) microseconds. The minimisations
// below evaluate every integer order exactly and skip a fractional order
// only when its lower bound exceeds the minimum over the integer orders
// by a margin (relative 1e-9, far above the rounding of the curves), so
// the skipped order can be neither the minimum nor tied with it: the
// returned minimum, and the first order attaining it, are exactly those
// of the full scan (TestOrderShortcutsExact compares them).

// skipAbove reports whether a lower bound lb proves a value strictly above
// ref, with a margin for rounding.
func skipAbove(lb, ref float64) bool {
	return !math.IsInf(ref, 1) && lb > ref+1e-9*math.Abs(ref)+1e-12
}

// floorOrder returns the index in rdpOrders of floor(alpha) for a
// fractional grid order alpha with floor >= 2, and -1 otherwise (floor 1:
// the RDP lower bound is 0).
func floorOrder(alpha float64) int {
	k := math.Floor(alpha)
	if k < 2 {
		return -1
	}
	for i, a := range rdpOrders {
		if a == k {
			return i
		}
	}
	return -1
}

// floorIdx[i] is floorOrder(rdpOrders[i]) for fractional orders (unused
// for integer ones).
var floorIdx = func() []int {
	f := make([]int, len(rdpOrders))
	for i, a := range rdpOrders {
		f[i] = -1
		if a != math.Trunc(a) {
			f[i] = floorOrder(a)
		}
	}
	return f
}()

// minOverOrders returns min over the grid of rdpToDP(alpha, rho(alpha),
// delta) and the first order attaining it, computing rho exactly at every
// integer order and at the fractional orders whose lower bound does not
// rule them out; ok is false when rho reports no curve. lower(i, alpha,
// rhos) must be at most rho(alpha) at the fractional order alpha =
// rdpOrders[i]; rhos holds rho at the integer orders (index as
// rdpOrders). A nil lower uses the RDP at floor(alpha) (monotone curves).
func minOverOrders(rho func(alpha float64) (float64, bool), lower func(i int, alpha float64, rhos []float64) float64, delta float64) (eps, order float64, ok bool) {
	if lower == nil {
		lower = floorLower
	}
	rhos := make([]float64, len(rdpOrders))
	eps = math.Inf(1)
	ref := math.Inf(1)
	for i, a := range rdpOrders {
		if a != math.Trunc(a) {
			continue
		}
		r, ok := rho(a)
		if !ok {
			return 0, 0, false
		}
		rhos[i] = r
		ref = math.Min(ref, rdpToDP(a, r, delta))
	}
	for i, a := range rdpOrders {
		r := rhos[i]
		if a != math.Trunc(a) {
			if skipAbove(rdpToDP(a, lower(i, a, rhos), delta), ref) {
				continue
			}
			if r, ok = rho(a); !ok {
				return 0, 0, false
			}
		}
		if e := rdpToDP(a, r, delta); e < eps {
			eps, order = e, a
		}
	}
	return eps, order, true
}

// floorLower is the lower bound of a non-decreasing RDP curve at the
// fractional order rdpOrders[i]: its value at floor(alpha), or 0.
func floorLower(i int, _ float64, rhos []float64) float64 {
	if f := floorIdx[i]; f >= 0 {
		return rhos[f]
	}
	return 0
}

// atFloor returns a's RDP at floor(x) when that is >= 2 (an integer order,
// cheap), else 0: a lower bound of its RDP at x.
func (a *Accountant) atFloor(x float64) float64 {
	k := math.Floor(x)
	if k < 2 {
		return 0
	}
	r, _ := a.RDPAt(k)
	return r
}
