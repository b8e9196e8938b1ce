package cape

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/dprec/dprec/internal/eigen"
	"github.com/dprec/dprec/perturb"
	"gonum.org/v1/gonum/mat"
)

// PCAResult is a K-dimensional principal subspace.
type PCAResult struct {
	// V is D x K with orthonormal columns (the top-K eigenvectors).
	V *mat.Dense
	// Values are the corresponding eigenvalues of the (noisy) second
	// moment, in decreasing order.
	Values []float64
}

// TopK returns the eigenvectors of the K largest eigenvalues of A.
func TopK(A mat.Symmetric, k int) (*PCAResult, error) {
	d := A.SymmetricDim()
	if k < 1 || k > d {
		return nil, fmt.Errorf("cape: K = %d must be in [1, %d]", k, d)
	}
	vals, V, ok := eigen.Top(A, k, eigen.ByValue)
	if !ok {
		return nil, errors.New("cape: eigendecomposition failed")
	}
	return &PCAResult{V: V, Values: vals}, nil
}

// CapturedEnergy returns q_CE = tr(V^T A V) (Imtiaz and Sarwate 2018b, Section VI-A).
func CapturedEnergy(V *mat.Dense, A mat.Symmetric) float64 {
	var av mat.Dense
	av.Mul(A, V)
	_, k := V.Dims()
	var s float64
	for c := 0; c < k; c++ {
		s += mat.Dot(V.ColView(c), av.ColView(c))
	}
	return s
}

// SecondMoment returns the pooled A = X^T X / N of the stacked rows.
func SecondMoment(rows ...*mat.Dense) *mat.SymDense {
	var a *mat.SymDense
	var n int
	for _, x := range rows {
		r, d := x.Dims()
		if a == nil {
			a = mat.NewSymDense(d, nil)
		}
		var s mat.SymDense
		s.SymOuterK(1, x.T())
		a.AddSym(a, &s)
		n += r
	}
	if a != nil && n > 0 {
		a.ScaleSym(1/float64(n), a)
	}
	return a
}

// CapePCA runs capePCA (Algorithm 2) in process: the sites' noisy
// second moments are combined by CAPE and the aggregator returns the top-K
// eigenvectors of A^ = sum_s mu_s (A^_s - F_s).
func CapePCA(ctx context.Context, k int, sites []SiteInput, cal perturb.Calibration, opts RunOptions) (*PCAResult, *Run, error) {
	if len(sites) == 0 || sites[0].Data == nil || sites[0].Data.Rows == nil {
		return nil, nil, errors.New("cape: capePCA needs rows at every site")
	}
	_, d := sites[0].Data.Rows.Dims()
	job := Job{Kind: JobPCA, D: d, K: k, Calibration: cal}
	run, err := RunLocal(ctx, job, sites, opts)
	if err != nil {
		return nil, nil, err
	}
	res, err := PCAFromOutcome(run.Outcome)
	return res, run, err
}

// PCAFromOutcome finishes capePCA from the aggregator's outcome (step 9).
func PCAFromOutcome(o *Outcome) (*PCAResult, error) {
	if o == nil || len(o.Stages) != 1 || o.Job.Kind != JobPCA {
		return nil, errors.New("cape: not a capePCA outcome")
	}
	return TopK(unpackSym(o.Job.D, o.Stages[0].Estimate), o.Job.K)
}

// siteSigma returns the Gaussian-mechanism sigma of site in for a stage of
// job (the conventional and local baselines add it in full).
func siteSigma(job *Job, stage int, in SiteInput) (float64, error) {
	t, err := job.Tau2(stage, SiteSpec{N: in.Data.N(), Epsilon: in.Epsilon, Delta: in.Delta})
	if err != nil {
		return 0, err
	}
	return math.Sqrt(t), nil
}

// noisySecondMoment returns A_s (snapped to the noise grid) + G with G
// symmetric, upper triangle i.i.d. N(0, sigma^2)
// (perturb.SymmetricGaussianMatrix).
func noisySecondMoment(job *Job, in SiteInput, r *rand.Rand) (*mat.SymDense, error) {
	stat, err := job.Statistic(0, in.Data)
	if err != nil {
		return nil, err
	}
	sig, err := siteSigma(job, 0, in)
	if err != nil {
		return nil, err
	}
	snapTo(stat, sig*sig)
	a := unpackSym(job.D, stat)
	a.AddSym(a, perturb.SymmetricGaussianMatrix(job.D, sig, r))
	return a, nil
}

// ConvPCA is the conventional distributed scheme (the full-matrix variant
// of the seed's [17]): each site releases A_s + G_s with the full
// tau_s^2, the aggregator averages with weights N_s/N (or 1/S with
// equalWeights) and takes the top-K eigenvectors.
func ConvPCA(k int, sites []SiteInput, cal perturb.Calibration, equalWeights bool, r *rand.Rand) (*PCAResult, error) {
	if len(sites) == 0 || sites[0].Data == nil || sites[0].Data.Rows == nil {
		return nil, errors.New("cape: conv PCA needs rows at every site")
	}
	_, d := sites[0].Data.Rows.Dims()
	job := Job{Kind: JobPCA, D: d, K: k, Calibration: cal}
	if err := job.Validate(); err != nil {
		return nil, err
	}
	var total float64
	for _, in := range sites {
		total += float64(in.Data.N())
	}
	acc := mat.NewSymDense(d, nil)
	for _, in := range sites {
		a, err := noisySecondMoment(&job, in, r)
		if err != nil {
			return nil, err
		}
		w := float64(in.Data.N()) / total
		if equalWeights {
			w = 1 / float64(len(sites))
		}
		acc.AddSym(acc, scaledSym(a, w))
	}
	return TopK(acc, k)
}

func scaledSym(a *mat.SymDense, w float64) *mat.SymDense {
	var s mat.SymDense
	s.ScaleSym(w, a)
	return &s
}

// LocalPCA is the single-site baseline: the Analyze-Gauss private PCA
// (A_s + G, full tau_s^2) on one site's data alone.
func LocalPCA(k int, site SiteInput, cal perturb.Calibration, r *rand.Rand) (*PCAResult, error) {
	if site.Data == nil || site.Data.Rows == nil {
		return nil, errors.New("cape: local PCA needs rows")
	}
	_, d := site.Data.Rows.Dims()
	job := Job{Kind: JobPCA, D: d, K: k, Calibration: cal}
	if err := job.Validate(); err != nil {
		return nil, err
	}
	a, err := noisySecondMoment(&job, site, r)
	if err != nil {
		return nil, err
	}
	return TopK(a, k)
}

// NonPrivatePCA is the pooled non-private baseline: top-K eigenvectors of
// the pooled A.
func NonPrivatePCA(k int, sites []SiteInput) (*PCAResult, error) {
	rows := make([]*mat.Dense, len(sites))
	for i, in := range sites {
		if in.Data == nil || in.Data.Rows == nil {
			return nil, errors.New("cape: non-private PCA needs rows at every site")
		}
		rows[i] = in.Data.Rows
	}
	return TopK(SecondMoment(rows...), k)
}
