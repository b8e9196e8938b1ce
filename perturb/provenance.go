package perturb

import (
	"fmt"
	"math/rand/v2"
)

// Provenance says where a result's noise came from, and therefore whether
// the result is private: only noise from the operating system's CSPRNG
// (SecureSource) is. It is the one way dprec decides and records this: a
// noise source carries it (Noise.Provenance, ProvenanceOf), a privacy
// report carries its label (Report.Randomness, read back exactly by
// Report.Provenance).
type Provenance uint8

// Provenances. The zero value is unknown (a report without a label).
const (
	ProvenanceUnknown Provenance = iota
	// ProvenanceSecure: crypto/rand through SecureSource. Private.
	ProvenanceSecure
	// ProvenanceSeeded: a reproducible PRNG (SeededSource, StreamSource or
	// any caller-supplied source). NOT private: whoever knows the seed can
	// subtract the noise.
	ProvenanceSeeded
)

// Private reports whether noise of this provenance protects anything.
func (p Provenance) Private() bool { return p == ProvenanceSecure }

// String returns the report label (LabelSecure, LabelSeeded or
// "unknown").
func (p Provenance) String() string {
	switch p {
	case ProvenanceSecure:
		return LabelSecure
	case ProvenanceSeeded:
		return LabelSeeded
	}
	return "unknown"
}

// ParseProvenance maps a report label back to its provenance; only the
// exact labels LabelSecure and LabelSeeded are accepted.
func ParseProvenance(label string) (Provenance, error) {
	switch label {
	case LabelSecure:
		return ProvenanceSecure, nil
	case LabelSeeded:
		return ProvenanceSeeded, nil
	}
	return ProvenanceUnknown, fmt.Errorf("perturb: unknown randomness label %q (want %q or %q)", label, LabelSecure, LabelSeeded)
}

// ProvenanceOf returns the provenance of noise drawn from src: nil (which
// every mechanism treats as SecureSource) and SecureSource's sources are
// secure, as are Noise.FastSource's secure ChaCha8 sources; any other
// source is seeded (reproducible by whoever holds it).
func ProvenanceOf(src rand.Source) Provenance {
	switch src.(type) {
	case nil, *secureSource, *secureChaCha:
		return ProvenanceSecure
	}
	return ProvenanceSeeded
}

// Noise selects the noise of a private computation: secure (the zero
// value) or seeded by Seed (reproducible, NOT private). Source derives one
// independent stream per id, so no two mechanisms share a stream.
type Noise struct {
	seeded bool
	seed   uint64
}

// SecureNoise returns the secure noise selection (the zero value).
func SecureNoise() Noise { return Noise{} }

// SeededNoise returns reproducible noise from seed (NOT private).
func SeededNoise(seed uint64) Noise { return Noise{seeded: true, seed: seed} }

// Source returns the rand.Source of stream id: SecureSource for secure
// noise, StreamSource(seed, stream) for seeded noise.
func (n Noise) Source(stream uint64) rand.Source {
	if n.seeded {
		return StreamSource(n.seed, stream)
	}
	return SecureSource()
}

// KeyedSource returns the rand.Source of the element with key key of
// stream id: for noise drawn element by element where no storage order
// exists (a distributed release, where each worker draws the noise of its
// own elements). Secure noise: a new SecureSource (every element's noise
// is independent whatever the key; create one and reuse it when many are
// drawn). Seeded noise: a PCG stream that is a function of (seed, stream,
// key) only, independent of Source's streams, so a seeded run draws the
// same noise for an element however the elements are split into bundles
// (NOT private).
func (n Noise) KeyedSource(stream, key uint64) rand.Source {
	if n.seeded {
		return StreamSource(splitmix64(n.seed^splitmix64(stream^0x510e527fade682d1)), key)
	}
	return SecureSource()
}

// Seed returns the seed of seeded noise and true, or 0 and false for
// secure noise (the seed is what a distributed worker needs to rebuild
// SeededNoise(seed)).
func (n Noise) Seed() (uint64, bool) { return n.seed, n.seeded }

// Provenance returns ProvenanceSecure or ProvenanceSeeded.
func (n Noise) Provenance() Provenance {
	if n.seeded {
		return ProvenanceSeeded
	}
	return ProvenanceSecure
}

// Provenance reads the report's randomness label back (exact match), and
// false for a non-private report or an unknown label.
func (r *Report) Provenance() (Provenance, bool) {
	if r == nil {
		return ProvenanceUnknown, false
	}
	p, err := ParseProvenance(r.Randomness)
	return p, err == nil
}
