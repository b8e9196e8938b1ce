package otd

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dprec/dprec/perturb"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// TestContractedDecompositionExact: on an exactly orthogonally
// decomposable T = sum lambda_i u_i^(x)3 the released columns are
// lambda_i u_i (in some order, sign-free) to 1e-10, so ||z_i|| and
// z_i/||z_i|| are the eigenpairs.
func TestContractedDecompositionExact(t *testing.T) {
	t.Parallel()
	const k = 4
	r := rand.New(rand.NewPCG(51, 52))
	U := orthonormalColumns(randDense(r, k, k))
	lam := []float64{3, 2.2, 1.5, 0.7}
	T, _ := NewSymTensor(k)
	u := make([]float64, k)
	for i := 0; i < k; i++ {
		mat.Col(u, i, U)
		T.AddRankOne(lam[i], u)
	}
	out, err := contractedDecomposition(T, dptpmRandomUnit(r, k))
	if err != nil {
		t.Fatal(err)
	}
	z := make([]float64, k)
	for c := 0; c < k; c++ {
		mat.Col(z, c, out.Z)
		best := math.Inf(1)
		for i := 0; i < k; i++ {
			mat.Col(u, i, U)
			floats.Scale(lam[i], u)
			best = math.Min(best, floats.Distance(z, u, 2))
		}
		if best > 1e-10 {
			t.Errorf("column %d = %v is not lambda_i u_i (distance %g)", c, z, best)
		}
	}
	if want := math.Sqrt(floats.Dot(lam, lam)); math.Abs(out.Frob-want) > 1e-12 {
		t.Errorf("||T||_F = %v, want %v", out.Frob, want)
	}
}

func randDense(r *rand.Rand, m, n int) *mat.Dense {
	a := mat.NewDense(m, n, nil)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			a.Set(i, j, r.NormFloat64())
		}
	}
	return a
}

// TestDecompSensitivityEmpirical checks (S8.2)-(S8.3) on neighbouring
// corpora (one document replaced; random and extreme documents "a a a" <->
// "f f f", and the word of largest whitened row norm repeated), for a fixed public W and theta: ||Delta M||_F <= delta_M,
// |Delta gap| <= 2 delta_M, |Delta ||T||_F| <= delta_T, and ||Z - Z'||_F
// never exceeds the local-sensitivity bound evaluated at either corpus.
// The corpus is large enough (N = 4000) that the Davis-Kahan branch of
// e(gamma) (below sqrt 2) is exercised; the test checks that it is.
func TestDecompSensitivityEmpirical(t *testing.T) {
	t.Parallel()
	const d, n, k, alpha0 = 6, 4000, 3, 1.0
	r := rand.New(rand.NewPCG(53, 54))
	// Documents concentrated on three word groups give an M = T(I,I,theta)
	// with well separated eigenvalues.
	base := make([][]int, n)
	for i := range base {
		g := 2 * (i % 3)
		doc := make([]int, 4+r.IntN(4))
		for j := range doc {
			doc[j] = g + r.IntN(2)
		}
		base[i] = doc
	}
	syn := &Input{Corpus: corpusFromDocs(t, d, base)}
	W, err := FitWhitening(syn, &FitOptions{Model: ModelLDA, K: k, Alpha0: alpha0}, rand.NewPCG(1, 1))
	if err != nil {
		t.Fatal(err)
	}
	theta := dptpmRandomUnit(r, k)
	var maxRow, minRow int
	for a := 0; a < d; a++ {
		na := floats.Norm(W.RawRowView(a), 2)
		if na > floats.Norm(W.RawRowView(maxRow), 2) {
			maxRow = a
		}
		if na < floats.Norm(W.RawRowView(minRow), 2) {
			minRow = a
		}
	}
	sens, _ := LDASensitivities(n, alpha0)
	deltaT, deltaM := decompDeltas(W, theta, sens.M3)
	eval := func(docs [][]int) (*decompOutput, *mat.SymDense) {
		T, err := LDAWhitenedM3(corpusFromDocs(t, d, docs), W, alpha0)
		if err != nil {
			t.Fatal(err)
		}
		out, err := contractedDecomposition(T, theta)
		if err != nil {
			t.Fatal(err)
		}
		M := mat.NewSymDense(k, nil)
		for i := 0; i < k; i++ {
			for j := i; j < k; j++ {
				M.SetSym(i, j, floats.Dot(T.Data[(i*k+j)*k:(i*k+j)*k+k], theta))
			}
		}
		return out, M
	}
	var worst float64
	dkBranch := false
	for i := 0; i < 25; i++ {
		a := append([][]int(nil), base...)
		b := append([][]int(nil), base...)
		a[n-1], b[n-1] = randomDoc(r, d, 3+r.IntN(5)), randomDoc(r, d, 3+r.IntN(5))
		switch i {
		case 0:
			a[n-1], b[n-1] = []int{0, 0, 0}, []int{5, 5, 5}
		case 1:
			a[n-1], b[n-1] = []int{0, 1, 2, 3, 4, 5}, []int{3, 3, 3}
		case 2:
			// The word with the largest whitened row norm r_W, repeated: the
			// document with the largest whitened influence.
			a[n-1], b[n-1] = []int{maxRow, maxRow, maxRow}, []int{minRow, minRow, minRow}
		}
		oa, Ma := eval(a)
		ob, Mb := eval(b)
		var dM mat.Dense
		dM.Sub(Ma, Mb)
		const tol = 1 + 1e-9 // rounding of the whitened U-statistics
		if f := mat.Norm(&dM, 2); f > deltaM*tol {
			t.Errorf("neighbour %d: ||Delta M||_F %.4g > delta_M %.4g", i, f, deltaM)
		}
		if g := math.Abs(oa.Gap - ob.Gap); g > 2*deltaM*tol {
			t.Errorf("neighbour %d: gap moved %.4g > 2 delta_M %.4g", i, g, 2*deltaM)
		}
		if f := math.Abs(oa.Frob - ob.Frob); f > deltaT*tol {
			t.Errorf("neighbour %d: ||T||_F moved %.4g > delta_T %.4g", i, f, deltaT)
		}
		var dZ mat.Dense
		dZ.Sub(oa.Z, ob.Z)
		ch := mat.Norm(&dZ, 2)
		for _, o := range []*decompOutput{oa, ob} {
			ls := decompLocalSensitivity(k, o.Frob, o.Gap, deltaT, deltaM)
			if ch > ls*tol {
				t.Errorf("neighbour %d: ||Delta Z||_F %.4g exceeds the local-sensitivity bound %.4g", i, ch, ls)
			}
			worst = math.Max(worst, ch/ls)
			if decompEigError(k, deltaM, o.Gap) < math.Sqrt2 {
				dkBranch = true
			}
		}
	}
	o0, _ := eval(base)
	t.Logf("delta_T %.3g delta_M %.3g gap %.3g ||T||_F %.3g; largest ||Delta Z|| / bound %.3g", deltaT, deltaM, o0.Gap, o0.Frob, worst)
	if !dkBranch {
		t.Error("the Davis-Kahan branch of e(gamma) was never exercised; enlarge N")
	}
}

// TestLaplaceMarginCoverage: the one-sided margin t of (S8.4) is exceeded
// by perturb's Laplace noise with probability p/2. With p = 0.2 and 4000
// draws the count has mean 400 and sd 19; the band 400 +- 5 sd falsely
// rejects with probability about 6e-7.
func TestLaplaceMarginCoverage(t *testing.T) {
	t.Parallel()
	const p, draws = 0.2, 4000
	r := rand.New(rand.NewPCG(55, 56))
	l, err := perturb.NewLaplace(0.3, 0.7)
	if err != nil {
		t.Fatal(err)
	}
	m := laplaceMargin(l, p)
	var over, under int
	for i := 0; i < draws; i++ {
		x := []float64{1.234}
		l.AddTo(x, r)
		if x[0]-m > 1.234 {
			over++
		}
		if x[0]+m < 1.234 {
			under++
		}
	}
	mean, sd := p/2*draws, math.Sqrt(draws*p/2*(1-p/2))
	for _, c := range []int{over, under} {
		if math.Abs(float64(c)-mean) > 5*sd {
			t.Errorf("margin exceeded %d times in %d, want %v +- %v", c, draws, mean, 5*sd)
		}
	}
}

// TestDecompLSBoundValid: the privately released bound LS~ is at least
// the true local-sensitivity bound except with probability <= delta3
// (S8.4). delta3 = 0.2, 3000 draws: the failure count is at most
// Binomial(3000, 0.2) (mean 600, sd 22); allowing 600 + 5 sd falsely
// rejects with probability < 1e-6.
func TestDecompLSBoundValid(t *testing.T) {
	t.Parallel()
	const k, delta3, draws = 3, 0.2, 3000
	r := rand.New(rand.NewPCG(57, 58))
	out := &decompOutput{Gap: 0.3, Frob: 2.5}
	const deltaT, deltaM = 0.01, 0.006
	truth := decompLocalSensitivity(k, out.Frob, out.Gap, deltaT, deltaM)
	var fail int
	for i := 0; i < draws; i++ {
		ls, rels, err := decompLSBound(k, out, deltaT, deltaM, 0.5, 0.5, delta3, r)
		if err != nil {
			t.Fatal(err)
		}
		if len(rels) != 2 || rels[0].Sensitivity != 2*deltaM || rels[1].Sensitivity != deltaT {
			t.Fatalf("releases %+v", rels)
		}
		if ls < truth {
			fail++
		}
	}
	if lim := delta3*draws + 5*math.Sqrt(draws*delta3*(1-delta3)); float64(fail) > lim {
		t.Errorf("bound below the local sensitivity %d times in %d (limit %.0f)", fail, draws, lim)
	}
	// K = 1: no gap release, e = 0.
	ls, rels, err := decompLSBound(1, &decompOutput{Gap: math.Inf(1), Frob: 1}, deltaT, deltaM, 0, 1, delta3, r)
	if err != nil || len(rels) != 1 || ls != deltaT {
		t.Errorf("K = 1: ls %v (want %v) releases %d err %v", ls, deltaT, len(rels), err)
	}
}
