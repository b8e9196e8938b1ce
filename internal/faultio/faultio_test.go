package faultio

import (
	"errors"
	"syscall"
	"testing"
)

// TestFullDisk: writes fit until Room, the crossing write is short and
// fails with ENOSPC, and later writes fail with nothing written.
func TestFullDisk(t *testing.T) {
	d := &FullDisk{Room: 5, Path: "/full/x"}
	if n, err := d.Write([]byte("abc")); n != 3 || err != nil {
		t.Fatalf("first write: %d, %v", n, err)
	}
	if n, err := d.Write([]byte("defg")); n != 2 || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("crossing write: %d, %v", n, err)
	}
	if n, err := d.Write([]byte("h")); n != 0 || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("write on a full disk: %d, %v", n, err)
	}
}
