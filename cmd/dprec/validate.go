package main

// Flag checks run before a command's action, so a bad flag value is
// reported (exit code 2) before any file is read. checkFlags is installed
// on every command by newApp; a command's checks are listed in flagChecks
// under its path, and the rating-log loading flags (dataLoadFlags) are
// checked for every command that has them.

import (
	"fmt"
	"math"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/otd"
	"github.com/dprec/dprec/perturb"
	"github.com/urfave/cli/v2"
)

// flagCheck checks one command's flag values.
type flagCheck func(c *cli.Context) error

// flagChecks lists the checks of each command, by command path.
var flagChecks = map[string][]flagCheck{
	"dprec train": {
		oneOf("model", "cp", "tucker"),
		positiveInt("rank"), positiveInt("epochs"),
		oneOf("solver", "default", "gibbs", "als", "sgd"),
		oneOf("time-biases", "default", "on", "off"),
		nonNegativeInt("item-periods"), nonNegativeInt("burn-in"),
		checkSolverModel,
		checkRanks,
		fraction("validation"),
		checkClamp,
		oneOf("privacy", "none", "bias", "als", "input", "gradient", "output"),
		oneOf("protect", "C", "c", "all"),
		oneOf("dp-sgd", "minibatch", "per-entry"),
		oneOf("mechanism", "laplace", "gaussian"),
		oneOf("accounting", "best", "rdp", "advanced", "basic"),
		oneOf("privacy-unit", "entry", "user"),
		checkCalibration,
		checkTrainPrivacy,
		oneOf("objective", "rating", "implicit", "ease"),
		checkTrainValues,
		fileOnly("out", "a model file"),
	},
	"dprec tune": {
		fileOnly("out", "a model file"),
		oneOf("model", "cp", "tucker"), positiveInt("rank"), nonNegativeInt("folds"), nonNegativeInt("random"),
		oneOf("solver", "default", "gibbs", "als", "sgd"), positiveInt("epochs"),
		openFraction("validation"),
	},
	"dprec predict":   {checkTime, checkJSONFlags, checkPredictShape, checkPredictOut},
	"dprec recommend": {positiveInt("top"), checkTime, checkJSONFlags, checkRecommendShape},
	"dprec eval":      {positiveInt("k"), finiteFloat("threshold")},
	"dprec spectral": {
		oneOf("model", "stm", "lda", "mog"),
		oneOf("method", spectralMethods...),
		oneOf("estimator", "all-triples", "first-three"),
		positiveInt("topics"), nonNegativeInt("private-vocab"),
		checkSpectralPrivacy, checkSpectralClip,
	},
	"dprec pca": {positiveInt("k"), checkCalibration, positiveFloat("epsilon"), openFraction("delta")},
	"dprec data split": {
		oneOf("method", "random", "user", "time", "kfold"),
		openFraction("fraction"), positiveInt("k"), positiveInt("per-user-k"),
	},
	"dprec cape aggregate": {
		oneOf("job", "mean", "pca", "agn"), oneOf("model", "mog", "stm"),
		positiveInt("sites"), positiveInt("dim"), positiveInt("k"),
		checkCalibration, openFraction("split"),
	},
	"dprec cape site": {positiveInt("id"), positiveFloat("epsilon"), openFraction("delta"), positiveFloat("row-scale")},
	"dprec experiment completion-synthetic": {
		oneOf("kind", "cp", "tucker", "both"),
		positiveInt("seeds"), positiveInt("size"), positiveInt("rank"), positiveFloat("snr"),
	},
	"dprec experiment completion-speed":   {oneOf("kind", "cp", "tucker"), positiveInt("epochs"), positiveInt("rank")},
	"dprec experiment completion-privacy": {positiveInt("seeds"), positiveInt("epochs"), positiveInt("rank"), openFraction("delta")},
	"dprec data synth": {
		oneOf("kind", "cp", "tucker"),
		oneOf("scale", "0.5-5", "1-5", "continuous"),
		oneOf("time-unit", "hour", "day", "week", "month"),
		positiveInt("users"), positiveInt("items"), positiveInt("ratings"), positiveInt("rank"),
		nonNegativeInt("times"),
	},
}

// checkFlags runs the checks of the command at path; failures are usage
// errors.
func checkFlags(c *cli.Context, path string) error {
	if c.Command != nil && flagDef(c.Command.Flags, "time-unit") != nil && flagDef(c.Command.Flags, "columns") != nil {
		if _, err := dataLoadOptions(c); err != nil {
			return &usageError{cmd: path, msg: err.Error()}
		}
	}
	for _, f := range flagChecks[path] {
		if err := f(c); err != nil {
			return &usageError{cmd: path, msg: err.Error()}
		}
	}
	return nil
}

// oneOf checks that a string flag, when given, is one of the choices
// (suggesting the closest one otherwise).
func oneOf(name string, choices ...string) flagCheck {
	return func(c *cli.Context) error {
		if !c.IsSet(name) {
			return nil
		}
		v := c.String(name)
		if slices.Contains(choices, v) || slices.Contains(choices, strings.ToLower(v)) {
			return nil
		}
		msg := fmt.Sprintf("--%s %q: want %s", name, v, orList(choices))
		if s := suggest(strings.ToLower(v), choices); s != "" {
			msg += fmt.Sprintf("; did you mean %q?", s)
		}
		return fmt.Errorf("%s", msg)
	}
}

// fileOnly refuses "-" for a path flag whose file is written only to a
// file (the library writes files only, and does not take "-" for
// standard output).
func fileOnly(name, what string) flagCheck {
	return func(c *cli.Context) error {
		if c.String(name) == "-" {
			return fmt.Errorf("--%s -: %s is written to a file, not to the output stream; give a file name (./- for a file named -)", name, what)
		}
		return nil
	}
}

// orList writes "a, b or c".
func orList(xs []string) string {
	if len(xs) == 1 {
		return xs[0]
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " or " + xs[len(xs)-1]
}

// positiveInt checks that an integer flag, when given, is at least 1.
func positiveInt(name string) flagCheck {
	return func(c *cli.Context) error {
		if c.IsSet(name) && c.Int(name) <= 0 {
			return fmt.Errorf("--%s %d: must be positive", name, c.Int(name))
		}
		return nil
	}
}

// nonNegativeInt checks that an integer flag, when given, is at least 0.
func nonNegativeInt(name string) flagCheck {
	return func(c *cli.Context) error {
		if c.IsSet(name) && c.Int(name) < 0 {
			return fmt.Errorf("--%s %d: must be at least 0", name, c.Int(name))
		}
		return nil
	}
}

// positiveFloat checks that a float flag, when given, is positive and
// finite.
func positiveFloat(name string) flagCheck {
	return func(c *cli.Context) error {
		if v := c.Float64(name); c.IsSet(name) && !(v > 0 && !math.IsInf(v, 0)) {
			return fmt.Errorf("--%s %g: must be positive and finite", name, v)
		}
		return nil
	}
}

// openFraction checks that a float flag, when given, is in (0, 1).
func openFraction(name string) flagCheck {
	return func(c *cli.Context) error {
		if v := c.Float64(name); c.IsSet(name) && !(v > 0 && v < 1) {
			return fmt.Errorf("--%s %g: want a value strictly between 0 and 1", name, v)
		}
		return nil
	}
}

// fraction checks that a float flag, when given, is in [0, 1).
func fraction(name string) flagCheck {
	return func(c *cli.Context) error {
		if v := c.Float64(name); c.IsSet(name) && !(v >= 0 && v < 1) {
			return fmt.Errorf("--%s %g: want a fraction in [0, 1)", name, v)
		}
		return nil
	}
}

func checkRanks(c *cli.Context) error {
	s := c.String("ranks")
	if s == "" {
		return nil
	}
	if strings.ToLower(c.String("model")) != "tucker" {
		return fmt.Errorf("--ranks is for --model tucker; CP takes --rank")
	}
	for _, p := range strings.Split(s, ",") {
		if v, err := strconv.Atoi(strings.TrimSpace(p)); err != nil || v <= 0 {
			return fmt.Errorf("--ranks %q: %q is not a positive integer", s, p)
		}
	}
	return nil
}

func checkClamp(c *cli.Context) error {
	switch s := strings.TrimSpace(c.String("clamp")); s {
	case "", "data", "none":
		return nil
	default:
		lo, hi, ok := strings.Cut(s, ",")
		a, err1 := strconv.ParseFloat(strings.TrimSpace(lo), 64)
		b, err2 := strconv.ParseFloat(strings.TrimSpace(hi), 64)
		if !ok || err1 != nil || err2 != nil || !(a < b) || math.IsInf(a, 0) || math.IsInf(b, 0) {
			return fmt.Errorf(`--clamp %q: want "lo,hi" with lo < hi, "data" or "none"`, s)
		}
	}
	return nil
}

// parseCalibration parses a --calibration value (the Gaussian mechanism's
// calibration of pca, cape aggregate and experiment spectral); a bad value
// is a usage error.
func parseCalibration(v string) (perturb.Calibration, error) {
	cal, err := perturb.ParseCalibration(v)
	if err != nil {
		return cal, cli.Exit(err.Error(), exitUsage)
	}
	return cal, nil
}

func checkCalibration(c *cli.Context) error {
	if !c.IsSet("calibration") {
		return nil
	}
	if _, err := perturb.ParseCalibration(c.String("calibration")); err != nil {
		return fmt.Errorf("--calibration: %w", err)
	}
	return nil
}

func checkTime(c *cli.Context) error {
	if _, err := predictParseTime(c.String("time")); err != nil {
		return fmt.Errorf("--time: %w", err)
	}
	return nil
}

// checkPredictShape checks that predict was told what to predict.
func checkPredictShape(c *cli.Context) error {
	switch {
	case c.IsSet("user-log"):
		if c.IsSet("ratings") || c.IsSet("input") || c.String("user") == "" || c.String("item") == "" {
			return fmt.Errorf("predict --user-log: give --user and --item (and no --ratings or --input)")
		}
	case c.IsSet("ratings"):
		if c.IsSet("input") || c.String("item") == "" {
			return fmt.Errorf("predict --ratings: give the item to predict with --item (and no --input)")
		}
	case c.IsSet("input"):
		if c.IsSet("user") || c.IsSet("item") {
			return fmt.Errorf("predict --input takes the pairs from the file: no --user or --item")
		}
	case c.String("user") == "" || c.String("item") == "":
		return fmt.Errorf("predict: give --user and --item, --input FILE of pairs, or --ratings FILE and --item")
	}
	return nil
}

// checkRecommendShape checks that recommend was told for whom.
func checkRecommendShape(c *cli.Context) error {
	if c.Bool("all-users") {
		if c.IsSet("user") || c.IsSet("ratings") {
			return fmt.Errorf("recommend --all-users takes no --user or --ratings")
		}
		out := c.String("out")
		if (c.Bool("json") || c.Bool("jsonl")) && out != "" && out != "-" {
			return fmt.Errorf("recommend --all-users --out writes CSV or Parquet (by the file name); --json and --jsonl print on standard output")
		}
		if f := data.DetectFormat(out); out != "" && out != "-" && f != data.FormatCSV && f != data.FormatParquet {
			return fmt.Errorf("--out %s: want a .csv or .parquet file name", out)
		}
		return nil
	}
	if c.IsSet("out") {
		return fmt.Errorf("recommend --out is for --all-users; one user's list goes to standard output")
	}
	if !c.IsSet("user") && !c.IsSet("ratings") {
		return fmt.Errorf("recommend: give --user ID, --ratings FILE (a new user) or --all-users")
	}
	return nil
}

// checkSpectralPrivacy refuses a budget given to the non-private method,
// which would silently ignore it.
func checkSpectralPrivacy(c *cli.Context) error {
	if strings.ToLower(c.String("method")) != "nonprivate" {
		if err := positiveFloat("epsilon")(c); err != nil {
			return err
		}
		if v := c.Float64("delta"); c.IsSet("delta") && !(v >= 0 && v < 1) {
			return fmt.Errorf("--delta %g: want a value in [0, 1)", v)
		}
		return nil
	}
	for _, f := range []string{"epsilon", "delta"} {
		if c.IsSet(f) {
			return fmt.Errorf("--%s is a privacy budget: give a private --method (%s)", f, orList(spectralMethods[1:]))
		}
	}
	return nil
}

// checkSpectralClip checks agn-whitened's settings against otd's rules
// (otd.PrivateOptions): --private-vocab at most otd.MaxPrivateVocab,
// --clip-len above 1 (0: default, negative: off), --clip-m3 finite.
func checkSpectralClip(c *cli.Context) error {
	if v := c.Int("private-vocab"); v > otd.MaxPrivateVocab {
		return fmt.Errorf("--private-vocab %d: at most %d (the selected words' second moment is dense)", v, otd.MaxPrivateVocab)
	}
	if v := c.Float64("clip-len"); c.IsSet("clip-len") && (math.IsNaN(v) || math.IsInf(v, 0) || (v > 0 && v <= 1)) {
		return fmt.Errorf("--clip-len %g: want a document length above 1, or a negative value to turn clipping off", v)
	}
	if v := c.Float64("clip-m3"); c.IsSet("clip-m3") && (math.IsNaN(v) || math.IsInf(v, 0)) {
		return fmt.Errorf("--clip-m3 %g: must be finite (negative: off)", v)
	}
	return nil
}

// checkTrainPrivacy checks the combinations of train's privacy flags that
// trainPrivacy would otherwise refuse only after the data had loaded.
func checkTrainPrivacy(c *cli.Context) error {
	mode := strings.ToLower(c.String("privacy"))
	if mode == "none" || mode == "" {
		for _, f := range trainUserFlags {
			if c.IsSet(f) {
				return fmt.Errorf("--%s needs --privacy bias, als, input, gradient or output", f)
			}
		}
		return nil
	}
	if c.IsSet("validation") && c.Float64("validation") > 0 {
		// Without --validation a private run holds nothing out (train says so).
		return fmt.Errorf("--privacy %s needs --validation 0: held-out ratings would steer early stopping and be reported in the model file without noise", mode)
	}
	if !c.IsSet("epsilon") {
		return fmt.Errorf("--privacy %s needs --epsilon (the total budget)", mode)
	}
	if e := c.Float64("epsilon"); !(e > 0) || math.IsInf(e, 0) {
		return fmt.Errorf("--epsilon %g: must be positive and finite", e)
	}
	if d := c.Float64("delta"); !(d >= 0 && d < 1) {
		return fmt.Errorf("--delta %g: want a value in [0, 1)", d)
	}
	return checkTrainUnit(c, mode)
}

// checkTrainUnit checks the user-unit flags before any file is read.
func checkTrainUnit(c *cli.Context, mode string) error {
	if strings.ToLower(c.String("privacy-unit")) != "user" {
		for _, f := range []string{"max-ratings-per-user", "items", "time-from", "time-to", "selection-epsilon"} {
			if c.IsSet(f) {
				return fmt.Errorf("--%s belongs to --privacy-unit user", f)
			}
		}
		return nil
	}
	if mode != "bias" && mode != "als" {
		return fmt.Errorf("--privacy-unit user is offered for --privacy bias and als only (the other modes keep every user in the model file)")
	}
	if c.Int("max-ratings-per-user") < 1 {
		return fmt.Errorf("--privacy-unit user needs --max-ratings-per-user k >= 1")
	}
	for _, f := range []string{"time-from", "time-to"} {
		if c.IsSet(f) {
			if _, err := predictParseTime(c.String(f)); err != nil {
				return fmt.Errorf("--%s: %w", f, err)
			}
		}
	}
	if c.IsSet("selection-epsilon") {
		if c.IsSet("items") {
			return fmt.Errorf("--selection-epsilon selects the items privately: it does not go with a public catalogue (--items)")
		}
		if e := c.Float64("selection-epsilon"); !(e > 0 && e < c.Float64("epsilon")) {
			return fmt.Errorf("--selection-epsilon %g: must be in (0, --epsilon)", e)
		}
	}
	return nil
}

// version returns the module version and VCS revision of the binary, as
// recorded by the Go toolchain (debug.ReadBuildInfo).
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown: built without module support)"
	}
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, at, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = ", modified"
			}
		}
	}
	if rev == "" {
		return v + " (no VCS revision recorded: built outside a git checkout or with -buildvcs=false)"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	out := v + " (revision " + rev
	if at != "" {
		out += ", " + at
	}
	return out + dirty + ", " + bi.GoVersion + ")"
}

// checkSolverModel refuses solver flags Train cannot run: a burn-in for
// another solver or at or above the sweeps. (The Gibbs sampler fits CP and
// Tucker models; its limit on the Tucker core depends on the log's order
// and is checked after loading, by checkGibbsCore.)
func checkSolverModel(c *cli.Context) error {
	solver := strings.ToLower(c.String("solver"))
	if c.IsSet("burn-in") && solver != "gibbs" && solver != "default" && solver != "" {
		return fmt.Errorf("--burn-in is for --solver gibbs")
	}
	if c.IsSet("burn-in") && c.IsSet("epochs") && c.Int("burn-in") >= c.Int("epochs") {
		return fmt.Errorf("--burn-in %d: must be below --epochs %d", c.Int("burn-in"), c.Int("epochs"))
	}
	return nil
}
