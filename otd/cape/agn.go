package cape

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/dprec/dprec/internal/packed"
	"github.com/dprec/dprec/otd"
	"github.com/dprec/dprec/perturb"
	"gonum.org/v1/gonum/mat"
)

// AGNResult is a recovered mixture / topic model.
type AGNResult struct {
	// A is D x K: the recovered components a_k (columns).
	A *mat.Dense
	// Weights are the recovered w_k normalised to sum 1
	// (otd.NormalizeWeights: post-processing); RawWeights the estimates,
	// each from its eigenvalue, which need not sum to 1
	// (otd.WeightNoiseWarning); Zero flags non-positive estimates.
	Weights    []float64
	RawWeights []float64
	Zero       []bool
	// W is the D x K whitening matrix used.
	W *mat.Dense
}

// CapeAGN runs capeAGN (Algorithm 3) in process for job (Kind JobAGN) and
// decomposes the aggregate K x K x K tensor with the robust tensor power
// method (tpm options, restarts drawn from tpmSrc).
func CapeAGN(ctx context.Context, job Job, sites []SiteInput, opts RunOptions, tpm otd.TPMOptions, tpmSrc rand.Source) (*AGNResult, *Run, error) {
	if job.Kind != JobAGN {
		return nil, nil, fmt.Errorf("cape: CapeAGN with job kind %q", job.Kind)
	}
	run, err := RunLocal(ctx, job, sites, opts)
	if err != nil {
		return nil, nil, err
	}
	res, err := AGNFromOutcome(run.Outcome, tpm, tpmSrc)
	return res, run, err
}

// AGNFromOutcome finishes capeAGN from the aggregator's outcome: power
// iteration on M3~ and un-whitening (Imtiaz and Sarwate 2018b app. B-C).
func AGNFromOutcome(o *Outcome, tpm otd.TPMOptions, src rand.Source) (*AGNResult, error) {
	if o == nil || o.Job.Kind != JobAGN || len(o.Stages) != 2 || o.W == nil {
		return nil, errors.New("cape: not a complete capeAGN outcome")
	}
	return decompose(o.Job.K, o.W, o.Stages[1].Estimate, tpm, src)
}

func decompose(k int, W *mat.Dense, packedT []float64, tpm otd.TPMOptions, src rand.Source) (*AGNResult, error) {
	T, err := otd.FromPacked(k, packedT)
	if err != nil {
		return nil, err
	}
	lambda, V, err := otd.PowerIteration(T, k, tpm, src)
	if err != nil {
		return nil, err
	}
	A, raw := otd.Unwhiten(W, lambda, V)
	w, zero := otd.NormalizeWeights(raw)
	return &AGNResult{A: A, Weights: w, RawWeights: raw, Zero: zero, W: W}, nil
}

// weights returns N_s/N (or 1/S).
func weights(sites []SiteInput, equal bool) []float64 {
	mu := make([]float64, len(sites))
	var total float64
	for _, in := range sites {
		total += float64(in.Data.N())
	}
	for i, in := range sites {
		if equal {
			mu[i] = 1 / float64(len(sites))
		} else {
			mu[i] = float64(in.Data.N()) / total
		}
	}
	return mu
}

// ConvAGN is the conventional distributed private OTD (Imtiaz and Sarwate 2018b Section
// VI-B "conv"): every site releases M2^s and then M3^s with its full
// Gaussian noise (tau_2^s, tau_3^s, each symmetric, upper entries i.i.d.),
// the aggregator averages the M2^s with weights mu_s, whitens, and averages
// the sites' M3^s projected on W. With one site it is the local AGN
// baseline (LocalAGN).
func ConvAGN(job Job, sites []SiteInput, r *rand.Rand, tpm otd.TPMOptions, tpmSrc rand.Source) (*AGNResult, error) {
	if job.Kind != JobAGN {
		return nil, fmt.Errorf("cape: ConvAGN with job kind %q", job.Kind)
	}
	if err := job.Validate(); err != nil {
		return nil, err
	}
	if len(sites) == 0 {
		return nil, errors.New("cape: no sites")
	}
	mu := weights(sites, job.EqualWeights)
	m2 := make([]float64, job.Length(0))
	for i, in := range sites {
		v, err := noisyStatistic(&job, 0, in, r)
		if err != nil {
			return nil, err
		}
		for k, x := range v {
			m2[k] += mu[i] * x
		}
	}
	W, err := otd.WhitenSVD(unpackSym(job.D, m2), job.K)
	if err != nil {
		return nil, err
	}
	t := make([]float64, packed.Len(job.K))
	for i, in := range sites {
		v, err := noisyStatistic(&job, 1, in, r)
		if err != nil {
			return nil, err
		}
		p, err := projectPacked(job.D, v, W)
		if err != nil {
			return nil, err
		}
		for k, x := range p {
			t[k] += mu[i] * x
		}
	}
	return decompose(job.K, W, t, tpm, tpmSrc)
}

// LocalAGN is the single-site baseline: AGN (Imtiaz and Sarwate 2018a Algorithm 1 with
// Gaussian M3 noise) on one site's data.
func LocalAGN(job Job, site SiteInput, r *rand.Rand, tpm otd.TPMOptions, tpmSrc rand.Source) (*AGNResult, error) {
	return ConvAGN(job, []SiteInput{site}, r, tpm, tpmSrc)
}

// noisyStatistic returns a site's packed statistic plus i.i.d. Gaussian
// noise of its full tau_s for the stage (perturb's grid sampler).
func noisyStatistic(job *Job, stage int, in SiteInput, r *rand.Rand) ([]float64, error) {
	v, err := job.Statistic(stage, in.Data)
	if err != nil {
		return nil, err
	}
	sig, err := siteSigma(job, stage, in)
	if err != nil {
		return nil, err
	}
	g, err := perturb.NewGaussianSigma(1, sig)
	if err != nil {
		return nil, err
	}
	snapTo(v, sig*sig)
	for i := range v {
		v[i] += g.Sample(r)
	}
	return v, nil
}

// NonPrivateAGN is the pooled non-private baseline: moments of all sites'
// data (weighted by N_s/N, i.e. pooled), whitening, projection, power
// iteration.
func NonPrivateAGN(job Job, sites []SiteInput, tpm otd.TPMOptions, tpmSrc rand.Source) (*AGNResult, error) {
	if err := job.Validate(); err != nil {
		return nil, err
	}
	mu := weights(sites, false)
	m2 := make([]float64, job.Length(0))
	m3 := make([]float64, job.Length(1))
	for i, in := range sites {
		for st, acc := range [][]float64{m2, m3} {
			v, err := job.Statistic(st, in.Data)
			if err != nil {
				return nil, err
			}
			for k, x := range v {
				acc[k] += mu[i] * x
			}
		}
	}
	W, err := otd.WhitenSVD(unpackSym(job.D, m2), job.K)
	if err != nil {
		return nil, err
	}
	t, err := projectPacked(job.D, m3, W)
	if err != nil {
		return nil, err
	}
	return decompose(job.K, W, t, tpm, tpmSrc)
}

// PaperVolume returns the communication cost of capeAGN counted as in
// Imtiaz and Sarwate 2018b Section V (in values): 3 S D^2 (E2, F2 to the sites, M2^ back)
// + 2 S D^3 (E3, F3 to the sites) + S D K (W to the sites) + S K^3 (the
// projected tensors back).
func PaperVolume(s, d, k int) int64 {
	S, D, K := int64(s), int64(d), int64(k)
	return 3*S*D*D + 2*S*D*D*D + S*D*K + S*K*K*K
}
