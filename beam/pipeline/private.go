package pipeline

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/textio"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/dprec/dprec"
	"github.com/dprec/dprec/completion"
	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/models"
	"github.com/dprec/dprec/perturb"
)

// The private bias mode at entry level (the user unit is in
// private_user.go): the pipelines compute the two
// statistics of completion's bias releases (completion.BiasSource) with
// its per-rating kernels, and the driver runs
// completion.TrainPrivateBiasFrom: calibration, accounting, the noise
// (from perturb's secure source, or seeded and then NOT private) and the
// privacy report are the single-machine mode's. The released rows are a
// public item catalogue: the set of items that appear in the log is never
// released.

func init() {
	register.Function2x0(itemKeyed)
	register.Function4x1(joinCatalogue)
	register.Emitter1[string]()
	register.DoFn2x1[string, func(int32, float64), error](&clampFn{})
	register.Emitter2[int32, float64]()
	register.Function2x1(formatItemSum)
	register.DoFn2x1[string, func(int32, float64), error](&residualFn{})
	register.Combiner3[float64, float64, float64](&sumFloatFn{})
	register.Function2x1(formatResidualSum)
}

func itemKeyed(r Rating, emit func(string, Rating)) { emit(r.Item, r) }

// joinCatalogue writes the ratings of a catalogue item as "index value"
// lines; ratings of other items are dropped.
func joinCatalogue(item string, ratings func(*Rating) bool, idx func(*int32) bool, emit func(string)) error {
	var i int32
	if !idx(&i) {
		return nil
	}
	var r Rating
	for ratings(&r) {
		emit(strconv.Itoa(int(i)) + "\t" + fmtFloat(r.Value))
	}
	return nil
}

func parseItemValue(line string) (int32, float64, error) {
	a, b, ok := strings.Cut(line, "\t")
	i, err1 := strconv.ParseInt(a, 10, 32)
	v, err2 := strconv.ParseFloat(b, 64)
	if err := errors.Join(err1, err2); err != nil || !ok {
		return 0, 0, fmt.Errorf("rating line %q: %v", line, err)
	}
	return int32(i), v, nil
}

// clampFn emits a rating's value clamped to the public range.
type clampFn struct{ Lo, Hi float64 }

func (f *clampFn) ProcessElement(line string, emit func(int32, float64)) error {
	i, v, err := parseItemValue(line)
	if err != nil {
		return err
	}
	emit(i, completion.BiasClamp(v, f.Lo, f.Hi))
	return nil
}

func formatItemSum(i int32, s Summary) string {
	return strconv.Itoa(int(i)) + "\t" + strconv.FormatInt(s.N, 10) + "\t" + fmtFloat(s.Sum)
}

// residualFn emits a rating's clipped residual against the released mean.
type residualFn struct{ Mu, Lo, Hi float64 }

func (f *residualFn) ProcessElement(line string, emit func(int32, float64)) error {
	i, v, err := parseItemValue(line)
	if err != nil {
		return err
	}
	emit(i, completion.BiasResidual(v, f.Mu, f.Lo, f.Hi))
	return nil
}

type sumFloatFn struct{}

func (sumFloatFn) CreateAccumulator() float64             { return 0 }
func (sumFloatFn) AddInput(a, v float64) float64          { return a + v }
func (sumFloatFn) MergeAccumulators(a, b float64) float64 { return a + b }
func (sumFloatFn) ExtractOutput(a float64) float64        { return a }

func formatResidualSum(i int32, s float64) string { return strconv.Itoa(int(i)) + "\t" + fmtFloat(s) }

// entryNeedsRatings refuses, as dprec train does, a private run at the
// entry unit on a log whose ratings all have one value (a click log): the
// entry unit's relation (one rating value changes, the positions public)
// would protect nothing of it, while the report said private.
func entryNeedsRatings(o *completion.PrivateOptions, all *Counts) error {
	if o.Unit == completion.UnitUser || all.Ratings == 0 || all.Min != all.Max {
		return nil
	}
	return fmt.Errorf("every rating of the log is %g: the entry unit's relation (one rating value changes; which items each user rated is public) protects nothing of a log whose events carry no rating; train it without --privacy, or with --privacy bias --privacy-unit user", all.Min)
}

// ScaleError refuses a private run on an undeclared default rating
// scale whose ratings leave it: clamping a log on another scale (say
// [-10, 10]) to the default would train on the wrong data without a word.
type ScaleError struct {
	Min, Max float64 // the log's smallest and largest rating
	Lo, Hi   float64 // the default scale
}

func (e *ScaleError) Error() string {
	return fmt.Sprintf("ratings run from %g to %g, outside the default public rating scale [%g, %g] that private training clamps to; declare the data source's scale with --rating-min and --rating-max (a fact about the source, never measured on the data)", e.Min, e.Max, e.Lo, e.Hi)
}

// checkScale returns a *ScaleError when the scale is undeclared and the
// log's ratings leave it (the check is the curator's, before any release).
func checkScale(undeclared bool, o *completion.PrivateOptions, all *Counts) error {
	if !undeclared || all.Ratings == 0 || all.Min >= o.RatingMin && all.Max <= o.RatingMax {
		return nil
	}
	return &ScaleError{Min: all.Min, Max: all.Max, Lo: o.RatingMin, Hi: o.RatingMax}
}

// biasSource is completion.BiasSource over pipelines.
type biasSource struct {
	ctx    context.Context
	files  []string
	load   LoadSpec
	items  *data.Dict
	work   string
	shards int
	run    Runner
	// n counts the ratings of catalogue items, dropped the others.
	n, dropped int64
	// observe (tests) sees the noisy releases.
	observe func(what string, noisy []float64)
	// undeclared: PrivateBiasOptions.UndeclaredScale.
	undeclared bool
}

// Released implements completion.ReleaseObserver for the tests' hook.
func (b *biasSource) Released(what string, noisy []float64) {
	if b.observe != nil {
		b.observe(what, noisy)
	}
}

func (b *biasSource) Totals(o *completion.PrivateOptions) (int, float64, []int, error) {
	ctx := b.ctx
	catalogue := joinPath(b.work, "catalogue.tsv")
	if err := writeDict(ctx, catalogue, b.items); err != nil {
		return 0, 0, nil, err
	}
	p, s := beam.NewPipelineWithRoot()
	ratings, _ := ReadRatings(s, b.files, b.load)
	idx := beam.ParDo(s, parseDictLine, textio.Read(s, catalogue))
	kept := beam.ParDo(s, joinCatalogue, beam.CoGroupByKey(s, beam.ParDo(s, itemKeyed, ratings), idx))
	WriteSharded(s, joinPath(b.work, "ratings", "part"), b.shards, kept)
	sums := beam.CombinePerKey(s, &summaryFn{}, beam.ParDo(s, &clampFn{Lo: o.RatingMin, Hi: o.RatingMax}, kept))
	WriteSharded(s, joinPath(b.work, "totals", "part"), b.shards, beam.ParDo(s, formatItemSum, sums))
	countsParts(s.Scope("All"), ratings, beam.CreateList(s, []string{}), joinPath(b.work, "all"))
	if err := b.run.run(ctx, p); err != nil {
		return 0, 0, nil, fmt.Errorf("bias totals: %w", err)
	}
	counts, n, total, err := readItemTotals(ctx, joinPath(b.work, "totals", "part")+"-*", b.items.Len())
	if err != nil {
		return 0, 0, nil, err
	}
	all, err := readCounts(ctx, joinPath(b.work, "all"))
	if err != nil {
		return 0, 0, nil, err
	}
	b.n, b.dropped = int64(n), all.Ratings-int64(n)
	if err := checkScale(b.undeclared, o, all); err != nil {
		return 0, 0, nil, err
	}
	if err := entryNeedsRatings(o, all); err != nil {
		return 0, 0, nil, err
	}
	return n, total, counts, nil
}

func (b *biasSource) ResidualSums(o *completion.PrivateOptions, mu float64) ([]float64, error) {
	return itemSums(b.ctx, b.run, joinPath(b.work, "ratings", "part")+"-*", joinPath(b.work, "residuals", "part"), b.shards, b.items.Len(), &residualFn{Mu: mu, Lo: o.RatingMin, Hi: o.RatingMax}, "bias residual sums")
}

// readItemFloats reads "item value" lines into a vector of items values
// (0 for an item with no line).
func readItemFloats(ctx context.Context, pattern string, items int) ([]float64, error) {
	res := make([]float64, items)
	err := ReadLines(ctx, pattern, func(line string) error {
		i, v, err := parseItemValue(line)
		if err != nil {
			return err
		}
		if i < 0 || int(i) >= items {
			return fmt.Errorf("item line %q: index outside the %d catalogue items", line, items)
		}
		res[i] = v
		return nil
	})
	return res, err
}

// itemSums runs one pipeline: fn maps every line of in to (item, value)
// pairs, which are summed per item and written to out; it returns the
// sums read back, one per item of items (0 for an item with none; what
// names the step in errors).
func itemSums(ctx context.Context, run Runner, in, out string, shards, items int, fn any, what string) ([]float64, error) {
	p, s := beam.NewPipelineWithRoot()
	sums := beam.CombinePerKey(s, &sumFloatFn{}, beam.ParDo(s, fn, textio.Read(s, in)))
	WriteSharded(s, out, shards, beam.ParDo(s, formatResidualSum, sums))
	if err := run.run(ctx, p); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return readItemFloats(ctx, out+"-*", items)
}

// NoUser is the one placeholder ID of a billboard model's user mode (the
// private bias and ALS modes): no user row is released (users are folded
// in from their own ratings at prediction time).
const NoUser = "(no user released: billboard model)"

// PrivateBiasOptions configure TrainPrivateBias.
type PrivateBiasOptions struct {
	Data string
	Load LoadSpec
	// Items is the public item catalogue: a CSV file whose first column is
	// the item ID (an optional header row is skipped). The model's items
	// are exactly these; ratings of other items are dropped.
	Items string
	// Privacy are completion's options: Epsilon, Delta, RatingMin,
	// RatingMax, Mechanism, Noise, and Unit: entry, or user with
	// MaxRatingsPerUser = k (every user bounded to at most k ratings, one
	// per item, in the group-by-user step, and every rating weighted by
	// completion.UserContributionWeight for the item counts and sums;
	// private_user.go).
	Privacy completion.PrivateOptions
	// UndeclaredScale says that Privacy.RatingMin and RatingMax are a
	// default the caller did not declare: ratings outside them are
	// refused (a *ScaleError) instead of clamped.
	UndeclaredScale bool
	Out             string
	Force           bool
	Work            string
	Shards          int
	Run             Runner

	// observe (this package's tests) sees every noisy release right after
	// its noise (completion.ReleaseObserver).
	observe func(what string, noisy []float64)
	// trace (this package's tests, user unit) is the prefix of sharded
	// files receiving the kept ratings, "quoted-user item value" lines.
	trace string
}

// PrivateBiasResult is what TrainPrivateBias returns.
type PrivateBiasResult struct {
	File *models.File
	// Ratings is the number of ratings of catalogue items (at the user
	// unit: after bounding); Dropped the number of the others. At the user
	// unit, Users is the number of users with a kept rating and Bounded
	// the number of catalogue ratings the contribution bound dropped.
	// They are functions of the private log, for the curator only: the
	// model file never carries them.
	Ratings, Dropped int64
	Users, Bounded   int64
}

// TrainPrivateBias trains dprec train --privacy bias (global mean and
// item biases from noisy sums; a billboard model) with the statistics
// computed by pipelines: at entry level, or at the user unit
// (o.Privacy.Unit user) as dprec train --privacy bias --privacy-unit user
// --max-ratings-per-user K --items CATALOGUE --time-unit none.
func TrainPrivateBias(ctx context.Context, o PrivateBiasOptions) (*PrivateBiasResult, error) {
	if o.Items == "" {
		return nil, errors.New("private training needs a public item catalogue (--items)")
	}
	user := o.Privacy.Unit == completion.UnitUser
	if user && o.Privacy.MaxRatingsPerUser < 1 {
		return nil, fmt.Errorf("the user unit needs max ratings per user k >= 1, got %d", o.Privacy.MaxRatingsPerUser)
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
	work := o.Work
	if work == "" {
		if work, err = os.MkdirTemp("", "dprec-beam-bias"); err != nil {
			return nil, err
		}
		defer os.RemoveAll(work)
	}
	if o.Shards <= 0 {
		o.Shards = 4
	}
	placeholder := NoUser
	if user {
		placeholder = dprec.NoUserID
	}
	users, err := data.DictFromStrings("user", []string{placeholder})
	if err != nil {
		return nil, err
	}
	m, err := decomposition.NewModel(decomposition.CP, []int{1, items.Len()}, []int{1}, true)
	if err != nil {
		return nil, err
	}
	src := &biasSource{ctx: ctx, files: files, load: o.Load, items: items, work: work, shards: o.Shards, run: o.Run, observe: o.observe, undeclared: o.UndeclaredScale}
	var rep *perturb.Report
	var usrc *userBiasSource
	if user {
		usrc = &userBiasSource{biasSource: src, k: o.Privacy.MaxRatingsPerUser, trace: o.trace}
		rep, err = completion.TrainPrivateBiasUserFrom(usrc, m, &o.Privacy)
	} else {
		rep, err = completion.TrainPrivateBiasFrom(src, m, &o.Privacy)
	}
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
	res := &PrivateBiasResult{File: f, Ratings: src.n, Dropped: src.dropped}
	if usrc != nil {
		res.Users, res.Bounded = usrc.users, usrc.before-src.n
	}
	return res, nil
}

// readCatalogue reads a public item catalogue (first CSV column; a first
// row that is not an ID of the catalogue's kind is a header): integer IDs
// when every ID is an integer, else strings.
func readCatalogue(ctx context.Context, path string) (*data.Dict, error) {
	fs, err := filesystem.New(ctx, path)
	if err != nil {
		return nil, err
	}
	defer fs.Close()
	rc, err := fs.OpenRead(ctx, path)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	r := csv.NewReader(rc)
	r.FieldsPerRecord = -1
	r.LazyQuotes = true
	var ids []string
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		ids = append(ids, strings.TrimSpace(rec[0]))
	}
	isInt := func(s string) bool { _, err := strconv.ParseInt(s, 10, 64); return err == nil }
	allInt := len(ids) > 1
	for _, id := range ids[min(1, len(ids)):] {
		allInt = allInt && isInt(id)
	}
	if allInt {
		if len(ids) > 0 && !isInt(ids[0]) {
			ids = ids[1:] // header
		}
		d := data.NewIntDict("item")
		for _, id := range ids {
			v, _ := strconv.ParseInt(id, 10, 64)
			d.InternInt(v)
		}
		return d, nil
	}
	d := data.NewStringDict("item")
	for k, id := range ids {
		if k == 0 && strings.EqualFold(id, "item") || k == 0 && strings.EqualFold(id, "itemid") || k == 0 && strings.EqualFold(id, "movieid") {
			continue
		}
		d.InternString(id)
	}
	if d.Len() == 0 {
		return nil, fmt.Errorf("%s: no item ID", path)
	}
	return d, nil
}

var _ completion.BiasSource = (*biasSource)(nil)

// readItemTotals reads the "item\tcount\tsum" lines of the item totals
// at pattern (items in [0, items)): every item's count, and the total
// count and sum.
func readItemTotals(ctx context.Context, pattern string, items int) (counts []int, n int, total float64, err error) {
	counts = make([]int, items)
	sums := make([]float64, items)
	err = ReadLines(ctx, pattern, func(line string) error {
		f := strings.Split(line, "\t")
		if len(f) != 3 {
			return fmt.Errorf("item total %q", line)
		}
		i, err1 := strconv.Atoi(f[0])
		c, err2 := strconv.Atoi(f[1])
		v, err3 := strconv.ParseFloat(f[2], 64)
		if err := errors.Join(err1, err2, err3); err != nil || i < 0 || i >= items {
			return fmt.Errorf("item total %q: %v", line, err)
		}
		counts[i], sums[i] = c, v
		return nil
	})
	if err != nil {
		return nil, 0, 0, err
	}
	for i, c := range counts {
		n += c
		total += sums[i]
	}
	return counts, n, total, nil
}
