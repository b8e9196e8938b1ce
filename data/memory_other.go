//go:build !linux

package data

// PhysicalMemory returns 0 (unknown) outside Linux: loads then have no
// default memory limit, only an explicit LoadOptions.MaxMemory.
func PhysicalMemory() int64 { return 0 }
