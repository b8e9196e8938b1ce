//go:build !amd64

package completion

// prefetch4 is a no-op where no prefetch instruction is wired up.
func prefetch4(a, b, c, d *float64) {}
