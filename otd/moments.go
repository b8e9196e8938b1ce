package otd

import (
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/dprec/dprec/data"
	"gonum.org/v1/gonum/mat"
)

// Estimator selects how the single-topic moments use a document's words.
type Estimator int

const (
	// AllTriples (the default) averages over every ordered pair / triple of
	// distinct word positions of each document, computed in closed form
	// from its count vector c with n words (DeCarolis et al. 2020 eq. 6-11, Zou et al.
	// 2013): M2^n = (c c^T - diag c)/(n(n-1)) and
	// M3^n = (c^(x)3 + 2 sum_i c_i e_i^(x)3 - sum_ij c_i c_j (e_i e_i e_j +
	// e_i e_j e_i + e_j e_i e_i)) / (n(n-1)(n-2)). Each is unbiased for
	// E[x1 (x) x2] and E[x1 (x) x2 (x) x3] because words are exchangeable
	// given the topic, and uses every word, so its variance is lower.
	AllTriples Estimator = iota
	// FirstThree uses only three word positions per document (the
	// estimator of Imtiaz and Sarwate 2018a sec. 2, "t_l is the l-th word"). A bag of words
	// has no order, so the three positions are drawn without replacement
	// from the document's tokens by a PCG stream keyed by the document index
	// and a hash of the corpus (deterministic); by exchangeability this has
	// the law of the first three words.
	FirstThree
)

// String names the estimator ("all-triples", "first-three").
func (e Estimator) String() string {
	switch e {
	case AllTriples:
		return "all-triples"
	case FirstThree:
		return "first-three"
	}
	return fmt.Sprintf("Estimator(%d)", int(e))
}

// ParseEstimator parses the names of String.
func ParseEstimator(s string) (Estimator, error) {
	switch s {
	case "", "all-triples":
		return AllTriples, nil
	case "first-three":
		return FirstThree, nil
	}
	return 0, fmt.Errorf("otd: unknown estimator %q (want all-triples or first-three)", s)
}

// ProgressFunc receives progress reports: a stage name and done of total
// units (documents or components). It is called from the calling goroutine.
type ProgressFunc func(stage string, done, total int)

func (p ProgressFunc) report(stage string, done, total int) {
	if p != nil && (done == total || done%4096 == 0) {
		p(stage, done, total)
	}
}

// minWords is the number of distinct word positions the third moment needs.
const minWords = 3

func checkCorpus(c *data.Corpus, minDocs int) error {
	if c == nil || c.NumDocs() == 0 {
		return errors.New("otd: empty corpus")
	}
	if c.NumDocs() < minDocs {
		return fmt.Errorf("otd: %d documents, need at least %d", c.NumDocs(), minDocs)
	}
	for n := 0; n < c.NumDocs(); n++ {
		if l := c.DocLen(n); l < minWords {
			return fmt.Errorf("otd: document %d has %d words; the moment estimators need at least %d (read the corpus with MinDocLen 3 to skip short documents)", n, l, minWords)
		}
	}
	return nil
}

// firstThree returns the corpus with every document reduced to three word
// positions drawn without replacement (see FirstThree).
func firstThree(c *data.Corpus) *data.Corpus {
	b := data.NewCorpusBuilder(c.Vocab, minWords)
	var toks []int32
	key := docHash(c.Words, c.Counts)
	ws3 := make([]int32, 0, 3)
	cs3 := make([]int32, 0, 3)
	for n := 0; n < c.NumDocs(); n++ {
		ws, cs := c.Doc(n)
		toks = toks[:0]
		for i, w := range ws {
			for r := int32(0); r < cs[i]; r++ {
				toks = append(toks, w)
			}
		}
		// The positions are drawn by a PCG stream keyed by the document
		// index and a hash of the whole corpus, so the choice is
		// reproducible yet independent of the data in law (a key of the
		// index alone would reuse the same positions of the id-sorted
		// tokens in every corpus, a bias that does not average out).
		rng := rand.New(rand.NewPCG(uint64(n), key))
		for i := 0; i < 3; i++ {
			j := i + rng.IntN(len(toks)-i)
			toks[i], toks[j] = toks[j], toks[i]
		}
		pick := toks[:3]
		// sort the three ids and merge duplicates
		if pick[0] > pick[1] {
			pick[0], pick[1] = pick[1], pick[0]
		}
		if pick[1] > pick[2] {
			pick[1], pick[2] = pick[2], pick[1]
		}
		if pick[0] > pick[1] {
			pick[0], pick[1] = pick[1], pick[0]
		}
		ws3, cs3 = ws3[:0], cs3[:0]
		for _, w := range pick {
			if len(ws3) > 0 && ws3[len(ws3)-1] == w {
				cs3[len(cs3)-1]++
			} else {
				ws3 = append(ws3, w)
				cs3 = append(cs3, 1)
			}
		}
		b.AddDoc(ws3, cs3)
	}
	out, _ := b.Finish() // every document of c has >= 3 words
	return out
}

func prepare(c *data.Corpus, est Estimator, minDocs int) (*data.Corpus, error) {
	if err := checkCorpus(c, minDocs); err != nil {
		return nil, err
	}
	switch est {
	case AllTriples:
		return c, nil
	case FirstThree:
		return firstThree(c), nil
	}
	return nil, fmt.Errorf("otd: unknown estimator %d", int(est))
}

// STMMoments returns the dense empirical moments of the single-topic model
// (Imtiaz and Sarwate 2018a sec. 2): M2 = E[x1 (x) x2] (D x D) and M3 = E[x1 (x) x2 (x) x3]
// (D x D x D) under est, whose expectations are M2 = sum_k w_k a_k a_k^T and
// M3 = sum_k w_k a_k^(x)3. Every document needs at least 3 words. M3 is
// refused (error) when D^3 exceeds MaxDenseBytes: use STMWhitenedM3.
func STMMoments(c *data.Corpus, est Estimator) (M2 *mat.SymDense, M3 *SymTensor, err error) {
	cc, err := prepare(c, est, 1)
	if err != nil {
		return nil, nil, err
	}
	return denseMoments(cc, 0, nil)
}

// STMSecondMoment returns only M2 of STMMoments (no D^3 memory).
func STMSecondMoment(c *data.Corpus, est Estimator) (*mat.SymDense, error) {
	cc, err := prepare(c, est, 1)
	if err != nil {
		return nil, err
	}
	return secondMoment(cc, 0), nil
}

// STMWhitenedM3 returns M3(W,W,W) (K x K x K) for the D x K matrix W,
// computed from whitened documents in O(nnz K + N K^3 + D K^3) time and
// O(D K + K^3) memory, never forming D^3 entries. It equals
// STMMoments(c, est) then Multilinear(W) up to rounding.
func STMWhitenedM3(c *data.Corpus, W *mat.Dense, est Estimator) (*SymTensor, error) {
	cc, err := prepare(c, est, 1)
	if err != nil {
		return nil, err
	}
	return whitenedM3(cc, W, 0, nil)
}

// LDA coefficients of DeCarolis et al. 2020 Lemma 25 with concentration alpha0 = sum_i
// alpha_i (Anandkumar et al. 2012): M2 = E[x1 x2] - a M1 M1,
// M3 = E[x1 x2 x3] - b' sym3(E[x1 x2] (x) M1) + c M1^(x)3 with
// a = alpha0/(alpha0+1), b' = alpha0/(alpha0+2),
// c = 2 alpha0^2/((alpha0+1)(alpha0+2)); sym3 sums the three placements of
// the M1 factor. Products of moments are estimated by U-statistics over
// distinct documents, so every estimate is unbiased.
func ldaCoef(alpha0 float64) (a, b, c float64) {
	return alpha0 / (alpha0 + 1), alpha0 / (alpha0 + 2), 2 * alpha0 * alpha0 / ((alpha0 + 1) * (alpha0 + 2))
}

func checkAlpha0(alpha0 float64) error {
	if !(alpha0 > 0) || alpha0 > 1e6 {
		return fmt.Errorf("otd: alpha0 = %g must be positive and finite (the Dirichlet concentration sum_i alpha_i)", alpha0)
	}
	return nil
}

// LDAMoments returns the unbiased empirical LDA moments of DeCarolis et al. 2020 Lemma
// 25 (M1 in R^D, M2 D x D, M3 D x D x D) for concentration alpha0, from
// per-document counts with all word pairs / triples (AllTriples). Their
// expectations are M1 = sum_i w_i mu_i, M2 = sum_i w_i/(alpha0+1) mu_i mu_i^T
// and M3 = sum_i 2 w_i/((alpha0+1)(alpha0+2)) mu_i^(x)3 with
// w_i = alpha_i/alpha0. It needs at least 3 documents of at least 3 words.
func LDAMoments(c *data.Corpus, alpha0 float64) (M1 []float64, M2 *mat.SymDense, M3 *SymTensor, err error) {
	if err := checkAlpha0(alpha0); err != nil {
		return nil, nil, nil, err
	}
	if err := checkCorpus(c, 3); err != nil {
		return nil, nil, nil, err
	}
	M2, M3, err = denseMoments(c, alpha0, nil)
	if err != nil {
		return nil, nil, nil, err
	}
	return firstMoment(c), M2, M3, nil
}

// LDASecondMoment returns M1 and M2 of LDAMoments without the D^3 tensor.
func LDASecondMoment(c *data.Corpus, alpha0 float64) (M1 []float64, M2 *mat.SymDense, err error) {
	if err := checkAlpha0(alpha0); err != nil {
		return nil, nil, err
	}
	if err := checkCorpus(c, 3); err != nil {
		return nil, nil, err
	}
	return firstMoment(c), secondMoment(c, alpha0), nil
}

// LDAWhitenedM3 returns M3(W,W,W) of LDAMoments computed from whitened
// documents in O(nnz K + N K^3 + D K^3), never forming D^3 entries.
func LDAWhitenedM3(c *data.Corpus, W *mat.Dense, alpha0 float64) (*SymTensor, error) {
	if err := checkAlpha0(alpha0); err != nil {
		return nil, err
	}
	if err := checkCorpus(c, 3); err != nil {
		return nil, err
	}
	return whitenedM3(c, W, alpha0, nil)
}

func firstMoment(c *data.Corpus) []float64 {
	m := make([]float64, c.V())
	for n := 0; n < c.NumDocs(); n++ {
		ws, cs := c.Doc(n)
		l := float64(c.DocLen(n))
		for i, w := range ws {
			m[w] += float64(cs[i]) / l
		}
	}
	inv := 1 / float64(c.NumDocs())
	for i := range m {
		m[i] *= inv
	}
	return m
}

// secondMoment returns the dense D x D M2 (alpha0 = 0: single topic).
func secondMoment(c *data.Corpus, alpha0 float64) *mat.SymDense {
	d := c.V()
	N := float64(c.NumDocs())
	a, _, _ := ldaCoef(alpha0)
	e2 := make([]float64, d*d) // sum_n (c c^T - diag c)/(l(l-1)), upper triangle
	var y2 []float64           // sum_n m_n m_n^T, upper triangle
	var s []float64            // sum_n m_n
	if a != 0 {
		y2 = make([]float64, d*d)
		s = make([]float64, d)
	}
	for n := 0; n < c.NumDocs(); n++ {
		ws, cs := c.Doc(n)
		l := float64(c.DocLen(n))
		b2 := 1 / (l * (l - 1))
		b1 := 1 / (l * l)
		for p, wi := range ws {
			ci := float64(cs[p])
			row := e2[int(wi)*d:]
			row[wi] += b2 * ci * (ci - 1)
			for q := p + 1; q < len(ws); q++ {
				row[ws[q]] += b2 * ci * float64(cs[q])
			}
			if a != 0 {
				s[wi] += ci / l
				yr := y2[int(wi)*d:]
				for q := p; q < len(ws); q++ {
					yr[ws[q]] += b1 * ci * float64(cs[q])
				}
			}
		}
	}
	M2 := mat.NewSymDense(d, nil)
	for i := 0; i < d; i++ {
		for j := i; j < d; j++ {
			v := e2[i*d+j] / N
			if a != 0 {
				v -= a * (s[i]*s[j] - y2[i*d+j]) / (N * (N - 1))
			}
			M2.SetSym(i, j, v)
		}
	}
	return M2
}

// docHash is FNV-1a over word ids and counts.
func docHash(ws, cs []int32) uint64 {
	h := uint64(14695981039346656037) // FNV-1a 64-bit offset basis
	for i, w := range ws {
		for _, x := range [2]int32{w, cs[i]} {
			for b := 0; b < 4; b++ {
				h ^= uint64(byte(x >> (8 * b)))
				h *= 1099511628211 // FNV-1a 64-bit prime
			}
		}
	}
	return h
}
