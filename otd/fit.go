package otd

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/perturb"
	"gonum.org/v1/gonum/mat"
)

// Model names the latent-variable model of a fit (FitOptions.Model); its
// values are the CLI's --model values.
type Model string

// Models accepted by FitOptions.Model.
const (
	ModelSTM Model = "stm" // single-topic model (Imtiaz and Sarwate 2018a sec. 2)
	ModelLDA Model = "lda" // latent Dirichlet allocation (DeCarolis et al. 2020 Lemma 25)
	ModelMoG Model = "mog" // mixture of spherical Gaussians (Imtiaz and Sarwate 2018b app. B-B)
)

// Models lists the models in the order the CLI documents them.
var Models = []Model{ModelSTM, ModelLDA, ModelMoG}

// ParseModel returns the model named s (exactly a Model value).
func ParseModel(s string) (Model, error) {
	for _, m := range Models {
		if string(m) == s {
			return m, nil
		}
	}
	return "", fmt.Errorf("otd: unknown model %q (want stm, lda or mog)", s)
}

// Method names the estimation pipeline of a fit (FitOptions.Method): the
// non-private one or a private variant; its values are the CLI's --method
// values.
type Method string

// MethodNonPrivate is the FitOptions.Method of the non-private pipeline.
// Every other method is handled by the private variants (fitPrivate).
const MethodNonPrivate Method = "nonprivate"

// Methods lists every method, non-private first.
var Methods = []Method{MethodNonPrivate, MethodAGN, MethodAVN, MethodDPTPM, MethodAGNWhitened,
	MethodLDAInput, MethodLDAWhitened, MethodLDADecomposition, MethodLDAOutput}

// ParseMethod returns the method named s (exactly a Method value).
func ParseMethod(s string) (Method, error) {
	for _, m := range Methods {
		if string(m) == s {
			return m, nil
		}
	}
	names := make([]string, len(Methods))
	for i, m := range Methods {
		names[i] = string(m)
	}
	return "", fmt.Errorf("otd: unknown method %q (want %s)", s, strings.Join(names, ", "))
}

// Private reports whether m is a private method.
func (m Method) Private() bool { return m != MethodNonPrivate && m != "" }

// Input holds the data of one fit: a corpus for "stm" and "lda", numeric
// rows (one observation per row, ||t|| <= 1) for "mog".
type Input struct {
	Corpus *data.Corpus
	Rows   *mat.Dense
}

// dim returns D, the dimension of the observations.
func (in *Input) dim() int {
	if in.Corpus != nil {
		return in.Corpus.V()
	}
	if in.Rows != nil {
		_, d := in.Rows.Dims()
		return d
	}
	return 0
}

// FitOptions configures Fit. Zero values take the documented defaults.
type FitOptions struct {
	// Model is ModelSTM, ModelLDA or ModelMoG (required).
	Model Model
	// K is the number of topics / components (required, 1 <= K <= D).
	K int
	// Alpha0 is the LDA Dirichlet concentration sum_i alpha_i (required
	// for "lda", ignored otherwise).
	Alpha0 float64
	// Sigma2 is the common variance of the mixture components ("mog";
	// zero means 0, i.e. no noise correction).
	Sigma2 float64
	// Method is MethodNonPrivate (default when empty) or a private
	// method (Methods), implemented in private*.go.
	Method Method
	// Epsilon and Delta are the total privacy budget of private methods.
	Epsilon, Delta float64
	// Split optionally divides the budget among a private method's
	// releases (fractions summing to 1; nil means equal shares, as in the
	// seeds, except agn-whitened: three fractions for the vocabulary
	// selection, M2 and the whitened tensor, default 0.1, 0.6, 0.3).
	// Ignored by "nonprivate".
	Split []float64
	// Private tunes agn-whitened (clipping and private vocabulary
	// selection); the zero value is the default.
	Private PrivateOptions
	// TPM configures the tensor power method.
	TPM TPMOptions
	// Estimator selects the single-topic moment estimator (default
	// AllTriples; LDA always uses all triples).
	Estimator Estimator
	// Progress, if set, receives progress reports.
	Progress ProgressFunc
}

// Result is a fitted spectral model.
type Result struct {
	// Model and Method echo the options.
	Model  Model  `json:"model"`
	Method Method `json:"method"`
	// Weights are the component probabilities w_k (topic proportions
	// alpha_k/alpha0 for LDA), sorted decreasing, normalised to sum 1
	// (NormalizeWeights: negative estimates clipped to 0; post-processing).
	Weights []float64 `json:"weights"`
	// RawWeights are the weights as estimated, before normalisation: each
	// is estimated separately (from its eigenvalue), so they need not sum
	// to 1, and a private fit's can be far from it (WeightNoiseWarning).
	RawWeights []float64 `json:"raw_weights,omitempty"`
	// Zero flags components whose estimated weight is not positive: they
	// are not components (topics) of the data and their columns carry no
	// information.
	Zero []bool `json:"zero,omitempty"`
	// A is D x K: column k is component k, in the order of Weights. For
	// the topic models each column is a distribution (the raw estimate
	// projected onto the probability simplex); for "mog" it is the mean.
	A *mat.Dense `json:"-"`
	// Lambda are the eigenvalues of the whitened tensor, in the order of
	// Weights.
	Lambda []float64 `json:"lambda"`
	// Alpha are the LDA Dirichlet parameters alpha0 * w_k with the raw
	// estimated w_k (nil otherwise).
	Alpha []float64 `json:"alpha,omitempty"`
	// Vocab is the corpus vocabulary (nil for "mog").
	Vocab []string `json:"-"`
	// Path is "whitened" (M3(W,W,W) from whitened documents) or "dense"
	// (D x D x D M3 formed, needed when noise is added to M3 itself).
	Path string `json:"path"`
	// Report is the privacy report (perturb.NonPrivate() for "nonprivate").
	Report *perturb.Report `json:"privacy"`
}

// Validate checks the options against the input.
func (o *FitOptions) validate(in *Input) error {
	if in == nil {
		return errors.New("otd: nil input")
	}
	switch o.Model {
	case ModelSTM, ModelLDA:
		if in.Corpus == nil {
			return fmt.Errorf("otd: model %q needs a corpus", o.Model)
		}
	case ModelMoG:
		if in.Rows == nil {
			return errors.New("otd: model \"mog\" needs numeric rows")
		}
	default:
		return fmt.Errorf("otd: unknown model %q (want stm, lda or mog)", o.Model)
	}
	if d := in.dim(); o.K < 1 || o.K > d {
		return fmt.Errorf("otd: K = %d topics must be in [1, D = %d]", o.K, d)
	}
	if o.Model == ModelLDA {
		if err := checkAlpha0(o.Alpha0); err != nil {
			return err
		}
	}
	if o.Method == "" {
		o.Method = MethodNonPrivate
	}
	return nil
}

// Fit estimates the model's components and weights by the method of
// moments: second moment, whitening, whitened third moment, robust tensor
// power method and un-whitening (Imtiaz and Sarwate 2018a sec. 2, DeCarolis et al. 2020). Methods other
// than "nonprivate" are delegated to the private variants. src seeds the
// power-method restarts and randomized whitening (and, for private
// methods, the noise when it is not perturb's secure source). A nil src
// means perturb.SecureSource().
func Fit(in *Input, opts FitOptions, src rand.Source) (*Result, error) {
	if err := opts.validate(in); err != nil {
		return nil, err
	}
	res, err := fit(in, opts, src)
	if err != nil {
		return nil, err
	}
	if opts.Model != ModelMoG {
		normalizeTopics(res)
	} else {
		normalizeResultWeights(res)
	}
	return res, nil
}

func fit(in *Input, opts FitOptions, src rand.Source) (*Result, error) {
	if opts.Method != MethodNonPrivate {
		return fitPrivate(in, &opts, src)
	}
	if src == nil {
		src = perturb.SecureSource()
	}
	W, err := FitWhitening(in, &opts, src)
	if err != nil {
		return nil, err
	}
	T, err := WhitenedM3(in, &opts, W)
	if err != nil {
		return nil, err
	}
	res, err := Decompose(T, W, &opts, src)
	if err != nil {
		return nil, err
	}
	res.Path = "whitened"
	res.Report = perturb.NonPrivate()
	if in.Corpus != nil {
		res.Vocab = in.Corpus.Vocab
	}
	return res, nil
}

// SecondMoment returns the dense D x D M2 of the model (for "stm" with
// opts.Estimator). It refuses vocabularies whose D x D matrix would exceed
// MaxDenseBytes.
func SecondMoment(in *Input, opts *FitOptions) (*mat.SymDense, error) {
	d := in.dim()
	if float64(d)*float64(d)*8 > float64(MaxDenseBytes) {
		return nil, fmt.Errorf("otd: a dense %d x %d second moment exceeds the memory cap (otd.MaxDenseBytes)", d, d)
	}
	switch opts.Model {
	case ModelSTM:
		return STMSecondMoment(in.Corpus, opts.Estimator)
	case ModelLDA:
		_, M2, err := LDASecondMoment(in.Corpus, opts.Alpha0)
		return M2, err
	case ModelMoG:
		return MoGSecondMoment(in.Rows, opts.Sigma2)
	}
	return nil, fmt.Errorf("otd: unknown model %q", opts.Model)
}

// FitWhitening returns the D x K whitening matrix of the model's M2: dense
// eigendecomposition for D <= DenseWhitenMax (and always for "mog"),
// randomized subspace iteration on the implicit corpus M2 otherwise.
func FitWhitening(in *Input, opts *FitOptions, src rand.Source) (*mat.Dense, error) {
	if opts.Model != ModelMoG && in.dim() > DenseWhitenMax {
		c := in.Corpus
		alpha0 := 0.0
		if opts.Model == ModelLDA {
			alpha0 = opts.Alpha0
			if err := checkCorpus(c, 3); err != nil {
				return nil, err
			}
		} else {
			cc, err := prepare(c, opts.Estimator, 1)
			if err != nil {
				return nil, err
			}
			c = cc
		}
		return whitenImplicit(c, alpha0, opts.K, src, opts.Progress)
	}
	if opts.Progress != nil {
		opts.Progress("second moment", 0, 1)
	}
	M2, err := SecondMoment(in, opts)
	if err != nil {
		return nil, err
	}
	if opts.Progress != nil {
		opts.Progress("second moment", 1, 1)
	}
	return Whiten(M2, opts.K)
}

// WhitenedM3 returns the model's M3(W,W,W) from whitened data, never
// forming the D x D x D tensor.
func WhitenedM3(in *Input, opts *FitOptions, W *mat.Dense) (*SymTensor, error) {
	switch opts.Model {
	case ModelSTM:
		cc, err := prepare(in.Corpus, opts.Estimator, 1)
		if err != nil {
			return nil, err
		}
		return whitenedM3(cc, W, 0, opts.Progress)
	case ModelLDA:
		if err := checkCorpus(in.Corpus, 3); err != nil {
			return nil, err
		}
		return whitenedM3(in.Corpus, W, opts.Alpha0, opts.Progress)
	case ModelMoG:
		return MoGWhitenedM3(in.Rows, W, opts.Sigma2)
	}
	return nil, fmt.Errorf("otd: unknown model %q", opts.Model)
}

// Decompose runs the tensor power method on the whitened tensor T and
// un-whitens with W for the model of opts (UnwhitenLDA for "lda", Unwhiten
// otherwise), returning components sorted by decreasing weight. Report,
// Path and Vocab are left for the caller.
func Decompose(T *SymTensor, W *mat.Dense, opts *FitOptions, src rand.Source) (*Result, error) {
	lambda, V, err := PowerIteration(T, opts.K, opts.TPM, src)
	if err != nil {
		return nil, err
	}
	if opts.Progress != nil {
		opts.Progress("power iteration", opts.K, opts.K)
	}
	var A *mat.Dense
	var w []float64
	if opts.Model == ModelLDA {
		A, w = UnwhitenLDA(W, lambda, V, opts.Alpha0)
	} else {
		A, w = Unwhiten(W, lambda, V)
	}
	return assemble(opts, A, w, lambda), nil
}

// assemble sorts components by decreasing weight and fills a Result.
func assemble(opts *FitOptions, A *mat.Dense, w, lambda []float64) *Result {
	d, k := A.Dims()
	ord := make([]int, k)
	for i := range ord {
		ord[i] = i
	}
	sort.SliceStable(ord, func(a, b int) bool { return w[ord[a]] > w[ord[b]] })
	res := &Result{Model: opts.Model, Method: opts.Method, Weights: make([]float64, k), Lambda: make([]float64, k), A: mat.NewDense(d, k, nil)}
	for c, o := range ord {
		res.Weights[c] = w[o]
		res.Lambda[c] = lambda[o]
		for i := 0; i < d; i++ {
			res.A.Set(i, c, A.At(i, o))
		}
	}
	if opts.Model == ModelLDA {
		res.Alpha = make([]float64, k)
		for c := range res.Alpha {
			res.Alpha[c] = opts.Alpha0 * res.Weights[c]
		}
	}
	return res
}
