package otd

import (
	"math"

	"gonum.org/v1/gonum/mat"
)

// normalizeTopics turns the raw estimates of a topic model into
// distributions (post-processing, so it costs no privacy): every column of
// A is replaced by its Euclidean projection onto the probability simplex
// (Imtiaz and Sarwate 2018a's "zero the negatives and renormalise" leaves the scale of the
// negative part in the result; the projection is the nearest
// distribution), and the weights are clipped at 0 and divided by their
// sum, so they are the topic proportions and sum to 1. The raw weights
// are kept in RawWeights (and, for LDA, alpha_k = alpha0 * raw w_k stays in
// Alpha: the Dirichlet parameters are estimated separately from the
// proportions). A topic whose weight is not positive (or not finite) is
// flagged in Zero: it is not a topic of the corpus, and its column says
// nothing (callers print no top words for it). If no weight is positive,
// all topics are flagged and the weights are left at 0.
func normalizeTopics(res *Result) {
	d, k := res.A.Dims()
	res.RawWeights = append([]float64(nil), res.Weights...)
	res.Zero = make([]bool, k)
	col := make([]float64, d)
	var sum float64
	for t := 0; t < k; t++ {
		mat.Col(col, t, res.A)
		projectSimplex(col)
		res.A.SetCol(t, col)
		w := res.Weights[t]
		if !(w > 0) || math.IsInf(w, 0) {
			res.Zero[t] = true
			res.Weights[t] = 0
			continue
		}
		sum += w
	}
	for t := range res.Weights {
		if sum > 0 {
			res.Weights[t] /= sum
		}
	}
}

// EffectiveTopics returns exp(H(w)), the exponential of the Shannon
// entropy of the weights normalised to sum 1: K for equal weights, 1 when
// one topic holds all the weight. Non-positive weights count as 0.
func EffectiveTopics(w []float64) float64 {
	var s float64
	for _, x := range w {
		if x > 0 {
			s += x
		}
	}
	if s <= 0 {
		return 0
	}
	var h float64
	for _, x := range w {
		if x > 0 {
			p := x / s
			h -= p * math.Log(p)
		}
	}
	return math.Exp(h)
}
