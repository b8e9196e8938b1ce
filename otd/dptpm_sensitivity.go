package otd

import (
	"math"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// STMDPTPMSensitivity returns the DP-TPM query sensitivities for the
// whitened single-topic tensor T = M3(W,W,W) built from n documents, with
// the whitening matrix W (D x K) already released privately (so it is
// public when the power method runs). One changed document moves M3 by
// (P - P')/n with P, P' probability tensors (non-negative, entries summing
// to 1), so with v = W u and r_W = max_a ||W^T e_a||_2:
//
//	||W^T (P-P')(I,v,v)||_2 <= 2 r_W ||v||_inf^2,  |(P-P')(v,v,v)| <= 2 ||v||_inf^3,
//
// (each of P(I,v,v) = sum_abc P_abc v_b v_c e_a is a convex combination
// of vectors of norm at most ||v||_inf^2 ||W^T e_a||). Divided by n these
// are Delta f1 and Delta f2; with W = I and n = 1 they are the
// 2 ||u||_inf^2 and 2 ||u||_inf^3 of Imtiaz and Sarwate 2018a section 4.
func STMDPTPMSensitivity(W *mat.Dense, n int) DPTPMSensitivity {
	rows, _ := W.Dims()
	var rW float64
	for a := 0; a < rows; a++ {
		rW = math.Max(rW, floats.Norm(W.RawRowView(a), 2))
	}
	fn := float64(n)
	v := make([]float64, rows)
	return func(u []float64) (float64, float64) {
		mat.NewVecDense(rows, v).MulVec(W, mat.NewVecDense(len(u), u))
		m := floats.Norm(v, math.Inf(1))
		return 2 * rW * m * m / fn, 2 * m * m * m / fn
	}
}

// MOGDPTPMSensitivity returns the DP-TPM query sensitivities for the
// whitened Gaussian-mixture tensor T = M3(W,W,W) from n samples with
// ||x||_2 <= 1 and noise variance sigma2. The contribution of one sample
// x is T_x = x(x)x(x)x - sigma2 sum_i (x(x)e_i(x)e_i + e_i(x)x(x)e_i +
// e_i(x)e_i(x)x), so with v = W u
//
//	W^T T_x(I,v,v) = (W^T x)(x.v)^2 - sigma2 ((W^T x)||v||^2 + 2 (W^T v)(x.v)),
//	T_x(v,v,v)     = (x.v)^3 - 3 sigma2 (x.v) ||v||^2,
//
// bounded by ||W||_2 ||v||^2 (1+sigma2) + 2 sigma2 ||W^T v|| ||v|| and
// ||v||^3 (1 + 3 sigma2); a changed sample moves each by at most twice
// that, divided by n.
func MOGDPTPMSensitivity(W *mat.Dense, n int, sigma2 float64) DPTPMSensitivity {
	rows, cols := W.Dims()
	var svd mat.SVD
	wNorm := 0.0
	if svd.Factorize(W, mat.SVDNone) {
		wNorm = svd.Values(nil)[0]
	} else {
		wNorm = mat.Norm(W, 2) // gonum's norm 2 is Frobenius: an upper bound of the spectral norm
	}
	fn := float64(n)
	v := make([]float64, rows)
	wtv := make([]float64, cols)
	return func(u []float64) (float64, float64) {
		mat.NewVecDense(rows, v).MulVec(W, mat.NewVecDense(len(u), u))
		mat.NewVecDense(cols, wtv).MulVec(W.T(), mat.NewVecDense(rows, v))
		nv := floats.Norm(v, 2)
		f1 := wNorm*nv*nv*(1+sigma2) + 2*sigma2*floats.Norm(wtv, 2)*nv
		f2 := nv * nv * nv * (1 + 3*sigma2)
		return 2 * f1 / fn, 2 * f2 / fn
	}
}
