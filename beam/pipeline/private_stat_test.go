package pipeline

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dprec/dprec/completion"
	"github.com/dprec/dprec/internal/stattest"
	"github.com/dprec/dprec/perturb"
)

// Statistical tests of the released statistics through the pipelines (on
// Prism, with perturb's secure noise): a log on which every released
// value is the exact statistic plus one independent noise draw, the
// exact statistic recomputed from the log and the released mean and item
// biases with completion's exported kernels and subtracted, and the
// differences tested against the Laplace distribution of the scale the
// privacy report states. Each Kolmogorov-Smirnov test falsely rejects
// with probability at most ksAlpha (stattest.KSCritical, the DKW bound);
// the noise is secure, so the tests are random, with about 6 tests a run
// 6e-6 in all.
const ksAlpha = 1e-6

// statLog is the crafted log: statItems catalogue items, each rated by
// statPerItem users with one identical value (a half-star grid value of
// the item's index), every user rating statItems*statPerItem/statUsers
// items: 30,000 ratings, 300 users, 10,000 items.
const statItems, statPerItem, statUsers = 10000, 3, 300

func statValue(i int) float64 { return 0.5 + 0.5*float64((i*7)%10) }

func writeStatLog(t *testing.T) (log, cat string) {
	t.Helper()
	dir := t.TempDir()
	var b, c strings.Builder
	c.WriteString("item\n")
	for i := range statItems {
		fmt.Fprintf(&c, "%d\n", 1000+i)
		for k := range statPerItem {
			fmt.Fprintf(&b, "u%d\t%d\t%g\n", (statPerItem*i+k)%statUsers, 1000+i, statValue(i))
		}
	}
	log, cat = filepath.Join(dir, "log.tsv"), filepath.Join(dir, "items.csv")
	for _, f := range []struct{ path, body string }{{log, b.String()}, {cat, c.String()}} {
		if err := os.WriteFile(f.path, []byte(f.body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return log, cat
}

func laplaceCDF(b float64) func(float64) float64 {
	return func(x float64) float64 {
		if x < 0 {
			return 0.5 * math.Exp(x/b)
		}
		return 1 - 0.5*math.Exp(-x/b)
	}
}

func expCDF(b float64) func(float64) float64 {
	return func(x float64) float64 { return 1 - math.Exp(-math.Max(x, 0)/b) }
}

// ksLaplace tests draws against Laplace(b): the signed draws (shape,
// symmetry, location) and their absolute values against Exponential(b)
// (the scale: folding doubles the KS distance a wrong scale makes).
func ksLaplace(t *testing.T, what string, noise []float64, b float64) {
	t.Helper()
	crit := stattest.KSCritical(len(noise), ksAlpha)
	signed := append([]float64(nil), noise...)
	d1 := stattest.KS(signed, laplaceCDF(b))
	if d1 > crit {
		t.Errorf("%s: KS of %d draws against Laplace(%.4g) is %.4g > %.4g", what, len(noise), b, d1, crit)
	}
	d2 := stattest.KS(absAll(noise), expCDF(b))
	if d2 > crit {
		t.Errorf("%s: KS of %d |draws| against Exponential(%.4g) is %.4g > %.4g", what, len(noise), b, d2, crit)
	}
	mean, v := stattest.MeanVar(noise)
	t.Logf("%s: %d draws, reported scale %.4g: KS %.4g (signed), %.4g (folded), critical %.4g; mean %.3g, sd %.4g (Laplace sd %.4g)",
		what, len(noise), b, d1, d2, crit, mean, math.Sqrt(v), math.Sqrt2*b)
}

func absAll(xs []float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = math.Abs(x)
	}
	return out
}

// releaseScale returns the scale the report states for the release whose
// What starts with prefix.
func releaseScale(t *testing.T, rep *perturb.Report, prefix string) float64 {
	t.Helper()
	for _, r := range rep.Releases {
		if strings.HasPrefix(r.What, prefix) && r.Mechanism == perturb.MechLaplace {
			return r.Scale
		}
	}
	t.Fatalf("no Laplace release %q in the report", prefix)
	return 0
}

const itemSumsWhat = "per-item sums of the clipped residuals"

// itemSumNoise returns the noise of the released item sums: each noisy
// sum minus statPerItem times the item's BiasResidual from the released
// mean mu (every rating of an item has the same value, so the exact sum
// does not depend on the order of summation).
func itemSumNoise(noisy []float64, mu, lo, hi float64) []float64 {
	out := make([]float64, len(noisy))
	for i, y := range noisy {
		r := completion.BiasResidual(statValue(i), mu, lo, hi)
		out[i] = y - (r + r + r)
	}
	return out
}

// TestPrivateBiasNoiseKS: the bias mode's released item sums (Laplace,
// epsilon 1, secure noise) minus the exact sums are Laplace of the
// reported scale: 10,000 items.
func TestPrivateBiasNoiseKS(t *testing.T) {
	log, cat := writeStatLog(t)
	var noisy []float64
	po := completion.PrivateOptions{Epsilon: 1, RatingMin: 0.5, RatingMax: 5}
	res, err := TrainPrivateBias(context.Background(), PrivateBiasOptions{Data: log, Items: cat, Privacy: po,
		observe: func(what string, v []float64) {
			if strings.HasPrefix(what, itemSumsWhat) {
				noisy = append([]float64(nil), v...)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	rep := res.File.Privacy
	if prov, _ := rep.Provenance(); prov != perturb.ProvenanceSecure || len(noisy) != statItems {
		t.Fatalf("provenance %v, %d released item sums", prov, len(noisy))
	}
	b := releaseScale(t, rep, itemSumsWhat)
	ksLaplace(t, "bias mode's item sums", itemSumNoise(noisy, res.File.Model.Mean, po.RatingMin, po.RatingMax), b)
}

// TestPrivateALSNoiseKS: private ALS's residual route (epsilon 100, rank
// 1, secure noise; the release only, not the fit after it): the 30,000
// released residuals, drawn in the DoFns, minus each rating's
// ALSResidual from the released mean and item biases are Laplace of the
// reported scale 2c/epsilon_w, and so are the noise of the bias release's
// item sums (10,000 items, at 5% of epsilon). The control: the same
// residual noise tested against a scale 10% too large or too small is
// rejected (with 30,000 draws the folded KS distance of a 10% scale
// error, 0.035, is 2.2 times the critical value).
func TestPrivateALSNoiseKS(t *testing.T) {
	log, cat := writeStatLog(t)
	var noisy []float64
	po := completion.PrivateOptions{Epsilon: 100, Delta: 1e-6, RatingMin: 0.5, RatingMax: 5}
	res, err := TrainPrivateALS(context.Background(), PrivateALSOptions{Data: log, Items: cat, Rank: 1, Privacy: po,
		Work: t.TempDir(), releaseOnly: true,
		observe: func(what string, v []float64) {
			if strings.HasPrefix(what, itemSumsWhat) {
				noisy = append([]float64(nil), v...)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	rep, plan, rel := res.File.Privacy, res.Plan, res.Released
	if prov, _ := rep.Provenance(); prov != perturb.ProvenanceSecure || plan == nil || res.Residuals == "" {
		t.Fatalf("provenance %v, plan %v, residuals %q: want a secure residual release", prov, plan, res.Residuals)
	}
	b := releaseScale(t, rep, "residuals of the clamped ratings")
	if want := 2 * plan.Clip / plan.ResidualEpsilon; b != want {
		t.Fatalf("reported scale %v, plan's 2c/epsilon_w %v", b, want)
	}
	var noise []float64
	err = ReadLines(context.Background(), res.Residuals, func(line string) error {
		_, i, w, _, err := parseDense(line)
		if err != nil {
			return err
		}
		noise = append(noise, w-completion.ALSResidual(statValue(int(i)), rel.Mean, rel.Bias[1][i], plan.Clip, po.RatingMin, po.RatingMax))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(noise) != statItems*statPerItem {
		t.Fatalf("%d released residuals, want %d", len(noise), statItems*statPerItem)
	}
	ksLaplace(t, "residual release (DoFn noise)", noise, b)
	crit := stattest.KSCritical(len(noise), ksAlpha)
	for _, f := range []float64{1.1, 0.9} {
		d := stattest.KS(absAll(noise), expCDF(f*b))
		if d <= crit {
			t.Errorf("control: |residual noise| against Exponential(%g x the reported scale): KS %.4g <= %.4g, not rejected", f, d, crit)
		}
		t.Logf("control: scale x %g: KS %.4g against critical %.4g (rejected)", f, d, crit)
	}
	if len(noisy) != statItems {
		t.Fatalf("%d released item sums of the bias release", len(noisy))
	}
	ksLaplace(t, "residual route's bias release, item sums", itemSumNoise(noisy, rel.Mean, po.RatingMin, po.RatingMax), releaseScale(t, rep, itemSumsWhat))
}
