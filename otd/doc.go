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
// and deflation (PowerIteration, Wang and Anandkumar 2016 Algorithm 1) -> un-whitening
// a_k = lambda_k (W^T)^+ v_k, w_k = 1/lambda_k^2 (Unwhiten; UnwhitenLDA
// applies the alpha0 rescaling of DeCarolis et al. 2020).
//
// Models and moments:
//   - single-topic model (Imtiaz and Sarwate 2018a sec. 2): M2 = E[x1 (x) x2],
//     M3 = E[x1 (x) x2 (x) x3]; documents need at least 3 words. By default
//     (AllTriples) every ordered pair / triple of distinct word positions is
//     used through the unbiased count formulas of DeCarolis et al. 2020 eq. 6-11;
//     FirstThree uses three positions per document (Imtiaz and Sarwate 2018a's estimator).
//     AllTriples recovers topics better (see the package tests and
//     docs/spectral.md for measured e_comp).
//   - LDA (DeCarolis et al. 2020 Lemma 25): M1, M2 = E[x1 x2] - a0/(a0+1) M1 M1,
//     M3 = E[x1 x2 x3] - a0/(a0+2) sym3(E[x1 x2] M1) +
//     2 a0^2/((a0+1)(a0+2)) M1^(x)3, with products of moments estimated by
//     U-statistics over distinct documents so each estimator is unbiased.
//   - mixture of spherical Gaussians (Imtiaz and Sarwate 2018b app. B-B): M2 = E[t t^T] -
//     sigma^2 I and M3 = E[t^(x)3] - sigma^2 sym3(E[t] (x) I), for rows with
//     ||t|| <= 1.
//
// Each model has a dense D x D x D M3 builder (STMMoments, LDAMoments,
// MoGMoments), needed only where noise is added to M3 itself, and a
// whitened builder (STMWhitenedM3, LDAWhitenedM3, MoGWhitenedM3) that works
// on whitened documents in O(nnz K + N K^3 + D K^3) time without forming
// D^3 entries. Dense tensors larger than MaxDenseBytes are refused with an
// error. StreamingPowerIteration runs the online tensor power method of
// Wang and Anandkumar 2016 Algorithm 2 directly on a stream of whitened data points.
//
// Symmetric tensors (SymTensor) are stored densely; Packed/FromPacked map
// them to the C(D+2,3) unique entries in the i <= j <= k lexicographic order
// shared with perturb.SymmetricTensorFromPacked (one implementation, the
// module's internal/packed).
//
// Accuracy is measured by EComp, the metric of Imtiaz and Sarwate 2018a sec. 4.
//
// # Topics as distributions, refinement and per-document proportions
//
// Fit returns topic models' columns projected onto the probability
// simplex and, for every model (mixtures included), weights normalised to
// sum 1 (NormalizeWeights; Result.RawWeights keeps the estimates,
// Result.Zero flags non-positive ones; EffectiveTopics is exp(entropy) of
// the weights). WeightNoiseWarning tells when a private fit's estimated
// weights are so far from a distribution that the noise is comparable to
// the weights. Refine runs batch variational EM for LDA
// from the spectral topics, with a background topic and rebirth of tiny
// topics by spectral bisection; InferDocTopics gives documents' topic
// proportions with the topics fixed. The updates are documented atop
// vem.go.
//
// # Private variants
//
// FitOptions.Method selects a private pipeline: "agn" and "avn" (Imtiaz and Sarwate 2018a
// Algorithm 1), "dptpm" (Wang and Anandkumar 2016 Algorithm 3 with Imtiaz and Sarwate 2018a's nu),
// "agn-whitened" (the single-topic AGN without a dense D^3 tensor:
// private vocabulary selection, clipped private whitening and Gaussian
// noise on the clipped K x K x K whitened tensor, (S10), with a warning
// when the released second moment's K-th singular value is within the
// noise), and the private spectral LDA configurations "lda-input",
// "lda-whitened", "lda-decomposition" and "lda-output" (DeCarolis et al. 2020). Their
// neighbouring relation, sensitivities (with derivations), mechanisms and
// composition are derived under Sensitivities below: (S1)-(S7), (S8)
// (configuration 3 via the local-sensitivity release of DeCarolis et al. 2020 Lemma
// 33), (S9) (configuration 4 as simplex-projected output perturbation, a
// provable variant of the paper's configuration) and (S10); every private
// Result carries a perturb.Report stating them.
//
// Several printed sensitivities are corrected there, each with a test that
// finds neighbouring data exceeding the printed value: the Gaussian-mixture
// Delta_2 is sqrt(2)/N, not 1/N (Imtiaz and Sarwate 2018b app. C states a spectral-norm
// bound, which the Gaussian mechanism cannot use), and the LDA Delta_3 of
// DeCarolis et al. 2020 misses two of the three placements of the changed word.
//
// # Sensitivities
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
// permutations (Imtiaz and Sarwate 2018a Algorithm 1 steps 5-6). Mirroring is
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
// (c c^T - diag c)/(l(l-1)) and P3_n (DeCarolis et al. 2020 eq. 8; the symmetrised
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
// gives Delta_2 <= sqrt(2)/N ("a a" -> "b b"). This agrees with Imtiaz and Sarwate 2018a
// sec. 2 and Imtiaz and Sarwate 2018b app. C, whose argument (one-hot t1 (x) t2 (x) t3) is
// the FirstThree case.
//
// (S2) Gaussian mixture, rows ||x|| <= 1, variance sigma2 (Imtiaz and Sarwate 2018b app.
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
// full one). Per Imtiaz and Sarwate 2018a Algorithm 1, AVN gives all of delta to M2.
//
// (S4) DP-TPM (Wang and Anandkumar 2016 Algorithm 3, nu as in Imtiaz and Sarwate 2018a sec. 4) runs on
// T = M3(W,W,W) with W from the Analyze-Gauss M2 (already private, hence
// public for the second stage). Each query f1(u) = T(I,u,u) =
// W^T M3(I, Wu, Wu) and f2(u) = M3(Wu, Wu, Wu) is released with Gaussian
// noise calibrated to its sensitivity at u (STMDPTPMSensitivity,
// MOGDPTPMSensitivity): with v = Wu and r_W = max_a ||W^T e_a||,
// Delta f1 <= 2 r_W ||v||_inf^2 / N and Delta f2 <= 2 ||v||_inf^3 / N for
// the single-topic model (P(I,v,v) is a convex combination of e_a v_b v_c).
// This is Imtiaz and Sarwate 2018a's 2 ||u||_inf^2 transported to the whitened problem;
// the seeds' version omits W and 1/N. The k L (R+1) queries compose by the
// advanced composition theorem with the per-query epsilon found by exact
// inversion (Wang and Anandkumar 2016's closed form eps/sqrt(K(4+ln(2/delta))) exceeds the
// budget under the theorem by 18-29% at epsilon 1 and the default 550
// queries, more at larger epsilon; see AdvancedCompositionSplit).
//
// (S5) LDA (DeCarolis et al. 2020 Lemma 25, the U-statistic estimators of moments.go):
// M2 = (1/N) sum P2_n - a/(N(N-1)) sum_{n != m} m_n m_m^T and
// M3 = (1/N) sum P3_n - b'/(N(N-1)) sum_{n != m} sym3(P2_n (x) m_m)
// + c/(N(N-1)(N-2)) sum_{distinct n,m,p} m_n (x) m_m (x) m_p, with m_n the
// document's word frequencies, a = alpha0/(alpha0+1), b' =
// alpha0/(alpha0+2), c = 2 alpha0^2/((alpha0+1)(alpha0+2)). Replacing
// document N, with l1 norms of probability vectors/matrices/tensors equal
// to 1 and ||u (x) v||_1 = ||u||_1 ||v||_1: M2 moves by at most
// (2 + 4a)/N in l1 (DeCarolis et al. 2020 Theorem 4, confirmed); M3 by at most
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
// the final topics) of DeCarolis et al. 2020 rest on perturbation bounds with
// unspecified constants (O(.) in Theorems 6-7). They are implemented with
// bounds that can be certified, derived in (S8) in the package documentation
// (config 3: a data-independent random direction theta, released
// Z = [T(I, v_i, v_i)] with a Davis-Kahan local-sensitivity bound released
// privately through Lemma 33, argued as adaptive composition) and (S9)
// in the package documentation (config 4: topics and weights projected onto the
// probability simplex, giving data-independent sensitivities sqrt(2K) and
// sqrt(2); this is a provable stand-in, not the paper's Theorem 7).
//
// lda-decomposition: DeCarolis et al. 2020 configuration 3 (noise on M2 and on the
// output of the tensor decomposition), with a certified local sensitivity.
//
// (S8) What DeCarolis et al. 2020 gives and why it is not used as printed. Theorem 6
// bounds the change of the decomposition's output by
// O(k^2 / (gamma_s N sigma_k(M2)^{3/2})): an O(.) with unspecified
// constants, resting on Theorem 5 (whose step ||M3(W,W,W) -
// M3(W',W',W')|| <= ||M3|| ||W - W'||^3 is wrong, see (S6)) and on the
// perturbation theorem of the simultaneous power method, which is stated
// for orthogonally decomposable tensors (the empirical whitened tensor is
// not) and for the exact decomposition (the robust power method with
// random restarts is not a fixed function of the data). The quantities
// sigma_k(M2) and gamma_s are data-dependent, so the bound is a local
// sensitivity and needs Lemma 33. We keep that route (Lemma 33) but
// replace the decomposition by one whose local sensitivity we can bound
// with explicit constants.
//
// (S8.1) The released function. W is the private whitening matrix of the
// first stage (noisy M2, as in lda-whitened; public afterwards) and
// T = M3(W,W,W) the K x K x K whitened tensor of the corpus. theta is a
// unit vector in R^K drawn from the noise source, independent of the data
// (public). The decomposition is that of excess correlation analysis
// (Anandkumar, Foster, Hsu, Kakade and Liu 2012, the original spectral LDA
// algorithm) followed by one tensor power step: v_1..v_K are the unit
// eigenvectors of the symmetric K x K matrix M = T(I,I,theta) with
// eigenvalues mu_1 >= ... >= mu_K, and the released output is the K x K
// matrix Z with columns z_i = T(I, v_i, v_i). z_i does not depend on the
// sign of v_i, so the eigenvectors' sign ambiguity does not enter the
// sensitivity. For an orthogonally decomposable T = sum lambda_i
// u_i^(x)3 with distinct mu's, v_i = +-u_i and z_i = lambda_i u_i: the
// decomposition's eigenvalues and eigenvectors are lambda_i = ||z_i||,
// u_i = z_i/||z_i||, and the power step squares the eigenvector error of
// an empirical T. The power method (PowerIteration) is not used here
// because its output's sensitivity cannot be certified.
//
// (S8.2) Global facts for fixed public W, theta (neighbours: one document
// replaced). With Delta_3 the l1 sensitivity of M3 (S5) and
// r_W = max_a ||W^T e_a||:
//
//	||Delta T||_F <= delta_T = Delta_3 r_W^3                                   (S6)
//	||Delta M||_op <= ||Delta M||_F <= delta_M = Delta_3 r_W^2 ||W theta||_inf
//
// the second because Delta M = Delta M3(W, W, W theta) = sum_abc
// Delta M3_abc (W^T e_a)(W^T e_b)^T (W theta)_c. Hence (Weyl) every mu_j
// moves by at most delta_M, and the minimum eigengap gamma = min_j
// (mu_j - mu_{j+1}) has global sensitivity 2 delta_M; ||T||_F has global
// sensitivity delta_T.
//
// (S8.3) Local sensitivity. Let x' be a neighbour, T' = T + Delta T,
// v_i' the i-th eigenvector of M' = M + Delta M. By Yu, Wang and Samworth
// (2015, Biometrika, Corollary 1; Davis-Kahan) there is a sign s with
// ||v_i - s v_i'|| <= 2^{3/2} ||Delta M||_op / gamma, and trivially some
// sign gives <= sqrt(2); let e = min(sqrt(2), 2^{3/2} delta_M / gamma)
// (e = 0 for K = 1). With u = s v_i' (z_i' = T'(I,u,u) by sign invariance):
//
//	||z_i - z_i'|| <= ||T(I,v,v) - T(I,u,u)|| + ||Delta T(I,u,u)||
//	               =  ||T(I,v-u,v) + T(I,u,v-u)|| + ||Delta T(I,u,u)||
//	               <= 2 ||T||_op e + delta_T <= 2 ||T||_F e + delta_T,
//
// so LS(x) = max_x' ||Z - Z'||_F <= sqrt(K) (2 ||T||_F e(gamma) + delta_T),
// which increases in ||T||_F and decreases in gamma.
//
// (S8.4) Private bound (Lemma 33). The budget is split between stage 1
// (M2, (eps1, delta1)) and stage 2 ((eps2, delta2)) by FitOptions.Split
// (equal by default), as for lda-whitened. Stage 2's (eps2, delta2) is
// split as:
// gamma~ = gamma + Laplace(2 delta_M / eps_g) and F~ = ||T||_F +
// Laplace(delta_T / eps_F), eps_g = eps_F = eps2/6 (pure DP); with b the
// effective Laplace scale of perturb.Laplace (including its grid
// enlargement) and g its grid step, t = b ln(1/delta3) + g gives
// P[gamma~ - t > gamma] = P[F~ + t < ||T||_F] <= delta3/2 each, delta3 =
// delta2/2. LS~ = sqrt(K) (2 max(F~ + t, 0) e(gamma~ - t) + delta_T), with
// e = sqrt(2) when gamma~ - t <= 0, is a post-processing of the two
// releases and is >= LS(x) except with probability <= delta3. Z is
// released with the Gaussian mechanism calibrated to sensitivity LS~ and
// (eps_Z, delta_Z) = (2 eps2/3, delta2/2). Lemma 33 (DeCarolis et al. 2020; its proof is
// the pairwise adaptive composition of Dwork, Rothblum and Vadhan 2010
// applied on the event {LS~ >= ||f(x) - f(x')||}, which contains the event
// LS~ >= LS(x)) makes stage 2 (eps_g + eps_F + eps_Z, delta_Z + delta3) =
// (eps2, delta2)-DP; basic composition with the M2 stage gives (eps,
// delta). For K = 1 there is no gap; eps_g goes to Z.
//
// (S8.5) Limits. The bound is worst-case (l1 sensitivities, ||T||_op <=
// ||T||_F, the minimum gap for every i), so the noise is much larger than
// the typical change, and the contraction's eigengap is smaller than the
// power method's robustness margin: configuration 3 needs far larger
// epsilon than lda-whitened for the same e_comp (measured in
// ldapriv_output_test.go). A numerical failure of the K x K symmetric
// eigendecomposition (not observed for finite input) returns an error.
//
// lda-output: DeCarolis et al. 2020 configuration 4 (noise on the final topics and
// weights only), in the closest variant whose sensitivity can be proved.
//
// (S9) What DeCarolis et al. 2020 gives. Theorem 7 bounds the change of the final
// topics by O(k^2 sqrt(sigma_1(M2)) / (gamma_s N sigma_k(M2)^{3/2})):
// unspecified constants, data-dependent sigma_1, sigma_k and gamma_s, and
// a chain through Theorem 6 (the decomposition's stability, see (S8)) and
// Lemma 32 (the whitening's stability, whose use in Theorem 5 contains
// the wrong cubic step of (S6)). In configuration 4 nothing but the output
// is released, so W itself changes between neighbours and its rotation
// freedom, the un-whitening and the decomposition would all have to enter
// a certified local-sensitivity bound; we have not derived one, so the
// paper's calibration is NOT implemented.
//
// (S9.1) What is implemented instead: public bounds enforced by
// projection. The non-private pipeline (Fit, method "nonprivate": whitened
// path, robust power method, UnwhitenLDA, topics sorted by weight) gives
// A (D x K) and weights w. The released function is
// f(x) = (P(a_1), ..., P(a_K), P(w)), with P the Euclidean projection onto
// the probability simplex (Duchi, Shalev-Shwartz, Singer and Chandra
// 2008). Any two probability vectors p, q satisfy ||p - q||_2^2 <=
// ||p - q||_1 ||p - q||_inf <= 2 * 1, so whatever the data, the power
// method's restarts (coupled between neighbours) or the order of the
// topics:
//
//	||P(A) - P(A')||_F <= sqrt(2K),    ||P(w) - P(w')||_2 <= sqrt(2),
//
// data-independent global sensitivities; in l1, ||p - q||_1 <= 2 gives
// 2K and 2. The topics and the weights are released at (eps1, delta1)
// and (eps2, delta2) of the budget split (equal by default;
// FitOptions.Split gives [topics, weights]), each with whichever of the
// Gaussian mechanism (l2 sensitivity) and the Laplace mechanism (l1
// sensitivity, pure DP; its delta share is then unused and the report's
// total delta is smaller) has the smaller per-entry variance, a choice
// that depends only on K, eps and delta. The l1 sensitivity does not grow
// with D, so Laplace wins for small K and at large epsilon. Basic
// composition gives the total. If the
// non-private pipeline fails numerically on the data (e.g. M2 of rank <
// K), f(x) is the public uniform output (topics 1/D, weights 1/K), so the
// existence of an output reveals nothing; input-validation errors
// (documents shorter than 3 words, too few documents) concern the public
// shape of the input and are returned. After the noise, columns and
// weights are projected onto the simplex again and re-sorted
// (post-processing); Lambda is derived from the weights by the inverse of
// UnwhitenLDA's map (0 where a weight is 0).
//
// (S9.2) Cost. The sensitivity does not fall with N, so the noise per
// entry is min(sqrt(2K) tau(eps1, delta1), 2 sqrt(2) K/eps1) in standard
// deviation: the released topics are useful only at very large epsilon
// (or tiny D K). This is the price of a guarantee
// that holds without any condition on the data; a Lemma 33 variant with a
// data-dependent bound that falls as 1/N is not provided.
//
// (S10) agn-whitened: the single-topic model at real vocabulary sizes,
// with no D x D x D (or D x D) array. Neighbours: corpora of N documents
// (each with at least 3 words of the public vocabulary after the public
// stop-word list) differing in one document; N is public. Every document
// d contributes to each release through a clipped term of norm at most a
// public bound C, always with weight 1/N (a document whose clipped term
// is zero, e.g. one left with fewer than 3 selected words, still counts
// in N), so replacing one document moves a release by at most
// (||x_d|| + ||x_d'||)/N <= 2C/N, or sqrt(2) C/N when both terms are
// non-negative vectors (||x - x'||^2 <= ||x||^2 + ||x'||^2 because
// <x, x'> >= 0). The clip of a term x with bound C is min(1, C/B(x)) x,
// with B(x) >= ||x|| computed from the document alone, so the clipped term
// has norm <= C whatever the document. Three releases, by basic
// composition (eps0 + eps1 + eps2, delta0 + delta1 + delta2), split
// 0.1/0.6/0.3 by default (FitOptions.Split); all three use perturb's
// Gaussian mechanism.
//
// Stage 0 (vocabulary selection, only when D > PrivateOptions.Vocab = V):
// m = (1/N) sum_d clip(c_d / l_d, C1), C1 = 1/sqrt(L) (ClipLen L, default
// 20), released with l2 sensitivity sqrt(2) C1 / N (frequency vectors are
// non-negative); the V words of largest noisy value are kept
// (post-processing). Documents are restricted to these words.
//
// Stage 1 (whitening): E2 = (1/N) sum_d clip(P2_d, C2) over the selected
// words, P2_d = (c c^T - diag c)/(l(l-1)) (l >= 2 selected tokens, else
// 0), C2 = 1/sqrt(L(L-1)), with B = ||P2_d||_F exactly:
// ||c c^T - diag c||_F^2 = (sum c_i^2)^2 - 2 sum c_i^3 + sum c_i^2.
// Released by Analyze Gauss on the upper triangle with sensitivity
// sqrt(2) C2 / N (P2_d >= 0; the upper triangle's norm is at most the
// Frobenius norm). W = WhitenSVD(noisy E2) is public for stage 2.
//
// Stage 2 (whitened tensor): T = (1/N) sum_d clip(P3_d(W,W,W), C3),
// P3_d the distinct-position triple distribution of (S1), C3 = kappa
// K^{3/2} (ClipM3 kappa, default 1: the whitened third moment of a topic
// of weight 1/K, W^T mu_k having norm 1/sqrt(w_k) when W^T M2 W = I).
// The bound B is the smaller of two upper bounds on ||P3_d(W,W,W)||_F
// (>= the packed norm), with y = W^T c, r_i = ||W^T e_i||, S_p =
// sum_i c_i r_i^p and L3 = l(l-1)(l-2):
//
//	(||y||^3 + 3 ||y|| S_2 + 2 S_3) / L3
//	    (inclusion-exclusion: P3_d L3 = c^(x)3 - sym3 sum_i c_i e_i e_i c
//	     + 2 sum_i c_i e_i^(x)3, each term bounded by the triangle inequality)
//	(S_1^3 - 3 S_2 S_1 + 2 S_3) / L3
//	    (P3_d(W,W,W) is the average over distinct position triples of
//	     w_p (x) w_q (x) w_r, each of norm r_p r_q r_r)
//
// and the unclipped term has norm <= r_W^3 (r_W = max_i r_i, as in the
// first line of (S6)). The packed tensor is released with sensitivity
// 2 min(C3, r_W^3)/N: the whitened terms have signs, so the
// non-negativity argument does not apply. The power method and
// un-whitening are post-processing; topics are zero outside the selected
// words.
//
// Clipping is a weighting: the released moments are weighted averages
// that give short or repetitive documents less weight, so M2 = sum w_k
// mu_k mu_k^T holds only approximately (exactly when no document is
// clipped). The privacy guarantee does not depend on the model.
// TestAGNWhitenedNeighbours replaces one document (including the
// extreme cases of each bound) and checks every release's change against
// its sensitivity (also the weight means of (S11)).
//
// (S11) agn-whitened for LDA (Model "lda"). Stage 0 is that of (S10).
// Stage 1 releases E2 (as (S10) stage 1, share 0.8 of the stage), the
// clipped frequencies E1 = (1/N) sum_d clip(c_d/l_d, C1) of the selected
// words (share 0.15, sensitivity sqrt(2) C1 / N) and the clip-weight
// means rho1, rho2 (rho = (1/N) sum_d s_d with s_d in [0, 1] the factor
// the clip applied, 0 for a document that adds nothing; share 0.05, l2
// sensitivity sqrt(2)/N for the pair). Stage 2 releases the clipped
// whitened triples (share 0.9, (S10) stage 2) and rho3 (share 0.1,
// sensitivity 1/N). The LDA moments of DeCarolis et al. 2020 Lemma 25 are formed by
// post-processing, each clipped moment divided by its weight mean (a
// ratio estimator, exact when the clip factors are independent of the
// documents' topics; a released mean is floored at 1/N):
//
//	M2 = E2/rho2 - a (E1/rho1)(E1/rho1)^T
//	T  = E3(W,W,W)/rho3 - b' sym3(W^T (E2/rho2) W (x) W^T E1/rho1) + c (W^T E1/rho1)^(x)3
//
// with a, b', c of (S5) and W from M2 (WhitenSVD). The products over
// distinct documents of the U-statistics are replaced by products of the
// means (a relative difference O(1/N)). Six releases, basic composition.
//
// Warning (post-processing of released values). A symmetric V x V noise
// matrix with i.i.d. N(0, sigma^2) upper triangle has spectral norm about
// 2 sigma sqrt(V) (for the D x p sketch of (S7), sigma (sqrt(D) +
// sqrt(p))). When the K-th singular value s_K of the released matrix is
// below twice that level, the K-th direction of the whitening is mostly
// noise, and the report carries a warning with the number of directions
// above twice the noise and an estimate of the N that would lift the K-th
// to twice the noise: the signal is estimated as sqrt(s_K^2 - level^2)
// and the noise level scales as 1/N (the moments do not depend on N);
// when no K-th signal is detectable (s_K <= level) the warning says so
// and asks for many more than 2N documents or a smaller K.
//
// # Determinism and concurrency
//
// All randomness (power-method restarts, randomized whitening, private
// noise when seeded) comes from the rand.Source argument, so a seed gives
// identical results. Functions do not share mutable state; values returned
// are owned by the caller. Nothing in the package prints.
package otd
