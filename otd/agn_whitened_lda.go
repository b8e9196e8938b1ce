package otd

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/dprec/dprec/perturb"
	"gonum.org/v1/gonum/mat"
)

// Shares of agn-whitened's stage budgets for LDA (S11): stage 1 releases
// the clipped pair moment E2, the clipped frequencies E1 of the selected
// words and the two clip-weight means; stage 2 the clipped whitened
// triples and their weight mean. E2 and the triples carry the signal;
// the weight means are scalars of sensitivity 1/N and need little.
const (
	ldaShareE2   = 0.8
	ldaShareE1   = 0.15
	ldaShareRho  = 0.05
	ldaShareRho3 = 0.1
)

// releaseGaussian adds Gaussian noise for (sens, eps, delta) to x in place
// and returns its release record.
func releaseGaussian(x []float64, sens, eps, delta float64, cal perturb.Calibration, r *rand.Rand, what, derivation string) (perturb.Release, error) {
	g, err := perturb.NewGaussian(sens, eps, delta, cal)
	if err != nil {
		return perturb.Release{}, fmt.Errorf("otd: noise on the %s: %w", what, err)
	}
	g.AddTo(x, r)
	rel := g.Release(what)
	rel.Derivation = derivation
	return rel, nil
}

// fitAGNWhitenedLDA runs (S11): agn-whitened for LDA. The LDA moments are
// formed from the released clipped moments by post-processing, each
// divided by the (released) mean of its clip weights.
func fitAGNWhitenedLDA(st *agnWhitenedSetup, opts *FitOptions, b PrivacyBudget, secure bool, r *rand.Rand) (*Result, error) {
	n, k, cal := float64(st.n), st.k, b.Calibration
	e1, d1, e2, d2 := st.eps[1], st.delta[1], st.eps[2], st.delta[2]
	E2raw, rho2 := clippedM2(st.sub, st.c2, st.n)
	E2n, relE2, err := AnalyzeGaussM2(E2raw, math.Sqrt2*st.c2/n, ldaShareE2*e1, ldaShareE2*d1, cal, r)
	if err != nil {
		return nil, err
	}
	relE2.What = "clipped pair moment E2 of the selected words (upper triangle)"
	relE2.Derivation = "go doc otd (S10) stage 1: sqrt(2) C2 / N"
	m1, rho1 := clippedFrequencies(st.sub, st.c1, st.n)
	relE1, err := releaseGaussian(m1, math.Sqrt2*st.c1/n, ldaShareE1*e1, ldaShareE1*d1, cal, r,
		"clipped word frequencies E1 of the selected words", "go doc otd (S11): sqrt(2) C1 / N")
	if err != nil {
		return nil, err
	}
	rho := []float64{rho1, rho2}
	relRho, err := releaseGaussian(rho, math.Sqrt2/n, ldaShareRho*e1, ldaShareRho*d1, cal, r,
		"mean clip weights of E1 and E2 (2 entries)", "go doc otd (S11): each weight in [0, 1], sqrt(2) / N")
	if err != nil {
		return nil, err
	}
	for i := range rho {
		rho[i] = math.Max(rho[i], 1/n) // post-processing: a weight mean is at least one document's
	}
	// M2 = E2 - a E1 E1^T, with E1 = m1/rho1 and E2 = E2n/rho2.
	a, bc, cc := ldaCoef(opts.Alpha0)
	v := st.sub.V()
	for i := range m1 {
		m1[i] /= rho[0]
	}
	M2 := mat.NewSymDense(v, nil)
	for i := 0; i < v; i++ {
		for j := i; j < v; j++ {
			M2.SetSym(i, j, E2n.At(i, j)/rho[1]-a*m1[i]*m1[j])
		}
	}
	W, err := WhitenSVD(M2, k)
	if err != nil {
		return nil, err
	}
	top, err := topAbsEigen(M2, k)
	if err != nil {
		return nil, err
	}
	note := swampNote(top, 2*relE2.Scale*math.Sqrt(float64(v))/rho[1], k, st.n)
	p, sens3, rho3 := clippedTriples(st.sub, W, st.c3, st.n, opts.Progress)
	relT, err := releaseGaussian(p, sens3, (1-ldaShareRho3)*e2, (1-ldaShareRho3)*d2, cal, r,
		"clipped whitened triple moment E3(W,W,W) (packed, C(K+2,3) entries)", "go doc otd (S10) stage 2: 2 min(C3, r_W^3) / N with W from stage 1")
	if err != nil {
		return nil, err
	}
	r3 := []float64{rho3}
	relRho3, err := releaseGaussian(r3, 1/n, ldaShareRho3*e2, ldaShareRho3*d2, cal, r,
		"mean clip weight of the whitened triples", "go doc otd (S11): weight in [0, 1], 1 / N")
	if err != nil {
		return nil, err
	}
	st.rels = append(st.rels, relE2, relE1, relRho, relT, relRho3)
	T, err := FromPacked(k, p)
	if err != nil {
		return nil, err
	}
	T.Scale(1 / math.Max(r3[0], 1/n))
	ldaWhitenedCorrection(T, W, E2n, m1, 1/rho[1], bc, cc)
	return st.finish(opts, b, W, T, note, secure, r)
}

// ldaWhitenedCorrection adds to the whitened raw third moment T the LDA
// terms of DeCarolis et al. 2020 Lemma 25 in whitened form:
// - b' sym3(E2w (x) m) + c m^(x)3, with E2w = e2Scale W^T E2 W and
// m = W^T E1.
func ldaWhitenedCorrection(T *SymTensor, W *mat.Dense, E2 *mat.SymDense, e1 []float64, e2Scale, bc, cc float64) {
	k := T.D
	var tmp, e2w mat.Dense
	tmp.Mul(E2, W)
	e2w.Mul(W.T(), &tmp)
	e2w.Scale(e2Scale, &e2w)
	m := make([]float64, k)
	mat.NewVecDense(k, m).MulVec(W.T(), mat.NewVecDense(len(e1), e1))
	for i := 0; i < k; i++ {
		for j := 0; j < k; j++ {
			for l := 0; l < k; l++ {
				T.Data[(i*k+j)*k+l] += -bc*(e2w.At(i, j)*m[l]+e2w.At(i, l)*m[j]+e2w.At(j, l)*m[i]) + cc*m[i]*m[j]*m[l]
			}
		}
	}
}
