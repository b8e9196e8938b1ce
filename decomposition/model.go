package decomposition

import "fmt"

// Kind is the decomposition family of a model.
type Kind string

// Model kinds. A CP model is a Tucker model whose core is superdiagonal with
// ones on the diagonal (Wei et al. 2021, eq. 3); it is stored without a core.
const (
	CP     Kind = "cp"
	Tucker Kind = "tucker"
)

// Model is a CP or Tucker model of an N-way tensor (N = 2 or 3), with
// optional bias terms:
//
//	x̂(i,j,k) = mu + bias_0[i] + bias_1[j] + bias_2[k] + G ×1 a_i ×2 b_j ×3 c_k
//
// Factors[m] is a Dims[m] x Ranks[m] matrix stored row-major, so the row of
// index i in mode m is Factors[m][i*Ranks[m] : (i+1)*Ranks[m]].
// For Tucker, Core holds G with Ranks[0] x Ranks[1] (x Ranks[2]) entries,
// row-major (last mode fastest). For CP all Ranks are equal and Core is nil.
//
// A Model is safe for concurrent reads (prediction); training mutates it.
type Model struct {
	Kind  Kind
	Dims  []int
	Ranks []int
	// Factors are the factor matrices, one per mode, row-major.
	Factors [][]float64
	// Core is the Tucker core (nil for CP).
	Core []float64

	// HasBias says whether the bias terms below are used.
	HasBias bool
	// Mean is the global mean mu.
	Mean float64
	// Bias[m] holds one bias per index of mode m (nil when HasBias is false).
	Bias [][]float64
	// Pairs are sparse pair biases (user x day, item x period), added to
	// the offset when HasBias; empty for models without them.
	Pairs []PairBias

	// ClampLo and ClampHi are the prediction range (SetClamp, ClampActive):
	// Lo < Hi clamps to [Lo, Hi], a one-point range to its value; the zero
	// value [0, 0] does not clamp.
	ClampLo, ClampHi float64
}

// MaxParams is the most parameters (factor entries and core entries)
// NewModel allocates: 2^33 float64s, 64 GiB, beyond any model this module
// trains (training holds copies of it besides).
const MaxParams = 1 << 33

// Order returns the number of modes.
func (m *Model) Order() int { return len(m.Dims) }

// NewModel allocates a zero model of the given kind, mode sizes and ranks.
// For CP, ranks has one element (R) or one per mode, all equal.
func NewModel(kind Kind, dims, ranks []int, bias bool) (*Model, error) {
	n := len(dims)
	if n < 2 || n > 3 {
		return nil, fmt.Errorf("decomposition: order %d not supported (want 2 or 3)", n)
	}
	for mo, d := range dims {
		if d <= 0 {
			return nil, fmt.Errorf("decomposition: mode %d has size %d", mo, d)
		}
	}
	switch kind {
	case CP:
		if len(ranks) == 1 {
			r := ranks[0]
			ranks = make([]int, n)
			for i := range ranks {
				ranks[i] = r
			}
		}
	case Tucker:
	default:
		return nil, fmt.Errorf("decomposition: unknown model kind %q (want cp or tucker)", kind)
	}
	if len(ranks) != n {
		return nil, fmt.Errorf("decomposition: %d ranks for %d modes", len(ranks), n)
	}
	for mo, r := range ranks {
		if r <= 0 {
			return nil, fmt.Errorf("decomposition: rank %d of mode %d must be positive", r, mo)
		}
		if kind == CP && r != ranks[0] {
			return nil, fmt.Errorf("decomposition: CP needs equal ranks, got %v", ranks)
		}
	}
	// Sizes are checked in floating point before anything is allocated: a
	// product of ranks can overflow int and make a negative length.
	params := 0.0
	for mo, d := range dims {
		params += float64(d) * float64(ranks[mo])
	}
	if kind == Tucker {
		core := 1.0
		for _, r := range ranks {
			core *= float64(r)
		}
		params += core
	}
	if params > MaxParams {
		return nil, fmt.Errorf("decomposition: a %s model with ranks %v on mode sizes %v has %.3g parameters, more than %d (%d GiB): lower the ranks", kind, ranks, dims, params, MaxParams, MaxParams>>27)
	}
	m := &Model{Kind: kind, Dims: append([]int(nil), dims...), Ranks: append([]int(nil), ranks...), HasBias: bias}
	m.Factors = make([][]float64, n)
	for mo := range dims {
		m.Factors[mo] = make([]float64, dims[mo]*ranks[mo])
	}
	if kind == Tucker {
		size := 1
		for _, r := range ranks {
			size *= r
		}
		m.Core = make([]float64, size)
	}
	if bias {
		m.Bias = make([][]float64, n)
		for mo := range dims {
			m.Bias[mo] = make([]float64, dims[mo])
		}
	}
	return m, nil
}

// Row returns the factor row of index i in mode mo (a view, not a copy).
func (m *Model) Row(mo int, i int) []float64 {
	r := m.Ranks[mo]
	return m.Factors[mo][i*r : (i+1)*r : (i+1)*r]
}
