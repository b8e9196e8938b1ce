// Package decomposition holds the CP and Tucker models of dprec's tensor
// completion and their per-entry mathematics (Wei et al. 2021, "Applying
// differential privacy to tensor completion", eq. 2-4).
//
// A Model predicts an observed cell (i, j[, k]) of an order-2 or order-3
// tensor as
//
//	xhat = mu + bias_0[i] + bias_1[j] (+ bias_2[k]) + G ×1 a_i ×2 b_j (×3 c_k)
//
// where a_i, b_j, c_k are rows of the row-major factor matrices and G is
// the dense Tucker core (P x Q [x T], last mode fastest). A CP model is the
// Tucker model with the superdiagonal identity core (eq. 3) and is stored
// without a core; TestCPEqualsSuperdiagonalTucker checks the two agree.
// Bias terms are optional (on for rating logs, off for the seed's synthetic
// tensors); Predict clamps to [ClampLo, ClampHi] when ClampActive says so,
// Raw does not (training uses the unclamped prediction).
//
// Per-entry loss and gradients. For an observed value x with residual
// e = x - xhat, the per-entry loss of objective (4) as SGD applies it is
//
//	f = e^2 + lambda_o (|a_i|^2 + |b_j|^2 + |c_k|^2) + lambda_b (sum of the entry's squared biases) + lambda_g |G|^2
//
// DataGrad gives the gradient of the data part e^2 (-2 e times Partial's
// derivatives of xhat), RegGrad that of the regulariser (2 lambda times the
// parameter); both are exact and are checked against central finite
// differences for CP and Tucker, orders 2 and 3, with and without biases.
// Partial is also the design vector of the per-row least-squares problems
// (fold-in, exact refits): xhat is linear in each factor row.
//
// FoldIn solves a new user's row (and bias) against a frozen model by ridge
// regression (gonum Cholesky), so predictions need no retraining.
//
// Concurrency: a Model is safe for concurrent reads. The per-entry
// functions write only into a Work, which belongs to one goroutine; they
// allocate nothing. Index arguments out of range panic (programmer misuse:
// callers validate user data first).
package decomposition
