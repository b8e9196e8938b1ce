package otd

import (
	"fmt"
	"math"
	"strings"

	"gonum.org/v1/gonum/mat"
)

// normalizeTopics turns the raw estimates of a topic model into
// distributions (post-processing, so it costs no privacy): every column of
// A is replaced by its Euclidean projection onto the probability simplex
// (Imtiaz and Sarwate 2018a's "zero the negatives and renormalise" leaves the scale of the
// negative part in the result; the projection is the nearest
// distribution), and the weights are normalised by NormalizeWeights. The
// raw weights are kept in RawWeights (and, for LDA, alpha_k = alpha0 * raw
// w_k stays in Alpha: the Dirichlet parameters are estimated separately
// from the proportions). A topic whose weight is not positive (or not
// finite) is flagged in Zero: it is not a topic of the corpus, and its
// column says nothing (callers print no top words for it).
func normalizeTopics(res *Result) {
	d, k := res.A.Dims()
	col := make([]float64, d)
	for t := 0; t < k; t++ {
		mat.Col(col, t, res.A)
		projectSimplex(col)
		res.A.SetCol(t, col)
	}
	normalizeResultWeights(res)
}

// normalizeResultWeights keeps res's weights in RawWeights and replaces
// them by NormalizeWeights's distribution (flags in Zero).
func normalizeResultWeights(res *Result) {
	res.RawWeights = append([]float64(nil), res.Weights...)
	res.Weights, res.Zero = NormalizeWeights(res.RawWeights)
}

// NormalizeWeights returns estimated mixture or topic weights as a
// distribution: weights that are not positive or not finite become 0 (and
// are flagged in zero), the others are divided by their sum, so they sum
// to 1. If no weight is positive, all are flagged and left at 0. It is
// post-processing of released values and costs no privacy; the estimates
// stay meaningful as such (WeightNoiseWarning reads them).
func NormalizeWeights(raw []float64) (w []float64, zero []bool) {
	w = make([]float64, len(raw))
	zero = make([]bool, len(raw))
	var sum float64
	for t, x := range raw {
		if !(x > 0) || math.IsInf(x, 0) {
			zero[t] = true
			continue
		}
		w[t] = x
		sum += x
	}
	if sum > 0 {
		for t := range w {
			w[t] /= sum
		}
	}
	return w, zero
}

// WeightNoiseWarning returns a warning when the estimated weights raw of a
// private fit show that its noise is comparable to the weights, and ""
// otherwise. A mixture's K weights lie in (0, 1] and sum to 1; each is
// estimated separately (from its eigenvalue), so with independent errors
// of spread s the deviation of their sum from 1 is about sqrt(K) s. The
// warning fires when a weight is outside (0, 1] or not finite, or when
// |sum - 1| > 1/(2 sqrt(K)), i.e. s is about half the mean weight 1/K or
// more: at that epsilon and N the released weights (and with them the
// components) are mostly noise. It reads released values only.
func WeightNoiseWarning(raw []float64) string {
	k := len(raw)
	if k == 0 {
		return ""
	}
	var sum float64
	out := false
	for _, x := range raw {
		if !(x > 0 && x <= 1) || math.IsInf(x, 0) {
			out = true
		}
		sum += x
	}
	lim := 1 / (2 * math.Sqrt(float64(k)))
	if !out && math.Abs(sum-1) <= lim {
		return ""
	}
	return fmt.Sprintf("the estimated weights %s are not a distribution (sum %.4g; a mixture's weights lie in (0, 1] and sum to 1, and a sum this far from 1 means noise of about half the mean weight 1/K or more): at this epsilon and number of records the noise is comparable to the weights, so the weights (shown normalised to sum 1) and the components are mostly noise; a larger epsilon or more records are needed", fmtWeights(raw), sum)
}

// fmtWeights prints weights with 4 significant digits.
func fmtWeights(w []float64) string {
	parts := make([]string, len(w))
	for i, x := range w {
		parts[i] = fmt.Sprintf("%.4g", x)
	}
	return "[" + strings.Join(parts, " ") + "]"
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
