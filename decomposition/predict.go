package decomposition

import "math"

// Work is scratch space for the per-entry functions (Partial, DataGrad,
// Predict paths of Tucker models), so that the hot loops allocate nothing.
// A Work belongs to one goroutine; make one per worker with NewWork.
type Work struct {
	// Factor[m] receives the per-entry derivative with respect to the factor
	// row of mode m (length Ranks[m]).
	Factor [][]float64
	// Core receives the derivative with respect to the Tucker core (nil for
	// CP models).
	Core []float64
	// Bias receives the derivative with respect to the bias of each mode at
	// the entry's index (nil when the model has no biases).
	Bias []float64
	// u holds the Tucker core contracted with the last mode (P*Q values).
	u []float64
}

// NewWork allocates scratch space shaped for m.
func (m *Model) NewWork() *Work {
	w := &Work{Factor: make([][]float64, len(m.Dims))}
	for mo, r := range m.Ranks {
		w.Factor[mo] = make([]float64, r)
	}
	if m.Kind == Tucker {
		w.Core = make([]float64, len(m.Core))
		if len(m.Ranks) == 3 {
			w.u = make([]float64, m.Ranks[0]*m.Ranks[1])
		}
	}
	if m.HasBias {
		w.Bias = make([]float64, len(m.Dims))
	}
	return w
}

// Offset returns the bias part of the prediction at idx: Mean plus the bias
// of every mode (0 when the model has no biases).
func (m *Model) Offset(idx []int32) float64 {
	if !m.HasBias {
		return 0
	}
	s := m.Mean
	for mo, b := range m.Bias {
		s += b[idx[mo]]
	}
	if len(m.Pairs) > 0 {
		s += m.pairOffset(idx)
	}
	return s
}

// Clamp clamps v to [ClampLo, ClampHi] when the model clamps (Clamps): a
// one-point range returns its value for every v.
func (m *Model) Clamp(v float64) float64 {
	if !m.Clamps() {
		return v
	}
	if v > m.ClampHi {
		return m.ClampHi
	}
	if v < m.ClampLo {
		return m.ClampLo + 0 // + 0: the one-point range at 0 is stored as [-0, 0] (ClampRange); predict +0
	}
	return v
}

// Clamps reports whether the model clamps its predictions
// (ClampActive(ClampLo, ClampHi)).
func (m *Model) Clamps() bool { return ClampActive(m.ClampLo, m.ClampHi) }

// SetClamp sets the prediction range to [lo, hi], lo <= hi, as ClampRange
// stores it; lo == hi (a log whose ratings all have one value) clamps
// every prediction to that value.
func (m *Model) SetClamp(lo, hi float64) { m.ClampLo, m.ClampHi = ClampRange(lo, hi) }

// ClampRange returns the stored form of the prediction range [lo, hi]
// (lo <= hi). The zero value [0, 0] of ClampLo and ClampHi means "no
// clamp", so the one-point range at 0 is stored as [-0, 0], which
// ClampActive tells apart by the sign bit of ClampLo (the JSON of a model
// header keeps it: "-0").
func ClampRange(lo, hi float64) (float64, float64) {
	if lo == 0 && hi == 0 {
		return math.Copysign(0, -1), 0
	}
	return lo, hi
}

// ClampActive reports whether the stored range [lo, hi] clamps: lo < hi,
// or a one-point range lo == hi (every training rating had that value, so
// every prediction is that value) other than the zero value [+0, 0],
// which means no clamp. Before one-point ranges were stored (a log of one
// rating, or of copies of one value, left its model unclamped and its
// predictions wandered from run to run), lo == hi occurred only as [0, 0].
func ClampActive(lo, hi float64) bool {
	return lo < hi || lo == hi && (lo != 0 || math.Signbit(lo))
}

// Raw returns the unclamped prediction at idx (one index per mode):
// Offset(idx) plus the multilinear term G ×1 a_i ×2 b_j (×3 c_k), with G the
// identity superdiagonal for CP (Wei et al. 2021, eq. 2-3). It panics if len(idx)
// differs from Order() or an index is out of range (programmer misuse).
func (m *Model) Raw(idx []int32) float64 {
	if m.Kind == CP {
		return m.Offset(idx) + m.cpDot(idx)
	}
	return m.Offset(idx) + m.tuckerValue(idx, nil)
}

// Predict returns the prediction at idx, clamped to the rating scale when the
// model has one. Tucker models of order 3 allocate P*Q scratch values; use
// PredictWork in loops.
func (m *Model) Predict(idx []int32) float64 { return m.Clamp(m.Raw(idx)) }

// PredictWork is Predict with caller-provided scratch space (no allocation).
func (m *Model) PredictWork(idx []int32, w *Work) float64 {
	if m.Kind == CP {
		return m.Clamp(m.Offset(idx) + m.cpDot(idx))
	}
	return m.Clamp(m.Offset(idx) + m.tuckerValue(idx, w.u))
}

// cpDot is sum_r prod_m Factors[m][idx[m], r].
func (m *Model) cpDot(idx []int32) float64 {
	r := m.Ranks[0]
	a := m.Factors[0][int(idx[0])*r : int(idx[0])*r+r]
	b := m.Factors[1][int(idx[1])*r : int(idx[1])*r+r]
	s := 0.0
	if len(idx) == 2 {
		for t := range a {
			s += a[t] * b[t]
		}
		return s
	}
	c := m.Factors[2][int(idx[2])*r : int(idx[2])*r+r]
	for t := range a {
		s += a[t] * b[t] * c[t]
	}
	return s
}

// tuckerValue is G ×1 a ×2 b (×3 c); u is P*Q scratch (allocated when nil).
func (m *Model) tuckerValue(idx []int32, u []float64) float64 {
	a, b := m.Row(0, int(idx[0])), m.Row(1, int(idx[1]))
	P, Q := m.Ranks[0], m.Ranks[1]
	G := m.Core
	s := 0.0
	if len(idx) == 2 {
		for p := 0; p < P; p++ {
			g := G[p*Q : p*Q+Q]
			t := 0.0
			for q, bq := range b {
				t += g[q] * bq
			}
			s += a[p] * t
		}
		return s
	}
	c := m.Row(2, int(idx[2]))
	T := m.Ranks[2]
	for p := 0; p < P; p++ {
		for q := 0; q < Q; q++ {
			g := G[(p*Q+q)*T : (p*Q+q)*T+T]
			t := 0.0
			for k, ck := range c {
				t += g[k] * ck
			}
			s += a[p] * b[q] * t
		}
	}
	return s
}

// Partial returns the multilinear term xhat0 (the prediction without the
// bias offset) at idx and writes into w the partial derivatives of the
// prediction: w.Factor[m] = d xhat / d row_m(idx[m]), w.Core = d xhat / d G
// (Tucker) and w.Bias[m] = 1 (models with biases). The prediction is linear
// in each factor row, so xhat0 = <w.Factor[m], row_m> for every m.
func (m *Model) Partial(idx []int32, w *Work) float64 {
	if m.HasBias {
		for i := range w.Bias {
			w.Bias[i] = 1
		}
	}
	if m.Kind == CP {
		r := m.Ranks[0]
		a := m.Factors[0][int(idx[0])*r : int(idx[0])*r+r]
		b := m.Factors[1][int(idx[1])*r : int(idx[1])*r+r]
		ga, gb := w.Factor[0][:r], w.Factor[1][:r]
		s := 0.0
		if len(idx) == 2 {
			for t := range a {
				ga[t] = b[t]
				gb[t] = a[t]
				s += a[t] * b[t]
			}
			return s
		}
		c := m.Factors[2][int(idx[2])*r : int(idx[2])*r+r]
		gc := w.Factor[2][:r]
		for t := range a {
			ga[t] = b[t] * c[t]
			gb[t] = a[t] * c[t]
			gc[t] = a[t] * b[t]
			s += a[t] * b[t] * c[t]
		}
		return s
	}
	a, b := m.Row(0, int(idx[0])), m.Row(1, int(idx[1]))
	P, Q := m.Ranks[0], m.Ranks[1]
	G := m.Core
	ga, gb := w.Factor[0], w.Factor[1]
	s := 0.0
	if len(idx) == 2 {
		clear(gb)
		for p := 0; p < P; p++ {
			g := G[p*Q : p*Q+Q]
			gc := w.Core[p*Q : p*Q+Q]
			t := 0.0
			for q, bq := range b {
				t += g[q] * bq
				gb[q] += a[p] * g[q]
				gc[q] = a[p] * bq
			}
			ga[p] = t
			s += a[p] * t
		}
		return s
	}
	c := m.Row(2, int(idx[2]))
	T := m.Ranks[2]
	gcv := w.Factor[2]
	u := w.u
	clear(gb)
	clear(gcv)
	// u[p,q] = sum_t G[p,q,t] c_t; then xhat = sum_pq a_p b_q u_pq,
	// d/da_p = sum_q u_pq b_q, d/db_q = sum_p a_p u_pq,
	// d/dc_t = sum_pq a_p b_q G_pqt, d/dG_pqt = a_p b_q c_t.
	for p := 0; p < P; p++ {
		ap := a[p]
		t0 := 0.0
		for q := 0; q < Q; q++ {
			off := (p*Q + q) * T
			g := G[off : off+T]
			gG := w.Core[off : off+T]
			ab := ap * b[q]
			t := 0.0
			for k, ck := range c {
				t += g[k] * ck
				gcv[k] += ab * g[k]
				gG[k] = ab * ck
			}
			u[p*Q+q] = t
			t0 += t * b[q]
			gb[q] += ap * t
		}
		ga[p] = t0
		s += ap * t0
	}
	return s
}

// DataGrad writes into w the gradient of the data part of the per-entry loss
// of objective (4), (x - xhat)^2, with respect to every parameter the entry
// touches: w.Factor[m] = -2 e d xhat/d row_m, w.Core = -2 e d xhat/d G and
// w.Bias[m] = -2 e, where e = x - xhat is the unclamped residual, which it
// returns.
func (m *Model) DataGrad(idx []int32, x float64, w *Work) float64 {
	xh := m.Offset(idx) + m.Partial(idx, w)
	e := x - xh
	s := -2 * e
	for _, f := range w.Factor {
		for t := range f {
			f[t] *= s
		}
	}
	for t := range w.Core {
		w.Core[t] *= s
	}
	for t := range w.Bias {
		w.Bias[t] = s
	}
	return e
}

// EntryLoss is the per-entry loss of objective (4) as the trainer applies it:
//
//	(x - xhat)^2 + lambdaO (sum_m |row_m|^2) + lambdaB (sum_m bias_m^2) + lambdaG |G|^2
//
// with the unclamped prediction xhat. The regulariser of eq. (4) is spread
// over the entries in the usual SGD way: every entry charges the rows it
// touches, so a row observed n times is penalised n*lambdaO in total.
func (m *Model) EntryLoss(idx []int32, x, lambdaO, lambdaB, lambdaG float64) float64 {
	e := x - m.Raw(idx)
	return e*e + m.EntryReg(idx, lambdaO, lambdaB, lambdaG)
}

// EntryReg is the regulariser part of EntryLoss.
func (m *Model) EntryReg(idx []int32, lambdaO, lambdaB, lambdaG float64) float64 {
	s := 0.0
	for mo := range m.Dims {
		for _, v := range m.Row(mo, int(idx[mo])) {
			s += lambdaO * v * v
		}
		if m.HasBias {
			b := m.Bias[mo][idx[mo]]
			s += lambdaB * b * b
		}
	}
	for _, g := range m.Core {
		s += lambdaG * g * g
	}
	return s
}

// RegGrad writes into w the gradient of EntryReg: 2 lambdaO row_m, 2 lambdaB
// bias_m and 2 lambdaG G.
func (m *Model) RegGrad(idx []int32, lambdaO, lambdaB, lambdaG float64, w *Work) {
	for mo := range m.Dims {
		row := m.Row(mo, int(idx[mo]))
		for t, v := range row {
			w.Factor[mo][t] = 2 * lambdaO * v
		}
		if m.HasBias {
			w.Bias[mo] = 2 * lambdaB * m.Bias[mo][idx[mo]]
		}
	}
	for t, g := range m.Core {
		w.Core[t] = 2 * lambdaG * g
	}
}
