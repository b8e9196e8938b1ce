package packed

import "testing"

// TestLayout: Len, Index.At, Position, Pack and Unpack agree with a
// direct enumeration of the sorted triples, for several sides.
func TestLayout(t *testing.T) {
	for _, d := range []int{1, 2, 3, 5, 8} {
		if got, want := Len(d), d*(d+1)*(d+2)/6; got != want {
			t.Fatalf("Len(%d) = %d, want %d", d, got, want)
		}
		ix := NewIndex(d)
		b := make([]float64, Len(d))
		p := 0
		for i := 0; i < d; i++ {
			for j := i; j < d; j++ {
				for k := j; k < d; k++ {
					if ix.At(i, j, k) != p || Position(d, k, i, j) != p || Position(d, j, k, i) != p {
						t.Fatalf("d=%d (%d,%d,%d): At %d, Position %d, want %d", d, i, j, k, ix.At(i, j, k), Position(d, k, i, j), p)
					}
					b[p] = float64(p + 1)
					p++
				}
			}
		}
		dense := make([]float64, d*d*d)
		Unpack(d, b, dense)
		for i := 0; i < d; i++ {
			for j := 0; j < d; j++ {
				for k := 0; k < d; k++ {
					if want := b[Position(d, i, j, k)]; dense[(i*d+j)*d+k] != want {
						t.Fatalf("d=%d dense(%d,%d,%d) = %v, want %v", d, i, j, k, dense[(i*d+j)*d+k], want)
					}
				}
			}
		}
		back := Pack(d, dense)
		for q := range b {
			if back[q] != b[q] {
				t.Fatalf("d=%d Pack(Unpack(b))[%d] = %v, want %v", d, q, back[q], b[q])
			}
		}
		if Check("x", d, len(b)) != nil || Check("x", d, len(b)+1) == nil {
			t.Fatalf("d=%d Check wrong", d)
		}
	}
}
