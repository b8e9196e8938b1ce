package completion

import "github.com/dprec/dprec/decomposition"

// The SGD kernels process one block of entries sequentially and return the
// sum of squared residuals (each computed before its entry's update). All
// follow objective (4) with per-entry regularisation: for an entry with
// residual e = x - xhat,
//
//	row_m  <- row_m  - lr (-2 e d xhat/d row_m + 2 lambda_o row_m)
//	bias_m <- bias_m - lr (-2 e + 2 lambda_b bias_m)
//	G      <- G      - lrG (-2 e d xhat/d G + 2 lambda_g G)
//
// with every gradient evaluated at the parameters before the update.

// step holds the per-epoch constants of the update.
type step struct {
	lr, lrG, regO, regB, regG float64
}

// sgdPrefetch is how many entries ahead the CP kernels prefetch the factor
// rows (prefetch4), so the cache misses of upcoming entries are in flight
// while the current ones are updated.
const sgdPrefetch = 8

// cp3Block is the fast path for an order-3 CP model without a gradient
// transform. It returns the sum of squared residuals.
func cp3Block(m *decomposition.Model, L *layout, lo, hi int, st step) float64 {
	R := m.Ranks[0]
	A, B, C := m.Factors[0], m.Factors[1], m.Factors[2]
	sh1, sh2 := L.shift[1], L.shift[2]
	m0, m1, m2 := L.mask[0], L.mask[1], L.mask[2]
	coords, vals := L.coords[lo:hi], L.vals[lo:hi]
	vals = vals[:len(coords)]
	d := 1 - 2*st.lr*st.regO
	db := 1 - 2*st.lr*st.regB
	g2 := 2 * st.lr
	var bu, bi, bt []float64
	mu := 0.0
	if m.HasBias {
		bu, bi, bt, mu = m.Bias[0], m.Bias[1], m.Bias[2], m.Mean
	}
	sse := 0.0
	for e, c := range coords {
		if f := e + sgdPrefetch; f < len(coords) {
			// Start loading the rows of the entry sgdPrefetch ahead: the
			// first and last element, as an 80-byte row (rank 10) may
			// straddle two lines.
			n := coords[f]
			ni, nj := int(n&m0)*R, int((n>>sh1)&m1)*R
			prefetch4(&A[ni], &A[ni+R-1], &B[nj], &B[nj+R-1])
		}
		i := int(c & m0)
		j := int((c >> sh1) & m1)
		k := int((c >> sh2) & m2)
		a := A[i*R : i*R+R]
		b := B[j*R : j*R+R]
		cc := C[k*R : k*R+R]
		b = b[:len(a)]
		cc = cc[:len(a)]
		// Two independent chains halve the dot product's add latency.
		d0, d1 := 0.0, 0.0
		r := 0
		for ; r+1 < len(a); r += 2 {
			d0 += a[r] * b[r] * cc[r]
			d1 += a[r+1] * b[r+1] * cc[r+1]
		}
		if r < len(a) {
			d0 += a[r] * b[r] * cc[r]
		}
		pred := d0 + d1
		if bu != nil {
			pred += mu + bu[i] + bi[j] + bt[k]
		}
		res := vals[e] - pred
		sse += res * res
		g := g2 * res
		for r := range a {
			ar, br, cr := a[r], b[r], cc[r]
			a[r] = d*ar + g*br*cr
			b[r] = d*br + g*ar*cr
			cc[r] = d*cr + g*ar*br
		}
		if bu != nil {
			bu[i] = db*bu[i] + g
			bi[j] = db*bi[j] + g
			bt[k] = db*bt[k] + g
		}
	}
	return sse
}

// cp2Block is the fast path for an order-2 CP model (matrix factorisation)
// without a gradient transform; it returns like cp3Block.
func cp2Block(m *decomposition.Model, L *layout, lo, hi int, st step) float64 {
	R := m.Ranks[0]
	A, B := m.Factors[0], m.Factors[1]
	sh1 := L.shift[1]
	m0, m1 := L.mask[0], L.mask[1]
	coords, vals := L.coords[lo:hi], L.vals[lo:hi]
	vals = vals[:len(coords)]
	d := 1 - 2*st.lr*st.regO
	db := 1 - 2*st.lr*st.regB
	g2 := 2 * st.lr
	var bu, bi []float64
	mu := 0.0
	if m.HasBias {
		bu, bi, mu = m.Bias[0], m.Bias[1], m.Mean
	}
	sse := 0.0
	for e, c := range coords {
		if f := e + sgdPrefetch; f < len(coords) {
			n := coords[f]
			ni, nj := int(n&m0)*R, int((n>>sh1)&m1)*R
			prefetch4(&A[ni], &A[ni+R-1], &B[nj], &B[nj+R-1])
		}
		i := int(c & m0)
		j := int((c >> sh1) & m1)
		a := A[i*R : i*R+R]
		b := B[j*R : j*R+R]
		b = b[:len(a)]
		d0, d1 := 0.0, 0.0
		r := 0
		for ; r+1 < len(a); r += 2 {
			d0 += a[r] * b[r]
			d1 += a[r+1] * b[r+1]
		}
		if r < len(a) {
			d0 += a[r] * b[r]
		}
		pred := d0 + d1
		if bu != nil {
			pred += mu + bu[i] + bi[j]
		}
		res := vals[e] - pred
		sse += res * res
		g := g2 * res
		for r := range a {
			ar, br := a[r], b[r]
			a[r] = d*ar + g*br
			b[r] = d*br + g*ar
		}
		if bu != nil {
			bu[i] = db*bu[i] + g
			bi[j] = db*bi[j] + g
		}
	}
	return sse
}

// worker is the per-goroutine state of the generic kernel.
type worker struct {
	// view shares the factors and biases of the trained model but has its
	// own Core (the worker-local copy of the Tucker core).
	view  decomposition.Model
	work  *decomposition.Work
	idx   []int32
	grad  EntryGrad
	trans GradientTransform
}

func newWorker(m *decomposition.Model, t GradientTransform) *worker {
	w := &worker{view: *m, work: m.NewWork(), idx: make([]int32, m.Order()), trans: t}
	if m.Core != nil {
		w.view.Core = make([]float64, len(m.Core))
	}
	w.grad = EntryGrad{Idx: w.idx, Factor: w.work.Factor, Core: w.work.Core, Bias: w.work.Bias}
	return w
}

// genericBlock handles Tucker models and any model with a gradient
// transform: it computes the data gradient of each entry (EntryGrad), hands
// it to the transform, then adds the regulariser gradient and applies it.
// The core updated is the worker's local copy (w.view.Core).
func (w *worker) genericBlock(L *layout, lo, hi int, st step) float64 {
	m := &w.view
	g := &w.grad
	sse := 0.0
	for e := lo; e < hi; e++ {
		c := L.coords[e]
		for mo := 0; mo < L.order; mo++ {
			w.idx[mo] = int32((c >> L.shift[mo]) & L.mask[mo])
		}
		res := m.DataGrad(w.idx, L.vals[e], w.work)
		sse += res * res
		if w.trans != nil {
			w.trans.Transform(g)
		}
		for mo := 0; mo < L.order; mo++ {
			row := m.Row(mo, int(w.idx[mo]))
			gf := g.Factor[mo][:len(row)]
			for r, v := range row {
				row[r] = v - st.lr*(gf[r]+2*st.regO*v)
			}
			if m.HasBias {
				b := &m.Bias[mo][w.idx[mo]]
				*b -= st.lr * (g.Bias[mo] + 2*st.regB**b)
			}
		}
		if G := m.Core; G != nil {
			gc := g.Core[:len(G)]
			for t, v := range G {
				G[t] = v - st.lrG*(gc[t]+2*st.regG*v)
			}
		}
	}
	return sse
}
