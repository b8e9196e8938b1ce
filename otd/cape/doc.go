// Package cape implements the correlation assisted private estimation
// (CAPE) protocol and the distributed private factorisations built on it,
// after Imtiaz and Sarwate, "Distributed Differentially Private Algorithms
// for Matrix and Tensor Factorization" (Imtiaz and Sarwate 2018b): Algorithm 1 (CAPE),
// Lemma 1, the unequal-site extension of Section III-A, Proposition 1,
// capePCA (Algorithm 2) and capeAGN (Algorithm 3), with the conventional
// (conv), single-site (local) and non-private pooled baselines.
//
// # Roles and transport
//
// Three roles are separate types that share no state and talk only
// through the Transport interface (Send / Recv of a Message): the Site
// (holds data, draws its own noise g_s), the untrusted Aggregator (draws
// f_s, subtracts it, combines) and the trusted NoiseGenerator (draws the
// correlated e_s with sum_s mu_s e_s = 0). LocalNetwork is the in-process
// transport (roles as goroutines, RunLocal); HTTPTransport carries the same
// messages between processes. Message order per stage: site -> aggregator
// hello (N_s, epsilon_s, delta_s); aggregator -> noise, sites: plan;
// noise -> site: e_s; aggregator -> site: f_s (and W in capeAGN's second
// stage); site -> aggregator: a^_s = f(x_s) + e_s + f_s + g_s.
//
// Each site recomputes its own tau_s from the public job and refuses a plan
// that under-calibrates it, and checks the plan's feasibility (Plan.Check).
// The aggregator checks each hello against public bounds (Job.CheckSpec:
// 1 <= N_s <= Aggregator.MaxRows, epsilon_s > 0 finite, delta_s in (0, 1),
// finite tau_s) and excludes a site that fails them, sends an unparsable
// hello or a malformed release (wrong length, NaN or Inf), reporting it in
// Outcome.Excluded; the run continues while Aggregator.MinSites remain.
// Between processes every message is bound to one run (see "Threat
// model").
//
// # Variances (Section III-A, derived)
//
// Site s needs (epsilon_s, delta_s)-DP for a statistic of l2 sensitivity
// Delta_s (a function of N_s), so the Gaussian mechanism needs variance
// tau_s^2 = sigma(Delta_s, epsilon_s, delta_s)^2 (perturb.GaussianSigma;
// the seed uses the classic calibration, dprec defaults to the analytic
// one). The aggregator combines a_ag = sum_s mu_s (a^_s - f_s) = sum_s mu_s
// a_s + sum_s mu_s e_s + sum_s mu_s g_s with weights mu_s > 0, sum 1
// (default N_s/N, which makes sum mu_s a_s the pooled statistic). The
// constraints are
//
//	(C1) tau_f,s^2 + tau_g,s^2 >= tau_s^2   (colluding sites know e_s, see f_s + g_s)
//	(C2) Var(e_s)  + tau_g,s^2 >= tau_s^2   (the aggregator knows f_s, sees e_s + g_s)
//	(C3) sum_s mu_s^2 tau_g,s^2 = tau_c^2   (aggregate noise = pooled-data noise)
//	(C4) sum_s mu_s e_s = 0                 (the correlated noise cancels)
//
// The printed solution has typos (its "tau_eS" for s in [S-1] reuses the
// S-th site's symbols; Section V's tau_2e and tau_2f are defined in terms of
// each other). It is derived here from the constraints instead:
//
// Step 1, tau_c. The aggregate must protect every site at its own level:
// one record of site s moves sum mu_t a_t by mu_s Delta_s, so the aggregate
// noise needs tau_c^2 >= mu_s^2 tau_s^2 for all s. The smallest such value
// is taken: tau_c^2 = max_s mu_s^2 tau_s^2. With mu_s = N_s/N, Delta_s =
// c/N_s and a common (epsilon, delta) every mu_s^2 tau_s^2 equals the
// pooled-data variance (c/N)^2 k^2, so tau_c is exactly the pooled value of
// Lemma 1; for equal sites tau_c^2 = tau_s^2/S^2.
//
// Step 2, g. (C3) fixes only the weighted sum of the tau_g,s^2. Taking them
// proportional to tau_s^2, tau_g,s^2 = tau_s^2 tau_c^2 / Q with Q = sum_t
// mu_t^2 tau_t^2, satisfies (C3) (sum mu_s^2 tau_g,s^2 = tau_c^2 Q/Q) and
// gives tau_g,s^2 <= tau_s^2 because tau_c^2 = max_t mu_t^2 tau_t^2 <= Q.
// For equal sites Q = S tau_s^2/S^2, so tau_g^2 = tau_s^2/S: eq. (2).
//
// Step 3, f. (C1) with equality: tau_f,s^2 = tau_s^2 - tau_g,s^2 >= 0 (eq.
// (2): (1 - 1/S) tau_s^2). f_s is subtracted exactly by the aggregator, so
// it costs no accuracy.
//
// Step 4, e. (C4) is met by construction: the generator draws z_s i.i.d.
// N(0, sigma_z^2) and sets w_s = z_s - (1/S) sum_t z_t (so sum w_s = 0) and
// e_s = w_s / mu_s (so sum mu_s e_s = 0). Then Var(e_s) = (1 - 1/S)
// sigma_z^2 / mu_s^2, and (C2) holds for all s with sigma_z^2 = max_s
// mu_s^2 (tau_s^2 - tau_g,s^2) / (1 - 1/S). For equal sites sigma_z^2 =
// tau_s^2/S^2 and Var(e_s) = (1 - 1/S) tau_s^2: eq. (2), and this is the
// seed's "e_s <- e^_s - (1/S) sum e^_t". Over-sizing e costs no accuracy
// either (it cancels), so the one max over sites is harmless.
//
// Plan.Check verifies (C1)-(C3) and tau_c^2 >= mu_s^2 tau_s^2 numerically;
// the tests check it on random instances, check eq. (2) exactly, and
// measure (C2), (C3) and (C4) on protocol runs.
//
// # Zero-sum noise in floating point
//
// perturb's Gaussian sampler returns exact multiples n g of a power-of-two
// grid step g. ZeroSumNoise splits T = sum n_s into integers m_s (floor or
// ceiling of T/S, the extra units starting at a random site) and sets w_s =
// (n_s - m_s) g: the sum is zero in integer arithmetic, and since every
// partial sum is an integer multiple of g below 2^53 g (MaxSites), float64
// sums of the w_s are exactly zero in any order. For equal weights e_s =
// S w_s is again exact, and sum_s e_s == 0 bit for bit. For unequal weights
// w_s / mu_s is not a multiple of g in general; it is snapped to the grid g
// (perturb.Snap), so every e_s is a grid multiple, and |sum mu_s e_s| is
// at most g/2 sum mu_s = g/2 (plus the rounding of the products), about
// sigma_z 2^-41, negligible against tau_c (the tests bound it by g). The
// floor/ceiling split perturbs each w_s by less than g, about sigma 2^-40.
//
// In the aggregate the cancellation happens after each site has rounded
// a_s + e_s + f_s + g_s to float64, so the aggregate carries an extra
// rounding error of order 2^-53 max|a^_s|, negligible against tau_c.
//
// # Drop-out
//
// A site that leaves after its noise was distributed (its transport closes,
// or it misses the aggregator's per-stage timeout) or sends a malformed
// release (wrong length, NaN or Inf; also listed in Outcome.Excluded) is
// detected by the aggregator, listed in StageResult.Dropped and left out of
// later stages.
// The remaining releases keep their individual (epsilon_s, delta_s)
// guarantee (post-processing of each a^_s), but their e_s no longer
// cancel: with r of S sites present the e part adds sigma_z^2 r (S - r)/S
// to sum mu_s^2 tau_g,s^2, and the estimate is renormalised by the present
// weights (Plan.AggregateVar, reported as StageResult.Variance). For equal
// sites this is tau_s^2 (1 + S - r)/(r S) <= tau_s^2/r, the conventional
// scheme's variance over r sites: the estimate falls back to (at least)
// conventional accuracy, as the seed says after Proposition 1.
//
// # Sensitivities
//
// Neighbouring relation: two data sets differing in one record (row or
// document) of one site, replaced by another valid record (a row of l2
// norm at most 1, checked by every site; a document of at least 3 words).
// N_s is public: the site declares it in its hello and the aggregator
// bounds it by MaxRows. Noise is added to a packed vector of Job.Length
// values (a symmetric matrix as its D(D+1)/2 upper-triangle entries, a
// symmetric tensor as its C(D+2,3) entries i <= j <= k), so Delta_s
// (Job.Sensitivity) is the l2 sensitivity of that vector.
//
// (D1) Mean (JobMean). Replacing row x by x' moves the mean by (x - x')/N_s,
// and ||x - x'|| <= ||x|| + ||x'|| <= 2: Delta_s = 2/N_s, attained by
// x' = -x.
//
// (D2) capePCA (JobPCA), the upper triangle of A_s = X_s^T X_s / N_s.
// Replacing x by y moves A_s by (x x^T - y y^T)/N_s, and
//
//	||x x^T - y y^T||_F^2 = ||x||^4 + ||y||^4 - 2 (x.y)^2 <= 2
//
// for ||x||, ||y|| <= 1. The upper triangle keeps every entry at most once,
// so its l2 norm is at most the Frobenius norm: Delta_s = sqrt(2)/N_s,
// attained by x = e1, y = e2 (two diagonal entries change by 1). The seed's
// 1/N_s is the spectral-norm change, which does not bound the l2 change of
// the noised entries.
//
// (D3) capeAGN (JobAGN): M2 (stage 0, upper triangle) and the packed M3
// (stage 1) of the site's records, with package otd's sensitivities of
// the packed vectors (go doc otd, section Sensitivities): ModelMOG,
// (S2), otd.MOGSensitivities(N_s, D, sigma2); ModelSTM, (S1),
// otd.STMSensitivities(N_s) = sqrt(2)/N_s for both. The stages spend Split
// and 1 - Split of the site's (epsilon_s, delta_s) (Job.StageBudget) and
// compose by basic composition to (epsilon_s, delta_s) (Theorem 2).
//
// (D4) Snapping. Before adding noise a site rounds each of the L values of
// its statistic to the grid g = perturb.Granularity(tau_s) of its own
// noise scale (see Privacy, floating point). Each value moves by at most
// g/2, so two neighbouring snapped statistics differ by at most Delta_s +
// 2 sqrt(L) g/2 = Delta_s + sqrt(L) g in l2. Job.Tau2 therefore calibrates
// sigma for Delta_s and scales it by (Delta_s + sqrt(L) g)/Delta_s, with g
// the grid of the scaled sigma (when the scaling crosses a power of two the
// grid doubles and the scale is recomputed with it): sigma is linear in the
// sensitivity for every calibration, so the scaled sigma is the calibrated
// one for the snapped sensitivity and the guarantee is exactly the
// calibrated one, as in perturb.Gaussian.AddTo.
//
// (D5) The aggregate and the other readings. One record of site s moves the
// weighted sum sum_t mu_t a_t by at most mu_s Delta_s; the aggregate's
// noise variance tau_c^2 = max_t mu_t^2 tau_t^2 >= mu_s^2 tau_s^2 (see
// Variances, step 1) makes the aggregate alone (epsilon_s, delta_s)-DP for
// site s. The joint and coalition readings (What the guarantee covers)
// treat each Gaussian release of sensitivity Delta and noise variance v as
// sqrt(Delta^2/v)-GDP and compose a site's releases over the stages to the
// root of the sum of squares (Run.Guarantees).
//
// # Privacy
//
// Neighbouring relation and sensitivities: see Sensitivities below.
//
// Mechanism: Gaussian on every released entry (perturb's grid sampler). Each
// site's release a^_s, taken alone, is (epsilon_s, delta_s)-DP against a
// party that knows f_s but not e_s (noise e_s + g_s, variance >= tau_s^2:
// the aggregator looking at that one release) or e_s but not f_s (noise
// f_s + g_s, variance tau_s^2: the seed's "colluding sites", who could
// compute e_s from the zero sum if they saw a^_s; in this implementation
// sites never see other sites' releases). capeAGN's two releases (M2 at
// (epsilon_1, delta_1) = Split (epsilon, delta) and M3 at the rest)
// compose by basic composition to (epsilon, delta) per site (Theorem 2).
// Released: the aggregate, capePCA's V_K, capeAGN's W, the K x K x K
// tensor and the recovered components; all are post-processing of the
// sites' releases, and the aggregate alone has noise variance tau_c^2 >=
// mu_s^2 tau_s^2, so it is (epsilon_s, delta_s)-DP for site s against
// anyone who knows none of the g_t.
//
// # What the guarantee covers (and does not)
//
// The per-release statement above is the seed's. Two further readings are
// computed for every site and reported beside it (Run.Guarantees, Report's
// notes; each Gaussian release of sensitivity Delta and noise variance v
// is sqrt(Delta^2/v)-GDP, releases over the stages compose to the root of
// the sum of squares, converted to epsilon at delta_s by
// perturb.GaussianEpsilonForMu):
//
// (1) The aggregator's joint view. It sees all releases, whose e_t are
// correlated; combining them reveals site s's statistic with variance
// Plan.JointVar(s) < tau_s^2 (tau_s^2 (S+1)/(2S) for equal sites). The
// report's headline epsilon is, per site, the weaker of this and the
// per-release reading (5 equal sites at (1, 1e-5): 1.325).
//
// (2) The coalition epsilon. The other S-1 sites see the released result
// (post-processing of the aggregate sum_t mu_t (a_t + g_t)) and know their
// own a_t and g_t; pooling them leaves mu_s (a_s + g_s): variance
// Plan.CollusionVar(s, all others known) = tau_g,s^2 per stage (measured
// on protocol runs by the Lemma 1 tests). No coalition of parties other
// than site s can do better: everyone but s together knows e_s and f_s and
// sees a^_s, which leaves exactly a_s + g_s, and g_s never leaves site s.
// With tau_g,s^2 = tau_s^2 tau_c^2 / Q (Variances, step 2) the GDP
// parameter is sqrt(Q / tau_c^2) Delta_s / tau_s, and since tau_c^2 = max_t
// mu_t^2 tau_t^2 >= Q / S it is at most sqrt(S) times the per-release one,
// whatever the other sites declare. For S equal sites it is exactly sqrt(S)
// times: 5 sites at (1, 1e-5) give 2.44; sites of 100, 1000 and 10000 rows
// at (1, 1e-5) give sqrt(3) times, 1.84 (TestCoalitionEpsilon).
//
// The headline therefore assumes the threat model below: the trusted noise
// generator shares e_s with no one, the aggregator colludes with no site,
// and sites do not pool their g_t; without these assumptions the coalition
// epsilon is the guarantee.
//
// Randomness comes from perturb.SecureSource unless a seed is given
// (RunOptions.Seeded, perturb.StreamSource per role): then results are
// reproducible and NOT private.
//
// Floating point (Mironov 2012): every noise value is a multiple of a
// power-of-two grid step: g_s and f_s come from perturb's discrete Gaussian
// sampler on the grid of perturb.Granularity of their own sigma, and e_s is
// S w_s (equal weights) or w_s / mu_s snapped to the generator's grid
// (unequal weights; see Zero-sum noise). Each site snaps its statistic to
// the grid of perturb.Granularity(tau_s) before adding noise; that step is
// at least as coarse as the grids of g_s and f_s (their variances are at
// most tau_s^2), and all these steps are powers of two, so every term of
// a^_s is a multiple of the finest of them and so is their exact sum. The
// float64 sum equals the exact sum while every partial sum stays below
// 2^53 times that finest step (about 2^13 tau_g,s); beyond it, the release
// is rounded to the float64 spacing of its magnitude, itself a power of
// two, as any float64 output is. Nothing stronger is claimed. What
// snapping costs in sensitivity is (D4) under Sensitivities.
//
// # Threat model
//
// Who is trusted for what:
//
//   - A site is trusted by nobody for privacy, and for the correctness of
//     its own contribution only: no check can tell a false statistic from
//     a true one, so a lying site can bias the result (its weight mu_s =
//     N_s/N is capped by the public bound MaxRows on the self-declared
//     N_s). It cannot weaken another site's privacy: each site draws g_s
//     itself, recomputes its own tau_s and refuses an under-calibrated or
//     infeasible plan, and the coalition bound above holds whatever the
//     others declare. Malformed hellos and releases are excluded and
//     reported, not fatal.
//   - The aggregator is untrusted for privacy (it sees every release: the
//     joint-view epsilon is the headline) and trusted for the correctness
//     and availability of the result, which it computes; it chooses each
//     run's session ID.
//   - The noise generator is trusted to keep e_s secret and to draw it as
//     specified; if it shares e_s with the aggregator, only g_s protects
//     a_s (the coalition epsilon).
//   - Whoever runs "dprec cape keys" knows every pairwise key (a trusted
//     dealer); each party must receive only its own keyring (written 0600
//     from creation, refused by LoadKeyring when readable by others). A
//     stolen keyring lets its thief act as that role.
//   - The network is hostile: it may read, record, replay, reorder, drop,
//     delay and inject. Bodies are sealed with AES-256-GCM under the pair's
//     key (confidential, authenticated, bound to path, sender, recipient,
//     session, sequence number and time); the headers are authenticated by
//     an HMAC before any body byte is read; each run has a fresh 128-bit
//     session ID from the aggregator, so a message recorded in another run
//     is refused; a sequence-number window refuses a request replayed
//     within the run; a second message of the same (sender, kind, stage)
//     is refused; responses are bound to their request's nonce. Every
//     refusal is reported with the claimed role and the reason
//     (HTTPConfig.OnReject). Dropping and delaying cannot be prevented:
//     they become drop-outs (see Drop-out). Message sizes reveal the job's
//     dimensions, which are public anyway.
//   - Resource exhaustion: an unauthenticated request costs no body memory;
//     an authenticated body is capped by the protocol's largest message
//     (HTTPConfig.MaxValues, set from Job.MaxValues); servers have header,
//     read, write and idle timeouts, serve at most MaxConns connections at
//     once and queue at most MaxQueue undelivered messages per sender. An
//     unauthenticated peer can still occupy connections (each for at most
//     the header timeout) and so delay a run, but not exhaust memory.
//
// # Concurrency
//
// Each role's Run must be called from one goroutine; LocalNetwork is safe
// for concurrent use. Library functions never print.
package cape
