package perturb

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/dprec/dprec/internal/stattest"
)

func TestSeededReproducible(t *testing.T) {
	t.Parallel()
	l, _ := NewLaplace(1, 1)
	a, b := rand.New(SeededSource(7)), rand.New(SeededSource(7))
	for i := 0; i < 100; i++ {
		if x, y := l.Sample(a), l.Sample(b); x != y {
			t.Fatalf("draw %d: %v != %v with the same seed", i, x, y)
		}
	}
	c := rand.New(SeededSource(8))
	same := 0
	for i := 0; i < 100; i++ {
		if l.Sample(a) == l.Sample(c) {
			same++
		}
	}
	if same > 5 {
		t.Errorf("seeds 7 and 8 gave %d equal draws of 100", same)
	}
}

// TestStreamsUncorrelated checks RELIABILITY item 3: noise from two streams
// of one master seed is uncorrelated, |corr| < 3/sqrt(n) (for independent
// streams corr*sqrt(n) is about N(0,1): false reject 0.27% per pair; the
// fixed seed makes the test deterministic).
func TestStreamsUncorrelated(t *testing.T) {
	t.Parallel()
	const n = 100000
	g, _ := NewGaussian(1, 1, 1e-5, Analytic)
	pairs := [][2]uint64{{0, 1}, {1, 2}, {5, 6}, {0, 1 << 32}}
	for _, p := range pairs {
		r1, r2 := rand.New(StreamSource(42, p[0])), rand.New(StreamSource(42, p[1]))
		x, y := make([]float64, n), make([]float64, n)
		for i := range x {
			x[i], y[i] = g.Sample(r1), g.Sample(r2)
		}
		if c := stattest.Corr(x, y); math.Abs(c) >= 3/math.Sqrt(n) {
			t.Errorf("streams %v of seed 42: corr %v >= 3/sqrt(n) = %v", p, c, 3/math.Sqrt(n))
		}
	}
	// Same (seed, stream) must repeat exactly.
	a, b := rand.New(StreamSource(3, 9)), rand.New(StreamSource(3, 9))
	for i := 0; i < 10; i++ {
		if a.Uint64() != b.Uint64() {
			t.Fatal("StreamSource not reproducible")
		}
	}
}

func TestSecureSource(t *testing.T) {
	t.Parallel()
	src := SecureSource()
	seen := map[uint64]bool{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 1000; i++ {
				v := src.Uint64()
				mu.Lock()
				seen[v] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	// 4000 64-bit words from a CSPRNG collide with probability < 2^-40.
	if len(seen) != 4000 {
		t.Errorf("secure source gave %d distinct words of 4000", len(seen))
	}
	// Bits are balanced: the mean of 4000*64 bits is within 5 sd of 1/2.
	var ones int
	for v := range seen {
		for ; v != 0; v &= v - 1 {
			ones++
		}
	}
	n := 4000 * 64.0
	if math.Abs(float64(ones)/n-0.5) > 5*0.5/math.Sqrt(n) {
		t.Errorf("secure source bit frequency %v", float64(ones)/n)
	}
	if RandomnessLabel(false) != "secure (crypto/rand)" || RandomnessLabel(true) != "seeded (reproducible, NOT private)" {
		t.Error("randomness labels changed")
	}
}

// TestSecureSourcesUnkeyed: a secure source must not only have the secure
// type (ProvenanceOf reads the type) but draw from a fresh key: a source
// that kept its type and used a fixed key (or a key derived from the
// stream id) would be labelled secure and be reproducible. Two secure
// sources made alike (SecureSource, SecureNoise().Source and
// SecureNoise().FastSource for the same stream id, from two Noise values
// as two runs would make them) give different words, and one secure Noise
// gives different streams for different ids. Four 64-bit words of two
// independent keys agree with probability 2^-256.
func TestSecureSourcesUnkeyed(t *testing.T) {
	t.Parallel()
	words := func(src rand.Source) [4]uint64 {
		var w [4]uint64
		for i := range w {
			w[i] = src.Uint64()
		}
		return w
	}
	for _, tc := range []struct {
		name string
		make func(stream uint64) rand.Source
	}{
		{"SecureSource", func(uint64) rand.Source { return SecureSource() }},
		{"SecureNoise().Source", func(s uint64) rand.Source { return SecureNoise().Source(s) }},
		{"SecureNoise().FastSource", func(s uint64) rand.Source { return SecureNoise().FastSource(s) }},
	} {
		seen := map[[4]uint64]string{}
		for _, stream := range []uint64{1, 1, 2, 1 << 20} {
			for run := 0; run < 2; run++ {
				src := tc.make(stream)
				if p := ProvenanceOf(src); p != ProvenanceSecure {
					t.Fatalf("%s(%d): provenance %v", tc.name, stream, p)
				}
				w := words(src)
				where := fmt.Sprintf("stream %d, run %d", stream, run)
				if prev, ok := seen[w]; ok {
					t.Errorf("%s: %s repeats the words of %s: a fixed or stream-derived key", tc.name, where, prev)
				}
				seen[w] = where
			}
		}
	}
	// One Noise value: its sources for different streams differ, and so
	// do two sources of one stream (each keyed afresh).
	n := SecureNoise()
	a, b, c := words(n.FastSource(7)), words(n.FastSource(8)), words(n.FastSource(7))
	if a == b || a == c {
		t.Errorf("one secure Noise gave equal fast streams: %x, %x, %x", a, b, c)
	}
}

// TestKeyedSource: seeded keyed sources repeat per (seed, stream, key),
// differ between keys and from Source's stream of the same id, and first
// draws over many keys are uniform (the per-element noise of a
// distributed release is i.i.d.): KS of 20,000 first draws against U(0,1)
// at false reject 1e-6 (fixed seed: deterministic). Secure noise gives
// secure sources.
func TestKeyedSource(t *testing.T) {
	t.Parallel()
	n := SeededNoise(5)
	if a, b := n.KeyedSource(8, 77).Uint64(), n.KeyedSource(8, 77).Uint64(); a != b {
		t.Fatal("KeyedSource not reproducible")
	}
	if n.KeyedSource(8, 77).Uint64() == n.KeyedSource(8, 78).Uint64() || n.KeyedSource(8, 0).Uint64() == n.Source(8).Uint64() ||
		n.KeyedSource(8, 77).Uint64() == n.KeyedSource(9, 77).Uint64() {
		t.Fatal("keyed streams coincide")
	}
	const keys = 20000
	xs := make([]float64, keys)
	for k := range xs {
		xs[k] = rand.New(n.KeyedSource(8, uint64(k)<<32|uint64(k%7))).Float64()
	}
	if d := stattest.KS(xs, func(x float64) float64 { return math.Min(1, math.Max(0, x)) }); d > stattest.KSCritical(keys, 1e-6) {
		t.Errorf("first draws of %d keys: KS %v > %v", keys, d, stattest.KSCritical(keys, 1e-6))
	}
	if s, ok := n.Seed(); !ok || s != 5 {
		t.Errorf("Seed() = %d, %v", s, ok)
	}
	if _, ok := SecureNoise().Seed(); ok || ProvenanceOf(SecureNoise().KeyedSource(8, 1)) != ProvenanceSecure {
		t.Error("secure noise: seeded keyed source")
	}
}
