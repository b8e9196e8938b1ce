package cape

import (
	"fmt"
	"math"

	"github.com/dprec/dprec/perturb"
)

// Report returns the privacy report of a run: one Gaussian release per
// site and stage, the per-site guarantees, and the caveats of doc.go ("What
// the guarantee covers") with their computed values.
func (r *Run) Report() *perturb.Report {
	o := r.Outcome
	job := o.Job
	rep := &perturb.Report{
		Mode:        "cape-" + job.Kind,
		Relation:    "site data sets differing in one record (row or document) replaced by another valid record",
		Unit:        "record",
		Composition: "basic (per site; sites hold disjoint records: parallel composition across sites)",
		Randomness:  r.Randomness,
	}
	switch job.Kind {
	case JobMean:
		rep.Covered = []string{"aggregate mean"}
	case JobPCA:
		rep.Covered = []string{"V_K (top-K eigenvectors of the CAPE second moment)", "eigenvalues"}
	case JobAGN:
		rep.Covered = []string{"W (whitening matrix)", "M3~(W,W,W)", "components a_k", "weights w_k"}
	}
	for _, st := range o.Stages {
		what := stageName(job, st.Stage)
		for i, s := range st.Sites {
			if contains(st.Dropped, s) {
				continue // released nothing in this stage
			}
			sp := o.Specs[s-1]
			sens, _ := job.Sensitivity(st.Stage, sp.N)
			e, d := job.StageBudget(st.Stage, sp.Epsilon, sp.Delta)
			rep.Releases = append(rep.Releases, perturb.Release{
				What:            fmt.Sprintf("%s of site %d (noise e_s + f_s + g_s)", what, s),
				Mechanism:       perturb.MechGaussian,
				SensitivityNorm: "l2",
				Sensitivity:     sens,
				Derivation:      "otd/cape doc.go, Privacy",
				Scale:           math.Sqrt(st.Plan.Tau2[i]),
				Epsilon:         e,
				Delta:           d,
				Calibration:     string(calOrDefault(job.Calibration)),
				Count:           1,
			})
		}
		if len(st.Dropped) > 0 {
			rep.Notes = append(rep.Notes, fmt.Sprintf("stage %d (%s): sites %v dropped out after the noise was distributed; the estimate's noise variance is %.4g instead of tau_c^2 = %.4g (conventional scheme: %.4g)", st.Stage, what, st.Dropped, st.Variance, st.TargetVariance, st.ConvVariance))
		}
	}
	// Per-site guarantees and the aggregator's joint view.
	for s := 1; s <= len(o.Specs); s++ {
		sp := o.Specs[s-1]
		if sp.N == 0 {
			continue
		}
		if sp.Epsilon > rep.Epsilon {
			rep.Epsilon = sp.Epsilon
		}
		if sp.Delta > rep.Delta {
			rep.Delta = sp.Delta
		}
		var mu2 float64 // squared GDP parameter of the aggregator's joint view
		used := false
		for _, st := range o.Stages {
			for i, t := range st.Sites {
				if t != s || contains(st.Dropped, t) {
					continue
				}
				sens, _ := job.Sensitivity(st.Stage, sp.N)
				mu2 += sens * sens / st.Plan.JointVar(i)
				used = true
			}
		}
		if used {
			je := perturb.GaussianEpsilonForMu(math.Sqrt(mu2), sp.Delta)
			rep.Notes = append(rep.Notes, fmt.Sprintf("site %d: its releases together are (%g, %g)-DP (basic composition of the per-stage budgets) against the aggregator seeing each release and against colluding sites; the aggregator's joint view of all releases, with the correlation of the e_s accounted for (Gaussian-DP composition), is (%.4g, %g)-DP (doc.go, What the guarantee covers)", s, sp.Epsilon, sp.Delta, je, sp.Delta))
			if je > rep.Epsilon {
				// The untrusted aggregator sees every release: the headline
				// guarantee is the weaker of the two readings.
				rep.Epsilon = je
			}
		}
	}
	rep.Notes = append(rep.Notes, "assumes the aggregator, the noise generator and the sites do not collude and sites do not pool their own noise g_s (seed 002, Section III)")
	return rep
}

func calOrDefault(c perturb.Calibration) perturb.Calibration {
	if c == "" {
		return perturb.Analytic
	}
	return c
}

func stageName(job Job, stage int) string {
	switch {
	case job.Kind == JobMean:
		return "row mean"
	case job.Kind == JobPCA:
		return "second moment A_s"
	case stage == 0:
		return "M2"
	default:
		return "M3 (released projected on W)"
	}
}
