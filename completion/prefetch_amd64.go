package completion

// prefetch4 asks the CPU to start loading the cache lines of a, b, c and d
// (PREFETCHT0) without waiting for them: unlike a plain load, a prefetch
// never holds up the instructions after it, so the misses of rows needed
// a few entries later overlap with the work on the current ones. It has no
// effect on results.
//
//go:noescape
func prefetch4(a, b, c, d *float64)
