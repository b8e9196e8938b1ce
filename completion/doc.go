// Package completion trains CP and Tucker tensor-completion models
// (package decomposition) by stochastic gradient descent on objective (4) of
// seed 001, with plug points through which the private modes (input,
// gradient and output perturbation; completion/private*.go) act.
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
// NaN. Inputs are validated: empty stores (ErrEmpty), shape mismatches and
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
// # Speed
//
// The CP kernels are plain loops over contiguous slices, loading the next
// group of entries' factor rows ahead so their cache misses overlap; see BenchmarkEpochML100kShaped and
// BenchmarkEpoch10M and CompletionSpeed, compared with SPLATT's SGD epoch in
// the README.
//
// # Accuracy (defaults)
//
// ml-latest-small, random 90/10 train/test split (seed 42; 5% of the
// training part held out for early stopping), user x movie x week, biases
// on, predictions clamped to [0.5, 5], default Settings, 2 threads, seed
// (1, 1) -- test RMSE:
//
//	rank      5       10      20
//	CP        0.8614  0.8598  0.8574
//	Tucker    0.8588  0.8602  0.8571   (ranks R x R x R, core penalty 0.01)
//
// Reproduce with DPREC_ML_TABLE=1 go test -run TestMovieLensTable -v
// ./completion/ (TestMovieLensTarget checks CP rank 10 <= 0.86 on every
// test run when the log is present).
//
// # Experiments
//
// CompletionSynthetic runs the seed 001 synthetic set-up (test RMSE and
// recovery error against the observed fraction); CompletionSpeed times
// epochs. Both return tables; cmd/dprec formats them.
package completion
