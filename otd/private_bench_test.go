package otd

import (
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// benchPrivate times one private fit from dense moments (noise, whitening,
// power method) for D words and K topics on 20,000 synthetic documents.
func benchPrivate(b *testing.B, method Method, d, k int) {
	syn, err := SyntheticSTM(d, k, 20000, 3, 1, nil, rand.NewPCG(1, 1))
	if err != nil {
		b.Fatal(err)
	}
	M2, M3, err := STMMoments(syn.Input.Corpus, AllTriples)
	if err != nil {
		b.Fatal(err)
	}
	sens, _ := STMSensitivities(20000)
	p := &privateProblem{M2: M2, M3: M3, K: k, Sens: sens, TPMSens: nil}
	p.TPMSens = func(W *mat.Dense) DPTPMSensitivity { return STMDPTPMSensitivity(W, 20000) }
	r := rand.New(rand.NewPCG(2, 2))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := runPrivateMoments(method, p, PrivacyBudget{Epsilon: 1, Delta: 0.01}, TPMOptions{}, DPTPMOptions{}, r); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAGN_D10K5(b *testing.B)    { benchPrivate(b, MethodAGN, 10, 5) }
func BenchmarkAGN_D50K10(b *testing.B)   { benchPrivate(b, MethodAGN, 50, 10) }
func BenchmarkAVN_D50K10(b *testing.B)   { benchPrivate(b, MethodAVN, 50, 10) }
func BenchmarkDPTPM_D10K5(b *testing.B)  { benchPrivate(b, MethodDPTPM, 10, 5) }
func BenchmarkDPTPM_D50K10(b *testing.B) { benchPrivate(b, MethodDPTPM, 50, 10) }

// BenchmarkLDAWhitenedScale is the scale target: 100,000
// documents of 100 words over a 10,000-word vocabulary, K = 20, private
// lda-whitened (sketch whitening, whitened tensor noise). Corpus
// generation is not timed.
func BenchmarkLDAWhitenedScale(b *testing.B) {
	syn, err := SyntheticLDA(10000, 20, 1, 100000, 100, 0.1, rand.NewPCG(1, 1))
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := Fit(&syn.Input, FitOptions{Model: ModelLDA, Alpha0: 1, K: 20, Method: MethodLDAWhitened, Epsilon: 1, Delta: 1e-5}, rand.NewPCG(2, 2))
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(EComp(syn.A, res.A), "ecomp")
	}
}
