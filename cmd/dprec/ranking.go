package main

import (
	"fmt"
	"math"

	"github.com/urfave/cli/v2"

	"github.com/dprec/dprec/models"
)

// rankingFlags are the ranking flags of eval and recommend.
func rankingFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "ranking", Value: string(models.RankRelevance), Usage: "rating models: how lists are ranked: relevance (log(n + 1 + sd) + log Phi((prediction - t)/s): the chance that the user rates the item and likes it, n the item's training users or a private model's item counts, sd their noise, t and s the top quarter of the rating range), credibility (base + n/(n+K) (prediction - base), K = --shrinkage) or prediction; a model without a rating range (--clamp none) ranks by credibility instead of relevance (docs/top-n.md, Rankings of rating models)"},
		&cli.Float64Flag{Name: "shrinkage", Value: models.DefaultShrinkage, Usage: "K, the credibility constant of --ranking credibility (0: rank by the prediction, as --ranking prediction, unless --ranking is given)"},
	}
}

// rankingOptions are the values of rankingFlags.
type rankingOptions struct {
	Ranking   models.Ranking // --ranking
	Shrinkage float64        // --shrinkage
}

// rankingOptionsOf reads rankingFlags. --shrinkage 0 without --ranking
// keeps its earlier meaning: rank by the prediction.
func rankingOptionsOf(c *cli.Context) (rankingOptions, error) {
	r, err := models.ParseRanking(c.String("ranking"))
	if err != nil {
		return rankingOptions{}, cli.Exit("--"+err.Error(), exitUsage)
	}
	o := rankingOptions{Ranking: r, Shrinkage: c.Float64("shrinkage")}
	if v := o.Shrinkage; !(v >= 0) || math.IsInf(v, 0) {
		return o, cli.Exit(fmt.Sprintf("--shrinkage %g: want a finite K >= 0 (0: rank by the prediction)", v), exitUsage)
	}
	if o.Shrinkage == 0 && !c.IsSet("ranking") {
		o.Ranking = models.RankPrediction
	}
	return o, nil
}

// apply returns p ranking as o says.
func (o rankingOptions) apply(p *models.Predictor) *models.Predictor {
	return p.WithRanking(o.Ranking, o.Shrinkage)
}
