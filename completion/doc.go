// Package completion trains CP and Tucker tensor-completion models
// (package decomposition) by a Gibbs sampler (Bayesian CP and Tucker, the
// default),
// alternating least squares, or stochastic gradient descent on objective
// (4) of Wei et al. 2021 with plug points through which the private modes (input,
// gradient and output perturbation; completion/private*.go) act. The
// sections below up to "Privacy plug points" describe SGD.
//
// # Objective and updates
//
// Train minimises, entry by entry in the usual SGD way,
//
//	sum_{e in Omega} [ (x_e - xhat_e)^2 + lambda_o sum_m |row_m(e)|^2 + lambda_b sum_m bias_m(e)^2 + lambda_g |G|^2 ]
//
// that is, eq. (4) with its regulariser spread over the updates: each entry
// penalises the rows (and biases) it touches, so a row observed n times is
// penalised n lambda_o in total, and the core, touched by every entry,
// |Omega| lambda_g. For entry e every touched parameter theta moves by
// theta -= lr_t (g_data + g_reg), with both gradients (exact, see
// decomposition) evaluated before the update; the core uses its own step
// CoreLearningRate (default lr/100, since it takes |Omega| steps per epoch).
// Step sizes follow lr_t = lr0 / (1 + decay t) over epochs t. Biases are
// penalised with RegBias (default Reg); the global mean is the mean of the
// training values and is not trained.
//
// Initialisation (seeded from the rand.Source argument): factor entries
// N(0, InitScale^2), except the third (time) mode, which starts at
// 1 + N(0, InitScale^2) so the initial model is matrix factorisation
// modulated by time; the Tucker core starts at the superdiagonal identity
// plus N(0, InitScale^2); biases at 0.
//
// Each epoch records the running training loss and RMSE (residuals taken
// just before each update, plus the regulariser of eq. (4) at epoch end), the
// validation RMSE (clamped predictions) and the seconds of the SGD pass.
// With a validation store, training stops when the validation RMSE has not
// improved for Patience epochs and the best epoch's parameters are
// restored. A NaN or infinite loss or parameter ends training with
// *ErrDiverged and the last finite parameters; a returned model is never
// NaN. A private run that diverges has spent its budget all the same
// (ErrDiverged.Privacy, BudgetNote): a retry composes with it. Inputs are validated: empty stores (ErrEmpty), shape mismatches and
// ranks above a mode's size (*ShapeError), bad settings (*SettingsError).
//
// # Parallel schedule (race-free stratified SGD, as in DSGD)
//
// With p = Threads workers every mode's indices are cut into p contiguous
// blocks balanced by observation count (contiguous, so each worker's factor
// rows and biases sit in their own stretch of memory: a random relabelling
// interleaved them within cache lines and the false sharing made 2 threads
// slower than 1), which cuts the tensor into p^N blocks. A
// stratum is a set of p blocks that share no block in any mode: for order
// 2, {(b, b+s mod p)}, s = 0..p-1; for order 3, {(b, b+s1, b+s2 mod p)},
// s1, s2 = 0..p-1, so p^2 strata of p blocks each cover all p^3 blocks
// exactly once per epoch. The strata of an epoch run one after another in
// a random order; within one, the p workers process their blocks
// concurrently and, because the blocks share no index in any mode, they
// update disjoint factor rows and disjoint biases (the time mode is split
// too, so its biases need no merging). There is no Hogwild: go test -race
// is clean. The Tucker core, shared by every entry, is the exception: each
// worker updates a private copy during the stratum and the copies are
// merged at the stratum boundary by adding every worker's change. With one
// worker this is exact sequential SGD; with p workers an entry sees core
// updates of other workers up to one stratum late (1/p^(N-1) of an epoch),
// a bounded staleness that behaves like a p-fold larger core step within a
// stratum; the small default core step keeps this stable, and convergence
// per epoch is in practice unchanged.
//
// Order within blocks: entries are shuffled once when the layout is built,
// and every epoch each block is visited in a fresh random order of its
// 1024-entry chunks, each chunk shuffled just before use. All random draws
// of an epoch are made up front from the seeded source, so a fixed seed and
// Threads give bit-identical models run to run (tested for 1 and 3
// threads); different Threads give different (equally valid) schedules.
//
// # Memory
//
// Beyond the store and the model, training holds 16 bytes per observation:
// the observations bucketed by block, each as one uint64 of packed
// coordinates (order 3 needs bits(I-1)+bits(J-1)+bits(K-1) <= 63, else
// *ShapeError) and one float64 value (the private copy the input
// perturbation may change, permuted in place into block order by following
// the cycles of the bucketing permutation, so no second copy exists at any
// time). Mode-sized arrays (block maps), one model-sized
// snapshot (the last good / best epoch's parameters) and per-worker
// scratch come on top.
//
// # Privacy plug points
//
// Train calls Settings.Privacy (nil: NoPrivacy) at fixed points: Plan with
// the training store and the resolved settings, before anything else;
// PerturbInput on the private copy of the values (in store order, aligned
// with the store's indices; the trainer then takes the slice over and
// permutes it, so a plug-in must not keep it), before the mean and
// initialisation; GradientTransform(w) once per worker, whose Transform
// receives every per-entry data gradient (EntryGrad) before the
// regulariser is added and the step applied (a nil transform selects the
// specialised CP kernels, so non-private training pays nothing); and,
// after the best parameters are restored, PerturbOutput on the model;
// Result.Privacy carries Report(). RefitFactor is the exact ridge refit of
// one factor with the others fixed that output perturbation relies on.
//
// Input perturbation uses only PerturbInput and PerturbOutput, so Train
// also runs it with the Gibbs sampler (its default, the non-private one)
// and ALS: either is post-processing of the noisy values. The Gibbs
// sampler and ALS refuse every other plug-in.
//
// Two private modes do not train by SGD and have no plug points:
// StatisticsMode.Fit runs the bias mode (TrainPrivateBias) or private ALS
// (TrainPrivateALS), which release noisy statistics and leave user rows
// and biases out of the model (billboard model; FoldInRMSE scores them).
// The implicit objective has one private mode, TrainPrivateImplicit
// (weighted ALS item steps released under add/remove-one-user privacy,
// users folded in with ImplicitFoldIn); its relation, sensitivities and
// fallback are derived on the function.
// The SGD modes cap their learning rate from public quantities (StepCap)
// and `--protect all` hands Train its released mean (so losses and
// validation figures never use the raw one).
//
// # Sensitivities
//
// Notation: ratings are clamped to the public range [r_min, r_max],
// Delta_r = r_max - r_min. Entry-level relation: neighbouring logs have the
// same observed positions (so every count, the user and item dictionaries
// and the time range are public) and differ in ONE rating value (minibatch
// DP-SGD's headline (epsilon, delta) is for zero-out instead; its
// value-change guarantee is derived below and stated in its report).
//
// Bias mode (TrainPrivateBias, private_bias.go; the billboard model). Two
// releases, composed by basic composition (epsilon_mu + epsilon_items =
// epsilon):
//
//   - T = sum_e clamp(r_e). Changing one rating changes one term, by at most
//     Delta_r: |T - T'| <= Delta_r (l1 = l2 = Delta_r). Released with
//     Laplace(Delta_r/epsilon_mu), epsilon_mu = 2% of epsilon; mu~ =
//     clamp(T~/n) with n public.
//   - S_i = sum_{e in item i} clip(clamp(r_e) - mu~, -c, c), c = Delta_r/3,
//     for every item i, with mu~ the released mean (a fixed public value
//     for this release, by adaptive composition). One rating lies in
//     exactly one item's sum and its term moves within [-c, c], so S and S'
//     differ in one coordinate by at most 2c: ||S - S'||_1 = ||S - S'||_2
//     <= 2c = 2 Delta_r/3. Released with Laplace(2c/epsilon_items) per item
//     (default) or Gaussian calibrated to (epsilon_items, delta) with l2
//     sensitivity 2c.
//
// Everything else is post-processing: the prior spread tau^2 of the item
// biases (method of moments on the released sums and public counts), the
// item biases beta_i = S~_i/(n_i + sigma_r^2/tau^2 + v/(n_i tau^2)) (the
// linear MMSE estimate under that prior, sigma_r = Delta_r/4, v the noise
// variance of one sum), and each user's bias and time-bucket biases solved
// at prediction time from the released mu~, beta and that user's own
// ratings (ridge penalties BiasUserPenalty and BiasBucketPenalty,
// decomposition.FoldInUser: a function of the release and of that user's
// data only, so it is the billboard model's per-user output and costs no
// budget); user biases are never released, so neither the model
// file nor the report carries anything computed from a user's ratings
// except through T~ and S~. TestBiasSensitivityNeighbours checks both
// bounds on neighbouring logs (and that they are reached).
//
// Private ALS, entry unit: the rating spread (TrainPrivateALS,
// TrainPrivateALSFrom; private_als_spread.go). Before the stages and route below,
// the entry unit releases (sum (clamp(r) - m), sum (clamp(r) - m)^2), m the
// range's midpoint, with Laplace noise at epsilon_s = ALSSpreadFraction
// epsilon = 0.01 epsilon. One changed rating moves a = clamp(r) - m to b,
// both in [-W/2, W/2] (W = r_max - r_min), and the vector by |a - b| (1 +
// |a + b|), at most ((W + 1)/2)^2 for W >= 1 (a = W/2, b = -1/2) and W
// below (ALSSpreadSensitivity; TestALSSpreadSensitivity checks every pair
// and neighbouring logs). The routes then spend epsilon - epsilon_s (basic
// composition with the spread release), and every rule they take from the
// range (the clips c, s = (r_max - r_min)/4 in ridges and gates, the free
// columns' scale) takes the width 4 min((r_max - r_min)/4, 1.25 s^)
// instead, s^ an upper bound of the released standard deviation; the
// clamp stays the range. "epsilon", "(r_max - r_min)" and "s" in the
// paragraphs below (the covariance stage, the positions stage, the
// residual route) are these.
//
// Private ALS, entry unit: the covariance stage (TrainPrivateALS,
// private_als_cov.go; billboard model). It runs first, on dense logs:
// when at least ALSCovGate = 150 users rated a pair of items on average
// (sum over users of d_u (d_u - 1)/2 over the number of pairs, d_u the
// user's distinct items; public), the log has at most ALSCovMaxItems =
// 1000 items and ALSCovMaxPairs = 10^9 co-rated pairs over the users
// (time bounds), and the noise gate below passes; otherwise the positions
// stage or the residual route runs. Two releases, basic composition: the
// bias mode's at ALSCovBiasFraction = 0.2 of epsilon, then M = sum over
// users of a_u z_u z_u^T over each user's distinct items (its upper
// triangle), z_ui the clipped residual from the released mean and item
// bias (c the positions stage's clip; repeated ratings of a cell
// averaged), a_u = 1/sqrt(4 (d_u - 1) + 1), with Gaussian noise at the
// rest of (epsilon, delta) ("Analyze Gauss", Dwork, Talwar, Thakurta and
// Zhang 2014, on the residual matrix). Sensitivity: one changed rating
// moves one z_ui by Dz, |Dz| <= 2c, and nothing else (the weights and the
// users' item sets are the positions'), so M moves by a_u Dz z_uj in
// entry (i, j) for each other item j of the user and by a_u (z'^2 - z^2),
// at most a_u c^2 in size, on the diagonal: over the upper triangle
// ||M - M'|| <= a_u sqrt(4 c^2 c^2 (d_u - 1) + c^4) = c^2, whatever
// d_u (TestCovMomentsSensitivity: the bound holds, is approached by a
// user whose residuals sit at the clip, and W does not move).
// Post-processing: C_ij = W_ij M~_ij / (W_ij^2 + sigma^2/tau^2), W_ij =
// sum of a_u over the users who rated both (public), the posterior mean
// of a covariance entry under a N(0, tau^2) prior, tau = ALSCovPrior s^2
// = 0.1 s^2, given the noisy sum W_ij C_ij + N(0, sigma^2) (pairs with
// few co-raters are shrunk towards 0, not blown up by 1/W_ij); the item
// rows' first K columns are sqrt(l_k) e_k for the K largest positive
// eigenvalues l_k of C and their eigenvectors e_k (the loadings of a
// factor model whose user factors have unit variance; K = min(R - 2,
// 10) from rank 10 up, then the free columns and zeros; K = R below),
// keeping only eigenvalues above the parallel-analysis edge (Horn's
// parallel analysis: C's largest eigenvalue had every residual been
// independent N(0, v), v the mean of C's diagonal, on the same positions
// with the release's noise, estimated as C is; one data-independent
// draw; covNullEdge), the other columns zero; users fold in with the
// bias mode's penalties but a fixed ridge of ALSCovFoldRow s^2 = 0.8 s^2
// on the row and bias (a unit prior variance on the factors against a
// residual variance of about s^2). Noise gate (public: the plan's
// sigma, the positions): an entry of the mean co-rating weight wbar
// keeps wbar^2 / (wbar^2 + sigma^2/tau^2) of itself; the stage runs only
// when that is at least ALSCovNoiseGate = 0.12. Validation parts (2
// noise seeds; docs/privacy.md, "The covariance stage"): Jester5k and
// its user subsamples of 2,000, 1,200 and 700 users set the noise gate
// (at epsilon 1 the stage beat the positions stage at 0.19 and lost at
// 0.079), and MovieLens-100K's 50 and 100 most rated items (96 and 74
// users a pair), where the stage lost to the positions stage at every
// epsilon, the density gate, below Jester's 700-user sample (216),
// where it won from epsilon 10.
//
// Private ALS, user unit: the covariance stage (TrainPrivateALS,
// private_als_cov_user.go, whose file comment has the derivation;
// billboard model). After the bias releases, on a dense log it spends the
// item steps' share in their place, planned to their noise multiplier
// (planShare; the choice reads released values only). Its gates: at most
// ALSCovMaxItems items, N~ k (k + 1)/2 <= ALSCovMaxPairs and N~ I <=
// ALSCovUserMaxNull (time), at least ALSCovGate users a pair of items
// from the released counts as if items were independent, a coverage
// R~/(N~ I) of at least ALSCovUserCoverage = 0.4, and the noise gate
// ALSCovUserNoiseGate = 0.25; not after a private item selection
// (PrivateOptions.Scalars: N~ and R~ then cover the log before it). Two releases split by mu^2 (Gaussian
// composition with the bias releases): the residual spread Q = sum over
// users of their mean squared residual clipped to half the range (l2
// sensitivity c0^2, ALSCovUserSpreadShare = 0.01 of the share), which
// sets the stage's width 4s as the entry unit's spread release does; then
// (M/c^2, W), M = sum_u a_u z_u z_u^T and W = sum_u a_u 1_u 1_u^T over a
// user's d_u distinct items, a_u = sqrt(2/(d_u (d_u + 1))): removing a
// user removes a_u z_u z_u^T, upper-triangle norm at most c^2, and a_u
// 1_u 1_u^T, norm exactly 1, so l2 sensitivity sqrt(2) whatever d_u
// (TestCovUserSensitivity, TestCovUserSpreadSensitivity). The clip c is a
// quarter of the width up to epsilon 3 and a third from 30
// (covUserClip). Post-processing as at the entry unit, with W+ = max(W~,
// 0) in place of the public W and the parallel-analysis null drawn on
// synthetic positions (round(N~) users of round(R~/N~) items drawn by the
// released counts; TestCovUserNullEdge: within 20% of the edge on the
// log's own positions). Validation parts and test parts are in
// docs/privacy.md, "The covariance stage at the user unit".
//
// Private ALS, entry unit: the positions stage (TrainPrivateALS,
// private_als_positions.go; billboard model). Under the entry relation the
// positions (who rated what) are public, so anything computed from them
// alone costs no budget. P (users x K) and Q (items x K), K = min(R,
// ALSPositionsMaxRank), are the top singular vectors (P = A Q, the left
// ones times the singular values) of the degree-normalised position
// matrix A = D_u^-1/2 B D_i^-1/2 on the largest connected component of
// the position graph (any other component has a singular value of
// exactly 1 of its own; users and items outside get zero rows), by
// subspace iteration from a data-independent start, each scaled by its
// largest row norm (|p_u|, |q_i| <= 1), K clamped to the columns with a
// nonzero singular value. Two releases, basic composition: the bias
// mode's at ALSPositionsBiasFraction(epsilon) of epsilon (0.35 up to
// epsilon 0.5, 0.65 from 1, log-linear between), then S = sum over
// ratings of z_ui p_u q_i^T, z_ui = clip(clamp(r_ui) - mu~ - beta~_i, -c,
// c) (c the residual route's clip), with Gaussian noise at the rest of
// (epsilon, delta). One changed rating moves one z_ui by at most 2c
// and nothing else (P, Q and the Gram matrix are the same on both
// neighbours), so ||S - S'||_F = |z - z'| |p_u| |q_i| <= 2c
// (TestALSPositionsSensitivity: the bound holds, is reached, and G does
// not move). Post-processing: vec(W) = (G + rho I)^-1 vec(S~), G = sum
// (p_u p_u^T) (x) (q_i q_i^T) (public), the least-squares fit of z_ui ~
// p_u^T W q_i with rho = max(ALSPositionsRidgeFloor, ALSPositionsReg (1 +
// v_S/c^2)) (v_S = sigma^2 the noise variance of an entry of S~; the ridge
// grows with the noise and falls to the floor, 2.5); the released item rows' first K columns are
// W q_i / s (s = (r_max - r_min)/4), the others zero; users fold in with
// the bias mode's penalties but a fixed ridge of ALSPositionsFoldRow = 5
// on the row and bias (BillboardFoldFor), which then scales with s^2 as the data term does (in rating units the fold-in
// overfit on a [-10, 10] log: 4.200 against the bias mode's 4.141, 4.116
// with the units; TestPrivateALSPositionsWideScale). Its noise does not grow with the number of ratings:
// W has K^2 entries fitted from all of them. Spectral gate (public): the
// stage runs only when the largest non-trivial singular value of the
// normalised position matrix is at least ALSPositionsGate = 1.2 times that
// of the same user and item degrees with the items shuffled (a fixed
// permutation); otherwise the residual route below runs. Shrinkage gate
// (public: G and rho are functions of the positions and the plan): the
// stage runs only when G's mean diagonal entry is at least
// ALSPositionsShrinkGate = 0.03 times the noise's ridge ALSPositionsReg
// (1 + v_S/c^2), not the floored rho; below, the ridge shrinks W to
// about zero and the residual route (or its fallback to the bias mode)
// runs instead (on validation parts the stage was worse than the bias
// mode at ratios up to 0.011: ml-latest-small at epsilon <= 0.5,
// MovieLens-100K at 0.1). Regime rule (public: counts and the plan):
// where non-private ALS has many ratings an item (a mean of at least
// ALSResidualRichRatio R = 50 R) and the residual route's noise is small
// (v <= ALSResidualRichNoise s^2 = s^2; 4 s^2 before the route's clip was
// halved at small epsilon), the residual route runs instead:
// on a joke-shaped log with exposure-biased positions (2,700 ratings an
// item) it reached non-private ALS at epsilon 10 (4.070) where the
// positions stage stayed at 4.466, while at epsilon 1 (v = 17.6 s^2) the
// positions stage scored 4.466 against its 4.641 (bias mode 4.579).
// Quiet regime (since session 21; public: counts and the plan): at least
// ALSResidualQuietRatio R = 25 R ratings an item and v <=
// ALSResidualQuietNoise s^2 = 0.05 s^2 (from epsilon 25.2) also take the
// residual route, which is then nearly non-private ALS and converges
// whatever the positions say (on a heavy-tailed synthetic log whose
// positions pass the gate without carrying taste the stage stayed at the
// bias model's level, 0.8280 at epsilon 100, against the route's 0.6193;
// the constants' doc has the measurements). Measured on
// validation parts (TestPrivateALSSweep with DPREC_ML100K), when the stage
// was first built (before the bias share's rule and the ridge floor:
// ALSPositionsBiasFraction, ALSPositionsRidgeFloor): MovieLens-100K
// 0.9258 / 0.9125 / 0.9114 / 0.9132 / 0.9134 at epsilon 1 / 3 / 10 / 30 /
// 100 against the bias mode's 0.9580-0.9525, the residual route's 0.9580 /
// 0.9537 / 0.9333 / - / 0.9184 and non-private ALS's 0.9188;
// ml-latest-small 0.8763 / 0.8550 / 0.8441 / 0.8409 / 0.8395 against the
// bias mode's 0.8750-0.8606 and non-private ALS's 0.8462. The synthetic
// logs of data synth have random positions: the gate fails there, except
// with heavy-tailed activity (skew 1), whose positions pass it without
// carrying taste: below the quiet regime the stage runs there at the bias
// model's level (a split of the rank between the stage and the route,
// tried, scored worse on ml-latest-small). dprec-beam's source has no pass over the positions
// and runs the residual route (TrainPrivateALSFrom).
//
// Private ALS, entry unit: the residual route (TrainPrivateALS,
// private_als_input.go; billboard model). Two releases, basic composition:
// the bias mode's (above) at epsilon_b = f epsilon, f =
// ALSInputBiasFraction = 0.05, then for every rating e the clipped residual
// w_e = clip(clamp(r_e) - mu~ - beta~_i(e), -c, c) with Laplace noise of
// scale 2c/epsilon_w, epsilon_w = (1 - f) epsilon. Positions are public and
// (mu~, beta~) is a released value (adaptive composition), so one changed
// rating moves exactly one coordinate of w, from one point of [-c, c] to
// another: ||w - w'||_1 = ||w - w'||_2 <= 2c (TestALSInputSensitivity, which
// also checks that no other coordinate moves and that 2c is reached; the
// input mode's residual release is the same vector,
// TestInputResidualSensitivity). Everything else is post-processing of the
// two releases and public counts: ALS of the model's rank (SolverALS,
// DefaultALSSweeps sweeps) on w~ as a user x item matrix with a ridge of
// lambda = DefaultALSReg (s^2 + v)/s^2 per observation (v = 2 (2c/
// epsilon_w)^2 the noise variance of a released residual, s = (r_max -
// r_min)/4) and DefaultALSRegBias lambda/DefaultALSReg pseudo-observations
// on the biases; the released item rows are its item rows, the released
// item biases beta~_i plus its item biases, the released mean mu~ plus its
// mean; its user rows are dropped and each user folds in from the released
// item side and their own ratings (per-rating ridge DefaultALSReg plus
// ALSPrivateFoldRow). The clip is c = (r_max - r_min)/3 times
// min(3, max(1/2, log10 epsilon)) (ALSInputClipFloor): half the bias
// mode's clip up to epsilon 3.16, the bias mode's at 10, 2/3 of the range
// at 100, the whole range from 1000. Learnability rule
// (public counts): item i's row is zero unless n_i >= g R v/s^2 (g =
// ALSInputGate = 4; an item row fitted from n_i residuals of noise variance
// v has noise about R v/n_i); when the items with n_i >= 16 R v/s^2
// (ALSInputFallbackGate) carry under 10% of the ratings, no residual is
// released and the bias mode takes the whole budget (report note). As
// epsilon grows, v -> 0, lambda -> DefaultALSReg, c -> the range and every
// item passes: the released item side tends to non-private ALS's.
//
// Private ALS: the binding constraint (measured, issue 25). With the
// item-statistics route below at the entry unit, private ALS stayed at the
// bias model's RMSE on MovieLens-shaped logs at every epsilon. Measured on
// validation parts (TestPrivateALSProbe, env DPREC_ALS_PROBE, relaxes one
// constant at a time; "off" removes the step noise through a test hook):
// without noise the route reached 0.8565 on ml-latest-small (non-private
// ALS 0.8462, bias 0.8606) and 0.6547 on the MovieLens-shaped synthetic log
// (non-private 0.6373, bias 0.8190), and relaxing the clip, Gamma_u,
// Gamma_v, the term cap, the shared Gram (exact per-item Gram), the steps
// and the ridges together brought it to 0.8508 / 0.6484: no constraint but
// the noise kept it at the bias level. With noise, sigma was 6.6 at epsilon
// 100 (l2 sensitivity 24.3): the stability bound is about c (2 Gamma_u +
// c)/sqrt(lambda) for every user with more than about 11 ratings, whatever
// the term cap, and it is not loose (with delta_u replaced by the exact
// unprojected move 2c max_j |A_u^{-1} z_j| of each user, computed from the
// public item rows of every step, the right-hand sides' bound fell only to
// 21.4-23.6), and the ratio of noise to signal is gauge invariant
// (scaling the user ridge and Gamma_v together leaves it unchanged); the
// learnability rule then passed
// items carrying 25% of ml-latest-small's ratings and, even without noise,
// learning only those items gave 0.8599. At epsilon 700 (sigma 2) still
// 0.8615 on ml-latest-small and 0.6902 on the synthetic log. One-at-a-time
// changes at epsilon 100 (bias share 0.05-0.3, 2-5 steps, c 0.75-1.5,
// learnability factor 0.5-2, noise ridge 0.3-3, user ridge 0.025-0.5, item
// ridge 0.15-0.6, Gamma_u 0.5-1, Gram weight x4) left
// both MovieLens-shaped logs near the bias model (synthetic 0.800-0.818
// against 0.819; ml-latest-small 0.860-0.879 against 0.8606). The residual route's
// release moves by 2c per rating instead (the noise of an item row falls
// as 1/sqrt(n_i) instead of staying at the sensitivity of a user's whole
// vector), which is why it replaced the statistics route at the entry
// unit; the statistics route stays for the user unit, where one user's
// whole contribution changes anyway.
// Validation figures of the residual route (TestPrivateALSSweep; the
// table in docs/privacy.md): at epsilon 1 / 3 / 10 / 30 / 100,
// ml-latest-small 0.8750 / 0.8649 / 0.8597 / 0.8504 / 0.8487 (non-private
// ALS 0.8462, bias 0.8750 ... 0.8606), the MovieLens-shaped synthetic log
// 0.8242 / 0.8199 / 0.6787 / 0.6477 / 0.6409 (non-private 0.6373, bias
// 0.8242 ... 0.8190), the joke-shaped one 1.6009 / 1.5587 / 1.5318 /
// 1.5306 / 1.5299 (non-private 1.5304, bias 1.6009); the first columns
// equal to the bias model's are the fallback rule's.
//
// Private ALS, item-statistics route (the user unit's; private_als.go;
// Chien et al. 2021, joint DP, billboard model). The bias releases above
// come first (a share
// ALSPrivateBiasFraction(epsilon) of epsilon: 0.8 up to 1, 0.3 from 10).
// Then each of T = ALSPrivateSteps item steps releases, for every item i,
// the right-hand side h_i = sum_u z_ui x_u over the users whose terms
// include i, and once the shared Gram matrix G = sum_u t_u x_u x_u^T
// (upper triangle, scaled by a public weight w), where (x_u, b_u) is user
// u's vector solved privately (never released) against the public item
// rows V (released by the previous step, or a data-independent random
// start):
//
//	(x_u, b_u) = P_Gamma_u( (Z_u^T Z_u + lambda n_u I)^{-1} Z_u^T y_u ),
//
// Z_u rows (v_k, 1) with ||v_k|| <= Gamma_v, y_uk = clip(clamp(r_uk) - mu~
// - beta_k, -c, c), z_uk = y_uk - b_u, P the projection onto the ball of
// radius Gamma_u = 1, Gamma_v = c, lambda = ALSPrivateReg = 0.05. A user
// with n_u ratings contributes the terms of t_u = min(n_u, k) of them (a
// public pseudo-random choice; k the 0.9 quantile of the public user
// counts, at least 20, under the entry unit). When one rating r_uj changes
// (n_u public): y_uj moves by at most 2c, so the user's vector moves by
// delta_u <= min(2 Gamma_u, 2 c Gamma_z/(lambda n_u), c/sqrt(lambda n_u))
// (Gamma_z^2 = Gamma_v^2 + 1; the second from ||(Z^T Z + lambda n)^{-1}||
// <= 1/(lambda n) and ||Z^T dy|| <= 2c Gamma_z, the third from
// ||(Z^T Z + lambda n)^{-1} Z^T|| = max_s s/(s^2 + lambda n) <= 1/(2
// sqrt(lambda n)); P is non-expansive). Only user u's terms change: |z| <=
// c' = c + Gamma_u, so item j's h_j term moves by at most (2c + delta_u)
// Gamma_u + c' delta_u, each other item k of the user's by delta_u
// (Gamma_u + c'), or, replacing the user's terms outright, each by at most
// 2 Gamma_u c'; G moves by t_u ||x'x'^T - x x^T||_F <= 2 t_u Gamma_u
// min(delta_u, Gamma_u). Hence
//
//	Delta_h = min( sqrt(((2c + delta_u) Gamma_u + c' delta_u)^2 + (t_u - 1) delta_u^2 (Gamma_u + c')^2),
//	               2 sqrt(t_u) Gamma_u c' )
//	Delta_G = 2 t_u Gamma_u min(delta_u, Gamma_u)
//	Delta_2 = sqrt(Delta_h^2 + w^2 Delta_G^2),   w = 0.25 c'/(2 Gamma_u sqrt(k)),
//
// maximised over the public user counts (ALSSensitivity). Every step adds
// Gaussian noise of one sigma to the released vector; sigma is the
// smallest with which the bias releases and the T Gaussian steps compose
// within (epsilon, delta) (RDP). Item i's row is then the ridge solution
// of (t_i / sum_j t_j) G~ + (0.3 t_i + sigma) I against h~_i, projected onto
// the Gamma_v ball, and zero when its count fails the learnability rule
// n_i Gamma_u^2 / R >= sigma (under the entry unit, when the items that
// pass carry under 10% of the ratings at the planned sigma, no step runs
// and the biases take the whole budget): post-processing of released
// values and public counts. Releasing one shared G instead of every item's
// Gram matrix cuts the noisy coordinates per item from R(R+1)/2 + R to R;
// the price is the assumption that an item's raters have the average
// user's second moment, which costs nothing measurable without noise on
// the logs below.
//
// Private ALS: public constants of the item-statistics route (measured
// at the entry unit before the residual route replaced it there). The
// earlier constants (ridge 1 per
// observation on both sides, 3 steps, 80% of epsilon to the biases)
// shrank every factor to zero whatever epsilon: at epsilon 100 private ALS
// scored the bias model's RMSE on every log tried. Measured on validation
// parts only (a random tenth of the training part, itself 90% of the log;
// never a test part):
// a joke-shaped synthetic log (5,000 users, 100 items, 202,500 training
// ratings, continuous values in [0.1, 6.9]): non-private ALS rank 10
// 1.5304, the bias model 1.6009, private ALS 1.6009 / 1.6009 / 1.5428 /
// 1.5304 / 1.5282 at epsilon 1 / 3 / 10 / 30 / 100 (the first two are the
// learnability rule's fallback to the bias model); ml-latest-small (user x
// movie): non-private ALS 0.8462, bias 0.8606 at epsilon 100, private ALS
// at the bias model's level at every epsilon up to 100 (0.8750 / 0.8649 /
// 0.8613 / 0.8607 / 0.8615; TestPrivateALSSweep reproduces these): its
// items have 8 ratings on average and its heavy users make the
// sensitivity large, so no item's statistics rise above the noise; a
// MovieLens-shaped synthetic log behaves alike (0.8113 at epsilon 100
// against the bias model's 0.8190 and non-private ALS's 0.6373). Per
// constant: the user ridge at 1 left the factors at the bias level even
// without noise (0.885 on ml-latest-small), 0.1 reached 0.8578 and 0.01
// overfitted (0.9119); an item ridge of 0.3 per observation beat 0.1 and
// 0.01 without noise (0.8502 against 0.8578); 5 steps were within 0.002 of
// 10; a noise ridge of 1 sigma (shared Gram) beat 3 sigma sqrt(R); the
// learnability factor 1 beat 0.3 (noise rows hurt: ml 0.8712 at epsilon
// 100) and 3 (joke 1.5956 at epsilon 10). TestPrivateALSConverges checks
// the convergence on a planted low-rank log (epsilon 100 within 2% of
// non-private ALS; the earlier constants stayed at the bias model's
// score). TestALSSensitivityNeighbours checks the bound on neighbouring
// logs, TestALSSensitivityAdversarial pins it against its closed form and
// attacks it with a worst-case neighbour (one user, alternating +-Gamma_v
// rows, extreme ratings, one flipped).
//
// User unit (add/remove one user; bias and als modes; private_user.go).
// Neighbouring logs D, D' differ by one user u and ALL of u's ratings.
// Before anything is computed: the item mode is a public catalogue (or a
// private selection, below) and the time mode a public range
// (RestrictToDomain drops rows outside; a per-row filter with public
// parameters), and every user keeps at most k ratings, at most one per
// item, chosen at random from that user's own rows
// (BoundUserContributions; per user, so no other user's rows depend on
// u). Ratings are clamped to [r_min, r_max]. Removing u then changes:
//
//   - the number of users by 1 (l1 = l2 = 1);
//   - the number of ratings by n_u <= k (l1 = l2 = k);
//   - the sum of the centred ratings clamp(r) - (r_min + r_max)/2 by at
//     most k Delta_r/2 (each term has size <= Delta_r/2);
//   - the item counts: at most k coordinates (one rating per item), each
//     by 1, so l1 <= k and l2 <= sqrt(k);
//   - the item sums of residuals clip(clamp(r) - mu~, -c, c) (mu~ released
//     first, a public value by adaptive composition): at most k
//     coordinates, each by at most c (a term disappears; under add/remove
//     it is c, not the 2c of a changed value), so l1 <= k c and l2 <=
//     sqrt(k) c. (With unclipped centred ratings the same argument gives
//     sqrt(k) Delta_r/2, and with raw values in [0, r_max] sqrt(k) r_max:
//     the general form is sqrt(k) times the largest term.)
//
// The weighted item counts and sums. The two item releases need not
// discard ratings to keep these sensitivities: they read every rating of
// each user before the bound (PrivateOptions.Unbounded; the Beam
// pipelines' group-by-user step), one per item (the first), each of user
// u's m_u distinct items weighted by w_u = UserContributionWeight: 1 when
// m_u <= k, and above it sqrt(k/m_u) for Gaussian noise or k/m_u for
// Laplace noise. w_u depends on u's own ratings only, so removing u still
// removes exactly u's terms: the counts move on m_u coordinates by w_u
// each, l2 w_u sqrt(m_u) = sqrt(k) (Gaussian rule) and l1 w_u m_u = k
// (Laplace rule; its l2 k/sqrt(m_u) <= sqrt(k) too), and the sums by at
// most w_u c on each, so sqrt(k) c and k c: the bounds above, met with
// equality by a user with m_u >= k. On the bounded log every weight is 1
// and the releases are the ones above. The weighted count n_i = sum_u w_u
// and sum S_i = sum_u w_u clip(r_ui - mu~) give S_i/n_i, a weighted mean
// of the item's residuals whose sampling variance sigma_r^2 sum_u w_u^2 /
// n_i^2 is at most sigma_r^2 / n_i (w_u <= 1), so the bias estimate below,
// which takes n_i sigma_r^2 for the sampling variance of S_i, shrinks no
// less than it should. A user with m_u ratings weighs sqrt(k m_u) in all
// under the Gaussian rule, against k when the bound drops all but k: on
// ml-latest-small (610 users, mean 134 ratings, k = 100) private ALS at
// epsilon 100 went from 0.8685 to 0.8592 on the validation part
// (non-private ALS 0.8462; docs/privacy.md). The numbers of users and
// ratings and the centred sum still read the bounded log. Private ALS's
// learnability rule and its item steps' ridge and Gram shares read the
// weighted noisy counts as released, although the steps read the bounded
// log, whose counts are smaller where users rate more than k items.
// Scaling the counts down to the bounded log's released total (the noisy
// number of ratings over the counts' total) before the rule and the steps
// was measured and not kept: it reproduced the bounded counts' decisions,
// which on a heavy-tailed log (4,000 users, Zipf 1 activity) kept the
// steps off at epsilon 30 (0.8334 against 0.6953 with the counts as
// released, on the validation part), and changed nothing on every other
// log measured.
// TestUserWeightedSensitivity removes every user of a log whose users
// rate 3 to 61 items (k = 6, repeated cells) and checks both rules' bounds,
// that they are reached, and the weights' sums.
//
// Each is released with Gaussian noise (the default; l2) or Laplace (l1),
// budget shared by fixed public fractions (userShare*): for Gaussian,
// sigma_j = Delta_j / (s sqrt(share_j)) with s the largest for which the
// five releases compose within (epsilon, delta) (exact GDP composition);
// for Laplace, epsilon_j = share_j epsilon. The item biases are then the
// linear MMSE estimate from the noisy sums and noisy counts (negative
// counts set to 0), post-processing. Nothing else is released: no user
// dictionary (the CLI saves one placeholder id), no user rows or biases,
// no exact count. TestUserSensitivityNeighbours removes every user of a
// bounded log in turn and checks each bound (and that sqrt(k) is reached
// for the counts).
//
// Private ALS, user unit: each item step adds, for every item j the user
// rated (at most k, the contribution bound), the right-hand side term
// z_uj x_u (norm <= Gamma_u c', |z| <= c' = c + Gamma_u), and k x_u x_u^T
// to the shared Gram matrix (Frobenius norm <= k Gamma_u^2; its upper
// triangle is no larger), and user u's vector depends only on u's own
// ratings and the public item side, so removing u removes exactly these
// terms:
//
//	Delta_2 = sqrt(k Gamma_u^2 c'^2 + w^2 k^2 Gamma_u^4)
//
// (ALSUserSensitivity); the item solve and the learnability rule use the
// bias mode's noisy counts.
// TestALSUserSensitivityNeighbours checks it on neighbouring logs.
//
// Private ALS, user unit, when the learnability rule fails on the noisy
// counts (alsUserFallback): the steps' share goes to one Gaussian release
// of the vector (a n_i, S_i) over the items (n_i the weighted count, S_i
// the weighted sum of the clipped residuals about the released mean, as
// above, a = c sqrt(share_counts/share_sums)). Removing a user removes
// m_u ratings, one per item, each weighted w_u = min(1, sqrt(k/m_u)),
// lowering one n_i by w_u and moving one S_i by at most w_u c, so
//
//	Delta_2 = sqrt(k (a^2 + c^2)).
//
// Its noise multiplier is that of the T planned steps composed: T
// Gaussians of sensitivity Delta and noise sigma have a Gaussian privacy
// loss with mu = sqrt(T) Delta/sigma (Dong, Roth and Su 2022), the same
// as one Gaussian of multiplier sigma/(Delta sqrt(T)), so whichever
// branch the released counts choose, the composition is the one planned
// (an accounting that needs more raises the noise until the budget fits).
// Each released value is pooled with the bias mode's release of it by
// inverse variance (post-processing). TestALSUserFallback checks the
// sensitivity on neighbouring logs and that the budget is spent.
//
// Private ALS, user unit: the item ridge. The last item step's ridge per
// term sets the scale of the released item rows and so the effective
// penalty of every user's fold-in; the right one depends on how much of
// the ratings' spread the factors explain, which is private (validation
// parts at epsilon 100: 0.03 best on a wide planted log, 0.3 on the joke
// logs). It is chosen on held-out users
// (private_als_ridge.go): a hash of each user's own bounded ratings holds
// out ALSRidgeHoldout of them, so that whether a user is held out
// depends on that user alone; held-out users are in the bias releases
// and the selection, not in the item steps, so removing any user changes
// only their own part and every release keeps its sensitivity. The last
// step's released statistics are solved at each of ALSRidgeCandidates,
// the former fixed ridge and smaller ones (post-processing). Each held-out user is scored against each candidate
// by alsRidgeFolds-fold cross-validation of their own ratings (fold-in
// from the others, as a user folds in from all of theirs); the release is the sum over held-out users of the
// loss differences from the first candidate, each clipped to [-D, D], D
// = ALSRidgeClip c^2:
//
//	Delta_2 = D sqrt(J - 1)   (J candidates; one held-out user's vector),
//
// Gaussian noise whose mu^2 is ALSRidgeShare of the steps' and the
// selection's together (sequential composition: it is in the report's
// accounting). The candidate with the smallest noisy sum is kept (the
// first when none is below 0). TestALSHeldOut checks that the partition
// depends on the user alone; TestALSRidgeSelection the sensitivity on
// neighbours (removing a held-out user moves the statistic by at most
// Delta_2, any other user not at all), the share and the composition,
// and the gain on a planted log where a smaller ridge wins;
// TestChooseRidgeNoise the noise.
//
// Private ALS, user unit: the position columns. When the fallback above
// runs, its share of the budget is split (ALSUserPositionsShare of mu^2
// under Gaussian composition; the counts and sums get the rest) with one
// Gaussian release of the users' normalised item co-occurrence
//
//	C = sum_u p_u p_u^T,   p_u = 1/sqrt(n_u) on each of the n_u items u rated,
//
// noise on the packed upper triangle (diagonal included), mirrored.
// Removing user u removes p_u p_u^T and nothing else (the other users'
// vectors do not depend on u); its upper triangle has n_u diagonal
// entries and n_u(n_u - 1)/2 others, each 1/n_u, so
//
//	Delta_2 = max_n sqrt((n + 1)/(2 n)) = 1   (at n = 1), whatever k is,
//
// where the item steps' right-hand sides grow as sqrt(k). Since Delta_2
// does not depend on n_u, C is computed from every rating of each user
// (PrivateOptions.Unbounded, the log before the contribution bound on
// the same items, which dprec train passes), not from the k-bounded
// subset the item steps and the scalar releases read (the item counts and
// sums read it too, weighted: "The weighted item counts and sums"); a
// user with more than
// ALSUserPositionsMaxPerUser distinct items adds a random subset of that
// many (a shuffle keyed by a seed from the noise source and the user's
// own items, so that p_u stays a function of one user's data), which
// bounds the time, not the sensitivity. The report's relation says
// which release reads what (TestUserCooccurrenceUnbounded). The release
// runs only when a public gate passes (userPositionsGate): the noise's
// spectral edge 2 sigma sqrt(I) (a symmetric matrix of independent
// N(0, sigma^2) entries) must be at most ALSUserPositionsGate times the
// released number of users, C's trace; otherwise the whole share goes to
// the counts and sums as before. Post-processing: the leading
// eigenvectors of the noisy C (subspace iteration from a fixed start,
// then Rayleigh-Ritz); the first, close to
// popularity, is dropped (the popularity column has it); those after it
// whose eigenvalue exceeds ALSUserPositionsEdge times the noise's edge,
// at most R - 2, become item columns 3, 4, ..., each scaled to
// ALSUserPositionsScale times the slope column's spread. A user folding
// in fits weights of their own on them: which groups of items that are
// rated together they like. The positions are private at this unit, but
// the co-occurrence is cheap to release because every user has unit
// mass in it; on MovieLens-100K (validation part, k = 100, epsilon 100)
// the columns took private ALS from 0.9182 to 0.9086 (non-private ALS
// 0.9018). TestUserCooccurrenceSensitivity checks Delta_2 on
// neighbouring logs (each user's exact move and the bound reached);
// TestALSUserPositions the noise's variance, the report, the columns and
// their gain on a log whose positions carry taste, and the gate.
//
// Users fold in to the fallback's model (free columns, position columns)
// with the bias mode's penalties but a fixed ridge of
// ALSUserFallbackFoldRow = 5 on their row and bias, as to the entry
// unit's positions stage: the bias mode's 10 shrank the weights on the
// columns that real logs carry (validation figures on the constant;
// TestALSUserFallbackFold).
//
// Private ALS, the free columns: whenever no factor is learnt from the
// ratings (the user unit's fallback above, the entry unit's residual-route fallback and
// the item-statistics route's gate), the released item rows are
// (freeItemColumns)
//
//	v_i1 = b~_i / s                            (the slope column)
//	v_i2 = sd(v_.1) (l_i - mean(l)) / sd(l),  l_i = log(1 + n~_i)  (the popularity column)
//
// and zero in the other columns (at the user unit, the position
// columns above when released), with s = (r_max - r_min)/4, b~ the
// released item biases and n~ the item counts (public at the entry
// unit, the released noisy ones at the user unit). Both are
// post-processing of the bias release: no budget, no sensitivity. Each
// user's fold-in solves (b_u, x_u) from their own ratings with the bias
// mode's penalties (at the user unit with the row ridge
// ALSUserFallbackFoldRow) and predicts mu~ + b_u + b~_i (1 + x_u1/s) + x_u2
// v_i2: a slope of their own on the item consensus (users differ in how
// far they follow it: some rate the well-liked items far above the rest,
// some barely) and on popularity (mainstream against niche taste). Real
// rating logs have both rank-one structures, which a biases-only model
// misses. The popularity column is scaled to the slope column's spread
// so that the fold-in's one ridge treats the two alike; scales 0.25,
// 0.5 and 1 were tried: larger ones gained up to 0.003 more on the
// MovieLens logs and cost up to 0.006 more on the planted logs, which
// have neither structure. Validation parts (TestPrivateALSSweep's; the
// bias mode's release, then with the slope column, then with both;
// fold-in as BillboardFoldFor then, the bias mode's ridge of 10 at both
// units): MovieLens-100K 0.9362 / 0.9219 / 0.9148
// at epsilon 1 and 0.9327 / 0.9171 / 0.9108 at 100 (entry unit), 0.9571
// / 0.9487 / 0.9405 at 10 and 0.9401 / 0.9261 / 0.9184 at 100 (user
// unit, k = 100); ml-latest-small 0.8750 / 0.8688 / 0.8578 at 1 (entry),
// 0.9017 / 0.8977 / 0.8957 at 10 and 0.8845 / 0.8776 / 0.8697 at 100
// (user); the planted logs of data synth moved by at most 0.0016.
//
// From rank 10 up the routes that do learn factors release the free
// columns too, after the columns they fit: the positions stage fits K =
// min(R - 2, 10) (ALSFreeColumns), the residual route's fit on the noisy
// residuals and the user unit's item steps R - 2 (alsInputFree,
// alsStepsFree); their figures are at those names. The slope column alone
// in the positions stage (K lowered by one) was tried first and not
// kept: MovieLens-100K gained 0.002, ml-latest-small 0.006 at epsilon 1
// but lost 0.003 at 30 and 100. TestALSSlopeColumn checks the columns and
// their gains on a log with per-user slopes on both;
// TestALSResidualFreeColumns and TestALSStepsFreeColumns check them after
// the fitted columns.
//
// The curve columns (session 24; curveItemColumns). Where no factor is
// learnt, the columns the free and position columns leave zero take, up
// to ALSCurveColumns of them, the products of the two free columns: with
// w1 = v_.1/sd and w2 = v_.2/sd (sd the slope column's standard
// deviation, to which the popularity column is scaled; it is zero when
// every count is the same),
//
//	w2^2, w1 w2, w1^2,  each centred over the items and scaled to ALSCurveColumnScale sd,
//
// in that order, a product constant over the items taking no column (w1
// is not centred first, so w1 w2 and w1^2 also carry a part linear in
// the free columns, which the fold-in's slopes absorb). A user's fold-in
// then fits x_u3 w2^2 + x_u4 w1 w2 + x_u5 w1^2 besides the two slopes: a
// curve of their own in the item's released bias and popularity (real
// users' liking bends with popularity: a niche viewer may like the
// rarest items and the most popular ones less than the middle, or the
// reverse). They read the released (or public) item biases and counts
// only: post-processing, no budget, no sensitivity. Validation figures
// at ALSCurveColumnScale; TestALSCurveColumns checks the columns, the
// report and the gain on a log whose users' taste bends with popularity,
// and TestCurveItemColumns the formula, the order, the rank limit and the
// place after the position columns (fallbackItemRows).
//
// Private item selection (SelectItems), when no catalogue is given: each
// user adds 1/sqrt(n_u) to each item they rated (l2 norm 1), Gaussian
// noise calibrated to (epsilon_sel, delta_sel/2) at sensitivity 1, and
// items whose noisy weight exceeds tau are kept, tau set so that an item
// only the added user rated is kept with probability at most delta_sel/2
// (max over m = 1..k of 1 - Phi((tau - 1/sqrt(m))/sigma)^m). Only the set
// is released; it composes with the training by basic composition. The
// number of users, the number of ratings and the centred sum are then
// taken from the bounded log before the selection (PrivateOptions.Scalars;
// every user still at most k ratings there, so the same sensitivities),
// the item statistics from the selected items' ratings.
//
// Minibatch DP-SGD (gradient --protect all, the default target and variant;
// private_dpsgd.go). Zero-out relation (one rating replaced by a null that
// contributes no gradient; positions and counts stay public): each step
// releases the sum over a Poisson batch (rate q; q = 1, every rating, by
// default) of per-rating gradients clipped jointly to l2 norm C, plus
// N(0, sigma^2 C^2) on every trained coordinate. Neighbouring batch sums
// differ by one clipped vector, norm <= C, so each step is the sampled
// Gaussian mechanism of Mironov, Talwar and Zhang (2019) with noise
// multiplier sigma (perturb.SampledGaussianRDP; the Gaussian at q = 1);
// T steps and the bias warm start compose in RDP. The headline (epsilon,
// delta) is for zero-out. A change of one rating's value (the relation of
// every other entry-level mode) is two zero-out steps, D ~ D0 ~ D' with D0
// the log with that rating nulled; with P, R, Q the output laws on D, D0,
// D', Hoelder's inequality (exponents 2, 2) on
// E_R[(P/R)^a (R/Q)^(a-1)] gives RDP group privacy (Mironov 2017,
// Proposition 11):
//
//	D_a(P||Q) <= (a - 1/2)/(a - 1) D_2a(P||R) + D_(2a-1)(R||Q),
//
// and both zero-out directions are bounded by the sampled Gaussian's RDP
// rho (Mironov, Talwar and Zhang 2019). Per step and composed over T steps
// (conditionally on the released past), plus the warm start's own curve
// once (its sensitivities are for a value change):
// rho2(a) = warm(a) + (a - 1/2)/(a - 1) T rho(2a) + T rho(2a - 1),
// converted like the headline (perturb.GroupTwoEpsilon; TestGroupTwoEpsilon
// checks it against a numerical integration of the value-change
// divergence). The report gives the result in its Relation and notes:
// at the default plan (q = 1, T = 60, delta 1e-5) zero-out epsilon 1
// is value-change epsilon 2.05. TestDPSGDSensitivityNeighbours checks C
// (zero-out) and 2C (value change) on neighbouring logs.
// Below DPSGDFallbackNoise, for CP models of rank >= 4 with biases at
// q = 1, one more release chooses the released model among post-processings
// of the steps (private_dpsgd_select.go): the own user rows (below
// DPSGDBillboardNoise), users folded into the trained item rows, or into
// the item rows with the free columns in the last two columns. It is the
// vector, over the candidates after the first, of the sums over users of
// each user's clipped loss difference on scored ratings; given the
// released steps a rating enters only its own user's terms, each in [-D,
// D], so its l2 sensitivity is 2D sqrt(J - 1) for a zero-out and a value
// change alike; Gaussian noise at the steps' noise multiplier, accounted
// as one more full-batch step and, for the value change, once (as the
// warm start). TestDPSGDSelectSensitivity checks the bound on neighbouring
// logs.
//
// Input mode (private_input.go): the vector of clamped values has l1 = l2
// sensitivity Delta_r (entry); for models with biases at entry level
// (Laplace) it releases the bias mode's statistics at a tenth of epsilon
// and then the vector of residuals from them clipped to [-c, c], whose
// sensitivity given that release is 2c, c = Delta_r/3
// (private_input_residual.go); when the public noise scale says nothing
// can be learnt from the noisy values it releases the bias mode's
// statistics alone (private_input_fallback.go). Gradient and output
// modes derive theirs in private_gradient.go and private_output.go.
//
// # Speed
//
// The CP kernels are plain loops over contiguous slices, loading the next
// group of entries' factor rows ahead so their cache misses overlap; see BenchmarkEpochML100kShaped and
// BenchmarkEpoch10M and the completion-speed experiment (dprec experiment
// completion-speed), compared with SPLATT's SGD epoch in
// docs/performance.md.
//
// # Accuracy (defaults)
//
// ml-latest-small, random 90/10 train/test split (seed 42), user x movie x
// day, biases on, predictions clamped to [0.5, 5], default Settings (the
// Gibbs sampler), CP rank 10, trained on the whole 90%: test RMSE 0.8212
// (TestMovieLensTarget checks <= 0.830 when the log is present;
// TestMovieLensSolverTable prints every solver x model x time unit).
//
// # Solvers
//
// Settings.Solver picks the optimiser: the Gibbs sampler (the default for
// non-private CP and Tucker models), ALS (the default for Tucker cores
// above MaxGibbsCore entries) or SGD (the solver of the private modes,
// whose plug points act on SGD's updates). All three fit the same model family; ALS and Gibbs add sparse
// time-dependent biases (below).
//
// # ALS
//
// Alternating least squares minimises
//
//	sum_e (x_e - xhat_e)^2 + sum_m sum_i lambda_m n_i |row_m(i) - x0_m|^2 + lambda_b sum bias^2
//	  + lambda_p sum pair^2 + lambda_g N |G - G0|^2
//
// where n_i is the number of observations of row i (ALS-WR: a row's
// penalty grows with its data, so "charged once per rating" for factor
// rows and "once per row" agree and a busy day bucket is not shrunk
// harder than a quiet one), x0 is all-ones for the time rows of an
// order-3 model and zero otherwise, and G0 the superdiagonal identity. The
// time rows are c_k = 1 + d_k with d_k penalised (lambda_m = RegTime): when
// time carries no signal the time rows stay at one and the CP model is
// plain matrix factorisation; likewise the Tucker core is pulled toward
// the CP core, so a heavily penalised Tucker model is the CP model.
//
// One sweep solves, in turn: every pair bias in closed form,
// b_p = sum_{e in p} r_e / (n_p + lambda_p) with r_e the residual without
// b_p; then, mode by mode, every row jointly with its bias by the exact
// ridge solve of the (R+1) x (R+1) normal equations
//
//	(sum_e z_e z_e^T + diag(lambda n_i, ..., lambda n_i, lambda_b)) [x; beta] = sum_e z_e y_e + [lambda n_i x0; 0]
//
// with z_e = [d xhat_e / d row; 1] (the Hadamard product of the other rows
// for CP, the core contracted with them for Tucker) and y_e the value minus
// the offset without the row's bias (Cholesky, O(n_i R^2 + R^3) per row,
// rows in parallel: each row writes only itself, so results do not depend
// on the thread count); and, for Tucker, three conjugate-gradient steps on
// the core's normal equations, warm-started. Each solve is exact given the
// rest, so the objective never increases; early stopping watches the
// validation RMSE per sweep (Patience, default 3).
//
// # Time-dependent biases
//
// For order-3 logs, ALS and Gibbs add a bias per (user, time bucket) seen
// in training and a bias per (item, period), ItemPeriods periods over the
// time range (timeSVD++'s b_{u,t} and b_{i,Bin(t)}; Koren, "Collaborative
// Filtering with Temporal Dynamics", KDD 2009). They are stored as sparse
// decomposition.PairBias tables; a pair unseen in training contributes 0.
// On MovieLens most test ratings fall on a (user, day) that has training
// ratings (people rate in sessions), which is where the user-day bias helps.
//
// # Gibbs
//
// The Gibbs sampler treats the CP model with biases as Bayesian PMF/BPTF
// does (Salakhutdinov and Mnih, "Bayesian Probabilistic Matrix
// Factorization using MCMC", ICML 2008; Xiong et al., "Temporal
// Collaborative Filtering with Bayesian Probabilistic Tensor
// Factorization", SDM 2010): x_e ~ N(xhat_e, 1/alpha); the augmented rows
// [row; bias] of mode m are i.i.d. N(mu_m, Lambda_m^-1) with a
// Normal-Wishart hyperprior (mu0 = 0; beta0 = 2, nu0 = R+1, W0 = I),
// except the factor part of the time rows of an order-3 model, whose prior
// is fixed at N(1, (alpha RegTime max(n_k, 1))^-1 I), the Bayesian reading
// of ALS's penalty (a learned hyperprior let the three-way term overfit a
// synthetic log whose time factors carry no all-ones signal: validation
// 0.8495 against 0.8241 anchored, while ml-latest-small went 0.8140 ->
// 0.8130); pair biases ~ N(0, 1/lambda_p) with lambda_p ~
// Gamma(1, 1); alpha ~ Gamma(1, 1). A sweep samples each mode's
// hyperparameters from their Normal-Wishart conditional, then every row
// from its Gaussian conditional (precision Lambda + alpha sum z z^T, mean
// its inverse times Lambda mu + alpha sum z y; drawn as U^-1 (U^-T rhs +
// eps) with U the Cholesky factor), then the pair biases and alpha. The
// chain starts from two ALS sweeps. Each row draws from its own stream
// seeded by (run seed, sweep, mode, row), so a seed and thread count give
// the same samples.
//
// The returned model holds the mean of the parameters over the sweeps
// after BurnIn, so it is one CP model of the asked rank. The Bayesian
// prediction is the mean of the samples' predictions; since the chain,
// started at an ALS solution, does not wander across the rotations of the
// factors within the run, the two agree closely: on the ml-latest-small
// validation part the parameter mean scored 0.8140 against 0.8124 for the
// averaged predictions of all 150 post-burn-in samples, while averaging
// the predictions of 10 or 30 stored samples (a rank 100 or 300 model)
// scored 0.8292 and 0.8193. EpochRecord.ValidRMSE reports the running
// average of the predictions.
//
// # Gibbs for Tucker
//
// A Tucker model keeps the CP model's priors (the Normal-Wishart
// hyperprior of each mode's augmented rows, the anchored time rows, the
// pair biases, alpha) and adds one for the core G (R1 x R2 x R3 entries,
// vec G row-major). Given the core and the other modes, xhat_e is linear
// in a row with design vector z_e = d xhat_e / d row (the core contracted
// with the entry's rows in the other modes), so every row is drawn from the
// Gaussian conditional above. Given the factors and biases, xhat_e is
// linear in the core:
//
//	xhat_e = o_e + g_e^T vec G,   g_e = d xhat_e / d vec G = a_i ⊗ b_j ⊗ c_k,
//
// with o_e the biases (mean, mode and pair biases). With the likelihood
// x_e ~ N(xhat_e, 1/alpha) and the prior vec G ~ N(vec G0, lambda_g^-1 I),
// G0 the superdiagonal (CP) core, the log conditional of G is, with
// y_e = x_e - o_e,
//
//	-alpha/2 sum_e (y_e - g_e^T G)^2 - lambda_g/2 |G - G0|^2 + const
//	  = -1/2 G^T Q G + G^T h + const,
//	Q = lambda_g I + alpha sum_e g_e g_e^T,   h = lambda_g G0 + alpha sum_e g_e y_e,
//
// a quadratic form, so G | rest ~ N(Q^-1 h, Q^-1), drawn like a row:
// G = U^-1 (U^-T h + eps), Q = U^T U (Cholesky), eps ~ N(0, I), which has
// mean U^-1 U^-T h = Q^-1 h and covariance U^-1 U^-T = Q^-1. The prior
// precision is fixed, lambda_g = alpha RegCore |Omega| (the Bayesian
// reading of ALS's penalty RegCore |Omega| |G - G0|^2 under the noise
// precision alpha, as for the time rows), or, with RegCore negative,
// learned: under the hyperprior lambda_g ~ Gamma(a0, b0) (shape, rate;
// a0 = b0 = 1) the conditional density is proportional to
//
//	lambda^(a0-1) e^(-b0 lambda) * lambda^(|G|/2) e^(-lambda |G - G0|^2 / 2),
//
// that is lambda_g | G ~ Gamma(a0 + |G|/2, b0 + |G - G0|^2/2), drawn after
// each core draw (the chain starts at lambda_g = 1).
//
// Computing Q. Adding g_e g_e^T entry by entry costs |Omega| |G|^2/2
// (4.3e10 at rank 10 on ml-latest-small). Instead the entries are grouped
// by the rows of one mode s (the cheapest; the users on MovieLens): with
// the core positions ordered (mode s, other modes), g_e = a_i ⊗ h_e with
// h_e the Kronecker product of the entry's rows in the other modes, so
//
//	sum_{e in row i} g_e g_e^T = (a_i a_i^T) ⊗ M_i,   M_i = sum_{e in row i} h_e h_e^T,
//	sum_{e in row i} g_e y_e = a_i ⊗ sum_{e in row i} h_e y_e,
//
// for |Omega| H^2/2 + I_s R_s^2 H^2/2 operations (H = |G|/R_s) and a
// Cholesky factorisation of |G|^3/3: about 1e9 at rank 10, a dense
// |G| x |G| system per worker (8 MB at rank 10). A sweep takes 0.23 to
// 0.30 s on ml-latest-small with day buckets and two threads, against
// 0.024 s for CP. Cores above MaxGibbsCore
// entries are refused. The rows' design vectors and the entries' values
// use the core contracted with one mode's rows (T_j = G ×_v f_v(j),
// rebuilt when the rows or the core change), R^2 operations per entry
// instead of R^3. TestGibbsCoreConditional checks Q and h against the
// entry-by-entry sums and the draws' means and variances against Q^-1 h
// and Q^-1; TestGibbsTuckerRecovers recovers a planted Tucker tensor with
// a dense core (test RMSE 0.0015 with the learned precision, 0.063 with the
// default fixed one, 0.21 with the core step skipped).
//
// The returned model is again the mean of the parameters (factors, core,
// biases) after burn-in. The prediction is multilinear in them, so this
// differs from the mean of the samples' predictions a little more than for
// CP: on the ml-latest-small validation part (day buckets, three seeds)
// 0.8170, 0.8175 and 0.8168 against 0.8154, 0.8152 and 0.8153 for the
// averaged predictions (CP: 0.8130, 0.8175, 0.8173 against 0.8119,
// 0.8171, 0.8158).
//
// # Defaults
//
// The defaults were chosen on the 4.5% validation part of the
// ml-latest-small split below (never on its test part; see TestALSTune):
// ALS with rank 10, Reg 0.15 per observation, RegBias 15, RegPair 15,
// RegTime 10, 30 item periods (validation 0.8204 at day buckets, 0.8329
// with no time mode); the Gibbs sampler with 200 sweeps, 50 burn-in
// (validation 0.8140), hence the default solver. On a "dprec data synth"
// log (CP rank 5 with zero-mean time factors) Gibbs with day buckets
// scores 0.8241 on validation (0.8236 without a time mode), ALS 0.8298,
// SGD 0.8199 and the biases alone 0.8298.
//
// Tucker (rank 10 per mode, day buckets): the Gibbs sampler with the same
// settings and the core's prior precision fixed at alpha RegCore |Omega|
// (RegCore 1, ALS's default) scores 0.8170, 0.8175 and 0.8168 on
// validation with three seeds (0.8200, 0.8162 and 0.8164 with the learned
// precision, RegCore -1) against 0.8189 for ALS, hence the default solver
// for Tucker too, with the fixed precision. CP's sampler scores 0.8130,
// 0.8175 and 0.8173 with the same seeds: one chain's validation figure
// moves by up to 0.004 with the seed, and the CP and Tucker samplers are
// not told apart there. On "dprec data synth" logs (100,000 ratings;
// `dprec train --model tucker --seed 1 --refit=false`, validation part of
// the training file) the sampler is slightly behind ALS: 0.8267 against
// 0.8248 on the default CP log, 0.7876 against 0.7870 on a --kind tucker
// log (ranks 5,5,3; CP Gibbs 0.7889), at about six times ALS's time (51 s
// against 8.7 s); the learned precision does worse on both (0.8286,
// 0.7913).
//
// # Experiments
//
// The experiments (synthetic recovery against the observed fraction, epoch
// speed, RMSE against epsilon for the private modes) live in the module's
// cmd/dprec/internal/experiment/completionexp and run as `dprec experiment
// completion-synthetic|completion-speed|completion-privacy`. UniformCP, the
// synthetic tensor they and the benchmarks time, stays here.
package completion
