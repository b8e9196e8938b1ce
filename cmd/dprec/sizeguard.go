package main

// Size guard (issue 24 items 6, 7 and 9).
//
// Every numeric flag that sizes work or memory goes through this file,
// which refuses (a usage error, exit 2, naming the flag and the figure)
// what cannot run on this machine, before any data is read:
//
//   - sizeLimits: bounds that hold whatever the data (--threads at most
//     completion.MaxThreads, --epochs and --iterations at most
//     completion.MaxEpochs, tune's --folds and --random, data split's
//     --k, ...);
//   - sizeChecks: a command's workload estimated for the smallest log
//     its flags allow (one rating on a 1 x 1 store, order 2 unless --ranks
//     says 3), with completion.EstimateTrain: what does not fit then
//     (1,000 SGD threads, 16 p^3 bytes of block counters on any log;
//     rank 100,000 under Gibbs, 16 R^2 bytes a thread) can never fit;
//   - after the log is loaded, guardTrainData and guardTuneData estimate
//     the run again with its real shape, before training, and refuse it
//     the same way; the folds of tune must not outnumber the ratings.
//
// Memory is checked against --max-memory (default: half the physical
// memory, data.DefaultMemoryFraction), the limit the loaders already
// apply; "--max-memory none" lifts it. Time is estimated from the
// estimate's floating-point operations at sizeRate a second on each
// thread used: a run above sizeNoteAfter is announced on stderr with the
// estimate, one above sizeRefuseAfter is refused. The refusal names the
// flag whose figure is to blame (the first of --threads, --rank/--ranks,
// --epochs whose lowering makes the run fit) and the largest figure that
// fits. The library applies its own, looser, checks (completion
// resources.go: physical memory, MaxThreads), so a figure this guard
// missed is still an error and never a panic.

import (
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dprec/dprec/completion"
	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
	"github.com/urfave/cli/v2"
)

// Time estimates: sizeRate floating-point operations a second on each
// thread used (a conservative figure for the solvers' Go loops), a note
// past sizeNoteAfter, a refusal past sizeRefuseAfter.
const (
	sizeRate        = 1e9
	sizeNoteAfter   = 10 * time.Minute
	sizeRefuseAfter = 7 * 24 * time.Hour
)

// Bounds of flags without a library constant.
const (
	// tuneMaxRuns bounds tune's training runs (grid points x folds).
	tuneMaxRuns = 100_000
	// splitMaxFolds bounds data split --k: every fold holds a list of
	// the training part (k n positions in all) and is written as two files.
	splitMaxFolds = 1000
	// synthRowBytes is data synth's memory per drawn rating (cell key,
	// store row, clean value, time stamp and the sort's scratch).
	synthRowBytes = 64
)

// sizeLimit bounds one integer flag whatever the data.
type sizeLimit struct {
	flag string
	cmd  string // the command path; "" for every command with the flag
	max  int
	why  string
}

// sizeLimits are the data-independent bounds, checked for every command
// that has the flag (an integer flag given on the command line).
var sizeLimits = []sizeLimit{
	{flag: "threads", max: completion.MaxThreads, why: "every worker holds its own working space (SGD: 16 p^(order+1) bytes of block counters), and no machine runs more at once"},
	{flag: "epochs", max: completion.MaxEpochs, why: "every epoch is kept in the training history"},
	{flag: "iterations", max: completion.MaxEpochs, why: "every sweep is a full ALS pass"},
	{flag: "folds", cmd: "dprec tune", max: tuneMaxRuns, why: "every fold trains every grid point"},
	{flag: "random", cmd: "dprec tune", max: completion.MaxGridPoints, why: "every point is a training run per fold"},
	{flag: "k", cmd: "dprec data split", max: splitMaxFolds, why: "k-fold holds k training lists of the log and writes 2k files"},
	{flag: "seeds", max: 10_000, why: "every seed is a full experiment run"},
}

// sizeChecks are the workload checks of commands, for the smallest log
// their flags allow (run after sizeLimits, before any data is read).
var sizeChecks = map[string]func(c *cli.Context, limit float64) error{
	"dprec train":      guardTrainFlags,
	"dprec tune":       guardTuneFlags,
	"dprec data synth": guardSynthFlags,
}

// checkSizes runs the size checks of the command at path (installHooks,
// after checkFlags); failures are usage errors.
func checkSizes(c *cli.Context, path string) error {
	if c.Command == nil {
		return nil
	}
	for _, l := range sizeLimits {
		if l.cmd != "" && l.cmd != path {
			continue
		}
		if _, ok := flagDef(c.Command.Flags, l.flag).(*cli.IntFlag); !ok || !c.IsSet(l.flag) {
			continue
		}
		if v := c.Int(l.flag); v > l.max {
			return &usageError{cmd: path, msg: fmt.Sprintf("--%s %d: at most %d (%s)", l.flag, v, l.max, l.why)}
		}
	}
	if chk := sizeChecks[path]; chk != nil {
		if err := chk(c, sizeMemLimit(c)); err != nil {
			return &usageError{cmd: path, msg: err.Error()}
		}
	}
	return nil
}

// sizeMemLimit returns the memory budget of the command's run in bytes:
// its --max-memory (0: "none", no limit), else half the physical memory
// (0 when unknown).
func sizeMemLimit(c *cli.Context) float64 {
	var o int64
	if flagDef(c.Command.Flags, "max-memory") != nil {
		o, _ = parseMaxMemory(c.String("max-memory")) // checked by checkFlags
	}
	return sizeLimitBytes(o)
}

// sizeLimitBytes is the budget of a LoadOptions.MaxMemory value: itself
// when positive, no limit (0) when negative, else half the physical
// memory.
func sizeLimitBytes(maxMemory int64) float64 {
	switch {
	case maxMemory > 0:
		return float64(maxMemory)
	case maxMemory < 0:
		return 0
	}
	return float64(data.PhysicalMemory()) * data.DefaultMemoryFraction
}

// sizeLimitText says where a limit comes from, for messages.
func sizeLimitText(limit float64) string {
	def := float64(data.PhysicalMemory()) * data.DefaultMemoryFraction
	if limit == def {
		return fmt.Sprintf("the limit of %s (half the physical memory; raise it with --max-memory)", fmtBytes(limit))
	}
	return fmt.Sprintf("the --max-memory limit of %s", fmtBytes(limit))
}

func fmtBytes(b float64) string {
	if b >= 1<<62 {
		return fmt.Sprintf("%.3g EiB", b/(1<<60))
	}
	return data.FormatBytes(int64(b))
}

// fmtDuration writes a duration estimate: "40 minutes", "5.2 hours",
// "3.1 days", "2.4e+03 years".
func fmtDuration(sec float64) string {
	switch {
	case sec < 120:
		return fmt.Sprintf("%.0f seconds", sec)
	case sec < 2*3600:
		return fmt.Sprintf("%.0f minutes", sec/60)
	case sec < 2*86400:
		return fmt.Sprintf("%.1f hours", sec/3600)
	case sec < 2*365*86400:
		return fmt.Sprintf("%.1f days", sec/86400)
	}
	return fmt.Sprintf("%.2g years", sec/(365*86400))
}

// sizeJob is one training run to check: its workload (or an implicit
// run's), how its figures were given, and where it stands (before the
// data is read, the smallest log).
type sizeJob struct {
	w        completion.Workload
	implicit *completion.ImplicitSettings // --objective implicit (w gives the shape)
	rankFlag string                       // "--rank" or "--ranks"; "" when the grid sets it
	what     string                       // the flags as given, for messages when no single one is to blame
	before   bool                         // checked before reading data (the smallest log)
}

func (j sizeJob) estimate() completion.Estimate {
	if j.implicit != nil {
		return completion.EstimateImplicit(j.w.Dims[0], j.w.Dims[1], j.w.NNZ, j.w.Ranks[0], j.implicit)
	}
	return completion.EstimateTrain(j.w)
}

// threads is the number of workers the job asks for (0: GOMAXPROCS).
func (j sizeJob) threads() int {
	t := j.w.Settings.Threads
	if j.implicit != nil {
		t = j.implicit.Threads
	}
	if t <= 0 {
		return runtime.GOMAXPROCS(0)
	}
	return t
}

func (j sizeJob) withThreads(t int) sizeJob {
	if j.implicit != nil {
		s := *j.implicit
		s.Threads = t
		j.implicit = &s
	} else {
		j.w.Settings.Threads = t
	}
	return j
}

func (j sizeJob) rank() int { return slices.Max(j.w.Ranks) }

func (j sizeJob) withRank(r int) sizeJob {
	ranks := make([]int, len(j.w.Ranks))
	for i, v := range j.w.Ranks {
		ranks[i] = max(1, min(v, r))
	}
	j.w.Ranks = ranks
	return j
}

// epochs is the job's number of epochs or sweeps, defaults filled in.
func (j sizeJob) epochs() int {
	if j.implicit != nil {
		return j.implicit.Resolved().Iterations
	}
	s := j.w.Settings
	if j.w.Mode != "" && j.w.Mode != "none" && j.w.Mode != "input" && s.Solver == completion.SolverDefault {
		s.Solver = completion.SolverSGD // input trains by the non-private default
	}
	return s.ResolvedFor(j.w.Kind).Epochs
}

func (j sizeJob) withEpochs(e int) sizeJob {
	if j.implicit != nil {
		s := *j.implicit
		s.Iterations = e
		j.implicit = &s
	} else {
		j.w.Settings.Epochs = e
	}
	return j
}

func (j sizeJob) epochFlag() string {
	if j.implicit != nil {
		return "--iterations"
	}
	return "--epochs"
}

// seconds is the time estimate of e: its operations at sizeRate on each
// thread used (the statistics modes use one).
func (j sizeJob) seconds(e completion.Estimate) float64 {
	p := min(j.threads(), runtime.NumCPU())
	if j.w.Mode == "bias" || j.w.Mode == "als" {
		p = 1
	}
	return e.Flops / (sizeRate * float64(max(1, p)))
}

// onThreads says on how many threads seconds counts: "on 1 thread", "on
// each of 2 threads".
func (j sizeJob) onThreads() string {
	p := min(j.threads(), runtime.NumCPU())
	if j.w.Mode == "bias" || j.w.Mode == "als" || p <= 1 {
		return "on 1 thread"
	}
	return fmt.Sprintf("on each of %d threads", p)
}

// largest returns the largest v in [1, hi] with fits(v), 0 when none.
func largest(hi int, fits func(v int) bool) int {
	if hi < 1 || !fits(1) {
		return 0
	}
	lo := 1
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		if fits(mid) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// check refuses j when its memory estimate exceeds limit (0: none) or its
// time estimate sizeRefuseAfter; it returns a note when the time estimate
// exceeds sizeNoteAfter.
func (j sizeJob) check(limit float64) (note string, err error) {
	e := j.estimate()
	where := ""
	if j.before {
		where = " whatever the log"
	}
	if limit > 0 && e.Bytes > limit {
		fits := func(j sizeJob) bool { return j.estimate().Bytes <= limit }
		msg := fmt.Sprintf("%s: about %s of memory%s, more than %s", e.What, fmtBytes(e.Bytes), where, sizeLimitText(limit))
		return "", j.blame(msg, fits, false)
	}
	sec := j.seconds(e)
	if sec > sizeRefuseAfter.Seconds() {
		fits := func(j sizeJob) bool { return j.seconds(j.estimate()) <= sizeRefuseAfter.Seconds() }
		msg := fmt.Sprintf("about %.2g floating-point operations%s, roughly %s at %.0g a second %s, more than the %s this program accepts", e.Flops, where, fmtDuration(sec), sizeRate, j.onThreads(), fmtDuration(sizeRefuseAfter.Seconds()))
		return "", j.blame(msg, fits, true)
	}
	if sec > sizeNoteAfter.Seconds() {
		return fmt.Sprintf("note: %s: about %.2g floating-point operations, roughly %s at %.0g a second %s (a rough estimate; a lower rank or fewer %s shorten it)", j.what, e.Flops, fmtDuration(sec), sizeRate, j.onThreads(), strings.TrimPrefix(j.epochFlag(), "--")), nil
	}
	return "", nil
}

// blame names the flag whose figure makes j not fit: the first of
// --threads, the rank, and (for time) the epochs whose lowering alone
// makes it fit, with the largest figure that does (before the data is
// read, the largest for the smallest log: a larger or order-3 log fits
// less); else the flags as given.
func (j sizeJob) blame(msg string, fits func(sizeJob) bool, time bool) error {
	fit := func(plural bool) string {
		switch {
		case j.before:
			return "could fit (fewer on a larger or order-3 log)"
		case plural:
			return "fit"
		}
		return "fits"
	}
	if t := j.threads(); t > 1 && fits(j.withThreads(1)) {
		n := largest(t, func(v int) bool { return fits(j.withThreads(v)) })
		return fmt.Errorf("--threads %d: %s; at most %d threads %s", t, msg, n, fit(true))
	}
	if r := j.rank(); j.rankFlag != "" && r > 1 && fits(j.withRank(1)) {
		n := largest(r, func(v int) bool { return fits(j.withRank(v)) })
		return fmt.Errorf("%s: %s; at most rank %d %s with these threads and epochs", j.rankText(), msg, n, fit(false))
	}
	if ep := j.epochs(); time && ep > 1 && fits(j.withEpochs(1)) {
		n := largest(ep, func(v int) bool { return fits(j.withEpochs(v)) })
		return fmt.Errorf("%s %d: %s; at most %d %s", j.epochFlag(), ep, msg, n, fit(true))
	}
	return fmt.Errorf("%s: %s", j.what, msg)
}

// rankText writes the rank as given: "--rank 10", "--ranks 5,5,3" or
// "--grid rank=10".
func (j sizeJob) rankText() string {
	switch j.rankFlag {
	case "--ranks":
		parts := make([]string, len(j.w.Ranks))
		for i, r := range j.w.Ranks {
			parts[i] = strconv.Itoa(r)
		}
		return "--ranks " + strings.Join(parts, ",")
	case "--grid":
		return fmt.Sprintf("--grid rank=%d", j.rank())
	}
	return fmt.Sprintf("%s %d", j.rankFlag, j.rank())
}

// trainJobFlags are the flags the size guard of train reads.
type trainJobFlags struct {
	Kind            decomposition.Kind
	RanksText       string // --ranks as given
	Rank            int
	Solver          completion.Solver
	Mode            string // --privacy
	Bias            bool
	Minibatch       bool // --privacy gradient's minibatch DP-SGD
	Threads, Epochs int
	Implicit        bool // --objective implicit
	RankSet         bool
	Iterations      int
}

// trainJobFlagsOf reads the flags the size guard of train needs.
func trainJobFlagsOf(c *cli.Context) trainJobFlags {
	solver, _ := completion.ParseSolver(strings.ToLower(c.String("solver")))
	mode := strings.ToLower(c.String("privacy"))
	return trainJobFlags{Kind: decomposition.Kind(strings.ToLower(c.String("model"))), RanksText: c.String("ranks"),
		Rank: c.Int("rank"), Solver: solver, Mode: mode, Bias: c.Bool("bias") && !c.Bool("no-bias"),
		Minibatch: mode == "gradient" && !strings.EqualFold(c.String("protect"), "c") && strings.ToLower(c.String("dp-sgd")) != "per-entry",
		Threads:   c.Int("threads"), Epochs: c.Int("epochs"), Implicit: c.String("objective") == "implicit",
		RankSet: c.IsSet("rank"), Iterations: c.Int("iterations")}
}

// trainJob is the workload of a train run with flags f on a log of the
// given mode sizes and ratings (dims nil: the smallest log the flags
// allow, before any data is read).
func trainJob(f trainJobFlags, dims []int, nnz int, ranks []int) sizeJob {
	rankFlag := "--rank"
	if f.RanksText != "" {
		rankFlag = "--ranks"
	}
	if ranks == nil {
		if rankFlag == "--ranks" {
			for _, p := range strings.Split(f.RanksText, ",") {
				v, _ := strconv.Atoi(strings.TrimSpace(p)) // checked by checkRanks
				ranks = append(ranks, max(1, v))
			}
		} else {
			ranks = []int{max(1, f.Rank), max(1, f.Rank)}
		}
	}
	before := dims == nil
	if before {
		dims, nnz = make([]int, len(ranks)), 1
		for i := range dims {
			dims[i] = 1
		}
	}
	for len(ranks) < len(dims) {
		ranks = append(ranks, ranks[0])
	}
	ranks = ranks[:len(dims)]
	j := sizeJob{before: before, rankFlag: rankFlag,
		w: completion.Workload{Kind: f.Kind, Dims: dims, Ranks: ranks, Bias: f.Bias, NNZ: nnz, Mode: f.Mode,
			MinibatchDPSGD: f.Minibatch,
			Settings:       completion.Settings{Solver: f.Solver, Threads: f.Threads, Epochs: f.Epochs}}}
	j.what = fmt.Sprintf("%s, %s, %s %d", j.rankText(), j.solverText(), j.epochFlag(), j.epochs())
	if f.Implicit {
		r := completion.DefaultImplicitRank
		if f.RankSet {
			r = max(1, f.Rank)
		}
		if !before {
			r = ranks[0] // resolved by the library
		}
		j.w.Kind, j.w.Dims, j.w.Ranks, j.w.Bias = decomposition.CP, dims[:2], []int{r, r}, false
		j.implicit = &completion.ImplicitSettings{Iterations: f.Iterations, Threads: f.Threads}
		j.what = fmt.Sprintf("--rank %d, implicit ALS, --iterations %d", r, j.epochs())
	}
	return j
}

// solverText names the job's solver for messages.
func (j sizeJob) solverText() string {
	switch {
	case j.w.Mode == "bias" || j.w.Mode == "als":
		return "--privacy " + j.w.Mode
	case j.w.Mode != "" && j.w.Mode != "none":
		return "--privacy " + j.w.Mode + " (SGD)"
	case j.w.Settings.Solver != completion.SolverDefault:
		return "--solver " + j.w.Settings.Solver.String()
	}
	core := 1
	for _, r := range j.w.Ranks {
		core *= r
	}
	if j.w.Kind == decomposition.Tucker && core > completion.MaxGibbsCore {
		return "the default solver (als)"
	}
	return "the default solver (gibbs)"
}

// guardTrainFlags checks train's workload for the smallest log its flags
// allow.
func guardTrainFlags(c *cli.Context, limit float64) error {
	_, err := trainJob(trainJobFlagsOf(c), nil, 0, nil).check(limit)
	return err
}

// guardTuneFlags checks tune's grid before any data is read: at most
// tuneMaxRuns training runs and completion.MaxGridPoints combinations,
// and every point's workload for the smallest log.
func guardTuneFlags(c *cli.Context, limit float64) error {
	grid, err := completion.ParseGrid(c.String("grid"))
	if err != nil {
		return nil // reported by tuneOptionsOf
	}
	kind := decomposition.Kind(strings.ToLower(c.String("model")))
	solver, _ := completion.ParseSolver(strings.ToLower(c.String("solver")))
	cfg := completion.TuneConfig{Kind: kind, Rank: max(1, c.Int("rank")), Bias: c.Bool("bias"), Grid: grid, Random: c.Int("random"), Folds: c.Int("folds"),
		Base: completion.Settings{Threads: c.Int("threads"), Solver: solver, Epochs: c.Int("epochs")}}
	_, err = tuneGuard(&cfg, []int{1, 1}, 1, true, limit)
	return err
}

// guardTuneData checks tune's grid on the loaded log st before any point
// is trained: no more folds than ratings, every point's memory, and the
// whole grid's time (refused past sizeRefuseAfter; a note past
// sizeNoteAfter is returned). Refusals are usage errors.
func guardTuneData(cfg *completion.TuneConfig, st *data.Store, maxMemory int64) (note string, err error) {
	if cfg.Folds > st.NNZ() {
		return "", cli.Exit(fmt.Sprintf("--folds %d: more than the log's %d ratings (every fold validates on at least one); at most %d", cfg.Folds, st.NNZ(), st.NNZ()), exitUsage)
	}
	note, err = tuneGuard(cfg, st.Dims, st.NNZ(), false, sizeLimitBytes(maxMemory))
	if err != nil {
		return "", cli.Exit(err.Error(), exitUsage)
	}
	return note, nil
}

// tuneGuard checks the grid of cfg on a log of dims and nnz ratings
// (before: the smallest log, before reading data): the number of runs,
// each point's memory and the total time, which is the mean point's
// estimate times the points scored and the folds.
func tuneGuard(cfg *completion.TuneConfig, dims []int, nnz int, before bool, limit float64) (string, error) {
	if g := cfg.GridPoints(); g > completion.MaxGridPoints {
		return "", fmt.Errorf("--grid: %.3g combinations, at most %d (draw some with --random, or give fewer values)", g, completion.MaxGridPoints)
	}
	folds := max(1, cfg.Folds)
	if runs := cfg.Runs(); runs > tuneMaxRuns {
		return "", fmt.Errorf("--folds %d x %.0f grid points = %.0f training runs: at most %d", cfg.Folds, cfg.Points(), runs, tuneMaxRuns)
	}
	total, n, slowest := 0.0, 0.0, 0.0
	var worst string
	err := cfg.EachPoint(func(s completion.Settings, rank int) error {
		j := sizeJob{before: before, rankFlag: "--grid", w: completion.Workload{Kind: cfg.Kind, Dims: dims, Ranks: slices.Repeat([]int{rank}, len(dims)), Bias: cfg.Bias, NNZ: nnz, Settings: s}}
		j.what = fmt.Sprintf("%s, %s, --epochs %d", j.rankText(), j.solverText(), j.epochs())
		e := j.estimate()
		if limit > 0 && e.Bytes > limit {
			_, err := j.check(limit)
			return err
		}
		sec := j.seconds(e)
		total += sec
		n++
		if sec > slowest {
			slowest, worst = sec, j.what
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	sec := total / max(n, 1) * cfg.Points() * float64(folds)
	what := fmt.Sprintf("%.0f grid points x %d folds", cfg.Points(), folds)
	if cfg.Folds <= 1 {
		what = fmt.Sprintf("%.0f grid points on one hold-out", cfg.Points())
	}
	switch {
	case sec > sizeRefuseAfter.Seconds():
		return "", fmt.Errorf("%s: roughly %s at %.0g floating-point operations a second on each thread (the slowest point: %s), more than the %s this program accepts; lower --folds, --random or the grid", what, fmtDuration(sec), sizeRate, worst, fmtDuration(sizeRefuseAfter.Seconds()))
	case sec > sizeNoteAfter.Seconds():
		return fmt.Sprintf("note: %s: roughly %s at %.0g floating-point operations a second on each thread (a rough estimate)", what, fmtDuration(sec), sizeRate), nil
	}
	return "", nil
}

// guardSynthFlags checks data synth's sizes: the drawn cells and the
// model's factors must fit in half the physical memory.
func guardSynthFlags(c *cli.Context, limit float64) error {
	if limit <= 0 {
		return nil
	}
	rows := float64(c.Int("users")) + float64(c.Int("items")) + float64(c.Int("times"))
	r := float64(c.Int("rank"))
	if strings.ToLower(c.String("kind")) == "tucker" {
		r = 1
		for _, p := range strings.Split(c.String("ranks"), ",") {
			v, _ := strconv.Atoi(strings.TrimSpace(p))
			r = max(r, float64(v))
		}
	}
	need := float64(c.Int("ratings"))*synthRowBytes + 8*rows*(r+1)
	if need <= limit {
		return nil
	}
	return fmt.Errorf("--ratings %d, --users %d, --items %d, --times %d, rank %.0f: the log and its model need about %s of memory, more than half the physical memory (%s)",
		c.Int("ratings"), c.Int("users"), c.Int("items"), c.Int("times"), r, fmtBytes(need), fmtBytes(limit))
}
