package completion

import "math"

// Dense Cholesky helpers shared by the ALS, Gibbs and private ALS row
// solves (R+1 <= a few hundred, so a plain loop beats a library call's
// allocations). Matrices are row-major n x n; only the upper triangle is
// read.

// cholSolve solves A x = b for the symmetric positive definite n x n matrix
// whose upper triangle is in A, in place: A is overwritten by its Cholesky
// factor U (A = U^T U) and b by x. It reports false when A is not
// (numerically) positive definite.
func cholSolve(A, b []float64, n int) bool {
	if !cholUpper(A, n) {
		return false
	}
	forwardSolveUpperT(A, b, n)
	backSolveUpper(A, b, n)
	return true
}

// cholUpper overwrites the upper triangle of the SPD matrix A (row-major,
// upper triangle read) with U, A = U^T U. It reports false when A is not
// positive definite.
func cholUpper(A []float64, n int) bool {
	for j := 0; j < n; j++ {
		d := A[j*n+j]
		for k := 0; k < j; k++ {
			d -= A[k*n+j] * A[k*n+j]
		}
		if !(d > 0) {
			return false
		}
		d = math.Sqrt(d)
		A[j*n+j] = d
		for i := j + 1; i < n; i++ {
			s := A[j*n+i]
			for k := 0; k < j; k++ {
				s -= A[k*n+j] * A[k*n+i]
			}
			A[j*n+i] = s / d
		}
	}
	return true
}

// forwardSolveUpperT solves U^T y = b in place.
func forwardSolveUpperT(U, b []float64, n int) {
	for i := 0; i < n; i++ {
		s := b[i]
		for k := 0; k < i; k++ {
			s -= U[k*n+i] * b[k]
		}
		b[i] = s / U[i*n+i]
	}
}

// backSolveUpper solves U x = b in place.
func backSolveUpper(U, b []float64, n int) {
	for i := n - 1; i >= 0; i-- {
		s := b[i]
		for k := i + 1; k < n; k++ {
			s -= U[i*n+k] * b[k]
		}
		b[i] = s / U[i*n+i]
	}
}
