package otd

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/dprec/dprec/perturb"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// TestAnalyzeGaussM2Noise: the noise on M2 is symmetric with i.i.d. upper
// triangle of the calibrated sigma. 20 x 21 / 2 = 210 entries x 40 draws =
// 8400 values; the sample sd has relative standard error 0.77%, the 4%
// tolerance is 5.2 standard errors (false reject ~2e-7); the mean's
// tolerance 5 sigma/sqrt(8400).
func TestAnalyzeGaussM2Noise(t *testing.T) {
	t.Parallel()
	const d = 20
	r := rand.New(rand.NewPCG(21, 22))
	zero := mat.NewSymDense(d, nil)
	var xs []float64
	var rel perturb.Release
	for i := 0; i < 40; i++ {
		m, rl, err := AnalyzeGaussM2(zero, 0.01, 0.5, 1e-5, perturb.Analytic, r)
		if err != nil {
			t.Fatal(err)
		}
		rel = rl
		xs = append(xs, packUpper(d, m.At)...)
		if m.At(2, 5) != m.At(5, 2) {
			t.Fatal("noisy M2 is not symmetric")
		}
	}
	want, _ := perturb.GaussianSigma(0.01, 0.5, 1e-5, perturb.Analytic)
	mean, sd := meanStd(xs)
	// AddTo inflates sigma by (Delta + sqrt(n) g)/Delta with g ~ sigma/2^40:
	// negligible here.
	if math.Abs(sd/want-1) > 0.04 || math.Abs(mean) > 5*want/math.Sqrt(float64(len(xs))) {
		t.Errorf("noise mean %v sd %v, want 0 and %v", mean, sd, want)
	}
	if rel.Mechanism != perturb.MechGaussian || rel.Sensitivity != 0.01 || rel.Epsilon != 0.5 || rel.Delta != 1e-5 {
		t.Errorf("release record %+v", rel)
	}
}

// TestPerturbM3Noise: AGN adds i.i.d. Gaussian noise to the packed entries
// (mirrored to all permutations); AVN's noise norm has mean
// D_sym * Delta/eps (Gamma(D_sym, Delta/eps) radius). With D = 6
// (D_sym = 56) and 300 draws the mean norm has relative standard error
// 1/sqrt(56*300) = 0.8%; tolerance 4% (5 standard errors).
func TestPerturbM3Noise(t *testing.T) {
	t.Parallel()
	const d = 6
	r := rand.New(rand.NewPCG(23, 24))
	zero, _ := NewSymTensor(d)
	var norms, entries []float64
	for i := 0; i < 300; i++ {
		tn, rel, err := PerturbM3(zero, 0.02, 0.7, 0, true, "", r)
		if err != nil {
			t.Fatal(err)
		}
		if rel.Mechanism != perturb.MechL2 || rel.Delta != 0 {
			t.Fatalf("AVN release %+v", rel)
		}
		if tn.At(0, 1, 2) != tn.At(2, 0, 1) {
			t.Fatal("AVN noise not symmetric")
		}
		norms = append(norms, floats.Norm(tn.Packed(), 2))
		tg, _, err := PerturbM3(zero, 0.02, 0.7, 1e-4, false, perturb.Analytic, r)
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, tg.Packed()...)
	}
	m, _ := meanStd(norms)
	if want := float64(PackedLen(d)) * 0.02 / 0.7; math.Abs(m/want-1) > 0.04 {
		t.Errorf("AVN mean noise norm %v, want %v", m, want)
	}
	_, sd := meanStd(entries) // 16800 values: relative SE 0.55%
	if want, _ := perturb.GaussianSigma(0.02, 0.7, 1e-4, perturb.Analytic); math.Abs(sd/want-1) > 0.03 {
		t.Errorf("AGN entry sd %v, want %v", sd, want)
	}
	if _, _, err := PerturbM3(zero, 0.02, 0.7, 1e-4, true, "", r); err == nil {
		t.Error("AVN with delta > 0 should be refused")
	}
}

func stmInput(t *testing.T, d, k, n int, seed uint64) (*Input, *mat.Dense) {
	t.Helper()
	syn, err := SyntheticSTM(d, k, n, 3, 1, nil, rand.NewPCG(seed, seed))
	if err != nil {
		t.Fatal(err)
	}
	return &syn.Input, syn.A
}

// TestFitPrivateMethods runs every private method through Fit: with a
// huge budget the result matches the non-private fit's accuracy; with a
// seeded source the report says NOT private; the totals are the budget.
func TestFitPrivateMethods(t *testing.T) {
	t.Parallel()
	in, A := stmInput(t, 8, 3, 20000, 31)
	np, err := Fit(in, FitOptions{Model: ModelSTM, K: 3}, rand.NewPCG(1, 1))
	if err != nil {
		t.Fatal(err)
	}
	base := EComp(A, np.A)
	for _, m := range []Method{MethodAGN, MethodAVN, MethodDPTPM} {
		res, err := Fit(in, FitOptions{Model: ModelSTM, K: 3, Method: m, Epsilon: 600, Delta: 0.5}, rand.NewPCG(2, 2))
		if err != nil {
			t.Fatalf("%s: %v", m, err)
		}
		e := EComp(A, res.A)
		// Huge epsilon: AGN/AVN noise is negligible; DP-TPM's 1100 queries
		// still add noise, so it only has to beat random vectors (~0.3).
		lim := base + 0.02
		if m == MethodDPTPM {
			lim = 0.25
		}
		if e > lim {
			t.Errorf("%s at epsilon 600: e_comp %.4f, non-private %.4f", m, e, base)
		}
		rp := res.Report
		if rp == nil || rp.Mode != string(m) || rp.Unit != "document" || !strings.Contains(rp.Relation, "differing in one document") || rp.RelationKind != perturb.RelationValueChange {
			t.Fatalf("%s: report %+v", m, rp)
		}
		if math.Abs(rp.Epsilon-600) > 1e-9 || math.Abs(rp.Delta-0.5) > 1e-12 {
			t.Errorf("%s: report totals (%v, %v), want (600, 0.5)", m, rp.Epsilon, rp.Delta)
		}
		if hasNote := slices.Contains(rp.Notes, perturb.L2NoiseNote); hasNote != (m == MethodAVN) {
			t.Errorf("%s: floating-point note of the l2-norm sampler %v", m, hasNote)
		}
		if rp.Randomness != perturb.LabelSeeded || len(rp.Releases) != 2 {
			t.Errorf("%s: randomness %q, %d releases", m, rp.Randomness, len(rp.Releases))
		}
		for _, rl := range rp.Releases {
			if rl.Derivation == "" || rl.Scale <= 0 {
				t.Errorf("%s: release without derivation or scale: %+v", m, rl)
			}
		}
	}
	// A nil source means secure noise.
	res, err := Fit(in, FitOptions{Model: ModelSTM, K: 3, Method: MethodAGN, Epsilon: 1, Delta: 1e-5}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Report.Randomness != perturb.LabelSecure {
		t.Errorf("nil source: randomness %q", res.Report.Randomness)
	}
	res2, err := Fit(in, FitOptions{Model: ModelSTM, K: 3, Method: MethodAVN, Epsilon: 1, Delta: 1e-5}, perturb.SecureSource())
	if err != nil || res2.Report.Randomness != perturb.LabelSecure {
		t.Errorf("perturb.SecureSource(): err %v, randomness %q", err, res2.Report.Randomness)
	}
	if res.Report.Releases[0].Sensitivity != math.Sqrt2/20000 {
		t.Errorf("M2 sensitivity %v, want sqrt(2)/N", res.Report.Releases[0].Sensitivity)
	}
}

func TestFitPrivateErrors(t *testing.T) {
	t.Parallel()
	in, _ := stmInput(t, 6, 2, 200, 41)
	for _, tc := range []struct {
		name string
		opts FitOptions
		want string
	}{
		{"no epsilon", FitOptions{Model: ModelSTM, K: 2, Method: MethodAGN, Delta: 1e-5}, "epsilon"},
		{"no delta", FitOptions{Model: ModelSTM, K: 2, Method: MethodAVN, Epsilon: 1}, "delta"},
		{"bad split", FitOptions{Model: ModelSTM, K: 2, Method: MethodAGN, Epsilon: 1, Delta: 1e-5, Split: []float64{0.7, 0.7}}, "split"},
		{"split length", FitOptions{Model: ModelSTM, K: 2, Method: MethodAGN, Epsilon: 1, Delta: 1e-5, Split: []float64{1}}, "2 fractions"},
		{"first-three", FitOptions{Model: ModelSTM, K: 2, Method: MethodAGN, Epsilon: 1, Delta: 1e-5, Estimator: FirstThree}, "all-triples"},
		{"unknown", FitOptions{Model: ModelSTM, K: 2, Method: "agm", Epsilon: 1, Delta: 1e-5}, "unknown method"},
		{"lda on stm", FitOptions{Model: ModelSTM, K: 2, Method: MethodLDAInput, Epsilon: 1, Delta: 1e-5}, "model lda"},
		{"config 3 on stm", FitOptions{Model: ModelSTM, K: 2, Method: MethodLDADecomposition, Epsilon: 1, Delta: 1e-5}, "model lda"},
		{"config 4 on stm", FitOptions{Model: ModelSTM, K: 2, Method: MethodLDAOutput, Epsilon: 1, Delta: 1e-5}, "model lda"},
		{"agn on lda", FitOptions{Model: ModelLDA, Alpha0: 1, K: 2, Method: MethodAGN, Epsilon: 1, Delta: 1e-5}, "lda-input"},
	} {
		_, err := Fit(in, tc.opts, rand.NewPCG(1, 1))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one mentioning %q", tc.name, err, tc.want)
		}
	}
}

// TestFitPrivateLDA runs lda-input and lda-whitened with a large budget on
// a synthetic LDA corpus; both must beat random topics clearly and carry
// their reports.
func TestFitPrivateLDA(t *testing.T) {
	t.Parallel()
	syn, err := SyntheticLDA(20, 3, 1, 4000, 30, 0.3, rand.NewPCG(51, 52))
	if err != nil {
		t.Fatal(err)
	}
	np, err := Fit(&syn.Input, FitOptions{Model: ModelLDA, Alpha0: 1, K: 3}, rand.NewPCG(1, 1))
	if err != nil {
		t.Fatal(err)
	}
	base := EComp(syn.A, np.A)
	for _, m := range []Method{MethodLDAInput, MethodLDAWhitened} {
		res, err := Fit(&syn.Input, FitOptions{Model: ModelLDA, Alpha0: 1, K: 3, Method: m, Epsilon: 500, Delta: 0.1}, rand.NewPCG(3, 3))
		if err != nil {
			t.Fatalf("%s: %v", m, err)
		}
		if e := EComp(syn.A, res.A); e > base+0.05 {
			t.Errorf("%s: e_comp %.4f, non-private %.4f", m, e, base)
		}
		if res.Report.Mode != string(m) || len(res.Report.Releases) != 2 || res.Report.Epsilon != 500 {
			t.Errorf("%s: report %+v", m, res.Report)
		}
	}
}

// TestFitPrivateMOG runs AGN on a Gaussian mixture and checks the row-norm
// requirement.
func TestFitPrivateMOG(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(61, 62))
	A := randomBallColumns(5, 2, r)
	X, zeta := syntheticMOGRows(A, 20000, 0.05, r)
	s2 := 0.05 / (zeta * zeta)
	res, err := Fit(&Input{Rows: X}, FitOptions{Model: ModelMoG, K: 2, Sigma2: s2, Method: MethodAGN, Epsilon: 500, Delta: 0.1}, rand.NewPCG(4, 4))
	if err != nil {
		t.Fatal(err)
	}
	est := mat.DenseCopyOf(res.A)
	est.Scale(zeta, est)
	if e := ECompRaw(A, est); e > 0.1 {
		t.Errorf("mog AGN e_comp %.4f", e)
	}
	if res.Report.Unit != "record" || res.Report.RelationKind != perturb.RelationValueChange {
		t.Errorf("unit %q, relation kind %q", res.Report.Unit, res.Report.RelationKind)
	}
	// The released weights are a distribution; the estimates stay in
	// RawWeights (issue 15).
	var ws float64
	for _, w := range res.Weights {
		ws += w
	}
	if math.Abs(ws-1) > 1e-12 || len(res.RawWeights) != len(res.Weights) {
		t.Errorf("weights %v (sum %v), raw %v", res.Weights, ws, res.RawWeights)
	}
	X.Set(0, 0, 3)
	if _, err := Fit(&Input{Rows: X}, FitOptions{Model: ModelMoG, K: 2, Sigma2: s2, Method: MethodAGN, Epsilon: 1, Delta: 0.1}, nil); err == nil {
		t.Error("a row of norm > 1 must be refused")
	}
}
