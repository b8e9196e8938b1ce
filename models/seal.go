package models

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
)

// The seal is a SHA-256 of the whole file, stored in the schema metadata
// (key "dprec.seal") as sealPrefix followed by 64 hex digits. The digest is
// computed with the 64 digit bytes of every copy of the seal (Arrow writes
// the schema twice: at the start and in the footer) set to zero. It is
// checked before the Arrow reader parses anything, so that no truncated or
// corrupted file reaches the Arrow decoder (whose flatbuffer lengths are not
// bounds-checked against the file).
const sealPrefix = "dprec-file-sha256:"

// sealSpots returns the offsets of the 64 digit bytes of every seal copy.
func sealSpots(b []byte) []int {
	var spots []int
	p := []byte(sealPrefix)
	for off := 0; ; {
		i := bytes.Index(b[off:], p)
		if i < 0 {
			return spots
		}
		at := off + i + len(p)
		if at+64 > len(b) {
			return spots
		}
		spots = append(spots, at)
		off = at
	}
}

func sealDigest(b []byte, spots []int) [32]byte {
	h := sha256.New()
	prev := 0
	var zero [64]byte
	for _, at := range spots {
		h.Write(b[prev:at])
		h.Write(zero[:])
		prev = at + 64
	}
	h.Write(b[prev:])
	var out [32]byte
	copy(out[:], h.Sum(nil))
	return out
}

// seal writes the digest of b into its seal copies.
func seal(b []byte) error {
	spots := sealSpots(b)
	if len(spots) == 0 {
		return fmt.Errorf("models: internal error: no seal placeholder in the file")
	}
	d := sealDigest(b, spots)
	x := []byte(hex.EncodeToString(d[:]))
	for _, at := range spots {
		copy(b[at:at+64], x)
	}
	return nil
}

// checkSeal verifies the seal of a whole file.
func checkSeal(b []byte) error {
	if len(b) < 12 || string(b[:6]) != "ARROW1" || string(b[len(b)-6:]) != "ARROW1" {
		return fmt.Errorf("%w: not an Arrow IPC file or truncated (no ARROW1 magic at both ends)", ErrFormat)
	}
	spots := sealSpots(b)
	if len(spots) == 0 {
		return fmt.Errorf("%w: an Arrow file but not a dprec model (no seal)", ErrFormat)
	}
	stored := b[spots[0] : spots[0]+64]
	for _, at := range spots[1:] {
		if !bytes.Equal(b[at:at+64], stored) {
			return ErrChecksum
		}
	}
	d := sealDigest(b, spots)
	if hex.EncodeToString(d[:]) != string(stored) {
		return ErrChecksum
	}
	return nil
}
