package perturb

import (
	"bufio"
	crand "crypto/rand"
	"encoding/binary"
	"io"
	"math/rand/v2"
	"sync"
)

// secureBufSize is the size of the buffer in front of crypto/rand: 64 KiB,
// as in Google's DP library (go/rand/rand.go), so that one system call
// serves 8192 draws of 64 bits.
const secureBufSize = 1 << 16

// secureSource is a rand.Source whose every 64-bit word comes from
// crypto/rand through a buffered, mutex-guarded reader. It is safe for
// concurrent use.
type secureSource struct {
	mu  sync.Mutex
	r   *bufio.Reader
	buf [8]byte
}

// SecureSource returns a math/rand/v2 Source backed by crypto/rand (the
// operating system's CSPRNG) through a buffered, mutex-guarded reader. It is
// the default source of all noise in dprec and is safe for concurrent use.
//
// If crypto/rand ever fails to deliver bytes, Uint64 panics: a DP library
// must never fall back to a weaker or predictable source, and it cannot
// return an error through the rand.Source interface. Google's DP library
// makes the same choice (log.Fatalf "out of randomness, should never
// happen"). Since Go 1.24 crypto/rand.Read is documented never to fail on
// supported platforms, so the panic is unreachable in practice.
func SecureSource() rand.Source {
	return &secureSource{r: bufio.NewReaderSize(crand.Reader, secureBufSize)}
}

// Uint64 implements rand.Source.
func (s *secureSource) Uint64() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := io.ReadFull(s.r, s.buf[:]); err != nil {
		panic("perturb: crypto/rand failed, refusing to draw noise from a weaker source: " + err.Error())
	}
	return binary.LittleEndian.Uint64(s.buf[:])
}

// SeededSource returns a reproducible PCG source for seed. Noise drawn from
// it is NOT private: anyone who knows the seed can subtract the noise. Use
// it only for tests and experiments, and label results with
// RandomnessLabel(true).
func SeededSource(seed uint64) rand.Source {
	return rand.NewPCG(seed, splitmix64(seed^0x6a09e667f3bcc908))
}

// StreamSource returns a reproducible PCG source for the pair (seed,
// stream). Different stream ids give statistically independent streams, so
// two mechanisms (or two workers, or two epochs) never share one seed's
// stream (sharing one stream between mechanisms correlates their noise and
// breaks DP; see IBM diffprivlib issue #31). Both PCG words are derived
// from (seed, stream) through the SplitMix64 finaliser, which decorrelates
// nearby seeds and stream ids. Like SeededSource it is NOT private.
func StreamSource(seed uint64, stream uint64) rand.Source {
	hi := splitmix64(seed ^ splitmix64(stream+0x9e3779b97f4a7c15))
	lo := splitmix64(hi ^ stream ^ 0xbb67ae8584caa73b)
	return rand.NewPCG(hi, lo)
}

// splitmix64 is the SplitMix64 output function (Steele, Lea and Flood
// 2014), a bijective 64-bit mixer.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// Randomness labels used in privacy reports.
const (
	LabelSecure = "secure (crypto/rand)"
	LabelSeeded = "seeded (reproducible, NOT private)"
)

// RandomnessLabel returns the report label of the noise source:
// "secure (crypto/rand)" or "seeded (reproducible, NOT private)", i.e. the
// String of the corresponding Provenance (for callers that hold a bool).
func RandomnessLabel(seeded bool) string {
	if seeded {
		return ProvenanceSeeded.String()
	}
	return ProvenanceSecure.String()
}
