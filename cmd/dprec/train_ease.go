package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/dprec/dprec"
	"github.com/dprec/dprec/itemitem"
	"github.com/dprec/dprec/models"
	"github.com/urfave/cli/v2"
)

// trainEASECategory groups the flags of --objective ease.
const trainEASECategory = "Item-item model (--objective ease)"

// trainEASEFlags returns the flags of `dprec train --objective ease`.
func trainEASEFlags() []cli.Flag {
	cat := trainEASECategory
	return []cli.Flag{
		&cli.Float64Flag{Name: "lambda", Category: cat, Usage: "--objective ease (EASE, Steck 2019: an item-item model in closed form; strong on short histories and small catalogues): ridge penalty of the item-item weights", DefaultText: "chosen by NDCG@10 on a per-user hold-out of the training log"},
		&cli.IntFlag{Name: "max-items", Category: cat, Value: itemitem.DefaultMaxItems, Usage: "--objective ease: items of the closed form (the most popular; the others get no weights); its time and memory grow as items^3 and 8 items^2 bytes; 0 or negative: every item"},
	}
}

// trainEASEUnused are train's flags that --objective ease does not use.
var trainEASEUnused = []string{"model", "rank", "ranks", "bias", "no-bias", "clamp", "solver", "epochs", "lr", "decay", "reg",
	"reg-core", "reg-bias", "reg-time", "time-biases", "item-periods", "reg-pair", "burn-in", "refit", "init-scale", "validation",
	"patience", "iterations", "alpha", "confidence", "unobserved-weight", "select", "privacy"}

// trainEASEOptionsOf reads the flags of train --objective ease into o.
func trainEASEOptionsOf(c *cli.Context, o *trainOptions) (*trainOptions, error) {
	for _, f := range trainEASEUnused {
		if flagDef(c.Command.Flags, f) != nil && c.IsSet(f) {
			return nil, cli.Exit(fmt.Sprintf("--%s is not used by --objective ease", f), exitUsage)
		}
	}
	f := &o.Fit
	f.Objective = dprec.ObjectiveEASE
	var err error
	if f.Load, err = dataLoadOptions(c); err != nil {
		return nil, err
	}
	f.Seed, f.Seeded = seedOf(c)
	f.Settings.Threads = c.Int("threads")
	s := &f.EASE
	if c.IsSet("lambda") {
		if s.Lambda = c.Float64("lambda"); !(s.Lambda > 0) || math.IsInf(s.Lambda, 0) {
			return nil, cli.Exit(fmt.Sprintf("--lambda %g: must be positive and finite (leave it out to choose it on validation)", s.Lambda), exitUsage)
		}
	}
	if s.MaxItems = c.Int("max-items"); s.MaxItems <= 0 {
		s.MaxItems = -1
	}
	s.MaxMemory = o.MaxMemory
	if s.MaxMemory == 0 {
		s.MaxMemory = -1 // --max-memory none
	}
	return o, nil
}

// trainEASESummary is what train --objective ease prints.
type trainEASESummary struct {
	Out       string           `json:"out"`
	Data      string           `json:"data"`
	Objective string           `json:"objective"`
	Dims      []int            `json:"dims"`
	Pairs     int              `json:"seen_pairs"`
	Result    *itemitem.Result `json:"ease"`
	Weights   int              `json:"weights"`
	Seconds   float64          `json:"seconds"`
}

// trainEASESummarize builds what train --objective ease prints from the
// library's result.
func trainEASESummarize(out, src string, res *dprec.Result, took time.Duration) *trainEASESummary {
	f := res.File()
	return &trainEASESummary{Out: out, Data: src, Objective: models.ObjectiveItemItem, Dims: f.Model.Dims,
		Pairs: f.Seen.Pairs(), Result: res.EASE, Weights: f.Weights.NNZ(), Seconds: took.Seconds()}
}

// trainEASEPrint prints the summary.
func trainEASEPrint(w io.Writer, asJSON bool, sum *trainEASESummary) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(sum)
	}
	r := sum.Result
	fmt.Fprintf(w, "trained EASE item-item model on %s: %d users x %d items, %d (user, item) pairs\n", sum.Data, sum.Dims[0], sum.Dims[1], sum.Pairs)
	fmt.Fprintf(w, "closed form     %d of %d items, %d weights\n", r.Items, r.Catalogue, sum.Weights)
	if r.Chosen {
		var pts []string
		for _, p := range r.Grid {
			pts = append(pts, fmt.Sprintf("%.4g: %.4f", p.Lambda, p.NDCG))
		}
		fmt.Fprintf(w, "lambda          %.4g, chosen by validation NDCG@%d on %d held-out pairs of %d users (most-popular %.4f)\n", r.Lambda, itemitem.ValidationK, r.ValidationPairs, r.ValidationUsers, r.PopularityNDCG)
		fmt.Fprintf(w, "grid            %s\n", strings.Join(pts, ", "))
	} else {
		fmt.Fprintf(w, "lambda          %.4g (given)\n", r.Lambda)
	}
	fmt.Fprintf(w, "time            %.3gs\n", sum.Seconds)
	fmt.Fprintf(w, "seen items      stored: recommend leaves them out, and they are the histories the scores sum over\n")
	fmt.Fprintf(w, "saved           %s\n", sum.Out)
	return nil
}

// itemItemHistory is predict --ratings for an item-item model: the new
// user's items are their history (ratings only say which items).
func itemItemHistory(path string, items []int32, unknown int) (models.Row, string, error) {
	h := slices.Clone(items)
	slices.Sort(h)
	h = slices.Compact(h)
	note := fmt.Sprintf("scored from the %d items of %s (item-item model: the items of the ratings, not their values)", len(h), path)
	if unknown > 0 {
		note += fmt.Sprintf("; %d unknown items ignored", unknown)
	}
	return models.Row{Items: h}, note, nil
}
