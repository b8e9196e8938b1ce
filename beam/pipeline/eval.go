package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/textio"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/models"
)

func init() {
	register.DoFn2x0[Rating, func(int, Rating)](&userBlockFn{})
	register.Emitter2[int, Rating]()
	register.DoFn5x1[context.Context, int, func(*Rating) bool, func(*Rating) bool, func(string), error](&evalBlockFn{})
}

// userBlockFn keys a rating by its user's block (hash of the user ID), so
// that a block holds every rating of its users.
type userBlockFn struct{ Blocks int }

func (f *userBlockFn) ProcessElement(r Rating, emit func(int, Rating)) {
	h := fnv.New64a()
	h.Write([]byte(r.User))
	emit(int(h.Sum64()%uint64(f.Blocks)), r)
}

// evalBlockFn scores one block of test users with models.Evaluate (the
// code of dprec eval) and writes its partial result as JSON.
type evalBlockFn struct {
	Model     string
	K         int
	Threshold float64
	Ranking   models.Ranking
	Shrinkage float64

	p *models.Predictor
}

func (f *evalBlockFn) Setup(ctx context.Context) error {
	var err error
	f.p, err = loadPredictor(ctx, f.Model, f.Ranking, f.Shrinkage)
	return err
}

func (f *evalBlockFn) ProcessElement(ctx context.Context, block int, test, train func(*Rating) bool, emit func(string)) error {
	ts := blockStore(test)
	if ts == nil {
		return nil
	}
	opt := models.EvalOptions{K: f.K, Threshold: f.Threshold, Threads: 1, Train: blockStore(train)}
	res, err := models.Evaluate(f.p, ts, opt)
	if err != nil {
		return fmt.Errorf("block %d: %w", block, err)
	}
	b, err := json.Marshal(res)
	if err != nil {
		return err
	}
	emit(string(b))
	return nil
}

// blockStore builds a store of a block's ratings, in position order, with
// string dictionaries (Evaluate maps them to the model's by external ID).
func blockStore(iter func(*Rating) bool) *data.Store {
	var rs []Rating
	var r Rating
	for iter(&r) {
		rs = append(rs, r)
	}
	if len(rs) == 0 {
		return nil
	}
	sortRatings(rs)
	ud, id := data.NewStringDict("user"), data.NewStringDict("item")
	st := &data.Store{Dims: []int{0, 0}, Idx: [][]int32{make([]int32, len(rs)), make([]int32, len(rs))},
		Val: make([]float64, len(rs)), Dicts: []*data.Dict{ud, id}}
	for e, r := range rs {
		st.Idx[0][e] = ud.InternString(r.User)
		st.Idx[1][e] = id.InternString(r.Item)
		st.Val[e] = r.Value
	}
	st.Dims = []int{ud.Len(), id.Len()}
	return st
}

func sortRatings(rs []Rating) {
	slices.SortFunc(rs, func(a, b Rating) int { return cmpInt64(a.Pos, b.Pos) })
}

// EvalOptions configure Eval.
type EvalOptions struct {
	// Model is the model file; Data the test log glob(s); Train, when set,
	// the training log whose items are left out of each user's ranking
	// (besides the model's stored seen items).
	Model, Data, Train string
	Load               LoadSpec
	// K is the ranking cut-off (zero: 10); Threshold the relevance
	// threshold of a test rating.
	K         int
	Threshold float64
	// Ranking and Shrinkage rank the lists as dprec eval's --ranking and
	// --shrinkage do: Ranking "" ranks by relevance for Shrinkage > 0 (the
	// default, models.DefaultShrinkage) and by the prediction for 0
	// (models.Predictor.WithShrinkage); otherwise
	// models.Predictor.WithRanking(Ranking, Shrinkage).
	Ranking   models.Ranking
	Shrinkage float64
	// Blocks is the number of user blocks scored independently (zero: 16).
	Blocks int
	// Work is a scratch directory (empty: a temporary local one).
	Work string
	Run  Runner
}

// Eval computes dprec eval's metrics in one pipeline: test users are cut
// into blocks by a hash of their ID and every block is scored by
// models.Evaluate; RMSE, MAE and the ranking metrics are then combined
// weighted by ratings and ranked users. Distinct and Coverage (which need
// the union of all lists) are left at zero.
func Eval(ctx context.Context, o EvalOptions) (*models.EvalResult, error) {
	files, err := Expand(ctx, o.Data)
	if err != nil {
		return nil, err
	}
	if o.Blocks <= 0 {
		o.Blocks = 16
	}
	if o.K == 0 {
		o.K = 10
	}
	work := o.Work
	if work == "" {
		if work, err = os.MkdirTemp("", "dprec-beam-eval"); err != nil {
			return nil, err
		}
		defer os.RemoveAll(work)
	}
	p, s := beam.NewPipelineWithRoot()
	test, _ := ReadRatings(s.Scope("Test"), files, o.Load)
	blocks := &userBlockFn{Blocks: o.Blocks}
	var train beam.PCollection
	if o.Train != "" {
		tf, err := Expand(ctx, o.Train)
		if err != nil {
			return nil, err
		}
		train, _ = ReadRatings(s.Scope("Train"), tf, o.Load)
	} else {
		train = beam.CreateList(s, []Rating{})
	}
	grouped := beam.CoGroupByKey(s, beam.ParDo(s, blocks, test), beam.ParDo(s, blocks, train))
	parts := joinPath(work, "eval", "blocks")
	textio.Write(s, parts, beam.ParDo(s, &evalBlockFn{Model: o.Model, K: o.K, Threshold: o.Threshold, Ranking: o.Ranking, Shrinkage: o.Shrinkage}, grouped))
	if err := o.Run.run(ctx, p); err != nil {
		return nil, err
	}
	return combineEval(ctx, parts, o)
}

func combineEval(ctx context.Context, parts string, o EvalOptions) (*models.EvalResult, error) {
	out := &models.EvalResult{K: o.K, Threshold: o.Threshold, Fallbacks: map[string]int{}}
	var se, ae float64
	var pop models.RankMetrics
	popUsers := 0
	err := ReadLines(ctx, parts, func(line string) error {
		var r models.EvalResult
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			return err
		}
		out.N += r.N
		se += r.RMSE * r.RMSE * float64(r.N)
		ae += r.MAE * float64(r.N)
		for k, v := range r.Fallbacks {
			out.Fallbacks[k] += v
		}
		w := float64(r.RankedUsers)
		out.RankedUsers += r.RankedUsers
		out.SkippedUsers += r.SkippedUsers
		out.Precision += w * r.Precision
		out.Recall += w * r.Recall
		out.NDCG += w * r.NDCG
		out.MAP += w * r.MAP
		out.Catalogue = r.Catalogue
		out.Ranking = r.Ranking
		out.ExcludedTrain += r.ExcludedTrain
		out.ExcludedSeen = r.ExcludedSeen
		if r.Popularity != nil {
			popUsers += r.RankedUsers
			pop.Precision += w * r.Popularity.Precision
			pop.Recall += w * r.Popularity.Recall
			pop.NDCG += w * r.Popularity.NDCG
			pop.MAP += w * r.Popularity.MAP
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if out.N == 0 {
		return nil, errors.New("eval: empty test set")
	}
	out.RMSE = math.Sqrt(se / float64(out.N))
	out.MAE = ae / float64(out.N)
	if n := float64(out.RankedUsers); n > 0 {
		out.Precision /= n
		out.Recall /= n
		out.NDCG /= n
		out.MAP /= n
	}
	if n := float64(popUsers); n > 0 {
		pop.Precision /= n
		pop.Recall /= n
		pop.NDCG /= n
		pop.MAP /= n
		out.Popularity = &pop
	}
	return out, nil
}

func init() {
	register.DoFn3x1[context.Context, Rating, func(float64), error](&squaredErrorFn{})
	register.Function2x0(formatSummary)
}

// squaredErrorFn emits the squared error of a rating's prediction.
type squaredErrorFn struct {
	Model string
	p     *models.Predictor
}

func (f *squaredErrorFn) Setup(ctx context.Context) error {
	var err error
	f.p, err = loadPredictor(ctx, f.Model, "", 0)
	return err
}

func (f *squaredErrorFn) ProcessElement(ctx context.Context, r Rating, emit func(float64)) error {
	y, _ := f.p.Predict(r.User, r.Item, nil)
	d := r.Value - y
	emit(d * d)
	return nil
}

func formatSummary(s Summary, emit func(string)) {
	emit(strconv.FormatInt(s.N, 10) + "\t" + fmtFloat(s.Sum))
}

// PredictRMSE is the RMSE of a model's predictions (Predictor.Predict) of
// the ratings of the log glob data, in one pipeline writing its sums to
// parts.
func PredictRMSE(ctx context.Context, model, data string, load LoadSpec, parts string, run Runner) (float64, error) {
	files, err := Expand(ctx, data)
	if err != nil {
		return 0, err
	}
	p, s := beam.NewPipelineWithRoot()
	ratings, _ := ReadRatings(s, files, load)
	sum := beam.Combine(s, &summaryFn{}, beam.ParDo(s, &squaredErrorFn{Model: model}, ratings))
	textio.Write(s, parts, beam.ParDo(s, formatSummary, sum))
	if err := run.run(ctx, p); err != nil {
		return 0, err
	}
	var n int64
	var se float64
	err = ReadLines(ctx, parts, func(line string) error {
		a, b, _ := strings.Cut(line, "\t")
		var err1, err2 error
		n, err1 = strconv.ParseInt(a, 10, 64)
		se, err2 = strconv.ParseFloat(b, 64)
		return errors.Join(err1, err2)
	})
	if err != nil {
		return 0, err
	}
	if n == 0 {
		return 0, errors.New("empty validation log")
	}
	return math.Sqrt(se / float64(n)), nil
}
