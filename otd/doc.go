// Package otd implements orthogonal tensor decomposition for latent
// variable models by the method of moments, and its differentially private
// variants.
//
// # Non-private core
//
// The pipeline (Fit) is: second moment M2 -> whitening W = U D^{-1/2} from
// the top-K eigenpairs of M2 (Whiten; randomized subspace iteration on the
// implicit M2 for vocabularies above DenseWhitenMax) -> whitened third
// moment M3(W,W,W), a K x K x K symmetric tensor that is orthogonally
// decomposable in expectation -> robust tensor power method with restarts
// and deflation (PowerIteration, seed 003 Algorithm 1) -> un-whitening
// a_k = lambda_k (W^T)^+ v_k, w_k = 1/lambda_k^2 (Unwhiten; UnwhitenLDA
// applies the alpha0 rescaling of seed 004).
//
// Models and moments:
//   - single-topic model (seed 000 sec. 2): M2 = E[x1 (x) x2],
//     M3 = E[x1 (x) x2 (x) x3]; documents need at least 3 words. By default
//     (AllTriples) every ordered pair / triple of distinct word positions is
//     used through the unbiased count formulas of seed 004 eq. 6-11;
//     FirstThree uses three positions per document (seed 000's estimator).
//     AllTriples recovers topics better (see the package tests and the
//     README for measured e_comp).
//   - LDA (seed 004 Lemma 25): M1, M2 = E[x1 x2] - a0/(a0+1) M1 M1,
//     M3 = E[x1 x2 x3] - a0/(a0+2) sym3(E[x1 x2] M1) +
//     2 a0^2/((a0+1)(a0+2)) M1^(x)3, with products of moments estimated by
//     U-statistics over distinct documents so each estimator is unbiased.
//   - mixture of spherical Gaussians (seed 002 app. B-B): M2 = E[t t^T] -
//     sigma^2 I and M3 = E[t^(x)3] - sigma^2 sym3(E[t] (x) I), for rows with
//     ||t|| <= 1.
//
// Each model has a dense D x D x D M3 builder (STMMoments, LDAMoments,
// MoGMoments), needed only where noise is added to M3 itself, and a
// whitened builder (STMWhitenedM3, LDAWhitenedM3, MoGWhitenedM3) that works
// on whitened documents in O(nnz K + N K^3 + D K^3) time without forming
// D^3 entries. Dense tensors larger than MaxDenseBytes are refused with an
// error. StreamingPowerIteration runs the online tensor power method of
// seed 003 Algorithm 2 directly on a stream of whitened data points.
//
// Symmetric tensors (SymTensor) are stored densely; Packed/FromPacked map
// them to the C(D+2,3) unique entries in the i <= j <= k lexicographic order
// shared with perturb.SymmetricTensorFromPacked.
//
// Accuracy is measured by EComp, the metric of seed 000 sec. 4.
//
// # Topics as distributions, refinement and per-document proportions
//
// Fit returns topic models' columns projected onto the probability
// simplex and weights normalised to sum 1 (Result.RawWeights keeps the
// estimates, Result.Zero flags non-positive ones; EffectiveTopics is
// exp(entropy) of the weights). Refine runs batch variational EM for LDA
// from the spectral topics, with a background topic and rebirth of tiny
// topics by spectral bisection; InferDocTopics gives documents' topic
// proportions with the topics fixed. The updates are documented atop
// vem.go.
//
// # Private variants
//
// FitOptions.Method selects a private pipeline: "agn" and "avn" (seed 000
// Algorithm 1), "dptpm" (seed 003 Algorithm 3 with seed 000's nu),
// "agn-whitened" (the single-topic AGN without a dense D^3 tensor:
// private whitening and Gaussian noise on the K x K x K whitened tensor,
// derivation (S10) in agn_whitened.go, with a warning when the released
// second moment's K-th singular value is within the noise), and the
// private spectral LDA configurations "lda-input", "lda-whitened",
// "lda-decomposition" and "lda-output" (seed 004). Their neighbouring
// relation, sensitivities (with derivations), mechanisms and composition
// are documented in the comment blocks atop private.go (S1-S7),
// ldapriv_decomp.go (S8, configuration 3 via the local-sensitivity release
// of seed 004 Lemma 33) and ldapriv_output.go (S9, configuration 4 as
// simplex-projected output perturbation, a provable variant of the paper's
// configuration), and every private Result carries a perturb.Report
// stating them.
//
// Several printed sensitivities are corrected there, each with a test that
// finds neighbouring data exceeding the printed value: the Gaussian-mixture
// Delta_2 is sqrt(2)/N, not 1/N (seed 002 app. C states a spectral-norm
// bound, which the Gaussian mechanism cannot use), and the LDA Delta_3 of
// seed 004 misses two of the three placements of the changed word.
//
// # Determinism and concurrency
//
// All randomness (power-method restarts, randomized whitening, private
// noise when seeded) comes from the rand.Source argument, so a seed gives
// identical results. Functions do not share mutable state; values returned
// are owned by the caller. Nothing in the package prints.
package otd
