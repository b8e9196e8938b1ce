package perturb

import (
	crand "crypto/rand"
	"math"
	"math/rand/v2"
)

// FAST (BATCH) GAUSSIAN NOISE. Minibatch DP-SGD adds Gaussian noise to
// every coordinate of every parameter at every step, which is 10^5 - 10^6
// draws per step for a factor model; the exact discrete sampler
// (Gaussian.AddTo, several hundred nanoseconds per draw, reading
// crypto/rand through a mutex for every 64-bit word) would dominate the
// training time. For such bulk noise perturb offers:
//
//   - a secure fast source (Noise.FastSource): a ChaCha8 generator
//     (math/rand/v2, the generator Go's runtime uses for its own
//     cryptographically secure randomness) keyed with 32 bytes from
//     crypto/rand, owned by one goroutine, so no lock and no system call
//     per draw. Its provenance is secure; a seeded Noise gives the same
//     reproducible StreamSource as Noise.Source.
//   - Gaussian.AddToFast: each coordinate is snapped to the mechanism's
//     power-of-two grid g (as in AddTo) and gets a ziggurat normal
//     (ziggurat.go, dithered to float64 precision) times the
//     grid-corrected sigma, itself snapped to g. Outputs are multiples of
//     g, and every grid point within 41 sigma of the snapped input is
//     reachable (the body by the dither, TestZigguratDither; the tail by
//     full-precision uniforms, TestZigguratTailGrid), so the set of
//     reachable outputs moves with x only beyond 41 sigma - Delta, where
//     the noise has probability below exp(-(41 - Delta/sigma)^2/2),
//     10^-200 at Delta = 10 sigma (the
//     floating point attack of Mironov 2012 needs input-dependent sets of
//     reachable outputs; a 32-bit ziggurat, whose normals are about 2^9
//     grid steps apart, or a fixed-point tail uniform, which reached 13.5%
//     of the cells at 7 sigma, would give it one). The noise distribution
//     is the floating-point ziggurat normal rounded to the grid, not the
//     exact discrete Gaussian of AddTo: the same compromise as Opacus and
//     TF-Privacy; the threat model in the package doc says so.
//
// Each draw costs a few nanoseconds (BenchmarkGaussianAddToFast).

// secureChaCha is a ChaCha8 generator keyed from crypto/rand; not safe for
// concurrent use (one per goroutine).
type secureChaCha struct{ c *rand.ChaCha8 }

func (s *secureChaCha) Uint64() uint64 { return s.c.Uint64() }

// newSecureChaCha keys a ChaCha8 from crypto/rand (which never fails on
// supported platforms since Go 1.24; a failure panics as SecureSource
// does rather than falling back to a weaker source).
func newSecureChaCha() *secureChaCha {
	var seed [32]byte
	if _, err := crand.Read(seed[:]); err != nil {
		panic("perturb: crypto/rand failed, refusing to draw noise from a weaker source: " + err.Error())
	}
	return &secureChaCha{c: rand.NewChaCha8(seed)}
}

// FastSource returns a source for bulk noise of stream id: for secure
// noise a ChaCha8 CSPRNG keyed from crypto/rand (provenance secure; not
// safe for concurrent use, take one per goroutine), for seeded noise
// StreamSource(seed, stream) (reproducible, NOT private).
func (n Noise) FastSource(stream uint64) rand.Source {
	if n.seeded {
		return StreamSource(n.seed, stream)
	}
	return newSecureChaCha()
}

// AddToFast adds N(0, sigma^2) noise to every x[i] in place, with x[i]
// snapped to the grid first and sigma corrected for the snapping exactly
// as in AddTo (so Delta/sigma, hence the guarantee, is unchanged); the
// noise is a ziggurat normal (ziggurat.go) drawn from src and rounded to
// the grid (see "FAST (BATCH) GAUSSIAN NOISE" in fastnoise.go). Outputs
// are multiples of Granularity(). src is consumed in order, so a seeded
// source gives reproducible noise.
func (m *Gaussian) AddToFast(x []float64, src rand.Source) {
	if len(x) == 0 {
		return
	}
	g := m.g
	sEff := m.sigma * (m.sens + math.Sqrt(float64(len(x)))*g) / m.sens
	inv := 1 / g
	// Multiplying by a power of two is exact, so each x[i] becomes
	// Snap(x[i], g) + Snap(sEff z, g) with one rounding each.
	k := sEff * inv
	// One loop per source type, the same three lines each: a concrete
	// receiver lets the compiler inline the word draw, which an interface
	// call or a generic over pointer types (one shared GC shape, calls
	// through a dictionary) would not; the two fast sources are the ones
	// Noise.FastSource returns.
	switch s := src.(type) {
	case *secureChaCha:
		c := s.c
		for i, v := range x {
			u := c.Uint64()
			z, ok := zigFast(u)
			if !ok {
				z = zigSlow(u, c.Uint64)
			}
			x[i] = (math.RoundToEven(v*inv) + math.RoundToEven(k*z)) * g
		}
	case *rand.PCG:
		for i, v := range x {
			u := s.Uint64()
			z, ok := zigFast(u)
			if !ok {
				z = zigSlow(u, s.Uint64)
			}
			x[i] = (math.RoundToEven(v*inv) + math.RoundToEven(k*z)) * g
		}
	default:
		for i, v := range x {
			u := src.Uint64()
			z, ok := zigFast(u)
			if !ok {
				z = zigSlow(u, src.Uint64)
			}
			x[i] = (math.RoundToEven(v*inv) + math.RoundToEven(k*z)) * g
		}
	}
}
