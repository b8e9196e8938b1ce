package pipeline

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/textio"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/dprec/dprec/completion"
	"github.com/dprec/dprec/perturb"
)

// The private bias mode at the USER unit (add or remove one user with all
// of that user's ratings; dprec train --privacy bias --privacy-unit user
// --max-ratings-per-user K --items CATALOGUE --time-unit none): the
// pipeline keeps the ratings of the public catalogue's items, groups them
// by user and bounds every user's contribution inside the group-by-user
// step (boundUserFn: the user's ratings sorted by item, one per item,
// then at most K by completion.ChooseUserRatings, the single-machine
// bounding's per-user kernel, from a per-user random stream), then
// computes the statistics of the bounded log with completion's per-rating
// kernels (BiasCentred, BiasResidual): the number of users, the number of
// ratings and the centred sum; and the per-item counts and residual sums
// over every rating of each user, one per item, weighted by
// completion.UserContributionWeight (the same step emits them). The
// driver runs completion.TrainPrivateBiasUserFrom, the single-machine
// user-unit release itself (plan, Gaussian or Laplace noise from o.Noise
// in the single-machine order, estimate, report with the noisy item
// counts). The model holds one placeholder user (dprec.NoUserID) and
// public sizes only.

func init() {
	beam.RegisterType(reflect.TypeOf((*catRating)(nil)).Elem())
	register.Function4x1(joinCatalogueUser)
	register.Emitter2[string, catRating]()
	register.Iter1[catRating]()
	register.DoFn6x1[string, func(*catRating) bool, func(string), func(string, int64), func(string), func(string), error](&boundUserFn{})
	register.DoFn2x1[string, func(int32, float64), error](&centredFn{})
	register.Function2x1(parseWeight)
	register.DoFn2x1[string, func(int32, float64), error](&weightedResidualFn{})
	register.Function2x1(formatLabel)
}

// catRating is a rating of a catalogue item: its index in the catalogue,
// its value and its position (Rating.Pos).
type catRating struct {
	Item  int32
	Value float64
	Pos   int64
}

// joinCatalogueUser keys the ratings of a catalogue item by their user;
// ratings of other items are dropped.
func joinCatalogueUser(item string, ratings func(*Rating) bool, idx func(*int32) bool, emit func(string, catRating)) error {
	var i int32
	if !idx(&i) {
		return nil
	}
	var r Rating
	for ratings(&r) {
		emit(r.User, catRating{Item: i, Value: r.Value, Pos: r.Pos})
	}
	return nil
}

// boundUserFn bounds one user's contribution: the user's ratings (a
// GroupByKey iterable, in no fixed order) are sorted by (item, position,
// value), one rating per item is kept (the first: repeated cells were
// merged by ReadRatings, so this only guards), and
// completion.ChooseUserRatings keeps at most K of them with a random
// choice from the user's own stream: with secure noise one perturb secure
// source per DoFn instance; with seeded noise (Seeded, Seed: NOT private)
// completion.UserBoundSource keyed by a 64-bit FNV-1a hash of the user
// ID, so the choice is the same however the users are split among
// workers, bundles and shards. It emits the kept ratings as "item value"
// lines, ("users", 1) and ("before", n) on stat (n: the user's catalogue
// ratings before bounding), with Trace (tests) "user item value" lines,
// and on weighted every one of the user's m distinct items' ratings as
// "item w value" lines, w = completion.UserContributionWeight(Mechanism,
// K, m).
type boundUserFn struct {
	K         int
	Mechanism string
	Seeded    bool
	Seed      uint64
	Trace     bool

	secure *rand.Rand
}

func (f *boundUserFn) Setup() {
	if !f.Seeded {
		f.secure = rand.New(completion.UserBoundSource(perturb.SecureNoise(), 0))
	}
}

func (f *boundUserFn) ProcessElement(user string, iter func(*catRating) bool, emit func(string), stat func(string, int64), trace func(string), weighted func(string)) error {
	if f.K < 1 {
		return fmt.Errorf("max ratings per user %d: must be >= 1", f.K)
	}
	var rs []catRating
	var r catRating
	for iter(&r) {
		rs = append(rs, r)
	}
	if len(rs) == 0 {
		return nil
	}
	slices.SortFunc(rs, func(a, b catRating) int {
		if a.Item != b.Item {
			return cmpInt64(int64(a.Item), int64(b.Item))
		}
		if a.Pos != b.Pos {
			return cmpInt64(a.Pos, b.Pos)
		}
		switch {
		case a.Value < b.Value:
			return -1
		case a.Value > b.Value:
			return 1
		}
		return 0
	})
	before := len(rs)
	rs = slices.CompactFunc(rs, func(a, b catRating) bool { return a.Item == b.Item })
	rows := make([]int, len(rs))
	for e := range rows {
		rows[e] = e
	}
	rnd := f.secure
	if f.Seeded {
		h := fnv.New64a()
		h.Write([]byte(user))
		rnd = rand.New(completion.UserBoundSource(perturb.SeededNoise(f.Seed), h.Sum64()))
	}
	w := fmtFloat(completion.UserContributionWeight(f.Mechanism, f.K, len(rs)))
	for _, r := range rs {
		weighted(strconv.Itoa(int(r.Item)) + "\t" + w + "\t" + fmtFloat(r.Value))
	}
	kept := completion.ChooseUserRatings(nil, rows, func(e int) int32 { return rs[e].Item }, f.K, rnd)
	slices.Sort(kept)
	for _, e := range kept {
		emit(strconv.Itoa(int(rs[e].Item)) + "\t" + fmtFloat(rs[e].Value))
		if f.Trace {
			trace(quoteID(user) + "\t" + strconv.Itoa(int(rs[e].Item)) + "\t" + fmtFloat(rs[e].Value))
		}
	}
	stat("before", int64(before))
	if len(kept) > 0 {
		stat("users", 1)
	}
	return nil
}

// centredFn emits a bounded rating's completion.BiasCentred value, keyed
// by its item.
type centredFn struct{ Lo, Hi float64 }

func (f *centredFn) ProcessElement(line string, emit func(int32, float64)) error {
	i, v, err := parseItemValue(line)
	if err != nil {
		return err
	}
	emit(i, completion.BiasCentred(v, f.Lo, f.Hi))
	return nil
}

func formatLabel(k string, v int64) string { return k + "\t" + strconv.FormatInt(v, 10) }

// userBiasSource is completion.UserBiasSource over pipelines: UserTotals
// runs the bounding pipeline, which writes the bounded ratings and every
// rating with its weight (boundUserFn), and ResidualSums reads the
// weighted ones.
type userBiasSource struct {
	*biasSource
	k     int
	trace string // tests: where the kept ratings go ("user item value")
	// From UserTotals: the users and ratings of the bounded log and the
	// catalogue ratings before bounding.
	users, before int64
}

func (b *userBiasSource) UserTotals(o *completion.PrivateOptions) (int, int, float64, []float64, error) {
	ctx := b.ctx
	catalogue := joinPath(b.work, "catalogue.tsv")
	if err := writeDict(ctx, catalogue, b.items); err != nil {
		return 0, 0, 0, nil, err
	}
	seed, seeded := o.Noise.Seed()
	p, s := beam.NewPipelineWithRoot()
	ratings, _ := ReadRatings(s, b.files, b.load)
	idx := beam.ParDo(s, parseDictLine, textio.Read(s, catalogue))
	byUser := beam.ParDo(s, joinCatalogueUser, beam.CoGroupByKey(s, beam.ParDo(s, itemKeyed, ratings), idx))
	s2 := s.Scope("BoundUser")
	kept, stat, trace, weighted := beam.ParDo4(s2, &boundUserFn{K: o.MaxRatingsPerUser, Mechanism: o.Mechanism, Seeded: seeded, Seed: seed, Trace: b.trace != ""}, beam.GroupByKey(s2, byUser))
	WriteSharded(s, joinPath(b.work, "ratings", "part"), b.shards, kept)
	WriteSharded(s, joinPath(b.work, "weighted", "part"), b.shards, weighted)
	wcounts := beam.CombinePerKey(s, &sumFloatFn{}, beam.ParDo(s, parseWeight, weighted))
	WriteSharded(s, joinPath(b.work, "wcounts", "part"), b.shards, beam.ParDo(s, formatResidualSum, wcounts))
	if b.trace != "" {
		WriteSharded(s, b.trace, b.shards, trace)
	}
	textio.Write(s, joinPath(b.work, "bound.counts"), beam.ParDo(s, formatLabel, beam.CombinePerKey(s, &sumIntFn{}, stat)))
	sums := beam.CombinePerKey(s, &summaryFn{}, beam.ParDo(s, &centredFn{Lo: o.RatingMin, Hi: o.RatingMax}, kept))
	WriteSharded(s, joinPath(b.work, "totals", "part"), b.shards, beam.ParDo(s, formatItemSum, sums))
	countsParts(s.Scope("All"), ratings, beam.CreateList(s, []string{}), joinPath(b.work, "all"))
	if err := b.run.run(ctx, p); err != nil {
		return 0, 0, 0, nil, fmt.Errorf("contribution bounding: %w", err)
	}
	_, n, total, err := readItemTotals(ctx, joinPath(b.work, "totals", "part")+"-*", b.items.Len())
	if err != nil {
		return 0, 0, 0, nil, err
	}
	counts, err := readItemFloats(ctx, joinPath(b.work, "wcounts", "part")+"-*", b.items.Len())
	if err != nil {
		return 0, 0, 0, nil, err
	}
	if n == 0 {
		return 0, 0, 0, nil, fmt.Errorf("%w: no rating of the log is of a catalogue item", completion.ErrDomain)
	}
	err = ReadLines(ctx, joinPath(b.work, "bound.counts"), func(line string) error {
		k, v, _ := strings.Cut(line, "\t")
		n, err := strconv.ParseInt(v, 10, 64)
		switch k {
		case "users":
			b.users = n
		case "before":
			b.before = n
		}
		return err
	})
	if err != nil {
		return 0, 0, 0, nil, err
	}
	all, err := readCounts(ctx, joinPath(b.work, "all"))
	if err != nil {
		return 0, 0, 0, nil, err
	}
	if err := checkScale(b.undeclared, o, all); err != nil {
		return 0, 0, 0, nil, err
	}
	b.n, b.dropped = int64(n), all.Ratings-b.before
	return int(b.users), n, total, counts, nil
}

// ResidualSums returns every item's weighted sum of clipped residuals
// about mu over the weighted ratings UserTotals wrote.
func (b *userBiasSource) ResidualSums(o *completion.PrivateOptions, mu float64) ([]float64, error) {
	return itemSums(b.ctx, b.run, joinPath(b.work, "weighted", "part")+"-*", joinPath(b.work, "wresiduals", "part"), b.shards, b.items.Len(), &weightedResidualFn{Mu: mu, Lo: o.RatingMin, Hi: o.RatingMax}, "bias residual sums")
}

var _ completion.UserBiasSource = (*userBiasSource)(nil)

// parseWeighted parses an "item w value" line of boundUserFn.
func parseWeighted(line string) (int32, float64, float64, error) {
	f := strings.Split(line, "\t")
	if len(f) != 3 {
		return 0, 0, 0, fmt.Errorf("weighted rating line %q", line)
	}
	i, err1 := strconv.ParseInt(f[0], 10, 32)
	w, err2 := strconv.ParseFloat(f[1], 64)
	v, err3 := strconv.ParseFloat(f[2], 64)
	if err := errors.Join(err1, err2, err3); err != nil {
		return 0, 0, 0, fmt.Errorf("weighted rating line %q: %v", line, err)
	}
	return int32(i), w, v, nil
}

// parseWeight emits a weighted rating's weight, keyed by its item.
func parseWeight(line string, emit func(int32, float64)) error {
	i, w, _, err := parseWeighted(line)
	if err != nil {
		return err
	}
	emit(i, w)
	return nil
}

// weightedResidualFn emits a weighted rating's weight times its clipped
// residual against the released mean.
type weightedResidualFn struct{ Mu, Lo, Hi float64 }

func (f *weightedResidualFn) ProcessElement(line string, emit func(int32, float64)) error {
	i, w, v, err := parseWeighted(line)
	if err != nil {
		return err
	}
	emit(i, w*completion.BiasResidual(v, f.Mu, f.Lo, f.Hi))
	return nil
}
