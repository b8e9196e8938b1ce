package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

	"github.com/dprec/dprec"
	"github.com/dprec/dprec/completion"
	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/models"
	"github.com/dprec/dprec/perturb"
	"github.com/urfave/cli/v2"
)

// trainImplicitCategory groups the implicit-objective flags.
const trainImplicitCategory = "Implicit objective (--objective implicit)"

// trainObjectiveFlags returns --objective and the implicit-objective flags
// of `dprec train`.
func trainObjectiveFlags() []cli.Flag {
	cat := trainImplicitCategory
	return []cli.Flag{
		&cli.StringFlag{Name: "objective", Category: "Model", Value: models.ObjectiveRating, Usage: "rating (squared error on the ratings; --solver picks the optimiser) or implicit (weighted ALS on implicit feedback: every event a positive with confidence 1 + alpha f(value), every other cell a zero; recommended for top-N lists)", DefaultText: "rating, or implicit (with a note on stderr) for a log without a rating column or whose ratings all have one value"},
		&cli.IntFlag{Name: "iterations", Category: cat, Value: completion.DefaultImplicitIterations, Usage: "ALS sweeps"},
		&cli.Float64Flag{Name: "alpha", Category: cat, Value: completion.DefaultImplicitAlpha, Usage: "confidence scale alpha"},
		&cli.StringFlag{Name: "confidence", Category: cat, Value: string(completion.DefaultImplicitConfidence), Usage: "f of the confidence: log (log(1+v)), linear (v) or binary (1); v is the sum of a (user, item) cell's values"},
		&cli.Float64Flag{Name: "unobserved-weight", Category: cat, Value: 1, Usage: "weight w0 of every unobserved cell"},
		&cli.BoolFlag{Name: "select", Category: cat, Value: true, Usage: "without --rank, --reg and --alpha, choose them by NDCG@10 on a per-user hold-out of the log (" + dprec.SelectGrid + "; logs up to 10^7 events), then train on every event; --select=false keeps rank " + strconv.Itoa(completion.DefaultImplicitRank) + ", reg " + fmt.Sprint(completion.DefaultImplicitReg) + ", alpha " + fmt.Sprint(completion.DefaultImplicitAlpha)},
	}
}

// trainImplicitSettings reads the settings of the implicit objective;
// strict (a run that will train it) also refuses the flags it does not use.
func trainImplicitSettings(c *cli.Context, strict bool) (completion.ImplicitSettings, error) {
	if strict {
		if c.String("model") != string(decomposition.CP) {
			return completion.ImplicitSettings{}, cli.Exit("--objective implicit trains a CP (matrix factorisation) model: drop --model tucker", exitUsage)
		}
		if p := c.String("privacy"); p != "" && p != "none" && p != "als" {
			return completion.ImplicitSettings{}, cli.Exit(fmt.Sprintf("--objective implicit has one private mode, als (weighted ALS under add/remove-one-user privacy), not %s", p), exitUsage)
		}
		if c.String("privacy") == "als" {
			// The private mode fixes the confidence (binary: the values are
			// not used) and its number of released steps.
			for _, f := range []string{"confidence", "iterations", "select"} {
				if c.IsSet(f) {
					return completion.ImplicitSettings{}, cli.Exit(fmt.Sprintf("--%s is not used by --objective implicit --privacy als (binary confidence, %d released item steps, no selection on the private log)", f, completion.ImplicitPrivateSteps), exitUsage)
				}
			}
		}
		for _, f := range trainRatingOnlyFlags {
			if c.IsSet(f) {
				return completion.ImplicitSettings{}, cli.Exit(fmt.Sprintf("--%s is not used by --objective implicit", f), exitUsage)
			}
		}
	}
	if c.IsSet("rank") && c.Int("rank") <= 0 {
		return completion.ImplicitSettings{}, cli.Exit(fmt.Sprintf("--rank %d: must be positive", c.Int("rank")), exitUsage)
	}
	conf, err := completion.ParseConfidenceFunc(c.String("confidence"))
	if err != nil {
		return completion.ImplicitSettings{}, cli.Exit(err.Error(), exitUsage)
	}
	s := completion.ImplicitSettings{
		Iterations:       c.Int("iterations"),
		Alpha:            0, // set below when given: zero means the default, and lets the library choose it
		Confidence:       conf,
		UnobservedWeight: c.Float64("unobserved-weight"),
		Threads:          c.Int("threads"),
	}
	if c.IsSet("reg") {
		s.Reg = c.Float64("reg")
	}
	if c.IsSet("alpha") {
		s.Alpha = c.Float64("alpha")
	}
	if c.IsSet("init-scale") {
		s.InitScale = c.Float64("init-scale")
	}
	if s.Iterations <= 0 {
		return completion.ImplicitSettings{}, cli.Exit(fmt.Sprintf("--iterations %d: must be positive", s.Iterations), exitUsage)
	}
	// Zero would silently mean completion's default: each must be positive.
	for _, v := range []struct {
		flag string
		val  float64
		what string
	}{
		{"alpha", s.Alpha, "the confidence scale"},
		{"unobserved-weight", s.UnobservedWeight, "the weight of every unobserved cell"},
		{"reg", s.Reg, "the ridge penalty keeps every row's normal equations positive definite"},
		{"init-scale", s.InitScale, "the standard deviation of the initial factors"},
	} {
		if c.IsSet(v.flag) && !(v.val > 0 && !math.IsInf(v.val, 0)) {
			return completion.ImplicitSettings{}, cli.Exit(fmt.Sprintf("--%s %g: must be positive and finite with --objective implicit (%s)", v.flag, v.val, v.what), exitUsage)
		}
	}
	return s, nil
}

// trainImplicitSummarize builds what train prints for the implicit
// objective from the library's result.
func trainImplicitSummarize(out, src string, res *dprec.Result, took time.Duration) *trainImplicitSummary {
	r, m := res.Implicit, res.File().Model
	sum := &trainImplicitSummary{Out: out, Data: src, Objective: models.ObjectiveImplicit, Dims: m.Dims, Rank: m.Ranks[0],
		Events: r.Events, Cells: r.Cells, TimeCollapsed: res.TimeCollapsed, Settings: r.Settings,
		History: r.History, Seconds: took.Seconds(), ObjectiveNote: res.ObjectiveNote, seen: res.File().Seen.Pairs(), Selection: res.Selection,
		Privacy: res.File().Privacy}
	if n := len(r.History); n > 0 {
		sum.Loss = r.History[n-1].Loss
	}
	return sum
}

// trainImplicitPrint prints the summary.
func trainImplicitPrint(w io.Writer, asJSON bool, sum *trainImplicitSummary) error {
	seen := sum.seen
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(sum)
	}
	if sum.Privacy != nil {
		fmt.Fprintf(w, "trained private implicit-feedback CP model, rank %d, on %s: %d items (the public domain), %d events (every event on the domain, users with more than k items weighted); no user is released (users fold in from their own events)\n", sum.Rank, sum.Data, sum.Dims[1], sum.Events)
		fmt.Fprintf(w, "confidence      1 + %g (binary), unobserved weight %g, reg %g\n", sum.Settings.Alpha, sum.Settings.UnobservedWeight, sum.Settings.Reg)
		steps := completion.ImplicitStepsReleased(sum.Privacy)
		if steps == 0 {
			fmt.Fprintf(w, "item steps      none (too few learnable items: the private most-popular list), %.3gs\n", sum.Seconds)
		} else {
			fmt.Fprintf(w, "item steps      %d released, %.3gs\n", steps, sum.Seconds)
		}
		fmt.Fprintf(w, "saved           %s\n", sum.Out)
		inspectPrivacyText(w, sum.Privacy)
		return nil
	}
	fmt.Fprintf(w, "trained implicit-feedback CP model, rank %d, on %s: %d users x %d items, %d stored observations in %d (user, item) cells", sum.Rank, sum.Data, sum.Dims[0], sum.Dims[1], sum.Events, sum.Cells)
	if sum.TimeCollapsed {
		fmt.Fprint(w, " (time mode collapsed)")
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "confidence      1 + %g %s(v), unobserved weight %g, reg %g\n", sum.Settings.Alpha, sum.Settings.Confidence, sum.Settings.UnobservedWeight, sum.Settings.Reg)
	if sel := sum.Selection; sel != nil {
		p := sel.Points[0]
		fmt.Fprintf(w, "chosen          rank %s, reg %s, alpha %s of %d points by %s on a per-user hold-out (%.4f; most popular %.4f)\n",
			sel.Chosen["rank"], sel.Chosen["reg"], sel.Chosen["alpha"], len(sel.Points), sel.Metric, p.Score, p.Popularity)
	}
	fmt.Fprintf(w, "sweeps          %d, final loss %.6g, %.3gs\n", len(sum.History), sum.Loss, sum.Seconds)
	fmt.Fprintf(w, "seen items      %d (user, item) pairs stored: recommend leaves them out\n", seen)
	fmt.Fprintf(w, "saved           %s\n", sum.Out)
	return nil
}

// trainImplicitSummary is what train --objective implicit prints.
type trainImplicitSummary struct {
	Out       string `json:"out"`
	Data      string `json:"data"`
	Objective string `json:"objective"`
	// ObjectiveNote says why a run without --objective trained the
	// implicit objective (trainAutoImplicit).
	ObjectiveNote string                      `json:"objective_note,omitempty"`
	Dims          []int                       `json:"dims"`
	Rank          int                         `json:"rank"`
	Events        int                         `json:"events"`
	Cells         int                         `json:"cells"`
	TimeCollapsed bool                        `json:"time_collapsed"`
	Loss          float64                     `json:"loss"`
	Seconds       float64                     `json:"seconds"`
	Settings      completion.ImplicitSettings `json:"settings"`
	History       []completion.ImplicitRecord `json:"history"`
	// Privacy is the private mode's report (nil: not private).
	Privacy *perturb.Report `json:"privacy,omitempty"`
	// Selection says how rank, reg and alpha were chosen (absent when
	// they were given or --select=false).
	Selection *dprec.Selection `json:"selection,omitempty"`
	seen      int              // stored seen pairs
}

// implicitFoldIn solves a new user's row of an implicit model from their
// events (values as in training: confidence 1 + alpha f(v), repeats add
// up), with the model's own settings.
func implicitFoldIn(f *models.File, path string, items []int32, values []float64, unknown int) (models.Row, string, error) {
	var s completion.ImplicitSettings
	if err := json.Unmarshal(f.Header.Settings, &s); err != nil {
		return models.Row{}, "", fmt.Errorf("%s: implicit settings in the model header: %w", path, err)
	}
	m := f.Model
	x, err := completion.ImplicitFoldIn(m.Factors[1], m.Ranks[1], items, values, &s)
	if err != nil {
		return models.Row{}, "", fmt.Errorf("%s: fold-in: %w", path, err)
	}
	note := fmt.Sprintf("folded in %d events from %s (implicit objective: confidence 1 + %g %s(v), reg %g)", len(items), path, s.Alpha, s.Confidence, s.Reg)
	if unknown > 0 {
		note += fmt.Sprintf("; %d events of unknown items ignored", unknown)
	}
	return models.Row{Factor: x}, note, nil
}
