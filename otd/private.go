// Private spectral methods: derivations of the sensitivities.
//
// Neighbouring relation (all methods): two corpora (or sample sets) with
// the same number N of records, differing in one record (replacement; the
// privacy unit is one document for "stm"/"lda", one row for "mog"). A
// record is a document with at least 3 in-vocabulary words (stm, lda) or a
// row with ||t||_2 <= 1 (mog). N, D, K, the vocabulary, alpha0 and sigma2
// are public: documents dropped by a reader (too short or empty) are not
// protected, and a vocabulary pruned from the corpus itself (--min-count,
// --max-vocab) is not covered by the guarantee.
//
// Parametrisation of the noise. M2 is released as the vector of its
// D(D+1)/2 upper-triangle entries (i <= j) plus i.i.d. noise, then
// mirrored (perturb.SymmetricGaussianMatrix's convention, Analyze Gauss);
// M3 as the vector p(M3) of its D_sym = C(D+2,3) packed entries (i <= j <=
// k, SymTensor.Packed) plus a noise vector b, then mirrored to all six
// permutations (seed 000 Algorithm 1 steps 5-6). Mirroring is
// post-processing, so the Gaussian and l2-norm mechanisms need the l2
// sensitivity of the PACKED vectors, sup ||p(M) - p(M')||_2, not the
// Frobenius norm of the full tensor: an off-diagonal entry appears once in
// p(M) but 3 or 6 times in M, so ||p(E)||_2 <= ||E||_F with equality only
// for diagonal E. (For a document "a b c" with distinct words the packed
// change is 1/(6N) but the Frobenius change is sqrt(6)/(6N).) Every bound
// below is on the packed vector; the Frobenius bound of the seeds is an
// upper bound of it and therefore also valid, but looser in general.
//
// (S1) Single-topic model, Delta_2 = Delta_3 = sqrt(2)/N. Both estimators
// of moments.go average per-document contributions with weight 1/N:
// M2 = (1/N) sum_n P2_n, M3 = (1/N) sum_n P3_n, where P2_n =
// (c c^T - diag c)/(l(l-1)) and P3_n (seed 004 eq. 8; the symmetrised
// t1 (x) t2 (x) t3 for FirstThree) are the empirical distributions of an
// ordered pair / triple of distinct word positions: symmetric, entries
// >= 0 summing to 1. (Private methods require AllTriples: FirstThree
// picks each document's positions with a stream keyed by a hash of the
// whole corpus, so one changed document changes every P_n.) Replacing document N changes p(M3) by
// (p(P) - p(P'))/N with P, P' such probability tensors, and
// ||p(P) - p(P')||^2 = ||p(P)||^2 + ||p(P')||^2 - 2 <p(P), p(P')>
// <= ||P||_F^2 + ||P'||_F^2 <= 1 + 1, because the inner product of
// non-negative vectors is >= 0 and sum x_i^2 <= (sum x_i)^2 = 1 for
// non-negative x. So Delta_3 <= sqrt(2)/N, attained by "a a a" -> "b b b"
// (p(P) = e_aaa, p(P') = e_bbb). The same argument on the upper triangle
// gives Delta_2 <= sqrt(2)/N ("a a" -> "b b"). This agrees with seed 000
// sec. 2 and seed 002 app. C, whose argument (one-hot t1 (x) t2 (x) t3) is
// the FirstThree case.
//
// (S2) Gaussian mixture, rows ||x|| <= 1, variance sigma2 (seed 002 app.
// C). Per row, M2 gets (x x^T - sigma2 I)/N and M3 gets T_x/N with
// T_x = x^(x)3 - sigma2 C(x), C(x) = sum_i (x e_i e_i + e_i x e_i +
// e_i e_i x). Delta_2: the sigma2 I terms cancel; ||p(x x^T - y y^T)|| <=
// ||x x^T - y y^T||_F = sqrt(||x||^4 + ||y||^4 - 2 (x.y)^2) <= sqrt(2),
// attained by x = e1, y = e2 (upper-triangle entries (1,1) and (2,2)). So
// Delta_2 = sqrt(2)/N. Seed 002 prints 1/N: that bounds the spectral norm
// sup_u u^T (x x^T - y y^T) u, which is not the norm the Gaussian mechanism
// on the entries needs; 1/N would under-noise M2 by a factor sqrt(2).
// Delta_3: T_x - T_y = (x^(x)3 - y^(x)3) - sigma2 C(d), d = x - y,
// ||d|| <= 2. ||p(x^(x)3 - y^(x)3)|| <= ||x^(x)3||_F + ||y^(x)3||_F <= 2. C(d)
// has packed entries 3 d_i at (i,i,i), d_j at the sorted (i,i,j), j != i,
// and 0 elsewhere, so ||p(C(d))||^2 = 9 ||d||^2 + (D-1) ||d||^2 and
// ||p(C(d))|| = sqrt(D+8) ||d|| <= 2 sqrt(D+8). Hence
// Delta_3 <= (2 + 2 sigma2 sqrt(D+8))/N. Seed 002 prints 2/N + 6 D sigma2/N,
// which is larger (6D >= 2 sqrt(D+8) for D >= 1) and so valid but loose
// (its step ||T - T'|| <= 3 D sigma2 ||d||/N should read 3 sqrt(D)).
//
// (S3) AVN. b has density proportional to exp(-eps2 ||b||_2 / Delta_3) on
// R^{D_sym} (perturb.L2Noise). For neighbours, the densities of
// Y = p(M3) + b differ by a factor at most
// exp(eps2 ||p(M3) - p(M3')||_2 / Delta_3) <= e^{eps2}: pure eps2-DP with
// the PACKED sensitivity of (S1)/(S2). Seed 000's proof writes the ratio
// with vec of the full tensors, but b's density lives on the packed
// coordinates; the packed bound is the one that matters (and is <= the
// full one). Per seed 000 Algorithm 1, AVN gives all of delta to M2.
//
// (S4) DP-TPM (seed 003 Algorithm 3, nu as in seed 000 sec. 4) runs on
// T = M3(W,W,W) with W from the Analyze-Gauss M2 (already private, hence
// public for the second stage). Each query f1(u) = T(I,u,u) =
// W^T M3(I, Wu, Wu) and f2(u) = M3(Wu, Wu, Wu) is released with Gaussian
// noise calibrated to its sensitivity at u (STMDPTPMSensitivity,
// MOGDPTPMSensitivity): with v = Wu and r_W = max_a ||W^T e_a||,
// Delta f1 <= 2 r_W ||v||_inf^2 / N and Delta f2 <= 2 ||v||_inf^3 / N for
// the single-topic model (P(I,v,v) is a convex combination of e_a v_b v_c).
// This is seed 000's 2 ||u||_inf^2 transported to the whitened problem;
// the seeds' version omits W and 1/N. The k L (R+1) queries compose by the
// advanced composition theorem with the per-query epsilon found by exact
// inversion (seed 003's closed form eps/sqrt(K(4+ln(2/delta))) exceeds the
// budget under the theorem by 18-29% at epsilon 1 and the default 550
// queries, more at larger epsilon; see AdvancedCompositionSplit).
//
// (S5) LDA (seed 004 Lemma 25, the U-statistic estimators of moments.go):
// M2 = (1/N) sum P2_n - a/(N(N-1)) sum_{n != m} m_n m_m^T and
// M3 = (1/N) sum P3_n - b'/(N(N-1)) sum_{n != m} sym3(P2_n (x) m_m)
// + c/(N(N-1)(N-2)) sum_{distinct n,m,p} m_n (x) m_m (x) m_p, with m_n the
// document's word frequencies, a = alpha0/(alpha0+1), b' =
// alpha0/(alpha0+2), c = 2 alpha0^2/((alpha0+1)(alpha0+2)). Replacing
// document N, with l1 norms of probability vectors/matrices/tensors equal
// to 1 and ||u (x) v||_1 = ||u||_1 ||v||_1: M2 moves by at most
// (2 + 4a)/N in l1 (seed 004 Theorem 4, confirmed); M3 by at most
// (2 + 12 b' + 6 c)/N: the P3 term 2/N; the sym3 term has 2(N-1) changed
// pairs, each moving sym3(.) (three placements) by at most 3*2 in l1, total
// 12 b'/N; the triple term has 3 (N-1)(N-2) changed triples moving by at
// most 2, total 6c/N. Seed 004 prints 2/N + 4 b'/N + 6c(N-1)/(N(N-2)): its
// proof bounds B1 only and drops B2, B3 (the other two placements), so its
// middle term is 3 times too small (at alpha0 = 1: 5.3/N printed versus
// 8/N). The l2 sensitivity of the packed vectors is at most the l1
// sensitivity of the full tensors, so these l1 values calibrate the
// Gaussian mechanism (valid, loose).
//
// (S6) lda-whitened (config 2): W comes from the noisy M2 (first stage),
// so it is public when T = M3(W,W,W) is released. For fixed W and any
// tensor E, ||E(W,W,W)||_F <= sum |E_abc| ||W^T e_a|| ||W^T e_b||
// ||W^T e_c|| <= ||E||_1 r_W^3, so the packed whitened tensor has l2
// sensitivity at most Delta_3(l1) r_W^3 with r_W = max_a ||W^T e_a||_2,
// computed from the released W. Seed 004 config 2 instead bounds the change
// of the whitened tensor including W's own change (Theorem 5, eq. 110-113);
// that bound is data-dependent (sigma_k(M2)) and its step
// ||M3(W,W,W) - M3(W',W',W')|| <= ||M3|| ||W - W'||^3 is wrong (the
// difference is first order in ||W - W'||), so it is not used.
//
// (S7) lda-whitened for D > DenseWhitenMax: W comes from a private sketch
// instead of the D x D noisy M2 (privateWhitenSketch): Y = M2 Omega + G
// with Omega a public random D x p matrix with orthonormal columns, then
// Q = orth(Y) and B = Q^T M2 Q + H (upper triangle). Both releases have l2
// sensitivity at most ||Delta M2||_F, because ||Delta Omega||_F <=
// ||Delta||_F ||Omega||_2 = ||Delta||_F and ||Q^T Delta Q||_F <=
// ||Q||_2^2 ||Delta||_F (Q is released, hence public, before B); the l1
// bound (2 + 4a)/N of (S5) bounds ||Delta M2||_F. The first stage's
// (eps1, delta1) is split equally between Y and B (basic composition).
//
// Configurations 3 (noise on the power method's output) and 4 (noise on
// the final topics) of seed 004 rest on perturbation bounds with
// unspecified constants (O(.) in Theorems 6-7). They are implemented with
// bounds that can be certified, derived in (S8) atop ldapriv_decomp.go
// (config 3: a data-independent random direction theta, released
// Z = [T(I, v_i, v_i)] with a Davis-Kahan local-sensitivity bound released
// privately through Lemma 33, argued as adaptive composition) and (S9)
// atop ldapriv_output.go (config 4: topics and weights projected onto the
// probability simplex, giving data-independent sensitivities sqrt(2K) and
// sqrt(2); this is a provable stand-in, not the paper's Theorem 7).

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
		if opts.Model != ModelSTM {
			return nil, fmt.Errorf("otd: method %q is the single-topic model's whitened AGN (model stm); for lda use lda-whitened", opts.Method)
		}
		return fitAGNWhitened(in, opts, b, secure, r) // agn_whitened.go (S10)
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
	case 2:
		s0, s1 := opts.Split[0], opts.Split[1]
		if !(s0 > 0 && s1 > 0) || math.Abs(s0+s1-1) > 1e-9 {
			return b, fmt.Errorf("otd: budget split %v must be two positive fractions summing to 1", opts.Split)
		}
		b.Split = s0
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
		"sensitivity derivations: comment block atop otd/private.go",
		"the power method, whitening and un-whitening are post-processing of the noisy releases",
	}
	if !secure {
		notes = append(notes, "noise drawn from a caller-supplied (seeded) source: reproducible, NOT private")
	}
	return &perturb.Report{
		Mode:        opts.Method,
		Relation:    relation,
		Unit:        unit,
		Epsilon:     eps,
		Delta:       delta,
		Composition: composition,
		Releases:    rels,
		Covered:     []string{"component vectors A", "weights", "eigenvalues"},
		NotCovered:  notCoveredFor(opts),
		Randomness:  perturb.RandomnessLabel(!secure),
		Notes:       notes,
	}
}

func notCoveredFor(opts *FitOptions) []string {
	if opts.Model == ModelMoG {
		return nil
	}
	return []string{"vocabulary (public by assumption: dprec spectral requires --vocab FILE --public-vocab and refuses pruning by corpus counts in private runs; a library caller passing a vocabulary chosen from the private corpus is not covered)"}
}
