package otd

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/dprec/dprec/data"
	"gonum.org/v1/gonum/mat"
)

// Synthetic is a generated data set with its true parameters.
type Synthetic struct {
	Input Input
	// A is D x K: true topic-word distributions (columns sum to 1) or
	// component means.
	A *mat.Dense
	// Weights are the true component probabilities (topic proportions
	// alpha_k/alpha0 for LDA).
	Weights []float64
}

// dirichlet draws a Dirichlet(alpha, ..., alpha) vector of length d.
func dirichlet(rng *rand.Rand, alpha float64, d int) []float64 {
	v := make([]float64, d)
	var s float64
	for i := range v {
		v[i] = gammaRand(rng, alpha)
		s += v[i]
	}
	for i := range v {
		v[i] /= s
	}
	return v
}

// gammaRand draws Gamma(shape, 1) (Marsaglia and Tsang 2000; shape < 1 by
// the boost Gamma(a) = Gamma(a+1) U^{1/a}).
func gammaRand(rng *rand.Rand, a float64) float64 {
	if a < 1 {
		return gammaRand(rng, a+1) * math.Pow(rng.Float64(), 1/a)
	}
	d := a - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := rng.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := rng.Float64()
		if math.Log(u) < 0.5*x*x+d-d*v+d*math.Log(v) {
			return d * v
		}
	}
}

// cdfSample draws an index from the cumulative distribution cdf.
func cdfSample(rng *rand.Rand, cdf []float64) int {
	u := rng.Float64() * cdf[len(cdf)-1]
	lo, hi := 0, len(cdf)-1
	for lo < hi {
		m := (lo + hi) / 2
		if cdf[m] > u {
			hi = m
		} else {
			lo = m + 1
		}
	}
	return lo
}

func vocabNames(d int) []string {
	v := make([]string, d)
	for i := range v {
		v[i] = fmt.Sprintf("w%d", i)
	}
	return v
}

// randomTopics draws K topic-word vectors from Dirichlet(beta) (columns).
func randomTopics(rng *rand.Rand, d, k int, beta float64) *mat.Dense {
	A := mat.NewDense(d, k, nil)
	for c := 0; c < k; c++ {
		A.SetCol(c, dirichlet(rng, beta, d))
	}
	return A
}

// SyntheticSTM draws a single-topic corpus: K topics with Dirichlet(beta)
// word distributions (beta = 1 in Imtiaz and Sarwate 2018a), the given topic weights (nil:
// uniform), and N documents of L words each drawn from one topic.
func SyntheticSTM(d, k, n, l int, beta float64, weights []float64, src rand.Source) (*Synthetic, error) {
	if d < 1 || k < 1 || n < 1 || l < 3 {
		return nil, fmt.Errorf("otd: bad synthetic sizes D=%d K=%d N=%d L=%d", d, k, n, l)
	}
	rng := rand.New(src)
	if weights == nil {
		weights = make([]float64, k)
		for i := range weights {
			weights[i] = 1 / float64(k)
		}
	}
	A := randomTopics(rng, d, k, beta)
	return sampleDocs(rng, A, weights, 0, n, l, d)
}

// SyntheticLDA draws an LDA corpus: K topics with Dirichlet(beta) word
// distributions, symmetric Dirichlet(alpha0/K) document-topic proportions
// and N documents of L words.
func SyntheticLDA(d, k int, alpha0 float64, n, l int, beta float64, src rand.Source) (*Synthetic, error) {
	if d < 1 || k < 1 || n < 3 || l < 3 || !(alpha0 > 0) {
		return nil, fmt.Errorf("otd: bad synthetic sizes D=%d K=%d N=%d L=%d alpha0=%g", d, k, n, l, alpha0)
	}
	rng := rand.New(src)
	A := randomTopics(rng, d, k, beta)
	w := make([]float64, k)
	for i := range w {
		w[i] = 1 / float64(k)
	}
	return sampleDocs(rng, A, w, alpha0, n, l, d)
}

// sampleDocs draws documents; alpha0 == 0 means single topic per document.
func sampleDocs(rng *rand.Rand, A *mat.Dense, w []float64, alpha0 float64, n, l, d int) (*Synthetic, error) {
	k := len(w)
	cdfs := make([][]float64, k)
	for c := 0; c < k; c++ {
		cdf := make([]float64, d)
		var s float64
		for i := 0; i < d; i++ {
			s += A.At(i, c)
			cdf[i] = s
		}
		cdfs[c] = cdf
	}
	wcdf := make([]float64, k)
	var s float64
	for i, x := range w {
		s += x
		wcdf[i] = s
	}
	b := data.NewCorpusBuilder(vocabNames(d), 3)
	counts := make([]int32, d)
	var ws, cs []int32
	var theta []float64
	tcdf := make([]float64, k)
	for doc := 0; doc < n; doc++ {
		if alpha0 > 0 {
			theta = dirichlet(rng, alpha0/float64(k), k)
			var t float64
			for i, x := range theta {
				t += x
				tcdf[i] = t
			}
		} else {
			z := cdfSample(rng, wcdf)
			for i := range tcdf {
				tcdf[i] = 0
				if i >= z {
					tcdf[i] = 1
				}
			}
		}
		ws, cs = ws[:0], cs[:0]
		for j := 0; j < l; j++ {
			z := cdfSample(rng, tcdf)
			counts[cdfSample(rng, cdfs[z])]++
		}
		for i, x := range counts {
			if x > 0 {
				ws = append(ws, int32(i))
				cs = append(cs, x)
				counts[i] = 0
			}
		}
		b.AddDoc(ws, cs)
	}
	c, err := b.Finish()
	if err != nil {
		return nil, err
	}
	return &Synthetic{Input: Input{Corpus: c}, A: A, Weights: append([]float64(nil), w...)}, nil
}

// SyntheticMoG draws N points t = a_h + z from a mixture of K spherical
// Gaussians in R^D with variance sigma2, uniform weights and means drawn
// uniformly on the sphere of radius radius (radius <= 1, as Imtiaz and Sarwate 2018b fig. 3
// assumes ||a_k|| <= 1). Rows are then divided by the largest row norm if it
// exceeds 1 (Scale reports the factor; the means and sigma2 scale with it:
// A is returned already divided, and the effective variance is
// sigma2/Scale^2).
func SyntheticMoG(d, k, n int, sigma2, radius float64, src rand.Source) (s *Synthetic, scale float64, err error) {
	if d < 1 || k < 1 || n < 1 || !(sigma2 >= 0) {
		return nil, 0, fmt.Errorf("otd: bad synthetic sizes D=%d K=%d N=%d sigma2=%g", d, k, n, sigma2)
	}
	rng := rand.New(src)
	A := mat.NewDense(d, k, nil)
	for c := 0; c < k; c++ {
		v := make([]float64, d)
		randomUnit(rng, v)
		for i := range v {
			v[i] *= radius
		}
		A.SetCol(c, v)
	}
	X := mat.NewDense(n, d, nil)
	sd := math.Sqrt(sigma2)
	maxNorm := 0.0
	for r := 0; r < n; r++ {
		h := rng.IntN(k)
		row := X.RawRowView(r)
		for i := range row {
			row[i] = A.At(i, h) + sd*rng.NormFloat64()
		}
		maxNorm = math.Max(maxNorm, norm2(row))
	}
	scale = 1
	if maxNorm > 1 {
		scale = maxNorm
		X.Scale(1/scale, X)
		A.Scale(1/scale, A)
	}
	w := make([]float64, k)
	for i := range w {
		w[i] = 1 / float64(k)
	}
	return &Synthetic{Input: Input{Rows: X}, A: A, Weights: w}, scale, nil
}
