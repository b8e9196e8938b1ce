package perturb

import (
	"math"
	"testing"
)

// The full scans the shortcuts of orders.go replace, kept as references.

func refRDPEpsilon(a *Accountant, delta float64) (float64, bool) {
	best := math.Inf(1)
	for _, al := range rdpOrders {
		rho, ok := a.RDPAt(al)
		if !ok {
			return 0, false
		}
		if e := rdpToDP(al, rho, delta); e < best {
			best = e
		}
	}
	return best, true
}

func refGroupTwo(single, direct *Accountant, delta float64) (eps, order float64) {
	eps = math.Inf(1)
	for _, a := range rdpOrders {
		d, _ := direct.RDPAt(a)
		s2, _ := single.RDPAt(2 * a)
		s1, _ := single.RDPAt(2*a - 1)
		if e := rdpToDP(a, d+(a-0.5)/(a-1)*s2+s1, delta); e < eps {
			eps, order = e, a
		}
	}
	return eps, order
}

// refEpsilonFast is the subset scan whose comparison with epsilon
// rdpFitsFast answers.
func refEpsilonFast(a *Accountant, delta float64) (float64, bool) {
	best, bestA := math.Inf(1), 0.0
	rising := 0
	for _, al := range rdpOrders {
		if al != math.Trunc(al) {
			continue
		}
		rho, ok := a.RDPAt(al)
		if !ok {
			return 0, false
		}
		e := rdpToDP(al, rho, delta)
		if e < best {
			best, bestA, rising = e, al, 0
		} else if rising++; rising == 4 {
			break
		}
	}
	for _, al := range rdpOrders {
		if al == math.Trunc(al) || math.Abs(al-bestA) >= 1 {
			continue
		}
		rho, _ := a.RDPAt(al)
		if e := rdpToDP(al, rho, delta); e < best {
			best = e
		}
	}
	return best, true
}

// TestOrderShortcutsExact checks that the shortcuts return exactly (bit
// for bit) what the full scans return: the RDP total, the group-two
// epsilon and its order, and the fits decision at epsilons around the
// value, for sampled Gaussian steps with and without Laplace releases.
func TestOrderShortcutsExact(t *testing.T) {
	t.Parallel()
	lap := Release{What: "l", Mechanism: MechLaplace, SensitivityNorm: "l1", Sensitivity: 1, Scale: 10, Epsilon: 0.1, Count: 1}
	n := 0
	for _, q := range []float64{0.01, 0.25, 0.6, 1} {
		for _, s := range []float64{1, 2, 5.15625, 16.75} {
			for _, steps := range []int{1, 240} {
				for _, withLap := range []bool{false, true} {
					for _, delta := range []float64{1e-5, 1e-9} {
						var single, direct Accountant
						step := Release{What: "s", Mechanism: MechGaussian, SensitivityNorm: "l2", Sensitivity: 1, Scale: s, SampleRate: q, Count: 1, Calibration: "sigma"}
						if q == 1 {
							step.SampleRate = 0
						}
						if err := single.Add(step, steps); err != nil {
							t.Fatal(err)
						}
						if withLap {
							if err := direct.Add(lap, 3); err != nil {
								t.Fatal(err)
							}
						}
						all := Accountant{releases: append(append([]Release(nil), direct.releases...), single.releases...)}
						got, ok := all.rdpEpsilon(delta)
						want, _ := refRDPEpsilon(&all, delta)
						if !ok || got != want {
							t.Errorf("q %v s %v steps %v lap %v delta %v: rdpEpsilon %v, full scan %v", q, s, steps, withLap, delta, got, want)
						}
						ge, go2, _ := GroupTwoEpsilon(&single, &direct, delta)
						we, wo := refGroupTwo(&single, &direct, delta)
						if ge != we || go2 != wo {
							t.Errorf("q %v s %v steps %v lap %v delta %v: GroupTwoEpsilon %v at %v, full scan %v at %v", q, s, steps, withLap, delta, ge, go2, we, wo)
						}
						fe, _ := refEpsilonFast(&all, delta)
						for _, eps := range []float64{fe / 2, math.Nextafter(fe, 0), fe, fe * 1.01, want, fe * 3} {
							if got, want := all.rdpFitsFast(delta, eps), fe <= eps; got != want {
								t.Errorf("q %v s %v steps %v lap %v delta %v eps %v: rdpFitsFast %v, subset scan %v (%v)", q, s, steps, withLap, delta, eps, got, want, fe)
							}
						}
						n++
					}
				}
			}
		}
	}
	t.Logf("%d configurations", n)
}
