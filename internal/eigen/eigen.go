// Package eigen picks the top-k eigenpairs of a symmetric matrix, the step
// shared by whitening (otd: Whiten, WhitenSVD, the private sketch, the
// implicit whitening), the private LDA decomposition and principal
// subspaces (otd/cape TopK).
//
// It wraps gonum's mat.EigenSym, which returns the eigenvalues in
// ascending order, and sorts them in decreasing order of the value itself
// (ByValue: PCA and whitening of a positive semi-definite moment) or of
// its absolute value (ByAbs: the singular values of a noisy, possibly
// indefinite, symmetric matrix, as an SVD would). Sorting is stable, so
// equal keys keep gonum's ascending order and results are reproducible
// bit for bit.
//
// It is a leaf package (gonum and the standard library only).
package eigen

import (
	"math"
	"sort"

	"gonum.org/v1/gonum/mat"
)

// By is the key eigenvalues are ranked by.
type By int

const (
	// ByValue ranks by the signed eigenvalue, largest first.
	ByValue By = iota
	// ByAbs ranks by the absolute value of the eigenvalue, largest first.
	ByAbs
)

func (b By) key(v float64) float64 {
	if b == ByAbs {
		return math.Abs(v)
	}
	return v
}

// Decompose factorises the symmetric matrix a. It returns the eigenvalues
// in ascending order and, when vectors is true, the matrix whose column i
// is the unit eigenvector of value i (nil otherwise). ok is false when the
// factorisation fails; callers return their own error.
func Decompose(a mat.Symmetric, vectors bool) (vals []float64, vecs *mat.Dense, ok bool) {
	var es mat.EigenSym
	if !es.Factorize(a, vectors) {
		return nil, nil, false
	}
	vals = es.Values(nil)
	if vectors {
		vecs = new(mat.Dense)
		es.VectorsTo(vecs)
	}
	return vals, vecs, true
}

// Order returns the indices of vals in decreasing order of by's key, ties
// kept in index order (a stable sort).
func Order(vals []float64, by By) []int {
	idx := make([]int, len(vals))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return by.key(vals[idx[a]]) > by.key(vals[idx[b]]) })
	return idx
}

// Top returns the k eigenpairs of a ranked first by by: their (signed)
// eigenvalues in that order and the d x k matrix of the corresponding unit
// eigenvectors as columns. ok is false when the factorisation fails. It
// panics unless 1 <= k <= d; callers validate k.
func Top(a mat.Symmetric, k int, by By) (vals []float64, vecs *mat.Dense, ok bool) {
	d := a.SymmetricDim()
	if k < 1 || k > d {
		panic("eigen: Top: k out of range")
	}
	all, full, ok := Decompose(a, true)
	if !ok {
		return nil, nil, false
	}
	idx := Order(all, by)
	vals = make([]float64, k)
	vecs = mat.NewDense(d, k, nil)
	for c := 0; c < k; c++ {
		vals[c] = all[idx[c]]
		for i := 0; i < d; i++ {
			vecs.Set(i, c, full.At(i, idx[c]))
		}
	}
	return vals, vecs, true
}

// Largest returns the k largest keys (the values for ByValue, their
// absolute values for ByAbs) of vals in decreasing order, in a new slice.
// It panics if k > len(vals).
func Largest(vals []float64, k int, by By) []float64 {
	s := make([]float64, len(vals))
	for i, v := range vals {
		s[i] = by.key(v)
	}
	sort.Sort(sort.Reverse(sort.Float64Slice(s)))
	return s[:k]
}
