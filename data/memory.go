package data

import (
	"errors"
	"fmt"
	"runtime"
)

// ErrMemoryLimit is returned (wrapped) when a load's memory estimate
// exceeds LoadOptions.MaxMemory; the message gives the estimate.
var ErrMemoryLimit = errors.New("memory limit exceeded")

// DefaultMemoryFraction is the share of physical memory a load may use by
// default (LoadOptions.MaxMemory zero).
const DefaultMemoryFraction = 0.5

// Memory estimate of a load, in bytes per row and per distinct ID. These
// are the peaks of the loaders, not the final store:
//
//   - a row costs 16 bytes in the store (int32 user and item, float64
//     rating) plus 8 for its raw time stamp; while loading, the text
//     loader holds a row twice while an array it reserved from the rows
//     per byte so far grows (when that estimate fell short), and Finish
//     adds a 4-byte time bucket index and the
//     duplicate merge's sort (a uint64 cell key, sorted keys, an int32
//     permutation and radix buffers: about 28 bytes). Rows with a time
//     column: 64 bytes; without: 48.
//   - an integer ID costs its int64 in the dictionary, a map entry (about
//     40 bytes with Go's map overhead) and up to 32 bytes of dense-index
//     cache: 80 bytes; a string ID its string header and map entry plus
//     the bytes themselves: 128 bytes is assumed (measured: 3M rows with 6M
//     distinct IDs of 5 to 11 bytes peak at 305 bytes per row, 120 per ID
//     beyond the row; integer IDs at 233 bytes per row, within the 224
//     assumed).
const (
	memRowBytes      = 48
	memRowTimeBytes  = 64
	memIntIDBytes    = 80
	memStringIDBytes = 128
	// memVocabWordBytes is a generated vocabulary word: its string header
	// and decimal digits (rounded up to Go's 16-byte size class).
	memVocabWordBytes = 32
	// memTextBytesPerByte bounds the memory of tokenizing a text directory
	// per byte of text: the bytes, their string copy, lower-cased tokens
	// and a map entry (about 64 bytes) per distinct token, which for
	// distinct two-letter words separated by a blank is 64/3 per byte.
	memTextBytesPerByte = 24
)

// memLimit returns the byte limit of a load: MaxMemory when positive, none
// (0) when negative, else DefaultMemoryFraction of the physical memory
// (none when it cannot be read).
func (o *LoadOptions) memLimit() int64 {
	switch {
	case o.MaxMemory > 0:
		return o.MaxMemory
	case o.MaxMemory < 0:
		return 0
	}
	return int64(float64(PhysicalMemory()) * DefaultMemoryFraction)
}

// memEstimate returns the estimated peak bytes of a load of rows rows with
// the given dictionaries.
func memEstimate(rows int64, hasTime bool, dicts ...*Dict) int64 {
	per := int64(memRowBytes)
	if hasTime {
		per = memRowTimeBytes
	}
	est := rows * per
	for _, d := range dicts {
		if d == nil {
			continue
		}
		if d.IsString {
			est += int64(d.Len()) * memStringIDBytes
		} else {
			est += int64(d.Len()) * memIntIDBytes
		}
	}
	return est
}

// memFit is called by the loaders after each block of rows: when the
// estimate for the rows held (in b and pending, not yet in b) runs over
// limit (0: none), flush adds the pending rows to b, duplicates are merged
// (Builder.Compact), and the load fails with ErrMemoryLimit when the
// merged rows still need more than 3/4 of the limit (the margin keeps a
// merge from being repeated at every block). read is the number of valid
// rows read so far, for the message.
func memFit(path string, limit int64, b *Builder, pending, read int, flush func()) error {
	if limit <= 0 || memEstimate(int64(b.Len()+pending), b.hasTime, b.Users, b.Items) <= limit {
		return nil
	}
	if flush != nil {
		flush()
	}
	runtime.GC() // the flushed blocks, before the merge allocates
	if err := b.Compact(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	// The arrays the merge replaced are garbage now; collect them at
	// once rather than letting the heap grow to twice the live data.
	runtime.GC()
	est := memEstimate(int64(b.Len()), b.hasTime, b.Users, b.Items)
	if est <= limit/4*3 {
		return nil
	}
	return fmt.Errorf("%s: %w: loading needs about %s (%d rows read so far, %d distinct cells after merging duplicates, %d + %d distinct IDs), more than 3/4 of the limit of %s; raise it with --max-memory (default: %.0f%% of the physical memory) or load less data",
		path, ErrMemoryLimit, FormatBytes(est), read, b.Len(), b.Users.Len(), b.Items.Len(), FormatBytes(limit), 100*DefaultMemoryFraction)
}

// FormatBytes writes a byte count with a binary unit ("1.5 GiB").
func FormatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 5; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
