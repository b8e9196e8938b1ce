package cape

import (
	"errors"
	"fmt"
	"math"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/otd"
	"github.com/dprec/dprec/perturb"
	"gonum.org/v1/gonum/mat"
)

// JobKind is the computation a CAPE run releases.
type JobKind string

// Job kinds.
const (
	// JobMean releases the mean of the sites' rows (Algorithm 1 on a
	// D-vector).
	JobMean JobKind = "mean"
	// JobPCA is capePCA (Algorithm 2).
	JobPCA JobKind = "pca"
	// JobAGN is capeAGN (Algorithm 3).
	JobAGN JobKind = "agn"
)

// JobKinds lists the job kinds.
var JobKinds = []JobKind{JobMean, JobPCA, JobAGN}

// ParseJobKind returns the job kind named s (mean, pca or agn).
func ParseJobKind(s string) (JobKind, error) {
	for _, k := range JobKinds {
		if string(k) == s {
			return k, nil
		}
	}
	return "", fmt.Errorf("cape: unknown job kind %q (want mean, pca or agn)", s)
}

// Models of capeAGN: otd's model names, of which capeAGN supports two.
const (
	ModelMOG = otd.ModelMoG // spherical Gaussian mixture from rows (Imtiaz and Sarwate 2018b app. B-B)
	ModelSTM = otd.ModelSTM // single-topic model from documents (Imtiaz and Sarwate 2018b app. B-A)
)

// ParseModel returns the capeAGN model named s (mog or stm).
func ParseModel(s string) (otd.Model, error) {
	switch m := otd.Model(s); m {
	case ModelMOG, ModelSTM:
		return m, nil
	}
	return "", fmt.Errorf("cape: unknown model %q (want mog or stm)", s)
}

// Job describes the computation. It is public: the aggregator sends it to
// every role in the plan messages.
type Job struct {
	Kind JobKind `json:"kind"`
	// D is the feature dimension (vocabulary size for ModelSTM); K the
	// number of components (JobPCA, JobAGN).
	D int `json:"d"`
	K int `json:"k,omitempty"`
	// Model and Sigma2 (the mixture's known noise variance sigma^2) for
	// JobAGN.
	Model  otd.Model `json:"model,omitempty"`
	Sigma2 float64   `json:"sigma2,omitempty"`
	// Split is the fraction of each site's epsilon and delta spent on M2
	// in capeAGN (0 means 0.5, the seed's equal split).
	Split float64 `json:"split,omitempty"`
	// Calibration of the Gaussian mechanism ("" = perturb.Analytic; the
	// seed uses perturb.Classic, valid only for epsilon <= 1).
	Calibration perturb.Calibration `json:"calibration,omitempty"`
	// EqualWeights sets mu_s = 1/S instead of the default N_s/N.
	EqualWeights bool `json:"equal_weights,omitempty"`
}

// Validate checks the job's fields.
func (j *Job) Validate() error {
	if j.D < 1 {
		return fmt.Errorf("cape: job dimension D = %d must be positive", j.D)
	}
	switch j.Kind {
	case JobMean:
	case JobPCA:
		if j.K < 1 || j.K > j.D {
			return fmt.Errorf("cape: K = %d must be in [1, D = %d]", j.K, j.D)
		}
	case JobAGN:
		if j.K < 1 || j.K > j.D {
			return fmt.Errorf("cape: K = %d must be in [1, D = %d]", j.K, j.D)
		}
		switch j.Model {
		case ModelMOG:
			if !(j.Sigma2 >= 0) || math.IsInf(j.Sigma2, 0) {
				return fmt.Errorf("cape: sigma2 = %v must be non-negative and finite", j.Sigma2)
			}
		case ModelSTM:
		default:
			return fmt.Errorf("cape: unknown model %q (want mog or stm)", j.Model)
		}
		if j.Split != 0 && !(j.Split > 0 && j.Split < 1) {
			return fmt.Errorf("cape: split %v must be in (0, 1)", j.Split)
		}
	default:
		return fmt.Errorf("cape: unknown job kind %q (want mean, pca or agn)", j.Kind)
	}
	if _, err := perturb.ParseCalibration(string(j.Calibration)); err != nil {
		return err
	}
	return nil
}

// Stages returns the number of release rounds (2 for capeAGN, else 1).
func (j *Job) Stages() int {
	if j.Kind == JobAGN {
		return 2
	}
	return 1
}

func (j *Job) split() float64 {
	if j.Split == 0 {
		return 0.5
	}
	return j.Split
}

// StageBudget returns the (epsilon, delta) a site with total budget
// (eps, delta) spends in a stage: all of it for one-stage jobs; for
// capeAGN Split of both for M2 (stage 0) and the rest for M3 (stage 1),
// which compose to (eps, delta) (Theorem 2).
func (j *Job) StageBudget(stage int, eps, delta float64) (float64, float64) {
	if j.Kind != JobAGN {
		return eps, delta
	}
	s := j.split()
	if stage == 0 {
		return s * eps, s * delta
	}
	return (1 - s) * eps, (1 - s) * delta
}

// Length returns the number of values a site's statistic has in a stage
// (before any projection): D for the mean, D(D+1)/2 for a symmetric matrix
// (upper triangle), C(D+2,3) for a symmetric tensor.
func (j *Job) Length(stage int) int {
	switch {
	case j.Kind == JobMean:
		return j.D
	case stage == 0:
		return j.D * (j.D + 1) / 2
	default:
		return perturb.SymPackedSize(j.D)
	}
}

// Sensitivity returns the l2 sensitivity of a site's statistic in a stage
// for n records, under replacement of one record: (D1)-(D3) in the package
// doc, section Sensitivities.
func (j *Job) Sensitivity(stage, n int) (float64, error) {
	if n < 1 {
		return 0, fmt.Errorf("cape: sensitivity for %d records", n)
	}
	fn := float64(n)
	switch j.Kind {
	case JobMean:
		return 2 / fn, nil // (D1)
	case JobPCA:
		return math.Sqrt2 / fn, nil // (D2)
	}
	var s otd.Sensitivities
	var err error
	if j.Model == ModelSTM {
		s, err = otd.STMSensitivities(n)
	} else {
		s, err = otd.MOGSensitivities(n, j.D, j.Sigma2)
	}
	if err != nil {
		return 0, err
	}
	if stage == 0 {
		return s.M2, nil
	}
	return s.M3, nil
}

// Tau2 returns tau_s^2 for a site with spec sp in a stage.
func (j *Job) Tau2(stage int, sp SiteSpec) (float64, error) {
	sens, err := j.Sensitivity(stage, sp.N)
	if err != nil {
		return 0, err
	}
	e, d := j.StageBudget(stage, sp.Epsilon, sp.Delta)
	sig, err := perturb.GaussianSigma(sens, e, d, j.Calibration)
	if err != nil {
		return 0, fmt.Errorf("cape: stage %d: %w", stage, err)
	}
	sig = snapInflated(sig, sens, j.Length(stage))
	return sig * sig, nil
}

// snapInflated returns sigma calibrated for sensitivity sens, scaled for
// the statistic's snapping to the grid of the returned sigma (L values;
// derivation in the package doc, # Sensitivities, (D4)). When the scaling
// crosses a power of two, the grid of the scaled sigma is twice as coarse
// and the scale is recomputed with it.
func snapInflated(sigma, sens float64, L int) float64 {
	l := math.Sqrt(float64(L))
	g := perturb.Granularity(sigma)
	out := sigma * (sens + l*g) / sens
	if g2 := perturb.Granularity(out); g2 > g {
		out = sigma * (sens + l*g2) / sens
	}
	return out
}

// SiteData is what a site holds. Rows (N_s x D, every row of l2 norm at
// most 1) serve JobMean, JobPCA and JobAGN with ModelMOG; Corpus serves
// JobAGN with ModelSTM (every document at least 3 words).
type SiteData struct {
	Rows   *mat.Dense
	Corpus *data.Corpus
}

// N returns the number of records.
func (d *SiteData) N() int {
	if d.Corpus != nil {
		return d.Corpus.NumDocs()
	}
	if d.Rows == nil {
		return 0
	}
	r, _ := d.Rows.Dims()
	return r
}

// ErrRowNorm is wrapped when a row has l2 norm above 1.
var ErrRowNorm = errors.New("cape: row norm above 1")

// checkRows verifies shape and the norm bound the sensitivities rely on.
// 1e-9 relative slack absorbs the rounding of rows normalised to norm 1.
func checkRows(x *mat.Dense, d int) error {
	if x == nil {
		return errors.New("cape: site has no rows")
	}
	n, c := x.Dims()
	if c != d {
		return fmt.Errorf("cape: site rows have %d columns, job has D = %d", c, d)
	}
	if n < 1 {
		return errors.New("cape: site has no rows")
	}
	for i := 0; i < n; i++ {
		r := x.RawRowView(i)
		var s float64
		for _, v := range r {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("cape: row %d holds NaN or Inf", i+1)
			}
			s += v * v
		}
		if s > 1+1e-9 {
			return fmt.Errorf("%w: row %d has norm %.6g (scale or clip rows to the unit ball)", ErrRowNorm, i+1, math.Sqrt(s))
		}
	}
	return nil
}

// Statistic returns the site's non-private statistic for a stage as a
// packed vector of Length(stage) values: the row mean, the upper triangle
// of A_s = X_s^T X_s / N_s, or the capeAGN moments M2^s (stage 0) and the
// packed M3^s (stage 1).
func (j *Job) Statistic(stage int, sd *SiteData) ([]float64, error) {
	if j.Kind == JobAGN && j.Model == ModelSTM {
		if sd.Corpus == nil {
			return nil, errors.New("cape: single-topic capeAGN needs a corpus at the site")
		}
		if sd.Corpus.V() != j.D {
			return nil, fmt.Errorf("cape: site vocabulary has %d words, job has D = %d", sd.Corpus.V(), j.D)
		}
		if stage == 0 {
			m2, err := otd.STMSecondMoment(sd.Corpus, otd.AllTriples)
			if err != nil {
				return nil, err
			}
			return packSym(m2), nil
		}
		_, m3, err := otd.STMMoments(sd.Corpus, otd.AllTriples)
		if err != nil {
			return nil, err
		}
		return m3.Packed(), nil
	}
	if err := checkRows(sd.Rows, j.D); err != nil {
		return nil, err
	}
	x := sd.Rows
	if j.Kind == JobAGN { // ModelMOG
		if stage == 0 {
			m2, err := otd.MoGSecondMoment(x, j.Sigma2)
			if err != nil {
				return nil, err
			}
			return packSym(m2), nil
		}
		_, m3, err := otd.MoGMoments(x, j.Sigma2)
		if err != nil {
			return nil, err
		}
		return m3.Packed(), nil
	}
	if j.Kind == JobMean {
		return rowMean(x), nil
	}
	n, _ := x.Dims()
	var a mat.SymDense
	a.SymOuterK(1/float64(n), x.T())
	return packSym(&a), nil
}

func rowMean(x *mat.Dense) []float64 {
	n, d := x.Dims()
	m := make([]float64, d)
	for i := 0; i < n; i++ {
		for k, v := range x.RawRowView(i) {
			m[k] += v
		}
	}
	for k := range m {
		m[k] /= float64(n)
	}
	return m
}

// packSym returns the upper triangle (i <= j, row by row) of a.
func packSym(a mat.Symmetric) []float64 {
	d := a.SymmetricDim()
	out := make([]float64, 0, d*(d+1)/2)
	for i := 0; i < d; i++ {
		for j := i; j < d; j++ {
			out = append(out, a.At(i, j))
		}
	}
	return out
}

// unpackSym is the inverse of packSym.
func unpackSym(d int, v []float64) *mat.SymDense {
	a := mat.NewSymDense(d, nil)
	p := 0
	for i := 0; i < d; i++ {
		for j := i; j < d; j++ {
			a.SetSym(i, j, v[p])
			p++
		}
	}
	return a
}

// projectPacked returns the packed entries of T(W,W,W) for the symmetric
// tensor T given by its packed entries (side D) and W (D x K).
func projectPacked(d int, packed []float64, W *mat.Dense) ([]float64, error) {
	t, err := otd.FromPacked(d, packed)
	if err != nil {
		return nil, err
	}
	return t.Multilinear(W).Packed(), nil
}
