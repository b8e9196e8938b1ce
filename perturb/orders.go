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
// More generally the RDP at any smaller order b bounds it from below. The
// fractional orders of the sampled Gaussian (logAFrac, series with up to
// maxFracTerms terms) cost milliseconds at small noise multipliers, the
// integer ones (logAInt, alpha terms) microseconds to a millisecond. The
// minimisation below scans the integer orders in increasing order, skipping
// one whose lower bound from the last evaluated order exceeds the minimum
// so far, then the fractional orders, skipping one whose lower bound from
// the largest evaluated integer order below it exceeds the minimum over
// the integer orders. A skip needs the bound to exceed that minimum by a
// margin (relative 1e-9, far above the rounding of the curves), so the
// skipped order can be neither the minimum nor tied with it: the returned
// minimum, and the first order attaining it, are exactly those of the
// full scan (TestOrderShortcutsExact compares them).

// skipAbove reports whether a lower bound lb proves a value strictly above
// ref, with a margin for rounding.
func skipAbove(lb, ref float64) bool {
	return !math.IsInf(ref, 1) && lb > ref+1e-9*math.Abs(ref)+1e-12
}

// orderCurve is a composed RDP curve for minOverOrders: eval returns its
// value at alpha (ok false: no RDP curve), and lower(alpha, b) a lower
// bound of its value at alpha from the evaluation at a smaller order b
// made before (b = 0: none made; the curve is >= 0).
type orderCurve struct {
	eval  func(alpha float64) (float64, bool)
	lower func(alpha, b float64) float64
}

// monotoneCurve wraps a non-decreasing RDP curve: its value at b bounds it
// at every larger order.
func monotoneCurve(rho func(alpha float64) (float64, bool)) orderCurve {
	seen := map[float64]float64{}
	return orderCurve{
		eval: func(a float64) (float64, bool) {
			r, ok := rho(a)
			seen[a] = r
			return r, ok
		},
		lower: func(_, b float64) float64 { return seen[b] },
	}
}

// minOverOrders returns min over the grid of rdpToDP(alpha, c(alpha),
// delta) and the first order attaining it (grid order), evaluating c only
// where the lower bounds do not rule an order out (above); ok is false
// when c has no RDP curve.
func minOverOrders(c orderCurve, delta float64) (eps, order float64, ok bool) {
	vals := make([]float64, len(rdpOrders))
	done := make([]bool, len(rdpOrders))
	ref, last := math.Inf(1), 0.0
	for i, a := range rdpOrders {
		if a != math.Trunc(a) {
			continue
		}
		if last > 0 && skipAbove(rdpToDP(a, c.lower(a, last), delta), ref) {
			continue
		}
		r, ok := c.eval(a)
		if !ok {
			return 0, 0, false
		}
		vals[i], done[i], last = rdpToDP(a, r, delta), true, a
		ref = math.Min(ref, vals[i])
	}
	eps = math.Inf(1)
	for i, a := range rdpOrders {
		if a != math.Trunc(a) {
			b := 0.0 // the largest evaluated integer order below a
			for j, o := range rdpOrders {
				if o > a {
					break
				}
				if done[j] && o == math.Trunc(o) {
					b = o
				}
			}
			if skipAbove(rdpToDP(a, c.lower(a, b), delta), ref) {
				continue
			}
			r, ok := c.eval(a)
			if !ok {
				return 0, 0, false
			}
			vals[i], done[i] = rdpToDP(a, r, delta), true
		}
		if done[i] && vals[i] < eps {
			eps, order = vals[i], a
		}
	}
	return eps, order, true
}
