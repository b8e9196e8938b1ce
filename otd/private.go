// Private spectral methods; their sensitivities are derived in the
// package documentation (go doc otd, "# Sensitivities", (S1)-(S10)).

package otd

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/dprec/dprec/perturb"
	"gonum.org/v1/gonum/mat"
)

// mogNormSlack covers the 1e-9 tolerance of checkRows (rows rescaled to
// norm exactly 1 may exceed it by rounding): sensitivities are computed
// for ||x|| <= 1 + 1e-9, i.e. multiplied by (1+1e-9)^3 (the largest power
// of ||x|| in any term).
const mogNormSlack = (1 + 1e-9) * (1 + 1e-9) * (1 + 1e-9)

// isSecure reports whether noise drawn from src is private (a nil src
// means perturb.SecureSource()): perturb.ProvenanceOf decides.
func isSecure(src rand.Source) bool {
	return perturb.ProvenanceOf(src).Private()
}

// fitPrivate runs the private method opts.Method. Noise (and the power
// method's restarts) come from src; pass a nil src (or
// perturb.SecureSource()) for a private release: any other source makes
// the result reproducible and NOT private, and the report says so.
func fitPrivate(in *Input, opts *FitOptions, src rand.Source) (*Result, error) {
	secure := isSecure(src)
	if src == nil {
		src = perturb.SecureSource()
	}
	r := rand.New(src)
	b, err := budgetFromOptions(opts)
	if err != nil {
		return nil, err
	}
	switch opts.Method {
	case MethodAGN, MethodAVN, MethodDPTPM:
		if opts.Model == ModelLDA {
			return nil, fmt.Errorf("otd: method %q is for the stm and mog models; for lda use lda-input or lda-whitened", opts.Method)
		}
		p, n, err := momentProblem(in, opts)
		if err != nil {
			return nil, err
		}
		o, err := runPrivateMoments(opts.Method, p, b, opts.TPM, DPTPMOptions{}, r)
		if err != nil {
			return nil, err
		}
		A, w := Unwhiten(o.W, o.Lambda, o.V)
		res := assemble(opts, A, w, o.Lambda)
		res.Path = "dense"
		if opts.Method == MethodDPTPM {
			res.Path = "dense M2, whitened M3"
		}
		res.Report = privateReport(opts, b, o.Releases, o.Composition, secure, n)
		if in.Corpus != nil {
			res.Vocab = in.Corpus.Vocab
		}
		return res, nil
	case MethodAGNWhitened:
		if opts.Model == ModelMoG {
			return nil, fmt.Errorf("otd: method %q is for the topic models (stm, lda); for mog use agn", opts.Method)
		}
		return fitAGNWhitened(in, opts, b, secure, r) // (S10), (S11) for lda
	case MethodLDAInput, MethodLDAWhitened:
		if opts.Model != ModelLDA {
			return nil, fmt.Errorf("otd: method %q needs model lda", opts.Method)
		}
		return fitLDAPrivate(in, opts, b, secure, r)
	case MethodLDADecomposition, MethodLDAOutput:
		if opts.Model != ModelLDA {
			return nil, fmt.Errorf("otd: method %q needs model lda", opts.Method)
		}
		if opts.Method == MethodLDADecomposition {
			return fitLDADecomposition(in, opts, b, secure, r) // ldapriv_decomp.go (S8)
		}
		return fitLDAOutput(in, opts, b, secure, r) // ldapriv_output.go (S9)
	}
	return nil, fmt.Errorf("otd: unknown method %q (want nonprivate, agn, avn, dptpm, agn-whitened, lda-input, lda-whitened, lda-decomposition, lda-output)", opts.Method)
}

// budgetFromOptions maps FitOptions' budget to a PrivacyBudget.
func budgetFromOptions(opts *FitOptions) (PrivacyBudget, error) {
	b := PrivacyBudget{Epsilon: opts.Epsilon, Delta: opts.Delta}
	switch len(opts.Split) {
	case 0:
	case 3:
		if opts.Method != MethodAGNWhitened {
			return b, fmt.Errorf("otd: method %q has two releases; the budget split needs 2 fractions, got 3", opts.Method)
		}
		// agn-whitened's three stages are split by agnWhitenedStages.
	case 2:
		s0, s1 := opts.Split[0], opts.Split[1]
		if !(s0 > 0 && s1 > 0) || math.Abs(s0+s1-1) > 1e-9 {
			return b, fmt.Errorf("otd: budget split %v must be two positive fractions summing to 1", opts.Split)
		}
		if opts.Method != MethodAGNWhitened {
			b.Split = s0
		}
	default:
		return b, fmt.Errorf("otd: method %q has two releases; the budget split needs 2 fractions, got %d", opts.Method, len(opts.Split))
	}
	if err := perturb.CheckEpsilon(b.Epsilon); err != nil {
		return b, fmt.Errorf("otd: method %q: %w", opts.Method, err)
	}
	if err := perturb.CheckPositiveDelta(b.Delta); err != nil {
		return b, fmt.Errorf("otd: method %q: %w", opts.Method, err)
	}
	return b, nil
}

// momentProblem builds the dense moments and sensitivities of an stm or
// mog input, returning the number of records.
func momentProblem(in *Input, opts *FitOptions) (*privateProblem, int, error) {
	switch opts.Model {
	case ModelSTM:
		if opts.Estimator != AllTriples {
			// FirstThree draws each document's three positions from a stream
			// keyed by a hash of the whole corpus, so replacing one document
			// changes every document's contribution: (S1) does not hold.
			return nil, 0, fmt.Errorf("otd: private methods need the all-triples estimator (the %v estimator's word choice depends on the whole corpus, so one document can change every term)", opts.Estimator)
		}
		n := in.Corpus.NumDocs()
		M2, M3, err := STMMoments(in.Corpus, opts.Estimator)
		if err != nil {
			return nil, 0, err
		}
		sens, err := STMSensitivities(n)
		if err != nil {
			return nil, 0, err
		}
		return &privateProblem{M2: M2, M3: M3, K: opts.K, Sens: sens,
			TPMSens: func(W *mat.Dense) DPTPMSensitivity { return STMDPTPMSensitivity(W, n) }}, n, nil
	case ModelMoG:
		n, d := in.Rows.Dims()
		M2, M3, err := MoGMoments(in.Rows, opts.Sigma2)
		if err != nil {
			return nil, 0, err
		}
		sens, err := MOGSensitivities(n, d, opts.Sigma2)
		if err != nil {
			return nil, 0, err
		}
		sens.M2 *= mogNormSlack
		sens.M3 *= mogNormSlack
		s2 := opts.Sigma2
		return &privateProblem{M2: M2, M3: M3, K: opts.K, Sens: sens,
			TPMSens: func(W *mat.Dense) DPTPMSensitivity {
				f := MOGDPTPMSensitivity(W, n, s2)
				return func(u []float64) (float64, float64) {
					a, b := f(u)
					return a * mogNormSlack, b * mogNormSlack
				}
			}}, n, nil
	}
	return nil, 0, errors.New("otd: private moments need model stm or mog")
}

// privateReport assembles the privacy report of a private fit.
func privateReport(opts *FitOptions, b PrivacyBudget, rels []perturb.Release, composition string, secure bool, n int) *perturb.Report {
	unit, relation := "document", fmt.Sprintf("corpora of N = %d documents (each of at least 3 in-vocabulary words) differing in one document; N, the vocabulary and K are public", n)
	if opts.Model == ModelMoG {
		unit, relation = "record", fmt.Sprintf("sets of N = %d rows with ||t||_2 <= 1 differing in one row; N, D, sigma2 and K are public", n)
	}
	var eps, delta float64
	for _, r := range rels {
		c := r.Count
		if c < 1 {
			c = 1
		}
		eps += r.Epsilon * float64(c)
		delta += r.Delta * float64(c)
	}
	// DP-TPM's queries are accounted by advanced composition: their stage
	// total is the second stage's budget, not the sum above.
	if opts.Method == MethodDPTPM {
		e1, d1, e2, d2, _ := b.stages(false)
		eps, delta = e1+e2, d1+d2
	}
	notes := []string{
		"sensitivity derivations: go doc otd, section Sensitivities (S1)-(S10)",
		"the power method, whitening and un-whitening are post-processing of the noisy releases",
	}
	if !secure {
		notes = append(notes, "noise drawn from a caller-supplied (seeded) source: reproducible, NOT private")
	}
	for _, r := range rels {
		if r.Mechanism == perturb.MechL2 { // AVN's M3
			notes = append(notes, perturb.L2NoiseNote)
			break
		}
	}
	return &perturb.Report{
		Mode:         string(opts.Method),
		Relation:     relation,
		RelationKind: perturb.RelationValueChange,
		Unit:         unit,
		Epsilon:      eps,
		Delta:        delta,
		Composition:  composition,
		Releases:     rels,
		Covered:      []string{"component vectors A", "weights", "eigenvalues"},
		NotCovered:   notCoveredFor(opts),
		Randomness:   perturb.RandomnessLabel(!secure),
		Notes:        notes,
	}
}

func notCoveredFor(opts *FitOptions) []string {
	if opts.Model == ModelMoG {
		return nil
	}
	return []string{"vocabulary (public by assumption: dprec spectral requires --vocab FILE --public-vocab and refuses pruning by corpus counts in private runs; a library caller passing a vocabulary chosen from the private corpus is not covered)"}
}
