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
		Mode:         "cape-" + string(job.Kind),
		Relation:     "site data sets differing in one record (row or document) replaced by another valid record",
		RelationKind: perturb.RelationValueChange,
		Unit:         "record",
		Composition:  "basic (per site; sites hold disjoint records: parallel composition across sites)",
		Randomness:   r.Randomness,
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
	// Per-site guarantees against each party of the threat model.
	for _, g := range r.Guarantees() {
		if g.Epsilon > rep.Epsilon {
			rep.Epsilon = g.Epsilon
		}
		if g.Delta > rep.Delta {
			rep.Delta = g.Delta
		}
		// The untrusted aggregator sees every release: the headline is the
		// weaker of the per-release and the joint reading.
		if g.JointEpsilon > rep.Epsilon {
			rep.Epsilon = g.JointEpsilon
		}
		rep.Notes = append(rep.Notes, fmt.Sprintf("site %d: each release alone is (%g, %g)-DP (basic composition of the per-stage budgets) against a party that knows f_s or e_s but not both (the aggregator looking at that release; the seed's statement); "+
			"the aggregator's joint view of all releases (correlated e_t, Gaussian-DP composition) is (%.4g, %g)-DP; "+
			"a coalition of the other %d sites pooling their own g_t (they see the released result), or of all other parties, leaves only g_s: (%.4g, %g)-DP (doc.go, Threat model)",
			g.Site, g.Epsilon, g.Delta, g.JointEpsilon, g.Delta, g.Others, g.CoalitionEpsilon, g.Delta))
	}
	rep.Notes = append(rep.Notes, "headline (epsilon, delta): per site, the weaker of the per-release and the aggregator's joint reading; it assumes the trusted noise generator shares e_s with no one, the aggregator colludes with no site and sites do not pool their noise g_t; without these assumptions the coalition epsilons above apply")
	return rep
}

// SiteGuarantee is the privacy of one site's releases in a run against
// each party of the threat model (doc.go, "Threat model"), all at the
// site's delta.
type SiteGuarantee struct {
	Site int `json:"site"`
	// Epsilon, Delta: the site's budget, the guarantee of each release
	// alone against a party knowing f_s or e_s but not both (basic
	// composition over the stages).
	Epsilon float64 `json:"epsilon"`
	Delta   float64 `json:"delta"`
	// JointEpsilon: against the aggregator combining every release, whose
	// e_t are correlated (Plan.JointVar per stage, Gaussian-DP composition).
	JointEpsilon float64 `json:"joint_epsilon"`
	// CoalitionEpsilon: against the other sites pooling their g_t and
	// seeing the released result, and more generally against any coalition
	// of all parties other than site s: only g_s is left (variance
	// Plan.CollusionVar with every other site known = tau_g,s^2 per stage,
	// Gaussian-DP composition).
	CoalitionEpsilon float64 `json:"coalition_epsilon"`
	// Others is the number of other sites in the run's last stage.
	Others int `json:"others"`
}

// Guarantees returns the guarantee of every site that released in the run
// (doc.go, "Threat model"). Each Gaussian release with sensitivity Delta
// and noise variance v is sqrt(Delta^2/v)-GDP; a site's releases over the
// stages compose to the GDP parameter sqrt(sum Delta^2/v), converted to
// epsilon at the site's delta (perturb.GaussianEpsilonForMu).
func (r *Run) Guarantees() []SiteGuarantee {
	o := r.Outcome
	job := o.Job
	var out []SiteGuarantee
	for s := 1; s <= len(o.Specs); s++ {
		sp := o.Specs[s-1]
		if sp.N == 0 || !o.Participated(s) {
			continue
		}
		var joint2, coal2 float64 // squared GDP parameters
		others := 0
		for _, st := range o.Stages {
			for i, t := range st.Sites {
				if t != s || contains(st.Dropped, t) {
					continue
				}
				sens, _ := job.Sensitivity(st.Stage, sp.N)
				joint2 += sens * sens / st.Plan.JointVar(i)
				known := make([]bool, st.Plan.S())
				for k := range known {
					known[k] = k != i
				}
				coal2 += sens * sens / st.Plan.CollusionVar(i, known)
				others = len(st.Sites) - 1
			}
		}
		out = append(out, SiteGuarantee{Site: s, Epsilon: sp.Epsilon, Delta: sp.Delta, Others: others,
			JointEpsilon:     perturb.GaussianEpsilonForMu(math.Sqrt(joint2), sp.Delta),
			CoalitionEpsilon: perturb.GaussianEpsilonForMu(math.Sqrt(coal2), sp.Delta)})
	}
	return out
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
