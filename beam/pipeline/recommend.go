package pipeline

import (
	"context"
	"fmt"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/dprec/dprec/models"
)

func init() {
	register.DoFn3x1[context.Context, int, func(int64), error](&recommendBlockFn{})
	register.Emitter1[int64]()
}

// RecommendOptions configure RecommendAll.
type RecommendOptions struct {
	// Model is the model file; Out the output directory of the Parquet
	// files part-BBBBB-of-NNNNN.parquet (user, rank, item, score, as
	// dprec recommend --all-users --out x.parquet writes them).
	Model, Out string
	// N is the list length (zero: 10).
	N int
	// Ranking and Shrinkage select the ranking, as in EvalOptions.
	Ranking   models.Ranking
	Shrinkage float64
	// Blocks is the number of output files, one per block of users
	// (zero: 4).
	Blocks int
	Run    Runner
}

// RecommendAll writes the top-N list of every user of the model, one
// Parquet file per block of consecutive users, each written by one
// worker with models.Predictor.Recommend (the model's stored seen items
// are left out, as dprec recommend does).
func RecommendAll(ctx context.Context, o RecommendOptions) error {
	if o.N == 0 {
		o.N = 10
	}
	if o.N < 0 {
		return fmt.Errorf("recommend: list length %d must be positive", o.N)
	}
	if o.Blocks <= 0 {
		o.Blocks = 4
	}
	p, s := beam.NewPipelineWithRoot()
	blocks := make([]int, o.Blocks)
	for b := range blocks {
		blocks[b] = b
	}
	col := beam.Reshuffle(s, beam.CreateList(s, blocks))
	beam.ParDo(s, &recommendBlockFn{Model: o.Model, Out: o.Out, N: o.N, Blocks: o.Blocks, Ranking: o.Ranking, Shrinkage: o.Shrinkage}, col)
	return o.Run.run(ctx, p)
}

type recommendBlockFn struct {
	Model, Out string
	N, Blocks  int
	Ranking    models.Ranking
	Shrinkage  float64

	p *models.Predictor
}

func (f *recommendBlockFn) Setup(ctx context.Context) error {
	var err error
	f.p, err = loadPredictor(ctx, f.Model, f.Ranking, f.Shrinkage)
	return err
}

func (f *recommendBlockFn) ProcessElement(ctx context.Context, block int, rows func(int64)) error {
	p := f.p
	U := p.NumUsers()
	lo, hi := block*U/f.Blocks, (block+1)*U/f.Blocks
	name := joinPath(f.Out, fmt.Sprintf("part-%05d-of-%05d.parquet", block, f.Blocks))
	fs, err := filesystem.New(ctx, name)
	if err != nil {
		return err
	}
	defer fs.Close()
	w, err := fs.OpenWrite(ctx, name)
	if err != nil {
		return err
	}
	n, err := writeRecommendations(w, p, lo, hi, f.N)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	rows(n)
	return nil
}

// writeRecommendations writes users lo..hi-1's lists as Parquet
// (models.ListWriter, the table of dprec recommend --all-users) and
// returns the rows.
func writeRecommendations(w interface{ Write([]byte) (int, error) }, p *models.Predictor, lo, hi, n int) (int64, error) {
	lw, err := models.NewListWriter(w, &p.File().Header)
	if err != nil {
		return 0, err
	}
	seen := p.File().Seen
	var total int64
	for u := lo; u < hi; u++ {
		uid := p.UserID(int32(u))
		recs, _ := p.Recommend(uid, nil, n, seen.For(int32(u), p.NumItems(), nil))
		if err := lw.Add(uid, recs); err != nil {
			lw.Abort()
			return 0, err
		}
		total += int64(len(recs))
	}
	return total, lw.Close()
}
