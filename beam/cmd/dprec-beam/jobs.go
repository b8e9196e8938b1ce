package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/prism"

	"github.com/dprec/dprec/beam/pipeline"
	"github.com/dprec/dprec/models"
)

func evalCmd(ctx context.Context, o *options, w io.Writer) error {
	if o.model == "" || o.data == "" {
		return usageError("eval needs --model and --data (the test log)")
	}
	ranking, err := o.rankingOf()
	if err != nil {
		return err
	}
	res, err := pipeline.Eval(ctx, pipeline.EvalOptions{Model: o.model, Data: o.data, Train: o.train,
		Load: o.load(), K: o.k, Threshold: o.threshold, Ranking: ranking, Shrinkage: o.shrinkage, Blocks: o.shards, Work: o.work})
	if err != nil {
		return err
	}
	if o.jsonOut {
		return printJSON(w, res)
	}
	fmt.Fprintf(w, "test ratings %d: RMSE %.4f MAE %.4f\n", res.N, res.RMSE, res.MAE)
	fmt.Fprintf(w, "ranking %s over %d users (relevant: rating >= %g; %d unknown users skipped): precision@%d %.4f recall@%d %.4f NDCG@%d %.4f MAP@%d %.4f\n",
		res.Ranking, res.RankedUsers, res.Threshold, res.SkippedUsers, res.K, res.Precision, res.K, res.Recall, res.K, res.NDCG, res.K, res.MAP)
	if p := res.Popularity; p != nil {
		fmt.Fprintf(w, "most-popular baseline: precision@%d %.4f recall@%d %.4f NDCG@%d %.4f MAP@%d %.4f\n",
			res.K, p.Precision, res.K, p.Recall, res.K, p.NDCG, res.K, p.MAP)
	}
	return nil
}

func recommendCmd(ctx context.Context, o *options, w io.Writer) error {
	if !o.allUsers {
		return usageError("recommend runs --all-users only (use dprec recommend for one user)")
	}
	if o.model == "" || o.out == "" {
		return usageError("recommend --all-users needs --model and --out (a directory)")
	}
	ranking, err := o.rankingOf()
	if err != nil {
		return err
	}
	if err := pipeline.RecommendAll(ctx, pipeline.RecommendOptions{Model: o.model, Out: o.out, N: o.n, Blocks: o.shards, Ranking: ranking, Shrinkage: o.shrinkage}); err != nil {
		return err
	}
	fmt.Fprintf(w, "wrote the top %d of every user to %s/part-*.parquet (user, rank, item, score)\n", o.n, strings.TrimSuffix(o.out, "/"))
	return nil
}

// jobServer runs Prism's job management service on loopback until
// interrupted: pipelines reach it with --runner universal --endpoint
// localhost:PORT --environment_type LOOPBACK, as they would a Flink or
// Spark job server.
func jobServer(ctx context.Context, o *options, w io.Writer) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if _, err := prism.CreateJobServer(ctx, prism.Options{Port: o.jobPort}); err != nil {
		return err
	}
	fmt.Fprintf(w, "prism job server listening on localhost:%d\n", o.jobPort)
	if f, ok := w.(*os.File); ok {
		f.Sync()
	}
	<-ctx.Done()
	time.Sleep(10 * time.Millisecond)
	return nil
}

// rankingOf parses --ranking ("": the default, models.Predictor.WithShrinkage).
func (o *options) rankingOf() (models.Ranking, error) {
	if !(o.shrinkage >= 0) || math.IsInf(o.shrinkage, 0) {
		return "", usageError(fmt.Sprintf("--shrinkage %g: want a finite K >= 0 (0: rank by the prediction)", o.shrinkage))
	}
	if o.ranking == "" {
		return "", nil
	}
	r, err := models.ParseRanking(o.ranking)
	if err != nil {
		return "", usageError("--" + err.Error())
	}
	return r, nil
}
