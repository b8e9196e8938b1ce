package otd

import (
	"errors"
	"fmt"
	"math"

	"github.com/dprec/dprec/internal/eigen"
	"gonum.org/v1/gonum/mat"
)

// Whiten returns the D x K whitening matrix W = U diag(d)^{-1/2} from the
// top-k eigenpairs (U, d) of the symmetric matrix M2 (Imtiaz and Sarwate 2018a sec. 2), so
// that W^T M2 W = I_k. It returns an error if the eigendecomposition fails,
// k is out of range, or the k-th largest eigenvalue is not positive (M2 has
// numerical rank below k: too few documents or too many topics).
func Whiten(M2 *mat.SymDense, k int) (W *mat.Dense, err error) {
	d := M2.SymmetricDim()
	if k < 1 || k > d {
		return nil, fmt.Errorf("otd: cannot whiten to %d dimensions a %d x %d moment", k, d, d)
	}
	vals, vecs, ok := eigen.Decompose(M2, true)
	if !ok {
		return nil, errors.New("otd: eigendecomposition of M2 failed")
	}
	return whitenFromEigen(vals, vecs, k)
}

// whitenFromEigen builds W from eigenpairs given in any order.
func whitenFromEigen(vals []float64, vecs *mat.Dense, k int) (*mat.Dense, error) {
	d, _ := vecs.Dims()
	idx := eigen.Order(vals, eigen.ByValue)
	top := vals[idx[0]]
	kth := vals[idx[k-1]]
	// 1e-12 relative: below this the direction is rounding noise.
	if !(kth > 1e-12*math.Abs(top)) || math.IsNaN(kth) {
		return nil, fmt.Errorf("otd: the %d-th eigenvalue of M2 is %.3g (largest %.3g): M2 has rank below %d; use fewer topics or more data", k, kth, top, k)
	}
	W := mat.NewDense(d, k, nil)
	for c := 0; c < k; c++ {
		s := 1 / math.Sqrt(vals[idx[c]])
		for i := 0; i < d; i++ {
			W.Set(i, c, vecs.At(i, idx[c])*s)
		}
	}
	return W, nil
}

// pinvT returns (W^T)^+ = W (W^T W)^{-1}, D x K, for W of full column rank.
func pinvT(W *mat.Dense) (*mat.Dense, error) {
	_, k := W.Dims()
	var g mat.SymDense
	g.SymOuterK(1, W.T())
	var ch mat.Cholesky
	if ok := ch.Factorize(&g); !ok {
		return nil, errors.New("otd: whitening matrix is rank deficient")
	}
	var gi mat.SymDense
	if err := ch.InverseTo(&gi); err != nil {
		return nil, err
	}
	d, _ := W.Dims()
	out := mat.NewDense(d, k, nil)
	out.Mul(W, &gi)
	return out, nil
}

// Unwhiten recovers components and weights from the eigenpairs of the
// whitened third moment of a single-topic model or Gaussian mixture
// (M3(W,W,W) = sum_k w_k^{-1/2} v_k^{(x)3}): a_k = lambda_k (W^T)^+ v_k and
// w_k = 1/lambda_k^2 (Imtiaz and Sarwate 2018a sec. 2). A is D x K. It panics on shape
// mismatch.
func Unwhiten(W *mat.Dense, lambda []float64, V *mat.Dense) (A *mat.Dense, weights []float64) {
	return unwhitenScaled(W, lambda, V, 1, 1)
}

// UnwhitenLDA is Unwhiten for LDA with concentration alpha0 (DeCarolis et al. 2020,
// proof of Theorem 4 / Lemma 25): the whitened tensor's eigenvalues are
// lambda_i = 2 sqrt(alpha0+1) / ((alpha0+2) sqrt(w_i)), w_i = alpha_i/alpha0,
// so mu_i = ((alpha0+2)/2) lambda_i (W^T)^+ v_i and
// w_i = 4(alpha0+1) / ((alpha0+2)^2 lambda_i^2); the Dirichlet parameters
// are alpha_i = alpha0 w_i. alpha0 -> 0 gives Unwhiten.
func UnwhitenLDA(W *mat.Dense, lambda []float64, V *mat.Dense, alpha0 float64) (A *mat.Dense, weights []float64) {
	return unwhitenScaled(W, lambda, V, (alpha0+2)/2, 4*(alpha0+1)/((alpha0+2)*(alpha0+2)))
}

func unwhitenScaled(W *mat.Dense, lambda []float64, V *mat.Dense, aScale, wScale float64) (*mat.Dense, []float64) {
	d, k := W.Dims()
	vk, nc := V.Dims()
	if vk != k || len(lambda) != nc {
		panic("otd: Unwhiten shape mismatch")
	}
	P, err := pinvT(W)
	if err != nil {
		// W from Whiten has orthogonal columns of positive norm; a rank
		// deficient W is a programmer error.
		panic(err)
	}
	A := mat.NewDense(d, nc, nil)
	A.Mul(P, V)
	w := make([]float64, nc)
	for c := 0; c < nc; c++ {
		s := aScale * lambda[c]
		for i := 0; i < d; i++ {
			A.Set(i, c, A.At(i, c)*s)
		}
		if lambda[c] != 0 {
			w[c] = wScale / (lambda[c] * lambda[c])
		}
	}
	return A, w
}
