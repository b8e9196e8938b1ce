package perturb

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

func checkReport(t *testing.T) *Report {
	t.Helper()
	l, err := NewLaplace(4.5, 1)
	if err != nil {
		t.Fatal(err)
	}
	g, err := NewGaussian(2, 0.5, 1e-6, Analytic)
	if err != nil {
		t.Fatal(err)
	}
	gs, err := NewGaussianSigma(3, 20)
	if err != nil {
		t.Fatal(err)
	}
	var acc Accountant
	for _, rel := range []Release{l.Release("a"), g.Release("b")} {
		if err := acc.Add(rel, 1); err != nil {
			t.Fatal(err)
		}
	}
	if err := acc.Add(gs.Release("c"), 5); err != nil {
		t.Fatal(err)
	}
	eps, delta, method := acc.Total(1e-5)
	return &Report{Mode: "test", Epsilon: eps, Delta: delta, Composition: string(method), Releases: acc.Releases(), Randomness: SecureNoise().Provenance().String()}
}

// TestReportCheck: a report built by the mechanisms checks clean; each
// kind of edit the audit made (a release's epsilon, the total, the
// randomness label, a Gaussian's sigma) is flagged.
func TestReportCheck(t *testing.T) {
	if got := checkReport(t).Check(); got != nil {
		t.Fatalf("clean report flagged: %v", got)
	}
	if got := NonPrivate().Check(); got != nil {
		t.Fatalf("non-private report flagged: %v", got)
	}
	for _, kind := range []string{"", RelationValueChange, RelationAddRemove} {
		r := checkReport(t)
		r.RelationKind = kind
		if got := r.Check(); got != nil {
			t.Fatalf("relation kind %q flagged: %v", kind, got)
		}
	}
	zo := checkReport(t)
	zo.RelationKind, zo.ValueChangeEpsilon = RelationZeroOut, 2*zo.Epsilon
	if got := zo.Check(); got != nil {
		t.Fatalf("zero-out report with its value-change epsilon flagged: %v", got)
	}
	// Machine-readable: the JSON names the kind and the value-change
	// epsilon.
	js, err := json.Marshal(zo)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(js), `"relation_kind":"zero-out"`) || !strings.Contains(string(js), `"value_change_epsilon":`) {
		t.Errorf("report JSON %s lacks relation_kind or value_change_epsilon", js)
	}
	for _, tc := range []struct {
		name string
		edit func(*Report)
		want string
	}{
		{"release epsilon", func(r *Report) { r.Releases[0].Epsilon = 0.01 }, "epsilon 1"},
		{"total epsilon", func(r *Report) { r.Epsilon /= 2 }, "compose"},
		{"total delta", func(r *Report) { r.Delta = 1e-9 }, "compose"},
		{"gaussian sigma", func(r *Report) { r.Releases[1].Scale /= 2 }, "delta"},
		{"rdp sigma", func(r *Report) { r.Releases[2].Scale /= 10 }, "compose"},
		{"randomness", func(r *Report) { r.Randomness = "secure-ish" }, "randomness"},
		{"mechanism", func(r *Report) { r.Releases[0].Mechanism = "magic" }, "unknown mechanism"},
		{"no releases", func(r *Report) { r.Releases = nil }, "no release"},
		{"relation kind", func(r *Report) { r.RelationKind = "replace-ish" }, "relation kind"},
		{"value-change epsilon below the headline", func(r *Report) {
			r.RelationKind, r.ValueChangeEpsilon = RelationZeroOut, r.Epsilon/2
		}, "value-change epsilon"},
		{"value-change epsilon under value change", func(r *Report) {
			r.RelationKind, r.ValueChangeEpsilon = RelationValueChange, 2*r.Epsilon
		}, "value-change epsilon"},
	} {
		r := checkReport(t)
		tc.edit(r)
		got := strings.Join(r.Check(), "\n")
		if !strings.Contains(got, tc.want) {
			t.Errorf("%s: Check() = %q, want a line containing %q", tc.name, got, tc.want)
		}
	}
}

// TestProvenance: sources and labels map to one provenance, exactly.
func TestProvenance(t *testing.T) {
	if ProvenanceOf(SecureSource()) != ProvenanceSecure || ProvenanceOf(nil) != ProvenanceSecure {
		t.Error("secure source not recognised")
	}
	for _, src := range []rand.Source{SeededSource(1), StreamSource(1, 2), rand.NewPCG(1, 2)} {
		if ProvenanceOf(src) != ProvenanceSeeded {
			t.Errorf("%T not seeded", src)
		}
	}
	var zero Noise
	if zero.Provenance() != ProvenanceSecure || ProvenanceOf(zero.Source(1)) != ProvenanceSecure {
		t.Error("zero Noise is not secure")
	}
	s := SeededNoise(7)
	if s.Provenance() != ProvenanceSeeded || ProvenanceOf(s.Source(1)) != ProvenanceSeeded {
		t.Error("seeded Noise not seeded")
	}
	if a, b := s.Source(1).Uint64(), SeededNoise(7).Source(1).Uint64(); a != b {
		t.Error("seeded noise not reproducible")
	}
	for _, p := range []Provenance{ProvenanceSecure, ProvenanceSeeded} {
		if q, err := ParseProvenance(p.String()); err != nil || q != p {
			t.Errorf("%v does not round-trip", p)
		}
	}
	for _, l := range []string{"seeded", "secure", LabelSecure + " ", "Seeded (reproducible, NOT private)"} {
		if _, err := ParseProvenance(l); err == nil {
			t.Errorf("label %q accepted", l)
		}
	}
	if !ProvenanceSecure.Private() || ProvenanceSeeded.Private() || ProvenanceUnknown.Private() {
		t.Error("Private() wrong")
	}
}
