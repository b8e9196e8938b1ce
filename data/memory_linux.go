//go:build linux

package data

import "syscall"

// PhysicalMemory returns the machine's physical memory in bytes (0 when it
// cannot be read), from sysinfo(2).
func PhysicalMemory() int64 {
	var si syscall.Sysinfo_t
	if err := syscall.Sysinfo(&si); err != nil {
		return 0
	}
	return int64(si.Totalram) * int64(si.Unit)
}
