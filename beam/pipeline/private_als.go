package pipeline

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/textio"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/dprec/dprec/completion"
	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/models"
	"github.com/dprec/dprec/perturb"
)

// Private ALS at entry level, the residual route of single-machine dprec
// (completion.TrainPrivateALS; completion/private_als_input.go): the
// driver runs completion.TrainPrivateALSFrom, which plans (clip,
// epsilon split, ridge, learnability rule, fallback), calibrates,
// accounts, draws the bias release's noise and builds the model and the
// report; the pipelines compute, over the log restricted to a public item
// catalogue,
//
//   - the public counts (every item's, and the histogram of the users'),
//   - the rating spread's sum of squares (completion.SquareSource: the
//     squared distance of each clamped rating from the range's midpoint),
//   - the bias release's statistics (completion.BiasClamp and
//     completion.BiasResidual, as the private bias mode),
//   - the residual release: every rating's completion.ALSResidual from the
//     released mean and item biases plus Laplace noise drawn inside the
//     DoFn (residualNoiseFn: perturb's secure source, or with seeded noise
//     a stream per rating keyed by its (user, item) indices, NOT private),
//   - and the non-private ALS fit on the released residuals
//     (post-processing), the half-sweep pipelines of Train.

func init() {
	register.DoFn2x1[string, func(int32, float64), error](&denseClampFn{})
	register.DoFn2x1[string, func(int32, float64), error](&denseResidualFn{})
	register.DoFn2x1[string, func(int32, float64), error](&denseSquareFn{})
	register.Function2x1(denseUserOne)
	register.Emitter2[int32, int64]()
	register.Function3x0(userCountOne)
	register.Emitter2[int64, int64]()
	register.Function2x1(formatInt64Pair)
	register.DoFn3x1[context.Context, string, func(string), error](&residualNoiseFn{})
	register.Function2x1(denseValue)
}

// denseClampFn emits a dense rating's value clamped to the public range,
// keyed by its item.
type denseClampFn struct{ Lo, Hi float64 }

func (f *denseClampFn) ProcessElement(line string, emit func(int32, float64)) error {
	_, i, v, _, err := parseDense(line)
	if err != nil {
		return err
	}
	emit(i, completion.BiasClamp(v, f.Lo, f.Hi))
	return nil
}

// denseResidualFn emits a dense rating's clipped residual against the
// released mean (the bias mode's item sums), keyed by its item.
type denseResidualFn struct{ Mu, Lo, Hi float64 }

func (f *denseResidualFn) ProcessElement(line string, emit func(int32, float64)) error {
	_, i, v, _, err := parseDense(line)
	if err != nil {
		return err
	}
	emit(i, completion.BiasResidual(v, f.Mu, f.Lo, f.Hi))
	return nil
}

// denseSquareFn emits a dense rating's squared distance from the range's
// midpoint, (BiasClamp(v) - (Lo + Hi)/2)^2, keyed by its item (the
// rating spread's release: completion.SquareSource).
type denseSquareFn struct{ Lo, Hi float64 }

func (f *denseSquareFn) ProcessElement(line string, emit func(int32, float64)) error {
	_, i, v, _, err := parseDense(line)
	if err != nil {
		return err
	}
	d := completion.BiasClamp(v, f.Lo, f.Hi) - (f.Lo+f.Hi)/2
	emit(i, d*d)
	return nil
}

func denseUserOne(line string, emit func(int32, int64)) error {
	u, _, _, _, err := parseDense(line)
	if err != nil {
		return err
	}
	emit(u, 1)
	return nil
}

func userCountOne(_ int32, n int64, emit func(int64, int64)) { emit(n, 1) }

func formatInt64Pair(a, b int64) string {
	return strconv.FormatInt(a, 10) + "\t" + strconv.FormatInt(b, 10)
}

func denseValue(line string, emit func(float64)) error {
	_, _, v, _, err := parseDense(line)
	if err != nil {
		return err
	}
	emit(v)
	return nil
}

// residualNoiseFn releases a dense rating's residual: ALSResidual from
// the released mean Mu and item bias (the table the driver wrote) plus
// Laplace noise of l1 sensitivity 2 Clip at Eps (the plan's mechanism),
// drawn here. Each rating's noise is drawn by its own AddTo: one rating
// changes one released value by at most 2c, so the independent draws are
// Eps-DP together (the snapping margin is that of a one-value release).
// Secure noise comes from one perturb secure source per DoFn instance;
// seeded noise (Seeded, Seed: NOT private) from the stream keyed by the
// rating's dense (user, item) indices, the same however the ratings are
// bundled.
type residualNoiseFn struct {
	Table   string
	Items   int
	Mu      float64
	Clip    float64
	Eps     float64
	Lo, Hi  float64
	Stream  uint64
	Seeded  bool
	Seed    uint64
	NoNoise bool // tests only (TrainPrivateALS's noiseOff hook)

	bias   []float64
	lap    *perturb.Laplace
	secure *rand.Rand
}

func (f *residualNoiseFn) Setup(ctx context.Context) error {
	t, err := loadTable(ctx, f.Table, f.Items, 0)
	if err != nil {
		return err
	}
	f.bias = t.bias
	plan := completion.ALSInputPlan{Clip: f.Clip, ResidualEpsilon: f.Eps}
	if f.lap, err = plan.Laplace(); err != nil {
		return err
	}
	if !f.Seeded {
		f.secure = rand.New(perturb.SecureNoise().Source(f.Stream))
	}
	return nil
}

func (f *residualNoiseFn) ProcessElement(_ context.Context, line string, emit func(string)) error {
	u, i, v, pos, err := parseDense(line)
	if err != nil {
		return err
	}
	if i < 0 || int(i) >= f.Items {
		return fmt.Errorf("dense rating %q: item outside the catalogue's %d", line, f.Items)
	}
	x := [1]float64{completion.ALSResidual(v, f.Mu, f.bias[i], f.Clip, f.Lo, f.Hi)}
	if !f.NoNoise {
		r := f.secure
		if f.Seeded {
			r = rand.New(perturb.SeededNoise(f.Seed).KeyedSource(f.Stream, uint64(uint32(u))<<32|uint64(uint32(i))))
		}
		f.lap.AddTo(x[:], r)
	}
	emit(fmt.Sprintf("%d\t%d\t%s\t%d", u, i, fmtFloat(x[0]), pos))
	return nil
}

// alsSource is completion.ALSSource over the dense ratings of catalogue
// items.
type alsSource struct {
	ctx          context.Context
	o            *PrivateALSOptions
	dense        string
	work         string
	users, items int

	// From Counts (clamped to lo, hi): the per-item counts and sums of
	// clamped values.
	lo, hi float64
	counts []int
	sums   []float64
	calls  int
	// What FitResiduals leaves: the plan, the bias release the residuals
	// are taken from and the glob of the released residuals.
	plan      *completion.ALSInputPlan
	released  *decomposition.Model
	residuals string
}

func (a *alsSource) path(elem ...string) string {
	return joinPath(a.work, append([]string{"als"}, elem...)...)
}

// Released implements completion.ReleaseObserver for the tests' hook.
func (a *alsSource) Released(what string, noisy []float64) {
	if a.o.observe != nil {
		a.o.observe(what, noisy)
	}
}

func (a *alsSource) Counts(o *completion.PrivateOptions) ([]int, map[int]int, error) {
	p, s := beam.NewPipelineWithRoot()
	lines := textio.Read(s, a.dense)
	sums := beam.CombinePerKey(s, &summaryFn{}, beam.ParDo(s, &denseClampFn{Lo: o.RatingMin, Hi: o.RatingMax}, lines))
	WriteSharded(s, a.path("items", "part"), a.o.Shards, beam.ParDo(s, formatItemSum, sums))
	perUser := beam.CombinePerKey(s, &sumIntFn{}, beam.ParDo(s, denseUserOne, lines))
	hist := beam.CombinePerKey(s, &sumIntFn{}, beam.ParDo(s, userCountOne, perUser))
	WriteSharded(s, a.path("users", "part"), a.o.Shards, beam.ParDo(s, formatInt64Pair, hist))
	if err := a.o.Run.run(a.ctx, p); err != nil {
		return nil, nil, fmt.Errorf("counts: %w", err)
	}
	a.lo, a.hi = o.RatingMin, o.RatingMax
	a.counts, a.sums = make([]int, a.items), make([]float64, a.items)
	err := ReadLines(a.ctx, a.path("items", "part")+"-*", func(line string) error {
		f := strings.Split(line, "\t")
		if len(f) != 3 {
			return fmt.Errorf("item total %q", line)
		}
		i, err1 := strconv.Atoi(f[0])
		n, err2 := strconv.Atoi(f[1])
		v, err3 := strconv.ParseFloat(f[2], 64)
		if err := errors.Join(err1, err2, err3); err != nil || i < 0 || i >= a.items {
			return fmt.Errorf("item total %q: %v", line, err)
		}
		a.counts[i], a.sums[i] = n, v
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	users := map[int]int{}
	err = ReadLines(a.ctx, a.path("users", "part")+"-*", func(line string) error {
		c, n, ok := strings.Cut(line, "\t")
		ci, err1 := strconv.Atoi(c)
		ni, err2 := strconv.Atoi(n)
		if err := errors.Join(err1, err2); err != nil || !ok {
			return fmt.Errorf("user count line %q: %v", line, err)
		}
		users[ci] = ni
		return nil
	})
	return a.counts, users, err
}

func (a *alsSource) Totals(o *completion.PrivateOptions) (int, float64, []int, error) {
	if a.counts == nil || o.RatingMin != a.lo || o.RatingMax != a.hi {
		return 0, 0, nil, errors.New("private ALS: totals asked before the counts or for another rating range")
	}
	n, total := 0, 0.0
	for i, c := range a.counts {
		n += c
		total += a.sums[i]
	}
	return n, total, a.counts, nil
}

func (a *alsSource) ResidualSums(o *completion.PrivateOptions, mu float64) ([]float64, error) {
	a.calls++
	return a.perItemSums(a.path(fmt.Sprintf("bias-residuals-%d", a.calls), "part"), "bias residual sums",
		&denseResidualFn{Mu: mu, Lo: o.RatingMin, Hi: o.RatingMax})
}

// SquareSum is completion.SquareSource: the sum over the dense ratings of
// their squared distance from the range's midpoint, summed per item in a
// pipeline, then over the items in their order.
func (a *alsSource) SquareSum(o *completion.PrivateOptions) (float64, error) {
	per, err := a.perItemSums(a.path("squares", "part"), "sum of squares", &denseSquareFn{Lo: o.RatingMin, Hi: o.RatingMax})
	q := 0.0
	for _, v := range per {
		q += v
	}
	return q, err
}

// perItemSums runs fn (a DoFn from a dense rating line to (item, value))
// over the dense ratings, sums its values per item in a pipeline written
// to out, and reads the sums back, one per item (what names them in
// errors).
func (a *alsSource) perItemSums(out, what string, fn any) ([]float64, error) {
	return itemSums(a.ctx, a.o.Run, a.dense, out, a.o.Shards, a.items, fn, what)
}

func (a *alsSource) FitResiduals(o *completion.PrivateOptions, plan *completion.ALSInputPlan, bias *decomposition.Model) (*decomposition.Model, error) {
	a.plan, a.released = plan, bias
	table := a.path("released-item-biases.tsv")
	err := WriteFile(a.ctx, table, func(w *bufio.Writer) error {
		for i, b := range bias.Bias[1] {
			if _, err := w.WriteString(strconv.Itoa(i) + "\t" + fmtFloat(b) + "\n"); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	seed, seeded := o.Noise.Seed()
	a.residuals = a.path("residuals", "part") + "-*"
	p, s := beam.NewPipelineWithRoot()
	noisy := beam.ParDo(s, &residualNoiseFn{Table: table, Items: a.items, Mu: bias.Mean, Clip: plan.Clip, Eps: plan.ResidualEpsilon,
		Lo: o.RatingMin, Hi: o.RatingMax, Stream: plan.NoiseStream, Seeded: seeded, Seed: seed, NoNoise: a.o.noiseOff}, textio.Read(s, a.dense))
	WriteSharded(s, a.path("residuals", "part"), a.o.Shards, noisy)
	sum := beam.Combine(s, &summaryFn{}, beam.ParDo(s, denseValue, noisy))
	textio.Write(s, a.path("residuals.counts"), beam.ParDo(s, summaryLines, sum))
	if err := a.o.Run.run(a.ctx, p); err != nil {
		return nil, fmt.Errorf("residual release: %w", err)
	}
	var n int64
	var total float64
	err = ReadLines(a.ctx, a.path("residuals.counts"), func(line string) error {
		k, v, _ := strings.Cut(line, "\t")
		var err error
		switch k {
		case "ratings":
			n, err = strconv.ParseInt(v, 10, 64)
		case "sum":
			total, err = strconv.ParseFloat(v, 64)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	mm, err := decomposition.NewModel(decomposition.CP, []int{a.users, a.items}, []int{plan.Rank}, true)
	if err != nil || a.o.releaseOnly {
		return mm, err
	}
	if n == 0 {
		return nil, data.ErrEmpty
	}
	// Post-processing: completion.Train's ALS on the released residuals
	// (the half-sweep pipelines), from InitModel with their mean and the
	// plan's data-independent source.
	cfg := plan.Settings().Resolved()
	if a.o.sweeps > 0 {
		cfg.Epochs = a.o.sweeps
	}
	completion.InitModel(mm, total/float64(n), &cfg, plan.InitSource())
	prep := &prepared{ratings: a.residuals, nnz: int(n)}
	to := TrainOptions{Shards: a.o.Shards, BroadcastLimit: a.o.BroadcastLimit, Run: a.o.Run, Progress: a.o.Progress}
	if err := sweeps(a.ctx, mm, prep, &cfg, to, a.path("fit"), nil, &TrainResult{}); err != nil {
		return nil, err
	}
	return mm, nil
}

// PrivateALSOptions configure TrainPrivateALS.
type PrivateALSOptions struct {
	Data string
	Load LoadSpec
	// Items is the public item catalogue (as PrivateBiasOptions.Items):
	// the model's items are exactly these; ratings of other items are
	// dropped.
	Items string
	// Rank is R (zero: 10).
	Rank int
	// Privacy are completion's options: Epsilon, Delta (> 0, as
	// completion.TrainPrivateALS asks; the entry unit spends none),
	// RatingMin, RatingMax, Noise (Unit must be entry).
	Privacy completion.PrivateOptions
	// UndeclaredScale: as PrivateBiasOptions.UndeclaredScale.
	UndeclaredScale bool
	Out             string
	Force           bool
	// Work is the scratch directory (as TrainOptions.Work); the released
	// residuals stay there when it is given.
	Work           string
	Shards         int
	BroadcastLimit int64
	Run            Runner
	// Progress, when set, is called after every sweep of the fit on the
	// released residuals.
	Progress func(completion.EpochRecord)

	// Test hooks (NOT private; this package's tests only): noiseOff
	// releases the residuals without noise; sweeps > 0 runs that many
	// sweeps of the fit instead of the plan's (the report still names the
	// plan's); releaseOnly stops after the residual release (the model's
	// item side is then the bias release's).
	noiseOff    bool
	sweeps      int
	releaseOnly bool
	// observe sees the bias release's noisy vectors right after their
	// noise (completion.ReleaseObserver).
	observe func(what string, noisy []float64)
}

// PrivateALSResult is what TrainPrivateALS returns.
type PrivateALSResult struct {
	File *models.File
	// Ratings is the number of ratings of catalogue items, Dropped the
	// number of the others; Users the number of users of the log.
	Ratings, Dropped int64
	Users            int
	// Plan is the residual route's plan, nil when it fell back to the
	// bias mode (no residual released).
	Plan *completion.ALSInputPlan
	// Released is the bias release the residuals were taken from (its
	// mean and item biases; nil on the fallback), and Residuals the glob
	// of the released residuals, dense lines "user item value position"
	// (in Work; empty when Work was not given, as it is removed).
	Released  *decomposition.Model
	Residuals string
}

// TrainPrivateALS trains dprec train --privacy als at entry level (the
// residual route: a billboard model of the released mean, item biases and
// item rows) with the statistics, the residual release and the fit on it
// computed by pipelines; the report is completion.TrainPrivateALS's.
func TrainPrivateALS(ctx context.Context, o PrivateALSOptions) (*PrivateALSResult, error) {
	if o.Items == "" {
		return nil, errors.New("private training needs a public item catalogue (--items)")
	}
	if o.Privacy.Unit == completion.UnitUser {
		return nil, errors.New("the pipelines' private ALS is entry level only (user level: bias only in dprec-beam; use dprec train --privacy als --privacy-unit user on one machine)")
	}
	if o.Rank == 0 {
		o.Rank = 10
	}
	if o.Rank < 0 {
		return nil, fmt.Errorf("rank %d: must be positive", o.Rank)
	}
	if _, err := completion.PlanALSInput(&o.Privacy, o.Rank, []int{1}); err != nil {
		return nil, err // the options, before any pipeline runs
	}
	files, err := Expand(ctx, o.Data)
	if err != nil {
		return nil, err
	}
	items, err := readCatalogue(ctx, o.Items)
	if err != nil {
		return nil, err
	}
	if o.Out != "" && !o.Force {
		if _, err := os.Stat(o.Out); err == nil {
			return nil, fmt.Errorf("%s exists (use --force to overwrite)", o.Out)
		}
	}
	work, keep := o.Work, o.Work != ""
	if !keep {
		if work, err = os.MkdirTemp("", "dprec-beam-als"); err != nil {
			return nil, err
		}
		defer os.RemoveAll(work)
	}
	if o.Shards <= 0 {
		o.Shards = 4
	}
	prep, err := prepare(ctx, files, o.Load, work, o.Shards, o.Run, items)
	if err != nil {
		return nil, err
	}
	if err := checkScale(o.UndeclaredScale, &o.Privacy, prep.counts); err != nil {
		return nil, err
	}
	if err := entryNeedsRatings(&o.Privacy, prep.counts); err != nil {
		return nil, err
	}
	users, err := data.DictFromStrings("user", []string{NoUser})
	if err != nil {
		return nil, err
	}
	m, err := decomposition.NewModel(decomposition.CP, []int{1, items.Len()}, []int{o.Rank}, true)
	if err != nil {
		return nil, err
	}
	src := &alsSource{ctx: ctx, o: &o, dense: prep.ratings, work: work, users: prep.dicts[0].Len(), items: items.Len()}
	rep, err := completion.TrainPrivateALSFrom(src, m, &o.Privacy)
	if err != nil {
		return nil, err
	}
	f := &models.File{Model: m, Dicts: []*data.Dict{users, items}, Privacy: rep, Header: models.Header{
		Created: time.Now().UTC().Truncate(time.Second), Software: "dprec-beam",
		Data: &models.DataInfo{Dims: []int{1, items.Len()}},
	}}
	if o.Out != "" {
		if err := models.Save(o.Out, f, o.Force); err != nil {
			return nil, err
		}
	}
	n := 0
	for _, c := range src.counts {
		n += c
	}
	res := &PrivateALSResult{File: f, Ratings: int64(n), Dropped: prep.counts.Ratings - int64(n), Users: src.users,
		Plan: src.plan, Released: src.released}
	if keep && src.plan != nil {
		res.Residuals = src.residuals
	}
	return res, nil
}

var _ completion.ALSSource = (*alsSource)(nil)
