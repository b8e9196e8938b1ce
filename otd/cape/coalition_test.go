package cape

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dprec/dprec/perturb"
)

// TestCoalitionEpsilon (issue 14, item 13): the report gives, beside the
// aggregator's joint view, the epsilon against the coalition of the other
// S-1 sites, who pool their g_t and are left with a_s + g_s of variance
// tau_g,s^2 (measured on protocol runs by testLemma1). Derivation (doc.go,
// "Threat model"): tau_g,s^2 = tau_s^2 tau_c^2/Q, so the GDP parameter is
// sqrt(Q/tau_c^2) Delta_s/tau_s; for S equal sites Q/tau_c^2 = S, so it is
// sqrt(S) times the per-release one. The audit measured 2.44 for 5
// equal sites at epsilon 1 (headline 1.325) and 1.84 for sites of
// 100/1000/10000 rows (headline 1.25), delta 1e-5.
func TestCoalitionEpsilon(t *testing.T) {
	for _, tc := range []struct {
		name              string
		n                 []int
		wantJoint, wantCo float64
		factor            float64 // Q / tau_c^2
	}{
		{"5 equal sites", []int{100, 100, 100, 100, 100}, 1.325, 2.44, 5},
		{"100/1000/10000 rows", []int{100, 1000, 10000}, 1.25, 1.84, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := make([]siteCfg, len(tc.n))
			for i, n := range tc.n {
				cfg[i] = siteCfg{n, 1, 1e-5, 0}
			}
			job := Job{Kind: JobMean, D: 4}
			run, err := RunLocal(context.Background(), job, makeSites(cfg, 4, 2), RunOptions{Seeded: true, Seed: 4})
			if err != nil {
				t.Fatal(err)
			}
			gs := run.Guarantees()
			if len(gs) != len(tc.n) {
				t.Fatalf("%d guarantees", len(gs))
			}
			plan := run.Outcome.Stages[0].Plan
			for i, g := range gs {
				sens, _ := job.Sensitivity(0, tc.n[i])
				want := perturb.GaussianEpsilonForMu(math.Sqrt(tc.factor)*sens/math.Sqrt(plan.Tau2[i]), 1e-5)
				if math.Abs(g.CoalitionEpsilon-want) > 1e-9 {
					t.Errorf("site %d: coalition epsilon %v, derivation gives %v", g.Site, g.CoalitionEpsilon, want)
				}
				if math.Abs(g.CoalitionEpsilon-tc.wantCo) > 0.006 || math.Abs(g.JointEpsilon-tc.wantJoint) > 0.006 {
					t.Errorf("site %d: coalition %.4f, joint %.4f; the audit measured %.3g and %.4g", g.Site, g.CoalitionEpsilon, g.JointEpsilon, tc.wantCo, tc.wantJoint)
				}
				if g.Others != len(tc.n)-1 {
					t.Errorf("others = %d", g.Others)
				}
			}
			rep := run.Report()
			var worst float64
			for _, g := range gs {
				worst = max(worst, g.JointEpsilon, g.Epsilon)
			}
			if rep.Epsilon != worst {
				t.Errorf("headline %v, want the weakest joint view %v", rep.Epsilon, worst)
			}
			if rep.RelationKind != perturb.RelationValueChange {
				t.Errorf("relation kind %q, want %q", rep.RelationKind, perturb.RelationValueChange)
			}
			all := strings.Join(rep.Notes, "\n")
			if !strings.Contains(all, fmt.Sprintf("(%.4g, 1e-05)-DP (doc.go, Threat model)", gs[0].CoalitionEpsilon)) {
				t.Errorf("coalition epsilon %.4g not in the notes:\n%s", gs[0].CoalitionEpsilon, all)
			}
			if strings.Contains(all, "against colluding sites") {
				t.Errorf("the per-site note still claims (epsilon, delta)-DP against colluding sites:\n%s", all)
			}
		})
	}
	// capeAGN: two releases compose (GDP; tighter than the basic
	// composition of the budget), the coalition epsilon exceeds the joint
	// one.
	sites, _, s2 := mogSites(t, 3, 300, 5, 2, 1, 1e-3, 8)
	run, err := RunLocal(context.Background(), Job{Kind: JobAGN, D: 5, K: 2, Model: ModelMOG, Sigma2: s2}, sites, RunOptions{Seeded: true, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range run.Guarantees() {
		if !(g.CoalitionEpsilon > g.JointEpsilon && g.JointEpsilon > 0) {
			t.Errorf("agn site %d: epsilon %v, joint %v, coalition %v", g.Site, g.Epsilon, g.JointEpsilon, g.CoalitionEpsilon)
		}
	}
}

// TestZeroSumNoiseOnGrid (issue 14, item 13): with unequal weights every
// correlated noise value e_s is a multiple of the generator's power-of-two
// grid step (the audit found 1,895 of 3,000 values off the grid), and the
// zero sum holds within half a step.
func TestZeroSumNoiseOnGrid(t *testing.T) {
	mu := []float64{100.0 / 11100, 1000.0 / 11100, 10000.0 / 11100}
	const sigma2, L = 0.37, 1000
	e, err := ZeroSumNoise(mu, sigma2, L, rand.New(rand.NewPCG(5, 6)))
	if err != nil {
		t.Fatal(err)
	}
	g := perturb.Granularity(math.Sqrt(sigma2))
	off := 0
	for j := 0; j < L; j++ {
		var z float64
		for i := range mu {
			if q := e[i][j] / g; q != math.Trunc(q) {
				off++
			}
			z += mu[i] * e[i][j]
		}
		if math.Abs(z) > g*(1+1e-9) {
			t.Fatalf("entry %d: sum mu_s e_s = %g above the grid step %g", j, z, g)
		}
	}
	if off != 0 {
		t.Errorf("%d of %d noise values off the grid %g", off, len(mu)*L, g)
	}
}

// TestCoalitionBoundAnyDeclarations: whatever the other sites declare
// (weights and variances), the coalition variance of site s is at least
// tau_s^2/S, so the coalition GDP parameter is at most sqrt(S) times the
// per-release one (doc.go, "What the guarantee covers" (2)).
func TestCoalitionBoundAnyDeclarations(t *testing.T) {
	r := rand.New(rand.NewPCG(12, 13))
	for trial := 0; trial < 500; trial++ {
		S := 2 + r.IntN(9)
		tau2, mu := make([]float64, S), make([]float64, S)
		var sum float64
		for i := range tau2 {
			tau2[i] = math.Exp(10 * (r.Float64() - 0.5))
			mu[i] = math.Exp(8 * (r.Float64() - 0.5))
			sum += mu[i]
		}
		for i := range mu {
			mu[i] /= sum
		}
		p, err := NewPlan(tau2, mu)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < S; i++ {
			others := make([]bool, S)
			for j := range others {
				others[j] = j != i
			}
			if v := p.CollusionVar(i, others); v < tau2[i]/float64(S)*(1-1e-12) {
				t.Fatalf("S=%d site %d: coalition variance %g below tau_s^2/S = %g", S, i, v, tau2[i]/float64(S))
			}
		}
	}
}
