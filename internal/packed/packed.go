// Package packed is the packed layout of a symmetric third-order tensor
// shared by perturb (noise drawn on the unique entries), otd (moments and
// whitened tensors) and otd/cape (messages between sites).
//
// A symmetric d x d x d tensor T (invariant under every permutation of
// (i, j, k)) has C(d+2, 3) = d(d+1)(d+2)/6 distinct entries. The packed
// vector b lists T_ijk for i <= j <= k in lexicographic order:
//
//	(0,0,0), (0,0,1), ..., (0,0,d-1), (0,1,1), (0,1,2), ..., (d-1,d-1,d-1)
//
// The dense form is row-major: entry (i, j, k) at (i*d + j)*d + k.
//
// # Index
//
// Triples with first index below i number sum_{a<i} C(d-a+1, 2); within
// first index i, pairs (j', k') with i <= j' < j number sum_{i<=a<j} (d-a).
// With offI[i] = sum_{a<i} (d-a)(d-a+1)/2 and offJ[j] = sum_{a<j} (d-a),
// the position of (i, j, k), i <= j <= k, is offI[i] + offJ[j] - offJ[i] +
// k - j.
//
// It is a leaf package (the standard library only).
package packed

import "fmt"

// Len returns C(d+2, 3) = d(d+1)(d+2)/6, the number of distinct entries
// of a symmetric d x d x d tensor.
func Len(d int) int { return d * (d + 1) * (d + 2) / 6 }

// Index holds the precomputed offsets of the packed layout for one side d
// (see the package doc); At is then O(1). Hot loops may read OffI and OffJ
// directly to hoist the parts of At that do not change; they must not
// modify them.
type Index struct {
	OffI, OffJ []int
}

// NewIndex returns the Index of side d.
func NewIndex(d int) Index {
	p := Index{OffI: make([]int, d+1), OffJ: make([]int, d+1)}
	for i := 0; i < d; i++ {
		m := d - i
		p.OffI[i+1] = p.OffI[i] + m*(m+1)/2
		p.OffJ[i+1] = p.OffJ[i] + m
	}
	return p
}

// At returns the packed position of (i, j, k); it requires i <= j <= k.
func (p Index) At(i, j, k int) int { return p.OffI[i] + p.OffJ[j] - p.OffJ[i] + k - j }

// Position returns the packed position of the sorted triple of (i, j, k),
// in any order, for side d, in O(d) time without an Index.
func Position(d, i, j, k int) int {
	if i > j {
		i, j = j, i
	}
	if j > k {
		j, k = k, j
	}
	if i > j {
		i, j = j, i
	}
	p := 0
	for a := 0; a < i; a++ {
		m := d - a
		p += m * (m + 1) / 2
	}
	for a := i; a < j; a++ {
		p += d - a
	}
	return p + k - j
}

// Check returns an error naming who when d < 1 or len(b) != Len(d).
func Check(who string, d, n int) error {
	if d < 1 || n != Len(d) {
		return fmt.Errorf("%s: packed length %d does not match C(%d+2,3) = %d", who, n, d, Len(d))
	}
	return nil
}

// Unpack writes the dense symmetric tensor of side d whose distinct
// entries are b into dst (length d^3, row-major). It panics if the lengths
// do not match; callers validate with Check.
func Unpack(d int, b, dst []float64) {
	if len(b) != Len(d) || len(dst) != d*d*d {
		panic(fmt.Sprintf("packed: Unpack: d = %d, len(b) = %d, len(dst) = %d", d, len(b), len(dst)))
	}
	p := 0
	for i := 0; i < d; i++ {
		for j := i; j < d; j++ {
			for k := j; k < d; k++ {
				v := b[p]
				p++
				dst[(i*d+j)*d+k] = v
				dst[(i*d+k)*d+j] = v
				dst[(j*d+i)*d+k] = v
				dst[(j*d+k)*d+i] = v
				dst[(k*d+i)*d+j] = v
				dst[(k*d+j)*d+i] = v
			}
		}
	}
}

// Pack returns the Len(d) distinct entries of the dense symmetric tensor t
// of side d (row-major), reading the upper entries T_ijk, i <= j <= k. It
// panics if len(t) != d^3.
func Pack(d int, t []float64) []float64 {
	if len(t) != d*d*d {
		panic(fmt.Sprintf("packed: Pack: d = %d, len(t) = %d", d, len(t)))
	}
	out := make([]float64, 0, Len(d))
	for i := 0; i < d; i++ {
		for j := i; j < d; j++ {
			base := (i*d + j) * d
			out = append(out, t[base+j:base+d]...)
		}
	}
	return out
}
