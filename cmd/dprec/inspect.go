package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/dprec/dprec/completion"
	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/models"
	"github.com/dprec/dprec/perturb"
	"github.com/urfave/cli/v2"
)

// inspectCmd builds the "dprec inspect" command (listed in commands.go).
func inspectCmd() *cli.Command {
	return &cli.Command{
		Name:      "inspect",
		Usage:     "print the header of a saved model (verifying its checksums)",
		ArgsUsage: "MODEL",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print the header as JSON"},
		},
		Action: runWithOptions(inspectOptionsOf, inspectRun),
	}
}

// inspectOptions are the argument and flags of dprec inspect.
type inspectOptions struct {
	Model string // MODEL
	JSON  bool   // --json
}

// inspectOptionsOf reads inspect's argument and flags.
func inspectOptionsOf(c *cli.Context) (*inspectOptions, error) {
	if c.NArg() != 1 {
		return nil, cli.Exit("usage: dprec inspect MODEL [--json]", exitUsage)
	}
	return &inspectOptions{Model: c.Args().First(), JSON: c.Bool("json")}, nil
}

// inspectRun prints the header of the model o.Model on s.Out.
func inspectRun(o *inspectOptions, s *iostreams) error {
	f, err := models.Load(o.Model)
	if err != nil {
		return err
	}
	warns := inspectPrivacyWarnings(f.Privacy)
	w := s.Out
	if o.JSON {
		out := struct {
			*models.Header
			Warnings []string `json:"warnings"`
		}{&f.Header, warns}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	inspectText(w, &f.Header)
	for _, x := range warns {
		fmt.Fprintln(w, "WARNING:", x)
	}
	return nil
}

// inspectPrivacyWarnings lists what a user of the model must know about its
// privacy: non-private training, seeded noise, uncovered parameters.
func inspectPrivacyWarnings(r *perturb.Report) []string {
	var w []string
	switch {
	case r == nil || !r.Private():
		w = append(w, "this model was trained WITHOUT differential privacy: its parameters may reveal individual ratings")
	default:
		if !r.FullyCovered() {
			w = append(w, fmt.Sprintf("the %s privacy guarantee does not cover every released parameter; released without protection: %s",
				r.Mode, strings.Join(r.NotCovered, ", ")))
		}
		if models.IsBillboard(r) {
			w = append(w, "user rows and biases are not in this model (billboard model): predict for a user from their own ratings with --ratings; --user predictions use zero user terms")
		}
		if prov, ok := r.Provenance(); ok && !prov.Private() {
			w = append(w, "the noise was drawn from a seeded generator (reproducible, NOT private)")
		}
		for _, p := range r.Check() {
			w = append(w, "the privacy report does not check out (its numbers disagree; do not trust its guarantee): "+p)
		}
	}
	return w
}

// inspectText prints a header for people.
func inspectText(w io.Writer, h *models.Header) {
	fmt.Fprintf(w, "format      %s version %d (%s)\n", h.Format, h.Version, h.Software)
	fmt.Fprintf(w, "created     %s\n", h.Created.UTC().Format(time.RFC3339))
	fmt.Fprintf(w, "model       %s, ranks %v, biases %v\n", h.Kind, h.Ranks, h.Bias)
	for mo, name := range h.Modes {
		fmt.Fprintf(w, "mode %d      %-5s %d (%s ids", mo, name, h.Dims[mo], h.IDTypes[mo])
		if h.IDNames[mo] != "" {
			fmt.Fprintf(w, " from column %q", h.IDNames[mo])
		}
		fmt.Fprintln(w, ")")
	}
	if h.Time != nil {
		first := time.Unix(h.Time.Unit.Start(h.Time.First), 0).UTC().Format("2006-01-02")
		last := time.Unix(h.Time.Unit.Start(h.Time.First+int64(h.Time.Count)-1), 0).UTC().Format("2006-01-02")
		fmt.Fprintf(w, "time        %d %s buckets, %s .. %s\n", h.Time.Count, h.Time.Unit, first, last)
	}
	if h.Bias {
		fmt.Fprintf(w, "global mean %.6g\n", h.Mean)
	}
	for _, p := range h.Pairs {
		what := "user x time-bucket biases"
		if p.A == 1 {
			what = fmt.Sprintf("item x period biases (periods of %d buckets)", p.Div)
		}
		fmt.Fprintf(w, "pair bias   %s: %d pairs seen in training\n", what, p.Count)
	}
	if decomposition.ClampActive(h.ClampLo, h.ClampHi) {
		fmt.Fprintf(w, "clamp       [%s, %s]\n", fmtFloat(h.ClampLo+0), fmtFloat(h.ClampHi)) // +0: [-0, 0] prints as [0, 0]
	}
	if d := h.Data; d.HasStats() {
		fmt.Fprintf(w, "data        %d ratings, dims %v, mean %.4g, range [%s, %s], sha256 %s\n", d.NNZ, d.Dims, d.Mean, fmtFloat(d.Min), fmtFloat(d.Max), d.SHA256)
	} else if d != nil && d.NNZ == 0 {
		fmt.Fprintf(w, "data        dims %v (number of ratings, hash and statistics withheld: user-level private model)\n", d.Dims)
	} else if d != nil {
		fmt.Fprintf(w, "data        %d ratings, dims %v (hash and statistics withheld: private model)\n", d.NNZ, d.Dims)
	}
	if len(h.Settings) > 0 {
		fmt.Fprintf(w, "settings    %s\n", h.Settings)
	}
	if h.Seen != nil {
		fmt.Fprintf(w, "seen items  %d (user, item) pairs of %d users (left out of recommendations)\n", h.Seen.Pairs, h.Seen.Users)
	}
	switch {
	case h.Weights != nil && h.Objective == models.ObjectiveItemItem:
		fmt.Fprintf(w, "item-item   %s model: %d weights over %d items; a user's scores sum the weights of their seen items (the factors are zero and carry the ids)\n", h.Objective, h.Weights.NNZ, h.Weights.Items)
	case h.Weights != nil:
		fmt.Fprintf(w, "lists       ranking weights: %d item-item weights over %d items; a user's list sums the weights of the items in their own history (--ratings); predictions come from the factors\n", h.Weights.NNZ, h.Weights.Items)
	}
	if h.Objective == models.ObjectiveImplicit {
		var hist []completion.ImplicitRecord
		if json.Unmarshal(h.History, &hist) == nil && len(hist) > 0 {
			var secs float64
			for _, e := range hist {
				secs += e.Seconds
			}
			fmt.Fprintf(w, "training    implicit objective (weighted ALS): %d sweeps in %.3gs; final loss %.6g\n", len(hist), secs, hist[len(hist)-1].Loss)
		}
		inspectPrivacyText(w, h.Privacy)
		return
	}
	var hist []struct {
		Epoch     int     `json:"epoch"`
		TrainRMSE float64 `json:"train_rmse"`
		ValidRMSE float64 `json:"valid_rmse"`
		Seconds   float64 `json:"seconds"`
	}
	if len(h.History) > 0 && json.Unmarshal(h.History, &hist) == nil && len(hist) > 0 {
		best := hist[0]
		var secs float64
		for _, e := range hist {
			secs += e.Seconds
			if e.ValidRMSE > 0 && (best.ValidRMSE == 0 || e.ValidRMSE < best.ValidRMSE) {
				best = e
			}
		}
		took := fmt.Sprintf(" in %.3gs", secs)
		if h.Privacy.Private() {
			took = " (timings withheld: private model)"
		}
		if last := hist[len(hist)-1]; last.TrainRMSE == 0 && h.Privacy.Private() {
			fmt.Fprintf(w, "training    %d epochs%s; losses withheld (computed from the private ratings)", len(hist), took)
		} else {
			fmt.Fprintf(w, "training    %d epochs%s; last train RMSE %.4f", len(hist), took, last.TrainRMSE)
		}
		if best.ValidRMSE > 0 {
			fmt.Fprintf(w, "; best validation RMSE %.4f (epoch %d)", best.ValidRMSE, best.Epoch)
		}
		fmt.Fprintln(w)
	}
	inspectPrivacyText(w, h.Privacy)
}

// inspectReleaseText describes one release of a report whose headline was
// composed by composition: the mechanism, sensitivity and scale, then its
// own (epsilon, delta) and repeat count. A Gaussian release with no
// (epsilon, delta) of its own (a step calibrated by its noise multiplier
// and accounted by RDP or GDP over the whole run, Calibration "sigma")
// would print as "(0, 0)", which reads as no privacy loss: it is described
// by its noise multiplier z = scale/sensitivity, its Poisson sample rate q
// when it ran on a subsample, and the accounting that charges it.
func inspectReleaseText(rel perturb.Release, composition string) string {
	head := fmt.Sprintf("%s: %s, %s sensitivity %s, scale %s", rel.What, rel.Mechanism, rel.SensitivityNorm, fmtFloat(rel.Sensitivity), fmtFloat(rel.Scale))
	count := max(rel.Count, 1)
	if rel.Mechanism != "gaussian" || rel.Epsilon != 0 || rel.Delta != 0 {
		return fmt.Sprintf("%s, (%s, %s) x%d", head, fmtFloat(rel.Epsilon), fmtFloat(rel.Delta), count)
	}
	s := fmt.Sprintf("%s, x%d", head, count)
	if rel.Sensitivity > 0 {
		s += fmt.Sprintf(", noise multiplier z = %s (scale/sensitivity)", fmtFloat(rel.Scale/rel.Sensitivity))
	}
	if rel.SampleRate > 0 && rel.SampleRate < 1 {
		s += fmt.Sprintf(", Poisson sample rate q = %s", fmtFloat(rel.SampleRate))
	}
	if composition == "" {
		return s + ", no per-release epsilon (accounted in the headline)"
	}
	return s + fmt.Sprintf(", no per-release epsilon (accounted in the headline: %s composition)", composition)
}

// inspectPrivacyText prints a privacy report.
func inspectPrivacyText(w io.Writer, r *perturb.Report) {
	if r == nil {
		fmt.Fprintln(w, "privacy     none")
		return
	}
	if !r.Private() {
		fmt.Fprintf(w, "privacy     %s\n", r.Mode)
	} else {
		if len(r.Covered) == 0 {
			// A guarantee that covers no released parameter has no headline
			// (epsilon, delta): print it as what its releases compose to.
			fmt.Fprintf(w, "privacy     %s: covers NO released parameter (its releases compose to epsilon %s, delta %s), unit %s, %s composition\n", r.Mode, fmtFloat(r.Epsilon), fmtFloat(r.Delta), r.Unit, r.Composition)
		} else {
			fmt.Fprintf(w, "privacy     %s: (epsilon %s, delta %s), unit %s, %s composition\n", r.Mode, fmtFloat(r.Epsilon), fmtFloat(r.Delta), r.Unit, r.Composition)
		}
		if r.RelationKind != "" {
			fmt.Fprintf(w, "  relation kind %s", r.RelationKind)
			if r.ValueChangeEpsilon > 0 {
				fmt.Fprintf(w, " (a change of one record's value: epsilon %s at the same delta)", fmtFloat(r.ValueChangeEpsilon))
			}
			fmt.Fprintln(w)
		}
		if r.Relation != "" {
			fmt.Fprintf(w, "  relation  %s\n", r.Relation)
		}
		for _, rel := range r.Releases {
			fmt.Fprintf(w, "  release   %s\n", inspectReleaseText(rel, r.Composition))
		}
		if len(r.Covered) > 0 {
			fmt.Fprintf(w, "  covered   %s\n", strings.Join(r.Covered, ", "))
		}
		if len(r.NotCovered) > 0 {
			fmt.Fprintf(w, "  NOT covered %s\n", strings.Join(r.NotCovered, ", "))
		}
		if r.Randomness != "" {
			fmt.Fprintf(w, "  randomness %s\n", r.Randomness)
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "  note      %s\n", n)
	}
}
