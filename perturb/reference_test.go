package perturb

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/google/differential-privacy/go/v3/noise"

	"github.com/dprec/dprec/internal/stattest"
)

// Google's DP library (github.com/google/differential-privacy/go/v3, the
// version the Go module proxy serves here) is the reference these tests
// hold perturb's hand-written calibration and samplers against. It is a
// test dependency only: perturb draws its own noise, because Google's
// samplers read crypto/rand for every draw and take no rand.Source, so
// they can be neither seeded (reproducible runs) nor fed the ChaCha8
// stream that makes bulk noise fast (fastnoise.go).

// TestAnalyticSigmaMatchesGoogle: perturb's analytic calibration (Balle and
// Wang 2018, solved to float64 precision) and Google's SigmaForGaussian
// (the same condition, bisected to 1e-3 relative) agree within Google's
// stated accuracy over a grid of sensitivities, epsilons and deltas.
func TestAnalyticSigmaMatchesGoogle(t *testing.T) {
	for _, sens := range []float64{1, 3.5} {
		for _, eps := range []float64{0.1, 0.5, 1, 3, 10, 100} {
			for _, delta := range []float64{1e-3, 1e-5, 1e-9} {
				ours, err := GaussianSigma(sens, eps, delta, Analytic)
				if err != nil {
					t.Fatal(err)
				}
				ref := noise.SigmaForGaussian(1, sens, eps, delta)
				if math.Abs(ours-ref) > 1.5e-3*ref {
					t.Errorf("sens %g, eps %g, delta %g: sigma %.6g, Google's %.6g", sens, eps, delta, ours, ref)
				}
			}
		}
	}
}

// TestSamplersMatchGoogle compares, by a two-sample Kolmogorov-Smirnov test
// at false-reject probability 1e-6, 100,000 draws of each of perturb's
// samplers with 100,000 of Google's for the same law: the exact discrete
// Gaussian (Gaussian.AddTo) and the bulk ziggurat sampler
// (Gaussian.AddToFast, secure and seeded sources) against Google's
// Gaussian with the same sigma, and the discrete Laplace (Laplace.AddTo)
// against Google's Laplace with the same scale. A sampler off by 10% in
// scale fails (the check's power is printed by the control case).
func TestSamplersMatchGoogle(t *testing.T) {
	const n = 100000
	const sens, eps, delta = 2.0, 0.7, 1e-6
	sigma := noise.SigmaForGaussian(1, sens, eps, delta)
	ref := make([]float64, n)
	for i := range ref {
		v, err := noise.Gaussian().AddNoiseFloat64(0, 1, sens, eps, delta)
		if err != nil {
			t.Fatal(err)
		}
		ref[i] = v
	}
	g, err := NewGaussianSigma(sens, sigma)
	if err != nil {
		t.Fatal(err)
	}
	crit := stattest.KS2Critical(n, n, 1e-6)
	draw := func(add func([]float64)) []float64 {
		xs := make([]float64, n)
		for lo := 0; lo < n; lo += 100 {
			add(xs[lo : lo+100])
		}
		return xs
	}
	r := rand.New(StreamSource(7, 1))
	fast := SecureNoise().FastSource(2)
	seeded := StreamSource(7, 3)
	wide, err := NewGaussianSigma(sens, 1.1*sigma)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		xs      []float64
		control bool
	}{
		{"Gaussian.AddTo (discrete)", draw(func(x []float64) { g.AddTo(x, r) }), false},
		{"Gaussian.AddToFast (secure ChaCha8)", draw(func(x []float64) { g.AddToFast(x, fast) }), false},
		{"Gaussian.AddToFast (seeded)", draw(func(x []float64) { g.AddToFast(x, seeded) }), false},
		{"control: sigma 10% too large", draw(func(x []float64) { wide.AddTo(x, r) }), true},
	} {
		d := stattest.KS2(c.xs, append([]float64(nil), ref...))
		t.Logf("%s: KS %.4f (critical %.4f)", c.name, d, crit)
		if c.control {
			if d <= crit {
				t.Errorf("%s: KS %.4f <= critical %.4f: the test cannot see a 10%% scale error", c.name, d, crit)
			}
			continue
		}
		if d > crit {
			t.Errorf("%s against Google's Gaussian (sigma %.4g): KS %.4f > critical %.4f", c.name, sigma, d, crit)
		}
	}

	l, err := NewLaplace(sens, eps)
	if err != nil {
		t.Fatal(err)
	}
	lref := make([]float64, n)
	for i := range lref {
		v, err := noise.Laplace().AddNoiseFloat64(0, 1, sens, eps, 0)
		if err != nil {
			t.Fatal(err)
		}
		lref[i] = v
	}
	ours := draw(func(x []float64) { l.AddTo(x, r) })
	if d := stattest.KS2(ours, lref); d > crit {
		t.Errorf("Laplace.AddTo against Google's Laplace (b %.4g): KS %.4f > critical %.4f", l.Scale(), d, crit)
	}
}
