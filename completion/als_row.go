package completion

import (
	"math/rand/v2"

	"github.com/dprec/dprec/decomposition"
)

// The ALS row kernels, exported so that a distributed driver (the Beam
// pipelines of the nested module beam/) solves every row with the code
// Train's ALS uses: the same design vector, target, accumulation order of
// the normal equations, penalties, Cholesky solve and row SSE. Given the
// same observations in the same order, RowSystem.Solve returns the same
// bits as the single-machine sweep.

// RowSystem accumulates and solves the normal equations of one ALS row of
// an order-2 CP model (matrix factorisation), with or without biases:
//
//	min_{x, beta} sum_e (y_e - <z_e, x> - beta)^2 + lambda n |x - x0|^2 + lambda_b beta^2
//
// with z_e the other mode's row of observation e, y_e its value minus the
// global mean and the other mode's bias, and n the row's observation count
// (package doc, "ALS"). A RowSystem is reused row after row (Reset); it is
// not safe for concurrent use.
type RowSystem struct {
	rank  int
	bias  bool
	n     int
	a, b  []float64 // normal equations, data part plus penalties at Solve
	ad    []float64 // data part of a and b, kept for the row's SSE
	bd    []float64
	z     []float64
	yy    float64
	count int
}

// NewRowSystem returns an empty row system for rank R, with a bias
// unknown when bias is set.
func NewRowSystem(rank int, bias bool) *RowSystem {
	n := rank
	if bias {
		n++
	}
	return &RowSystem{rank: rank, bias: bias, n: n,
		a: make([]float64, n*n), b: make([]float64, n), ad: make([]float64, n*n),
		bd: make([]float64, n), z: make([]float64, n)}
}

// Reset empties the system for the next row.
func (s *RowSystem) Reset() {
	clear(s.a)
	clear(s.b)
	s.yy, s.count = 0, 0
}

// Count is the number of observations added since Reset.
func (s *RowSystem) Count() int { return s.count }

// Add adds one observation of value v whose other-mode row is other
// (length rank), with offset the global mean plus the other mode's bias
// (0 without biases), exactly as Train's ALS adds it.
func (s *RowSystem) Add(other []float64, v, offset float64) {
	s.yy += cpDesign(s.a, s.b, s.z, other, v-offset, s.rank, s.n, s.bias)
	s.count++
}

// Solve writes the row's solution into row (length rank) and returns its
// bias (0 without biases) and the row's training SSE at the solution. reg
// is the per-observation penalty lambda, x0 the value the row is pulled
// towards (0 for users and items), regBias the bias penalty. A row with no
// observation is set to x0 with a zero bias. ok is false when the system
// is not positive definite.
func (s *RowSystem) Solve(reg, x0, regBias float64, row []float64) (bias, sse float64, ok bool) {
	if s.count == 0 {
		emptyRow(row, x0)
		return 0, 0, true
	}
	ok, sse = solveNormal(s.a, s.b, s.ad, s.bd, s.n, s.rank, s.count, reg, x0, regBias, s.bias, s.yy)
	if !ok {
		return 0, 0, false
	}
	copy(row, s.b[:s.rank])
	if s.bias {
		bias = s.b[s.rank]
	}
	return bias, sse, true
}

// cpDesign adds one observation of an order-2 CP model with target y
// (value minus offset) to the data part of a row's normal equations: the
// design vector z is the other mode's row, followed by 1 for the bias
// unknown. It returns y^2.
func cpDesign(A, b, z, other []float64, y float64, R, n int, bias bool) float64 {
	copy(z, other[:R])
	if bias {
		z[R] = 1
	}
	addOuter(A, b, z, y, n)
	return y * y
}

// emptyRow sets a row without observations to x0.
func emptyRow(row []float64, x0 float64) {
	for p := range row {
		row[p] = x0
	}
}

// solveNormal adds the penalties to a row's normal equations (A, b: n x n
// and n, the data part on entry, bias unknown last when bias is set),
// keeps their data part in ad and bd, and solves in place (b holds the
// solution). It returns false when the system is not positive definite,
// else the row's SSE at the solution.
func solveNormal(A, b, ad, bd []float64, n, R, count int, lam, x0, regBias float64, bias bool, yy float64) (bool, float64) {
	// Keep the data part of the normal equations: with them the row's
	// training SSE at the solution x is yy - 2 x.b + x'Ax, with no pass
	// over the entries (sweep uses it for the last mode).
	copy(ad[:n*n], A)
	copy(bd[:n], b)
	pen := lam * float64(count)
	for p := 0; p < R; p++ {
		A[p*n+p] += pen
		b[p] += pen * x0
	}
	if bias {
		A[R*n+R] += regBias
	}
	if !cholSolve(A, b, n) {
		return false, 0
	}
	return true, quadSSE(ad[:n*n], bd[:n], b, yy, n)
}

// InitModel initialises m as Train does before its first epoch or sweep,
// given the global mean of the training values (set when m has biases):
// unless s.WarmStart, the factors are drawn from N(0, InitScale^2) (the
// time mode around one), a Tucker core is set to the superdiagonal
// identity plus noise and the biases are zeroed, drawing from
// rand.New(src) in the order Train does. s must be resolved (Resolved).
func InitModel(m *decomposition.Model, mean float64, s *Settings, src rand.Source) {
	initParams(m, mean, s, rand.New(src))
}
