package completion

import (
	"math"
	"testing"
	"time"
)

// TestSelectionThresholdExact: the branch and bound of selectionLeak gives
// the threshold of the loop over every m = 1..k (the same released
// distribution), bit for bit, on both sides of its leaf length.
func TestSelectionThresholdExact(t *testing.T) {
	t.Parallel()
	ref := func(sigma float64, k int, delta float64) float64 {
		leak := func(tau float64) float64 {
			w := 0.0
			for m := 1; m <= k; m++ {
				q := 0.5 * math.Erfc((tau-1/math.Sqrt(float64(m)))/sigma/math.Sqrt2)
				w = math.Max(w, -math.Expm1(float64(m)*math.Log1p(-q)))
			}
			return w
		}
		lo, hi := 1.0, 1+sigma
		for leak(hi) > delta {
			hi = 1 + 2*(hi-1)
		}
		for hi-lo > 1e-9*hi {
			mid := (lo + hi) / 2
			if leak(mid) > delta {
				lo = mid
			} else {
				hi = mid
			}
		}
		return hi
	}
	for _, sigma := range []float64{0.3, 1, 3, 10} {
		for _, k := range []int{1, 7, selectionLeakLeaf, selectionLeakLeaf + 1, 1000, 4000} {
			if got, want := selectionThreshold(sigma, k, 1e-6), ref(sigma, k, 1e-6); got != want {
				t.Errorf("sigma %g, k %d: threshold %v, the loop over every m gives %v", sigma, k, got, want)
			}
		}
	}
}

// TestSelectionThresholdHugeK: k far above any possible count (issue 24
// item 8: --max-ratings-per-user 1000000000000 without --items never
// finished, the threshold costing time linear in k) costs about as much as
// a small k, and its threshold still bounds the leak at every m checked,
// the largest included; it grows with k.
func TestSelectionThresholdHugeK(t *testing.T) {
	t.Parallel()
	const sigma, delta = 3.0, 1e-6
	for _, k := range []int{1e12, math.MaxInt} {
		done := make(chan float64, 1)
		go func() { done <- selectionThreshold(sigma, k, delta) }()
		var tau float64
		select {
		case tau = <-done:
		case <-time.After(20 * time.Second):
			t.Fatalf("k = %d: no threshold after 20 s", k)
		}
		if small := selectionThreshold(sigma, 1e6, delta); !(tau > small) || math.IsInf(tau, 0) {
			t.Errorf("k = %d: threshold %v, not finite above k = 1e6's %v", k, tau, small)
		}
		for _, m := range []float64{1, 2, 10, 1e3, 1e6, 1e9, float64(k) / 3, float64(k)} {
			q := 0.5 * math.Erfc((tau-1/math.Sqrt(m))/sigma/math.Sqrt2)
			if leak := -math.Expm1(m * math.Log1p(-q)); leak > delta*(1+1e-9) {
				t.Errorf("k = %d: m = %g items leak %v > delta %v at tau %v", k, m, leak, delta, tau)
			}
		}
	}
}
