package data

import (
	"errors"
	"fmt"
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
//     loader holds each row twice (per-chunk arrays, then the
//     concatenation), and Finish adds a 4-byte time bucket index and the
//     duplicate merge's sort (a uint64 cell key, sorted keys, an int32
//     permutation and radix buffers: about 28 bytes). Rows with a time
//     column: 64 bytes; without: 48.
//   - an integer ID costs its int64 in the dictionary, a map entry (about
//     40 bytes with Go's map overhead) and up to 32 bytes of dense-index
//     cache: 80 bytes; a string ID its string header and map entry plus
//     the bytes themselves: 96 bytes is assumed (IDs of up to ~32 bytes).
const (
	memRowBytes      = 48
	memRowTimeBytes  = 64
	memIntIDBytes    = 80
	memStringIDBytes = 96
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

// memCheck fails with ErrMemoryLimit when the estimate for rows rows (read
// so far, or announced by the file when announced is set) exceeds limit
// (0: no limit).
func memCheck(path string, limit, rows int64, announced, hasTime bool, users, items *Dict) error {
	if limit <= 0 {
		return nil
	}
	est := memEstimate(rows, hasTime, users, items)
	if est <= limit {
		return nil
	}
	what := "rows read so far"
	if announced {
		what = "rows in the file"
	}
	ids := ""
	if users != nil && items != nil {
		ids = fmt.Sprintf(" and %d + %d distinct IDs", users.Len(), items.Len())
	}
	return fmt.Errorf("%s: %w: loading needs about %s (%d %s%s), more than the limit of %s; raise it with --max-memory (default: %.0f%% of the physical memory) or load less data",
		path, ErrMemoryLimit, FormatBytes(est), rows, what, ids, FormatBytes(limit), 100*DefaultMemoryFraction)
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
