// Package perturb is the one place in dprec where differential-privacy
// noise is drawn, calibrated, checked and accounted. It implements the
// mechanisms of the seed papers (Laplace, Gaussian, the l2-norm or K-norm
// mechanism, symmetric matrix and tensor noise), their calibrations, a
// floating-point-safe sampling layer, a privacy accountant with a budget,
// and the privacy Report every private result of dprec carries. It imports
// only the standard library and gonum; completion and otd build on it.
//
// # Definitions
//
// A randomised algorithm M is (epsilon, delta)-differentially private
// under a neighbouring relation ~ if P[M(D) in S] <= e^epsilon P[M(D') in
// S] + delta for all D ~ D' and all measurable S (delta = 0: pure
// epsilon-DP). The relation is the caller's: this package sees only
// sensitivities, the largest change of the released quantity f between
// neighbours, Delta_p = max_{D~D'} ||f(D) - f(D')||_p.
//
// # Mechanisms
//
// Laplace (NewLaplace). f + n with n_i i.i.d. Laplace(b), b =
// Delta_1/epsilon, density (1/2b) e^(-|n|/b). For neighbours the density
// ratio at any output y is prod_i e^((|y_i - f'_i| - |y_i - f_i|)/b) <=
// e^(||f - f'||_1 / b) <= e^epsilon (triangle inequality), so it is pure
// epsilon-DP. Pure mechanisms reject a non-zero delta (CheckNoDelta)
// rather than ignore it.
//
// Gaussian (NewGaussian, NewGaussianSigma). f + n with n_i i.i.d. N(0,
// sigma^2). Its privacy depends only on mu = Delta_2/sigma: the privacy
// loss L = log(p(y)/p'(y)) for y ~ M(D) is N(mu^2/2, mu^2), and Balle and
// Wang (2018, Theorem 8) show the mechanism is (epsilon, delta)-DP iff
//
//	Phi(Delta/(2 sigma) - epsilon sigma/Delta) - e^epsilon Phi(-Delta/(2 sigma) - epsilon sigma/Delta) <= delta.   (BW)
//
// Three calibrations (type Calibration; DeCarolis et al. 2020 appendix A):
//
//   - Analytic (default): the smallest sigma satisfying (BW), found by
//     bisection to relative precision 1e-13, returning the upper end of the
//     bracket so (BW) always holds (DeltaForGaussian evaluates the left
//     side with erfc, accurate in the tails; delta below 1e-100 is refused
//     because the terms underflow). For (epsilon, delta) = (1, 1e-5),
//     Delta = 1 it gives 3.7306.
//   - Classic: sigma = Delta sqrt(2 ln(1.25/delta))/epsilon (Dwork and Roth
//     2014, Theorem A.1; DeCarolis et al. 2020 Proposition 22), valid only for epsilon
//     <= 1, so larger epsilon is refused. (1, 1e-5): 4.8448.
//   - Tight: DeCarolis et al. 2020 prints sigma = Delta (sqrt(epsilon + log(1/delta)) +
//     sqrt(log(1/delta)))/(2 epsilon). That is NOT differentially private
//     as printed: at (1, 1e-5) it gives 3.465 < 3.7306, the analytic
//     optimum, and TestCalibrationGrid finds it below the optimum on most
//     of a grid of epsilon in [1e-3, 10], delta in [1e-12, 1e-2]. The
//     correct closed form has denominator sqrt(2) epsilon. Derivation:
//     it suffices that P[L > epsilon] <= delta (then for every S,
//     P[M(D) in S] <= e^epsilon P[M(D') in S] + P[L > epsilon]). With L ~
//     N(mu^2/2, mu^2), P[L > epsilon] = P[Z > (epsilon - mu^2/2)/mu], and
//     the Chernoff bound P[Z > t] <= e^(-t^2/2) (t >= 0) makes it at most
//     delta when (epsilon - mu^2/2)/mu >= sqrt(2 ln(1/delta)). Writing l =
//     ln(1/delta), this is mu^2/2 + mu sqrt(2l) - epsilon <= 0, i.e. mu <=
//     sqrt(2)(sqrt(l + epsilon) - sqrt(l)), i.e.
//     sigma = Delta/mu >= Delta (sqrt(l + epsilon) + sqrt(l))/(sqrt(2) epsilon).
//     Tight computes this corrected form (4.9006 at (1, 1e-5)); the grid
//     test confirms it is never below the optimum, and the printed form is
//     kept only as TightSigmaAsPrinted to document the typo.
//
// NewGaussianSigma builds a Gaussian with a given sigma for steps whose
// privacy is accounted by Renyi DP (its Release has epsilon = delta = 0).
//
// The l2-norm mechanism (NewL2Noise; Wei et al. 2021 Algorithms 2 and 3, Imtiaz and Sarwate 2018a
// AVN; Hardt and Talwar 2010). f + n with n in R^d of density p(n) =
// (1/alpha) exp(-epsilon ||n||_2 / Delta), Delta the l2 sensitivity. It is
// pure epsilon-DP: for neighbours and any y, p(y - f)/p(y - f') =
// exp(epsilon (||y - f'|| - ||y - f||)/Delta) <= exp(epsilon ||f - f'||
// /Delta) <= e^epsilon by the triangle inequality; integrating over S gives
// the definition. Sampling: p depends on n only through r = ||n||, so n =
// r u with u uniform on the unit sphere (a normalised vector of i.i.d.
// standard normals, whose law is rotation invariant), and in polar
// coordinates the volume element is r^(d-1) dr du, so r has density
// proportional to r^(d-1) e^(-epsilon r/Delta): Gamma(shape d, scale
// Delta/epsilon). The expected norm is d Delta/epsilon, which is why this
// mechanism is costlier per coordinate than Laplace in high dimension.
//
// Symmetric noise. SymmetricGaussianMatrix draws the Analyze-Gauss noise of
// seeds 000/002: the d(d+1)/2 upper-triangle entries (diagonal included)
// i.i.d. N(0, sigma^2), mirrored. Its guarantee is the Gaussian mechanism
// on the vector of upper-triangle entries: sigma must be calibrated to the
// l2 sensitivity of that vector, which is at most the Frobenius sensitivity
// of the whole matrix (off-diagonal entries count once instead of twice).
// SymmetricTensorFromPacked builds a symmetric d x d x d tensor from a
// packed vector b of D_sym = C(d+2, 3) entries (SymPackedSize), in the
// lexicographic order of sorted triples i <= j <= k: (0,0,0), (0,0,1), ...,
// (0,0,d-1), (0,1,1), ..., (d-1,d-1,d-1) (SymPackedIndex maps any triple
// to its position). b is drawn Gaussian (GaussianPacked, AGN) or l2-norm
// (L2Packed, AVN, Imtiaz and Sarwate 2018a step 5); the guarantee is that of the vector
// mechanism on the packed unique entries, as Imtiaz and Sarwate 2018a's Theorem 1 argues.
//
// # Floating point (Mironov 2012)
//
// Textbook samplers (b log U for Laplace, Box-Muller for Gaussian) produce
// doubles whose set of reachable values, after adding them to f(D), depends
// on f(D): Mironov (CCS 2012) recovered inputs exactly from such outputs.
// The threat model is Google's (common_docs/attack_model.md): the attacker
// sees released values bit for bit and may choose inputs; side channels
// (timing, memory, the state of the generator) are out of scope. The
// mitigation is Google's construction: noise lives on a power-of-two grid
// g = Granularity(scale), the smallest power of two >= scale/2^40, and
//
//   - Laplace.AddTo snaps every input to the grid (round to the nearest
//     multiple of g; exact in float64 since g is a power of two) and adds
//     k g with k drawn from the discrete Laplace (two-sided geometric)
//     P(k) ~ e^(-lambda |k|). The geometric is sampled as floor(E/lambda),
//     E = -log U, with U drawn at full relative precision at every
//     magnitude (signAndUniform, uniformOpen), so the far tail has no
//     gaps. Snapping moves each coordinate by at most
//     g/2, so snapped neighbours differ by at most Delta_1 + n g in l1
//     (n = len(x)), and lambda is set to g epsilon/(Delta_1 + n g): the
//     discrete mechanism on the lattice gZ^n is then exactly epsilon-DP by
//     the same density-ratio argument as above. Every output is an exact
//     multiple of g, whatever the input's low bits (TestOutputsOnGrid).
//   - Gaussian.AddTo does the same with a discrete Gaussian on the grid,
//     sampled by the exact rejection sampler of Canonne, Kamath and Steinke
//     (NeurIPS 2020, Algorithm 3), with sigma scaled by (Delta_2 + sqrt(n)
//     g)/Delta_2 to cover snapping. CKS (Theorem 4) show the discrete
//     Gaussian satisfies the same Renyi bound, alpha mu^2/2, so RDP and
//     zCDP accounting are exact for it. The single-release (epsilon, delta)
//     of the analytic calibration is computed for the continuous Gaussian;
//     at sigma/g >= 2^39 the discrete law differs from the continuous one
//     by far less than float64 resolution, and an auditor who wants a
//     bound proved for the discrete law can use the RDP total instead.
//   - Gaussian.AddToFast (bulk noise for minibatch and per-entry DP-SGD
//     and private ALS, fastnoise.go) snaps inputs the same way and rounds
//     a ziggurat normal (ziggurat.go, from a ChaCha8 keyed from
//     crypto/rand, Noise.FastSource) to the grid. Rounding alone is not
//     enough: a normal with 32 random bits (math/rand/v2's NormFloat64,
//     which this path used before) is a multiple of x_i 2^-31, about 2^9
//     grid steps, so the snapped noise reaches only a sparse subset of the
//     grid and the set of reachable outputs moves with the input. The
//     ziggurat here dithers each draw within that step with 25 further
//     random bits, so the normal is resolved to float64 precision and every
//     grid point of the body of the law is reachable (TestZigguratDither).
//     The tail beyond r = 3.44 sigma (probability 5.8e-4) draws both of
//     its uniforms with full relative precision (zigTail): with 53-bit
//     fixed-point uniforms, as before, beyond about 6.4 sigma only part of
//     the grid was reachable (13.5% of cells at 7 sigma) and nothing beyond
//     12.09 sigma, so the reachable set moved with the input there too
//     (TestZigguratTailGrid counts the cells from 6 to 20 sigma). What
//     holds now: every grid point within 41 sigma of the snapped input is
//     reachable (the acceptance uniform goes down to 2^-1022, so y <= 708),
//     none beyond; two inputs whose snapped values differ by Delta have
//     reachable sets that differ only beyond 41 sigma - Delta from one of
//     them, a region of noise probability below exp(-(41 - Delta/sigma)^2/2)
//     (10^-200 at Delta/sigma = 10, 10^-95 at 20; an analytic Gaussian at
//     epsilon 100 and delta 1e-5 has Delta/sigma near 10), an additive
//     delta far below any that is claimed. Outputs are exact multiples of g. The
//     noise law is the
//     floating-point normal rounded to the grid rather than the exact
//     discrete Gaussian. This is a
//     deliberate, stated deviation (Opacus and TF-Privacy draw the same
//     kind of normal); the guarantee proved is that of the continuous
//     Gaussian mechanism, to the accuracy of the ziggurat sampler.
//   - The acceptance test of the discrete Gaussian and the logarithm of the
//     geometric are computed in float64; their rounding perturbs
//     probabilities by relative 2^-52 but creates no input-dependent
//     support, which is what the attack needs.
//   - L2Noise (and L2Packed) has no exact discrete sampler: AddTo snaps the
//     input, draws the continuous noise (radius scale enlarged to (Delta +
//     sqrt(d) g)/epsilon to cover the snapping) and snaps the noise to the
//     grid, so outputs are grid points. What holds: the discretised
//     mechanism (the continuous law of that scale rounded to the grid) is
//     epsilon-DP in exact arithmetic (the pointwise density ratio
//     integrates over grid cells); every random quantity of the draw is
//     resolved to float64 precision, so the noise has no lattice and every
//     grid point of the body of its law is reachable: the direction's
//     normals and the normal of the Gamma radius's Marsaglia-Tsang
//     proposal are the dithered ziggurat normals of AddToFast (l2Normal),
//     and the radius of dimension 1 is -log U with U at full relative
//     precision (TestL2NoiseReachesGrid sweeps one draw's low bits across
//     consecutive grid points). Until this round the direction and the
//     radius used math/rand/v2's NormFloat64 and ExpFloat64, 32 random
//     bits each: in dimension 1 (direction +-1) the noise took values about
//     2^7-2^10 grid steps apart within each ziggurat layer, the sparse,
//     input-independent reachable set the attack needs. What does not hold: no proof covers the
//     floating-point computation of the draw before rounding (Mironov's
//     snapping with its formal clamp is not implemented); the reports of
//     the modes that use it say so (L2NoiseNote).
//   - Sample methods return noise only (on the grid); adding it to an
//     unsnapped value forfeits the mitigation, so releases should use
//     AddTo. SymmetricGaussianMatrix and GaussianPacked return grid noise;
//     callers release Snap(M, g) + E with g = Granularity(sigma).
//   - Out of scope, as in Google's library (issue #126): rounding and
//     re-ordering attacks on floating-point sums computed before the
//     mechanism (e.g. the moments or the gradients themselves).
//
// # Accounting
//
// Accountant records every release (mechanism, sensitivity norm and value,
// scale, epsilon, delta, count) and composes them by:
//
//   - Basic: epsilon = sum epsilon_i, delta = sum delta_i (DeCarolis et al. 2020
//     Proposition 23). Needs every release to carry (epsilon_i, delta_i).
//   - Advanced (Dwork, Rothblum and Vadhan 2010; Dwork and Roth Theorem
//     3.20): k-fold adaptive composition of epsilon-DP releases is
//     (sqrt(2k ln(1/delta')) epsilon + k epsilon (e^epsilon - 1),
//     k delta_i + delta')-DP; heterogeneous releases use the largest
//     epsilon_i (each is max-epsilon-DP, so this is valid and conservative);
//     the slack delta' is the target delta minus sum delta_i.
//   - RDP (Mironov 2017): orders alpha on a grid from 1.1 to 65536; curves
//     epsilon(alpha) = alpha Delta^2/(2 sigma^2) for Gaussian steps,
//     Mironov's exact Laplace curve for Laplace steps, and min(epsilon,
//     alpha epsilon^2/2) for other pure epsilon-DP steps (Bun and Steinke
//     2016, Proposition 3.3: epsilon-DP implies epsilon^2/2-zCDP); RDP adds
//     over releases; conversion by Canonne, Kamath and Steinke (2020,
//     Proposition 12): (alpha, tau)-RDP implies (epsilon, delta)-DP with
//     epsilon = tau + log((alpha-1)/alpha) - (log delta +
//     log alpha)/(alpha-1), the conversion Opacus adopted (issue #157); it is below
//     Mironov's tau + log(1/delta)/(alpha - 1) at every order since both
//     extra terms are negative. Releases with delta > 0 that are not
//     Gaussian have no RDP curve and make this method inapplicable.
//   - GDP (Dong, Roth and Su 2022, Corollary 3.3): Gaussian releases with
//     ratios mu_i compose exactly (also adaptively) to sqrt(sum mu_i^2)-GDP,
//     whose (epsilon, delta) curve is (BW); used only when every release is
//     Gaussian, and then exact.
//
// Total(delta) returns the smallest epsilon of the methods that apply with
// total delta <= delta, and names the method; TotalBy applies one method.
// Budget.Admit refuses (ErrBudget) a plan whose releases exceed the user's
// (epsilon, delta), before any noise is drawn; GaussianSigmaForBudget
// solves for the smallest sigma whose RDP composition over a number of
// steps fits (GDP variant: sqrt(steps) times the analytic sigma, exactly
// optimal), and PerStepEpsilon splits a budget over pure-DP steps by basic,
// advanced or RDP composition. Subsampling amplification is not
// implemented: every step is accounted as if it touched the protected
// record.
//
// # Validation
//
// Every constructor validates its parameters and returns an error wrapping
// one of ErrEpsilon, ErrDelta, ErrSensitivity, ErrDimension, naming the
// parameter, its value and the rule: epsilon finite in [2^-50, 700] (the
// lower bound is Google's; above 700 e^epsilon overflows), delta in [0, 1)
// (0 required for pure mechanisms, > 0 and >= 1e-100 for Gaussian
// calibrations), sensitivities and sigma finite and > 0, dimensions >= 1.
// Programmer shape errors (a destination of the wrong length, a packed
// vector of the wrong size) panic, as in gonum.
//
// # Reference implementation
//
// Google's DP library (github.com/google/differential-privacy/go/v3
// v3.0.0) is the reference the tests hold this package against; it is a
// test dependency, not the sampler. TestAnalyticSigmaMatchesGoogle checks
// the analytic Gaussian calibration against its SigmaForGaussian (within
// its 1e-3 bisection accuracy) over sensitivities, epsilons 0.1-100 and
// deltas 1e-3-1e-9; TestSamplersMatchGoogle compares Gaussian.AddTo (the
// exact discrete Gaussian), Gaussian.AddToFast (the bulk ziggurat, secure
// and seeded) and Laplace.AddTo with its Gaussian and Laplace samplers by
// two-sample Kolmogorov-Smirnov tests, with a control that a 10% scale
// error is detected. perturb keeps its own samplers because Google's read
// crypto/rand for every draw and take no rand.Source: they can be neither
// seeded (reproducible experiments, reports marked NOT private) nor driven
// by the per-goroutine ChaCha8 stream that makes bulk noise cost 10 ns a
// coordinate.
//
// # Randomness
//
// Every sampler takes a *math/rand/v2.Rand. Production noise comes from
// SecureSource, a rand.Source reading crypto/rand through a 64 KiB
// mutex-guarded buffer; it panics if crypto/rand fails rather than fall
// back to anything weaker (Google's library exits; the rand.Source
// interface cannot return an error). SeededSource(seed) and
// StreamSource(seed, stream) are reproducible PCG sources for tests and
// experiments; results drawn from them are NOT private and reports say so
// (RandomnessLabel). Two mechanisms, workers or epochs never share one
// stream: callers derive a distinct stream id for each (sharing a stream
// correlates noise and breaks DP; diffprivlib issue #31), and
// TestStreamsUncorrelated checks |corr| < 3/sqrt(n) between streams.
//
// Provenance is the one place that decides whether noise is private:
// ProvenanceOf(src) (SecureSource or nil: secure; anything else: seeded),
// Noise (a secure or seeded selection whose Source gives per-stream
// sources), and Report.Provenance, which reads a report's label back by
// exact match. Report.Check recomputes every release's epsilon (delta)
// from its mechanism, scale and sensitivity and the composed total, and
// lists disagreements (an edited or inconsistent report).
//
// # Concurrency
//
// Mechanism values (Laplace, Gaussian, L2Noise) are immutable and safe for
// concurrent use; a *rand.Rand is not, so each goroutine needs its own
// (SecureSource itself is safe for concurrent use). Accountant is not safe
// for concurrent use.
package perturb
