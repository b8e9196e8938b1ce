package perturb

import (
	"errors"
	"math"
	"testing"
)

// TestRDPGolden checks the Gaussian RDP curve alpha Delta^2/(2 sigma^2) and
// linear composition (Google dp_accounting's rdp_privacy_accountant_test).
func TestRDPGolden(t *testing.T) {
	t.Parallel()
	g, _ := NewGaussianSigma(2, 3)
	var a Accountant
	if err := a.Add(g.Release("x"), 1); err != nil {
		t.Fatal(err)
	}
	for _, al := range []float64{1.5, 2, 10, 64} {
		got, ok := a.RDPAt(al)
		if want := al * 4 / (2 * 9); !ok || math.Abs(got-want) > 1e-15 {
			t.Errorf("RDP(%v) = %v, want %v", al, got, want)
		}
	}
	var a6 Accountant
	_ = a6.Add(g.Release("x"), 6)
	for _, al := range []float64{2, 32} {
		one, _ := a.RDPAt(al)
		six, _ := a6.RDPAt(al)
		if math.Abs(six-6*one) > 1e-12 {
			t.Errorf("6-fold RDP %v != 6 * %v", six, one)
		}
	}
	// Conversion golden value computed by hand: sigma=1, Delta=1, k=1,
	// delta=1e-5: min over orders of alpha/2 + log((alpha-1)/alpha) -
	// (log 1e-5 + log alpha)/(alpha-1); at alpha = 5.4 the CKS bound is
	// 2.7 + log(4.4/5.4) - (-11.5129 + 1.6864)/4.4 = 4.7284.
	var b Accountant
	_ = b.Add(Release{Mechanism: MechGaussian, Sensitivity: 1, Scale: 1}, 1)
	e, _, ok := b.TotalBy(RDP, 1e-5)
	want := 2.7 + math.Log(4.4/5.4) - (math.Log(1e-5)+math.Log(5.4))/4.4
	if !ok || e > want+1e-9 || e < want-0.02 {
		t.Errorf("RDP epsilon = %v, want about %v", e, want)
	}
	// GDP of one Gaussian equals its analytic calibration, and is below RDP.
	s, _ := GaussianSigma(1, 1, 1e-5, Analytic)
	var c Accountant
	_ = c.Add(Release{Mechanism: MechGaussian, Sensitivity: 1, Scale: s}, 1)
	eg, _, _ := c.TotalBy(GDP, 1e-5)
	er, _, _ := c.TotalBy(RDP, 1e-5)
	if math.Abs(eg-1) > 1e-6 || er <= eg {
		t.Errorf("GDP %v (want 1), RDP %v (want > GDP)", eg, er)
	}
}

func TestLaplaceRDP(t *testing.T) {
	t.Parallel()
	// Mironov 2017 Table II at b=1, alpha=2: log(2/3 e + 1/3 e^-2) = 0.6175 (direct evaluation).
	want := math.Log(2.0/3*math.E + 1.0/3*math.Exp(-2))
	if got := laplaceRDP(1, 2, 1); math.Abs(got-want) > 1e-12 {
		t.Errorf("Laplace RDP(2) = %v, want %v", got, want)
	}
	// Capped by the pure bound and tending to eps = 1/b for large orders.
	if got := laplaceRDP(1, 1e4, 1); got > 1 || got < 0.99 {
		t.Errorf("Laplace RDP(1e4) = %v, want just below 1", got)
	}
}

func TestAdvancedAndBasic(t *testing.T) {
	t.Parallel()
	l, _ := NewLaplace(1, 0.1)
	var a Accountant
	_ = a.Add(l.Release("x"), 100)
	e, d, ok := a.TotalBy(Basic, 0)
	if !ok || math.Abs(e-10) > 1e-12 || d != 0 {
		t.Errorf("basic = %v, %v", e, d)
	}
	// DRV: sqrt(2*100*ln(1e5))*0.1 + 100*0.1*(e^0.1 - 1) = 4.7985 + 1.0517 = 5.8502.
	e, d, ok = a.TotalBy(Advanced, 1e-5)
	want := math.Sqrt(200*math.Log(1e5))*0.1 + 10*(math.Exp(0.1)-1)
	if !ok || math.Abs(e-want) > 1e-12 || math.Abs(want-5.8502) > 1e-3 || d != 1e-5 {
		t.Errorf("advanced = %v (%v), want %v", e, d, want)
	}
	// Total picks the tightest and names it; with delta 0 only basic applies.
	te, _, m := a.Total(1e-5)
	if te > e || m == Basic {
		t.Errorf("Total = %v by %s, advanced gave %v", te, m, e)
	}
	if _, _, m := a.Total(0); m != Basic {
		t.Errorf("Total(0) method %s, want basic", m)
	}
	// An RDP-only Gaussian step makes basic/advanced inapplicable.
	g, _ := NewGaussianSigma(1, 5)
	_ = a.Add(g.Release("g"), 3)
	if _, _, ok := a.TotalBy(Basic, 1e-5); ok {
		t.Error("basic applied to a sigma-only Gaussian release")
	}
	if _, _, m := a.Total(1e-5); m != RDP {
		t.Errorf("mixed accountant method %s, want rdp", m)
	}
	if err := a.Add(l.Release("bad"), 0); err == nil {
		t.Error("count 0 accepted")
	}
}

func TestBudget(t *testing.T) {
	t.Parallel()
	l, _ := NewLaplace(1, 0.5)
	var a Accountant
	_ = a.Add(l.Release("x"), 3)
	if _, _, _, err := (Budget{Epsilon: 1.5, Delta: 0}).Admit(&a, Basic); err != nil {
		t.Errorf("1.5 budget refused 3 x 0.5: %v", err)
	}
	if _, _, _, err := (Budget{Epsilon: 1.4, Delta: 0}).Admit(&a, ""); !errors.Is(err, ErrBudget) {
		t.Errorf("1.4 budget admitted 3 x 0.5: %v", err)
	}
	if _, _, _, err := (Budget{Epsilon: 1, Delta: 0}).Admit(&a, RDP); !errors.Is(err, ErrBudget) {
		t.Errorf("rdp with delta 0 admitted: %v", err)
	}
	if _, _, _, err := (Budget{Epsilon: math.NaN()}).Admit(&a, ""); !errors.Is(err, ErrEpsilon) {
		t.Errorf("NaN budget: %v", err)
	}
}

// TestSolvers checks that the budget solvers fit exactly: the solved noise
// is admitted and 0.1% less noise (or more epsilon) is refused.
func TestSolvers(t *testing.T) {
	t.Parallel()
	for _, steps := range []int{1, 10, 200} {
		s, err := GaussianSigmaForBudget(2, steps, 1, 1e-5)
		if err != nil {
			t.Fatal(err)
		}
		b := Budget{Epsilon: 1, Delta: 1e-5}
		var a, a2 Accountant
		_ = a.Add(Release{Mechanism: MechGaussian, Sensitivity: 2, Scale: s}, steps)
		_ = a2.Add(Release{Mechanism: MechGaussian, Sensitivity: 2, Scale: s * 0.999}, steps)
		if _, _, _, err := b.Admit(&a, RDP); err != nil {
			t.Errorf("steps=%d: solved sigma %v refused: %v", steps, s, err)
		}
		if _, _, _, err := b.Admit(&a2, RDP); err == nil {
			t.Errorf("steps=%d: sigma*0.999 admitted: not the smallest", steps)
		}
		sg, _ := GaussianSigmaForBudgetBy(2, steps, 1, 1e-5, GDP)
		if sg > s*(1+1e-9) {
			t.Errorf("steps=%d: exact GDP sigma %v above RDP sigma %v", steps, sg, s)
		}
	}
	for _, m := range []Composition{Basic, Advanced, RDP, "best"} {
		e, dps, err := PerStepEpsilon(2, 1e-6, 50, m)
		if err != nil {
			t.Fatal(err)
		}
		l, _ := NewLaplace(1, e)
		var a Accountant
		_ = a.Add(l.Release("x"), 50)
		method := m
		if m == "best" {
			method = ""
		}
		if _, _, _, err := (Budget{Epsilon: 2, Delta: 1e-6}).Admit(&a, method); err != nil && m != Basic {
			t.Errorf("%s: per-step eps %v refused: %v", m, e, err)
		}
		if m == Basic && (math.Abs(e-0.04) > 1e-15 || math.Abs(dps-2e-8) > 1e-20) {
			t.Errorf("basic split = %v, %v", e, dps)
		}
	}
	if _, _, err := PerStepEpsilon(1, 0, 10, Advanced); !errors.Is(err, ErrDelta) {
		t.Errorf("advanced with delta 0: %v", err)
	}
}

// TestRDPConversionTighter: the CKS conversion is never above Mironov's
// classic rho + log(1/delta)/(alpha-1), and both are valid upper bounds on
// the exact Gaussian epsilon (GDP), checked over a grid.
func TestRDPConversionTighter(t *testing.T) {
	t.Parallel()
	for _, sigma := range []float64{0.7, 1, 3, 10} {
		for _, d := range []float64{1e-3, 1e-6, 1e-9} {
			exact := GaussianEpsilonForMu(1/sigma, d)
			best, classic := math.Inf(1), math.Inf(1)
			for _, al := range rdpOrders {
				rho := al / (2 * sigma * sigma)
				c := rho + math.Log(1/d)/(al-1)
				k := rdpToDP(al, rho, d)
				if k > c+1e-12 {
					t.Errorf("sigma %v delta %v alpha %v: CKS %v above classic %v", sigma, d, al, k, c)
				}
				best, classic = math.Min(best, k), math.Min(classic, c)
			}
			if best < exact-1e-9 {
				t.Errorf("sigma %v delta %v: RDP epsilon %v below the exact %v (invalid conversion)", sigma, d, best, exact)
			}
		}
	}
}
