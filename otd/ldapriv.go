package otd

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/dprec/dprec/perturb"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// LDASensitivities returns the l1 sensitivities of the LDA moment
// estimators of moments.go (DeCarolis et al. 2020 Lemma 25) for n documents and
// concentration alpha0, used as (valid, loose) l2 sensitivities of the
// packed vectors (derivation (S5) in the package documentation ("# Sensitivities")):
//
//	Delta_2 = (2 + 4a)/n,           a  = alpha0/(alpha0+1)     (DeCarolis et al. 2020 Theorem 4: same)
//	Delta_3 = (2 + 12b' + 6c)/n,    b' = alpha0/(alpha0+2), c = 2 alpha0^2/((alpha0+1)(alpha0+2))
//
// Seed 004 prints Delta_3 = 2/n + 4b'/n + 6c(n-1)/(n(n-2)), which omits two
// of the three placements of the M2 (x) M1 term and is too small.
func LDASensitivities(n int, alpha0 float64) (Sensitivities, error) {
	if n < 3 {
		return Sensitivities{}, fmt.Errorf("otd: LDA sensitivity needs at least 3 documents, got %d", n)
	}
	if err := checkAlpha0(alpha0); err != nil {
		return Sensitivities{}, err
	}
	a, b, c := ldaCoef(alpha0)
	fn := float64(n)
	return Sensitivities{
		M2:    (2 + 4*a) / fn,
		M3:    (2 + 12*b + 6*c) / fn,
		M2Ref: "go doc otd (S5); DeCarolis et al. 2020 Theorem 4 (l1, used as l2 bound)",
		M3Ref: "go doc otd (S5): (2 + 12 b' + 6 c)/N, correcting DeCarolis et al. 2020 Theorem 4 (B2, B3 omitted there)",
	}, nil
}

// LDASensitivitiesPaper returns Delta_2, Delta_3 exactly as printed in
// DeCarolis et al. 2020 Theorem 4, for comparison only (Delta_3 is too small).
func LDASensitivitiesPaper(n int, alpha0 float64) (m2, m3 float64) {
	fn := float64(n)
	return 2/fn + alpha0/(alpha0+1)*4/fn,
		2/fn + 4*alpha0/(alpha0+2)/fn + 12*alpha0*alpha0/((alpha0+1)*(alpha0+2))*(fn-1)/(fn*(fn-2))
}

// maxRowNorm returns r_W = max_a ||W^T e_a||_2, the largest row norm of W.
func maxRowNorm(W *mat.Dense) float64 {
	rows, _ := W.Dims()
	var m float64
	for a := 0; a < rows; a++ {
		m = math.Max(m, floats.Norm(W.RawRowView(a), 2))
	}
	return m
}

// WhitenedTensorSensitivity returns the l2 sensitivity of the packed
// whitened tensor M3(W,W,W) for a fixed (already released) W, given the
// l1 sensitivity delta3L1 of M3: delta3L1 * r_W^3 (derivation (S6)).
func WhitenedTensorSensitivity(W *mat.Dense, delta3L1 float64) float64 {
	r := maxRowNorm(W)
	return delta3L1 * r * r * r
}

// fitLDAPrivate runs DeCarolis et al. 2020 configuration 1 (lda-input: noise on M2 and
// M3) or 2 (lda-whitened: noise on M2 and on the whitened tensor built
// with the private W).
func fitLDAPrivate(in *Input, opts *FitOptions, b PrivacyBudget, secure bool, r *rand.Rand) (*Result, error) {
	c := in.Corpus
	n := c.NumDocs()
	sens, err := LDASensitivities(n, opts.Alpha0)
	if err != nil {
		return nil, err
	}
	e1, d1, e2, d2, err := b.stages(false)
	if err != nil {
		return nil, err
	}
	var (
		W     *mat.Dense
		T     *SymTensor
		rels  []perturb.Release
		path  string
		notes []string
	)
	switch opts.Method {
	case MethodLDAInput:
		_, M2, M3, err := LDAMoments(c, opts.Alpha0)
		if err != nil {
			return nil, err
		}
		o, err := agnAvn(M2, M3, opts.K, false, sens, b, r)
		if err != nil {
			return nil, err
		}
		W, T, rels, path = o.W, o.T, o.Releases, "dense"
	case MethodLDAWhitened:
		var note string
		if W, rels, note, err = privateWhitening(c, opts.Alpha0, opts.K, sens, e1, d1, b.Calibration, r); err != nil {
			return nil, err
		}
		if note != "" {
			notes = append(notes, note)
		}
		Tw, err := LDAWhitenedM3(c, W, opts.Alpha0)
		if err != nil {
			return nil, err
		}
		st := WhitenedTensorSensitivity(W, sens.M3)
		g, err := perturb.NewGaussian(st, e2, d2, b.Calibration)
		if err != nil {
			return nil, fmt.Errorf("otd: noise on the whitened tensor: %w", err)
		}
		p := Tw.Packed()
		g.AddTo(p, r)
		if T, err = FromPacked(Tw.D, p); err != nil {
			return nil, err
		}
		relT := g.Release("whitened tensor M3(W,W,W) (packed, C(K+2,3) entries)")
		relT.Derivation = "go doc otd (S6): Delta_3(l1) * r_W^3 with W from the noisy M2"
		rels, path = append(rels, relT), "whitened"
	}
	lam, V, err := PowerIteration(T, opts.K, opts.TPM, r)
	if err != nil {
		return nil, err
	}
	A, w := UnwhitenLDA(W, lam, V, opts.Alpha0)
	res := assemble(opts, A, w, lam)
	res.Path = path
	res.Vocab = c.Vocab
	res.Report = privateReport(opts, b, rels, "basic (DeCarolis et al. 2020 Proposition 23): (eps1+eps2, delta1+delta2)", secure, n)
	res.Report.Notes = append(res.Report.Notes, notes...)
	return res, nil
}
