package otd

import (
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"
)

// MomentProblem is the input of the moment-perturbing private methods
// (MethodAGN, MethodAVN, MethodDPTPM) when the caller has computed the
// moments itself, as experiments on synthetic data do: the dense moments,
// their sensitivities (from the same data set: STMSensitivities,
// MOGSensitivities) and the DP-TPM query sensitivities given the (already
// private) whitening matrix.
type MomentProblem struct {
	M2      *mat.SymDense
	M3      *SymTensor
	K       int
	Sens    Sensitivities
	TPMSens func(W *mat.Dense) DPTPMSensitivity
}

// FitMoments runs a moment-perturbing private method on p with budget b
// and returns the unwhitened components (columns) and weights, as Fit does
// after its own moments. Noise and restarts are drawn from r. The privacy
// guarantee is Fit's for the same method, provided p's sensitivities are
// those of the data set the moments were computed on.
func FitMoments(method Method, p *MomentProblem, b PrivacyBudget, tpm TPMOptions, dp DPTPMOptions, r *rand.Rand) (A *mat.Dense, weights []float64, err error) {
	o, err := runPrivateMoments(method, &privateProblem{M2: p.M2, M3: p.M3, K: p.K, Sens: p.Sens, TPMSens: p.TPMSens}, b, tpm, dp, r)
	if err != nil {
		return nil, nil, err
	}
	A, weights = Unwhiten(o.W, o.Lambda, o.V)
	return A, weights, nil
}

// RandomTopics draws k topic-word vectors of dimension d from
// Dirichlet(beta) (columns): the data-free baseline of topic recovery.
func RandomTopics(r *rand.Rand, d, k int, beta float64) *mat.Dense {
	return randomTopics(r, d, k, beta)
}
