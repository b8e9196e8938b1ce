package completion

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
)

// alsTrainer runs alternating least squares (package doc, "ALS").
type alsTrainer struct {
	m       *decomposition.Model
	st      *data.Store
	vals    []float64
	cfg     *Settings
	threads int
	// start[mo][i]..start[mo][i+1] delimit the entries of row i of mode mo
	// in ent[mo].
	start [][]int
	ent   [][]int32
	pairs []pairState
	// gidx, gval and gpair are, per mode, copies of the entries' indices
	// (Order per entry), values and pair-bias positions (one per pair bias)
	// in the row-grouped order of ent[mo], so a row solve reads its entries
	// sequentially instead of through the permutation (three to four
	// random memory accesses per entry saved).
	gidx  [][]int32
	gval  [][]float64
	gpair [][]int32
	// work is per-worker scratch, one per thread.
	work []*alsWork
	// rowSSE[mo][i] is row i's training SSE right after its last solve.
	rowSSE [][]float64
	// valTab, when set (by the Gibbs sampler, while the rows and the core
	// stay fixed), gives the Tucker model's multilinear term.
	valTab *coreTable
}

// pairState is the training-side view of one pair bias.
type pairState struct {
	of    []int32 // entry -> position in Keys
	start []int   // entries of pair p: ent[start[p]:start[p+1]]
	ent   []int32
}

type alsWork struct {
	w    *decomposition.Work
	idx  []int32
	a, b []float64 // normal equations (n x n) and right-hand side
	z    []float64
	core []float64 // Tucker core accumulator
	// ad, bd: the data part of the last row's normal equations.
	ad, bd []float64
	// zc and ys hold a batch of design vectors (column by column) and
	// targets for gramAdd.
	zc, ys []float64
}

// groupBy buckets the entry positions 0..len(idx)-1 by their value in idx
// (counting sort, stable).
func groupBy(idx []int32, d int) (start []int, ent []int32) {
	return groupOrder(idx, d, nil)
}

// groupOrder is groupBy over the entries in the order seq (all entries in
// position order when seq is nil): within a bucket they keep seq's order.
func groupOrder(idx []int32, d int, seq []int32) (start []int, ent []int32) {
	start = make([]int, d+1)
	for _, i := range idx {
		start[i+1]++
	}
	for i := 0; i < d; i++ {
		start[i+1] += start[i]
	}
	ent = make([]int32, len(idx))
	next := append([]int(nil), start[:d]...)
	if seq == nil {
		for e, i := range idx {
			ent[next[i]] = int32(e)
			next[i]++
		}
		return start, ent
	}
	for _, e := range seq {
		i := idx[e]
		ent[next[i]] = e
		next[i]++
	}
	return start, ent
}

// rowOrder groups the entries by their index in mode mo and, within a row,
// orders them by their index in the largest other mode, so a row solve
// reads that mode's factor rows in increasing address order (fewer cache
// and TLB misses than a random order).
func rowOrder(st *data.Store, mo int) (start []int, ent []int32) {
	if st.Order() < 3 {
		return groupBy(st.Idx[mo], st.Dims[mo])
	}
	w := -1
	for k, d := range st.Dims {
		if k != mo && (w < 0 || d > st.Dims[w]) {
			w = k
		}
	}
	_, byW := groupBy(st.Idx[w], st.Dims[w])
	return groupOrder(st.Idx[mo], st.Dims[mo], byW)
}

// newPairs builds the model's pair biases from the training positions:
// a user x time-bucket bias and an item x period bias for order-3 stores.
func newPairs(m *decomposition.Model, st *data.Store, cfg *Settings) []pairState {
	m.Pairs = nil
	if !m.HasBias || st.Order() != 3 || cfg.TimeBiases == ToggleOff {
		return nil
	}
	K := m.Dims[2]
	periods := min(max(cfg.ItemPeriods, 1), K)
	specs := []decomposition.PairBias{
		{A: 0, B: 2, Div: 1},
		{A: 1, B: 2, Div: (K + periods - 1) / periods},
	}
	out := make([]pairState, len(specs))
	n := st.NNZ()
	idx := make([]int32, 3)
	keys := make([]uint64, n)
	for s := range specs {
		p := &specs[s]
		for e := 0; e < n; e++ {
			idx[0], idx[1], idx[2] = st.Idx[0][e], st.Idx[1][e], st.Idx[2][e]
			keys[e] = p.Key(idx)
		}
		uniq := slices.Clone(keys)
		slices.Sort(uniq)
		uniq = slices.Compact(uniq)
		p.Keys = uniq
		p.Vals = make([]float64, len(uniq))
		of := make([]int32, n)
		for e, k := range keys {
			i, _ := slices.BinarySearch(uniq, k)
			of[e] = int32(i)
		}
		start, ent := groupBy(of, len(uniq))
		out[s] = pairState{of: of, start: start, ent: ent}
	}
	m.Pairs = specs
	return out
}

func newALSTrainer(m *decomposition.Model, st *data.Store, vals []float64, cfg *Settings) *alsTrainer {
	t := &alsTrainer{m: m, st: st, vals: vals, cfg: cfg, threads: max(1, cfg.Threads)}
	order := m.Order()
	t.start = make([][]int, order)
	t.ent = make([][]int32, order)
	t.rowSSE = make([][]float64, order)
	t.pairs = newPairs(m, st, cfg)
	n, np := st.NNZ(), len(t.pairs)
	t.gidx, t.gval, t.gpair = make([][]int32, order), make([][]float64, order), make([][]int32, order)
	// The modes' row orders and entry copies are independent: build them
	// on up to Threads goroutines (each mode's result is the same whatever
	// the schedule).
	modes := make(chan int, order)
	for mo := range order {
		modes <- mo
	}
	close(modes)
	parallelFor(min(t.threads, order), func(int) {
		for mo := range modes {
			t.buildMode(mo, n, np)
		}
	})
	rmax := slices.Max(m.Ranks) + 1
	t.work = make([]*alsWork, t.threads)
	for i := range t.work {
		t.work[i] = &alsWork{w: m.NewWork(), idx: make([]int32, m.Order()),
			a: make([]float64, rmax*rmax), b: make([]float64, rmax), z: make([]float64, rmax),
			ad: make([]float64, rmax*rmax), bd: make([]float64, rmax),
			zc: make([]float64, rmax*gramBatch), ys: make([]float64, gramBatch),
			core: make([]float64, len(m.Core))}
	}
	return t
}

// buildMode fills mode mo's row order (start, ent), its row-grouped
// entry copies (gidx, gval, gpair) and its rowSSE slots.
func (t *alsTrainer) buildMode(mo, n, np int) {
	st, order := t.st, t.m.Order()
	t.start[mo], t.ent[mo] = rowOrder(st, mo)
	t.rowSSE[mo] = make([]float64, t.m.Dims[mo])
	gi, gv, gp := make([]int32, n*order), make([]float64, n), make([]int32, n*np)
	for q, e := range t.ent[mo] {
		for k := 0; k < order; k++ {
			gi[q*order+k] = st.Idx[k][e]
		}
		gv[q] = t.vals[e]
		for p := range t.pairs {
			gp[q*np+p] = t.pairs[p].of[e]
		}
	}
	t.gidx[mo], t.gval[mo], t.gpair[mo] = gi, gv, gp
}

// entry loads entry e's indices into idx.
func (t *alsTrainer) entry(e int32, idx []int32) {
	for mo := range idx {
		idx[mo] = t.st.Idx[mo][e]
	}
}

// pairSum is the sum of the pair biases at entry e.
func (t *alsTrainer) pairSum(e int32) float64 {
	s := 0.0
	for p := range t.pairs {
		s += t.m.Pairs[p].Vals[t.pairs[p].of[e]]
	}
	return s
}

// grouped loads position q of mode mo's row-grouped entries into idx and
// returns its value and pair-bias positions.
func (t *alsTrainer) grouped(mo, q int, idx []int32) (float64, []int32) {
	order, np := len(idx), len(t.pairs)
	copy(idx, t.gidx[mo][q*order:q*order+order])
	return t.gval[mo][q], t.gpair[mo][q*np : q*np+np]
}

// offsetAt is the offset of an entry with indices idx and pair-bias
// positions pp, without mode mo's bias (the pair biases are fixed
// parameters and stay in).
func (t *alsTrainer) offsetAt(idx, pp []int32, mo int) float64 {
	m := t.m
	if !m.HasBias {
		return 0
	}
	s := m.Mean
	for p, pos := range pp {
		s += m.Pairs[p].Vals[pos]
	}
	for k, b := range m.Bias {
		if k != mo {
			s += b[idx[k]]
		}
	}
	return s
}

// parallel runs fn(worker, lo, hi) over [0, n) in chunks of chunk, the
// chunks handed out dynamically. fn must write only state owned by the
// indices it is given, so the result does not depend on scheduling.
func (t *alsTrainer) parallel(n, chunk int, fn func(w, lo, hi int)) {
	if t.threads == 1 || n <= chunk {
		fn(0, 0, n)
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < t.threads; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				lo := int(next.Add(int64(chunk))) - chunk
				if lo >= n {
					return
				}
				fn(w, lo, min(lo+chunk, n))
			}
		}()
	}
	wg.Wait()
}

// solveMode replaces every row of mode mo (and its bias) by the exact
// minimiser of the objective with everything else fixed.
func (t *alsTrainer) solveMode(mo int) error {
	var bad atomic.Int64
	bad.Store(-1)
	t.parallel(t.m.Dims[mo], 64, func(w, lo, hi int) {
		for i := lo; i < hi; i++ {
			if !t.solveRow(mo, i, t.work[w]) {
				bad.CompareAndSwap(-1, int64(i))
			}
		}
	})
	if i := bad.Load(); i >= 0 {
		return fmt.Errorf("completion: ALS row %d of mode %d: normal equations not positive definite (raise the penalties)", i, mo)
	}
	return nil
}

// solveRow solves row i of mode mo:
//
//	min_{x, beta} sum_e (y_e - <z_e, x> - beta)^2 + lambda n_i |x - x0|^2 + lambda_b beta^2
//
// with z_e the entry's design vector (d xhat / d row), y_e the value minus
// the offset without this row's bias, n_i the row's count, x0 = 1 for the
// time rows of an order-3 model (c_k = 1 + d_k) and 0 otherwise, and
// lambda = RegTime for the time mode, Reg for the others. Rows with no
// observation are set to x0 and a zero bias. It reports false when the
// system is not positive definite.
func (t *alsTrainer) solveRow(mo, i int, ws *alsWork) bool {
	m := t.m
	R := m.Ranks[mo]
	row := m.Row(mo, i)
	x0 := 0.0
	lam := t.cfg.Reg
	if mo == 2 {
		x0, lam = 1, t.cfg.RegTime
	}
	lo, hi := t.start[mo][i], t.start[mo][i+1]
	if lo == hi {
		emptyRow(row, x0)
		if m.HasBias {
			m.Bias[mo][i] = 0
		}
		t.rowSSE[mo][i] = 0
		return true
	}
	n := R
	if m.HasBias {
		n++
	}
	A, b := ws.a[:n*n], ws.b[:n]
	clear(A)
	clear(b)
	var yy float64
	if m.Kind == decomposition.CP && m.Order() == 3 {
		yy = t.accumulateCP3(mo, lo, hi, A, b, n, ws)
	} else {
		yy = t.accumulate(mo, lo, hi, A, b, n, ws)
	}
	ok, sse := solveNormal(A, b, ws.ad, ws.bd, n, R, hi-lo, lam, x0, t.cfg.RegBias, m.HasBias, yy)
	if !ok {
		return false
	}
	copy(row, b[:R])
	if m.HasBias {
		m.Bias[mo][i] = b[R]
	}
	t.rowSSE[mo][i] = sse
	return true
}

// quadSSE is sum_e (y_e - z_e.x)^2 = yy - 2 x.b + x'Ax for the data part
// of a row's normal equations (A = sum z z' with its upper triangle
// filled, b = sum y z, yy = sum y^2), floored at 0 against rounding.
func quadSSE(A, b, x []float64, yy float64, n int) float64 {
	s := yy
	for p := 0; p < n; p++ {
		xp := x[p]
		r := A[p*n : p*n+n]
		t := 0.5 * r[p] * xp
		for q := p + 1; q < n; q++ {
			t += r[q] * x[q]
		}
		s += 2*xp*t - 2*xp*b[p]
	}
	return max(s, 0)
}

// accumulate adds the data part of row i's normal equations (rows lo..hi
// of mode mo's row-grouped entries) to A and b, for any model; it returns
// the sum of the squared targets.
func (t *alsTrainer) accumulate(mo, lo, hi int, A, b []float64, n int, ws *alsWork) float64 {
	m := t.m
	R := m.Ranks[mo]
	z, idx := ws.z[:n], ws.idx
	yy := 0.0
	for q := lo; q < hi; q++ {
		v, pp := t.grouped(mo, q, idx)
		y := v - t.offsetAt(idx, pp, mo)
		if m.Kind == decomposition.CP {
			// Order 2 (order 3 takes accumulateCP3): RowSystem.Add.
			yy += cpDesign(A, b, z, m.Row(1-mo, int(idx[1-mo])), y, R, n, m.HasBias)
			continue
		}
		m.Partial(idx, ws.w)
		copy(z, ws.w.Factor[mo])
		if m.HasBias {
			z[R] = 1
		}
		yy += y * y
		addOuter(A, b, z, y, n)
	}
	return yy
}

// addOuter adds z z' (upper triangle) to the n x n matrix A and y z to b.
func addOuter(A, b, z []float64, y float64, n int) {
	z = z[:n]
	for p, zp := range z {
		b[p] += y * zp
		r := A[p*n+p : p*n+n]
		zz := z[p:]
		zz = zz[:len(r)]
		for q, zq := range zz {
			r[q] += zp * zq
		}
	}
}

// accumulateCP3 is accumulate for an order-3 CP model: the design vector
// of an entry is the elementwise product of its rows in the two other
// modes. Those rows are random accesses into the factor matrices, so it
// prefetches the rows of the entry alsPrefetch positions ahead (prefetch4),
// having many cache misses in flight at once instead of one after another
// (a prefetch, unlike the plain loads used before, never stalls the work
// behind it: 10-30% less CPU per sweep on the 10M tensor, A/B alternated).
// The design vectors are gathered gramBatch at a time and added to the
// normal equations by gramAdd.
func (t *alsTrainer) accumulateCP3(mo, lo, hi int, A, b []float64, n int, ws *alsWork) float64 {
	m := t.m
	R := m.Ranks[mo]
	u, v := otherModes(mo)
	Fu, Fv := m.Factors[u], m.Factors[v]
	gi := t.gidx[mo][3*lo : 3*hi]
	gv := t.gval[mo][lo:hi]
	np := len(t.pairs)
	gp := t.gpair[mo][np*lo : np*hi]
	zc, ys := ws.zc[:n*gramBatch], ws.ys[:gramBatch]
	var bu, bv []float64
	mean := 0.0
	if m.HasBias {
		bu, bv, mean = m.Bias[u], m.Bias[v], m.Mean
		ones := zc[R*gramBatch : R*gramBatch+gramBatch]
		for e := range ones {
			ones[e] = 1
		}
	}
	yy := 0.0
	nb := 0
	for e, y := range gv {
		if f := e + alsPrefetch; f < len(gv) {
			pu, pv := int(gi[3*f+u])*R, int(gi[3*f+v])*R
			prefetch4(&Fu[pu], &Fu[pu+R-1], &Fv[pv], &Fv[pv+R-1])
		}
		ju, jv := int(gi[3*e+u]), int(gi[3*e+v])
		fu := Fu[ju*R : ju*R+R]
		fv := Fv[jv*R : jv*R+R]
		fv = fv[:len(fu)]
		for p, x := range fu {
			zc[p*gramBatch+nb] = x * fv[p]
		}
		if bu != nil {
			y -= mean + bu[ju] + bv[jv]
			for p := range np {
				y -= m.Pairs[p].Vals[gp[np*e+p]]
			}
		}
		yy += y * y
		ys[nb] = y
		nb++
		if nb == gramBatch {
			gramAdd(A, b, zc, ys, n, nb)
			nb = 0
		}
	}
	if nb > 0 {
		gramAdd(A, b, zc, ys, n, nb)
	}
	return yy
}

// alsPrefetch is how many entries ahead accumulateCP3 prefetches the
// factor rows: far enough for a memory access (about 100 ns) to complete
// during the work on the entries in between.
const alsPrefetch = 16

// gramBatch is the number of design vectors gramAdd takes at once.
const gramBatch = 16

// gramAdd adds Z'Z (upper triangle) to the n x n matrix A and Z'y to b,
// for the nb <= gramBatch design vectors stored column by column in zc
// (z_e[p] at zc[p*gramBatch+e]) and their targets y. Each element of A is
// read and written once per batch instead of once per entry, and the
// products are taken in 2 x 2 blocks of (p, q), two entries at a time:
// eight independent sums per step, each loaded value used twice.
func gramAdd(A, b, zc, y []float64, n, nb int) {
	const G = gramBatch
	y = y[:nb]
	for p := 0; p < n; p++ {
		zp := zc[p*G : p*G+nb]
		zp = zp[:len(y)]
		s := 0.0
		for e, ye := range y {
			s += ye * zp[e]
		}
		b[p] += s
	}
	p := 0
	for ; p+1 < n; p += 2 {
		z0 := zc[p*G : p*G+nb]
		z1 := zc[(p+1)*G : (p+1)*G+nb]
		z1 = z1[:len(z0)]
		var d00, d01, d11 float64
		for e, a := range z0 {
			c := z1[e]
			d00 += a * a
			d01 += a * c
			d11 += c * c
		}
		A[p*n+p] += d00
		A[p*n+p+1] += d01
		A[(p+1)*n+p+1] += d11
		q := p + 2
		for ; q+1 < n; q += 2 {
			w0 := zc[q*G : q*G+nb]
			w1 := zc[(q+1)*G : (q+1)*G+nb]
			w0, w1 = w0[:len(z0)], w1[:len(z0)]
			var s00, s01, s10, s11, t00, t01, t10, t11 float64
			e := 0
			for ; e+1 < len(z0); e += 2 {
				a, c, u, v := z0[e], z1[e], w0[e], w1[e]
				s00 += a * u
				s01 += a * v
				s10 += c * u
				s11 += c * v
				a, c, u, v = z0[e+1], z1[e+1], w0[e+1], w1[e+1]
				t00 += a * u
				t01 += a * v
				t10 += c * u
				t11 += c * v
			}
			if e < len(z0) {
				a, c, u, v := z0[e], z1[e], w0[e], w1[e]
				s00 += a * u
				s01 += a * v
				s10 += c * u
				s11 += c * v
			}
			A[p*n+q] += s00 + t00
			A[p*n+q+1] += s01 + t01
			A[(p+1)*n+q] += s10 + t10
			A[(p+1)*n+q+1] += s11 + t11
		}
		if q < n {
			w0 := zc[q*G : q*G+nb]
			w0 = w0[:len(z0)]
			var s0, s1 float64
			for e, a := range z0 {
				u := w0[e]
				s0 += a * u
				s1 += z1[e] * u
			}
			A[p*n+q] += s0
			A[(p+1)*n+q] += s1
		}
	}
	if p < n {
		zp := zc[p*G : p*G+nb]
		s := 0.0
		for _, a := range zp {
			s += a * a
		}
		A[p*n+p] += s
	}
}

// otherModes returns the two modes of an order-3 model other than mo.
func otherModes(mo int) (int, int) {
	switch mo {
	case 0:
		return 1, 2
	case 1:
		return 0, 2
	}
	return 0, 1
}

// rawAt is the unclamped prediction at entry e (idx loaded).
func (t *alsTrainer) rawAt(e int32, idx []int32, w *decomposition.Work) float64 {
	m := t.m
	s := 0.0
	if m.HasBias {
		s = m.Mean + t.pairSum(e)
		for k, b := range m.Bias {
			s += b[idx[k]]
		}
	}
	return s + t.multilinear(idx, w)
}

// multilinear is the model's multilinear term at idx (w: Tucker scratch).
func (t *alsTrainer) multilinear(idx []int32, w *decomposition.Work) float64 {
	m := t.m
	if t.valTab != nil {
		return t.valTab.value(m, idx)
	}
	if m.Kind != decomposition.CP {
		return m.Partial(idx, w)
	}
	a, b := m.Row(0, int(idx[0])), m.Row(1, int(idx[1]))
	s := 0.0
	if len(idx) == 2 {
		for r, x := range a {
			s += x * b[r]
		}
		return s
	}
	c := m.Row(2, int(idx[2]))
	for r, x := range a {
		s += x * b[r] * c[r]
	}
	return s
}

// solvePairs sets every pair bias to its exact minimiser with the rest
// fixed: b_p = sum_{e in p} (x_e - xhat_e + b_p) / (n_p + RegPair).
func (t *alsTrainer) solvePairs() {
	for p := range t.pairs {
		ps := &t.pairs[p]
		vals := t.m.Pairs[p].Vals
		t.parallel(len(vals), 1024, func(w, lo, hi int) {
			ws := t.work[w]
			for k := lo; k < hi; k++ {
				ents := ps.ent[ps.start[k]:ps.start[k+1]]
				s := 0.0
				for _, e := range ents {
					t.entry(e, ws.idx)
					s += t.vals[e] - t.rawAt(e, ws.idx, ws.w) + vals[k]
				}
				vals[k] = s / (float64(len(ents)) + t.cfg.RegPair)
			}
		})
	}
}

// solveCore improves the Tucker core by conjugate gradients on its normal
// equations with the factors fixed:
//
//	(sum_e g_e g_e^T + lambda_g N I) G = sum_e g_e y_e + lambda_g N G0
//
// where g_e = a ⊗ b (⊗ c) is d xhat_e / d G, y_e the value minus the offset,
// N the number of observations and G0 the superdiagonal identity (the CP
// core): the penalty pulls the core towards CP, so a heavily penalised
// Tucker model is the CP model. A few iterations per sweep, warm-started
// from the current core, suffice since the factors move between sweeps.
func (t *alsTrainer) solveCore(iters int) {
	m := t.m
	G := m.Core
	nG := len(G)
	N := float64(t.st.NNZ())
	lam := t.cfg.RegCore * N
	G0 := make([]float64, nG)
	superdiagonal(G0, m.Ranks)
	// apply computes out = (sum g g^T) v + lam v, and with rhs also
	// sum g y (into rhs) in the same pass.
	n := t.st.NNZ()
	apply := func(v, out, rhs []float64) {
		for _, ws := range t.work {
			clear(ws.core)
		}
		var rhsPart [][]float64
		if rhs != nil {
			rhsPart = make([][]float64, len(t.work))
			for w := range rhsPart {
				rhsPart[w] = make([]float64, nG)
			}
		}
		// Fixed partition of the entries per worker: the sums are added
		// in a fixed order, so results do not depend on scheduling.
		var wg sync.WaitGroup
		for w := range t.work {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ws := t.work[w]
				lo, hi := w*n/len(t.work), (w+1)*n/len(t.work)
				for e := lo; e < hi; e++ {
					t.entry(int32(e), ws.idx)
					m.Partial(ws.idx, ws.w)
					g := ws.w.Core
					d := 0.0
					for q, gv := range g {
						d += gv * v[q]
					}
					for q, gv := range g {
						ws.core[q] += gv * d
					}
					if rhs != nil {
						y := t.vals[e]
						if m.HasBias {
							y -= m.Mean + t.pairSum(int32(e))
							for k, b := range m.Bias {
								y -= b[ws.idx[k]]
							}
						}
						rp := rhsPart[w]
						for q, gv := range g {
							rp[q] += gv * y
						}
					}
				}
			}()
		}
		wg.Wait()
		for q := range out {
			s := lam * v[q]
			for _, ws := range t.work {
				s += ws.core[q]
			}
			out[q] = s
		}
		for q := range rhs { // rhs is nil except on the first call
			s := lam * G0[q]
			for _, rp := range rhsPart {
				s += rp[q]
			}
			rhs[q] = s
		}
	}
	Ap := make([]float64, nG)
	rhs := make([]float64, nG)
	apply(G, Ap, rhs)
	r := make([]float64, nG)
	for q := range r {
		r[q] = rhs[q] - Ap[q]
	}
	p := slices.Clone(r)
	rr := dot(r, r)
	for it := 0; it < iters && rr > 0; it++ {
		apply(p, Ap, nil)
		alpha := rr / dot(p, Ap)
		for q := range G {
			G[q] += alpha * p[q]
			r[q] -= alpha * Ap[q]
		}
		rr2 := dot(r, r)
		beta := rr2 / rr
		rr = rr2
		for q := range p {
			p[q] = r[q] + beta*p[q]
		}
	}
}

func dot(a, b []float64) float64 {
	s := 0.0
	for i, v := range a {
		s += v * b[i]
	}
	return s
}

// superdiagonal sets G to the superdiagonal identity of the given ranks.
func superdiagonal(G []float64, ranks []int) {
	clear(G)
	rmin := slices.Min(ranks)
	for d := 0; d < rmin; d++ {
		off := 0
		for _, r := range ranks {
			off = off*r + d
		}
		G[off] = 1
	}
}

// sweep runs one ALS sweep: pair biases, every mode's rows and biases in
// turn, then the Tucker core. It returns the training SSE after the sweep.
func (t *alsTrainer) sweep() (float64, error) {
	t.solvePairs()
	for mo := range t.m.Dims {
		if err := t.solveMode(mo); err != nil {
			return 0, err
		}
	}
	if t.m.Core != nil {
		t.solveCore(3)
		return t.sse(), nil
	}
	// Nothing changed after the last mode's solve, so the training SSE is
	// the sum of its rows' SSEs (summed in row order: deterministic).
	s := 0.0
	for _, v := range t.rowSSE[len(t.rowSSE)-1] {
		s += v
	}
	return s, nil
}

// sse is the sum of squared (unclamped) training residuals.
func (t *alsTrainer) sse() float64 {
	n := t.st.NNZ()
	part := make([]float64, len(t.work))
	var wg sync.WaitGroup
	for w := range t.work {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// The entries in mode 0's row-grouped order: read sequentially,
			// each user's row reused across its entries.
			ws := t.work[w]
			lo, hi := w*n/len(t.work), (w+1)*n/len(t.work)
			s := 0.0
			for q := lo; q < hi; q++ {
				v, pp := t.grouped(0, q, ws.idx)
				d := v - t.offsetAt(ws.idx, pp, -1) - t.multilinear(ws.idx, ws.w)
				s += d * d
			}
			part[w] = s
		}()
	}
	wg.Wait()
	s := 0.0
	for _, v := range part {
		s += v
	}
	return s
}

// alsRegNorms is the ALS objective's penalty at the current parameters.
func (t *alsTrainer) alsRegNorms() float64 {
	m := t.m
	s := 0.0
	for mo := range m.Dims {
		lam, x0 := t.cfg.Reg, 0.0
		if mo == 2 {
			lam, x0 = t.cfg.RegTime, 1
		}
		for i := 0; i < m.Dims[mo]; i++ {
			n := float64(t.start[mo][i+1] - t.start[mo][i])
			for _, v := range m.Row(mo, i) {
				s += lam * n * (v - x0) * (v - x0)
			}
		}
		if m.HasBias {
			for _, v := range m.Bias[mo] {
				s += t.cfg.RegBias * v * v
			}
		}
	}
	for _, p := range m.Pairs {
		for _, v := range p.Vals {
			s += t.cfg.RegPair * v * v
		}
	}
	if m.Core != nil {
		G0 := make([]float64, len(m.Core))
		superdiagonal(G0, m.Ranks)
		N := float64(t.st.NNZ())
		for q, v := range m.Core {
			d := v - G0[q]
			s += t.cfg.RegCore * N * d * d
		}
	}
	return s
}

// trainALS is Train for SolverALS (called with validated settings).
func trainALS(ctx context.Context, train, valid *data.Store, m *decomposition.Model, cfg *Settings, vals []float64, src rand.Source, progress func(EpochRecord)) (*Result, error) {
	rng := rand.New(src)
	initModel(m, vals, cfg, rng)
	t := newALSTrainer(m, train, vals, cfg)
	if m.Core != nil && !cfg.WarmStart {
		// Start from the CP core exactly; the factors carry the noise.
		superdiagonal(m.Core, m.Ranks)
	}
	res := &Result{Model: m, Settings: *cfg}
	good := snapshot(m)
	stop := newStopper(good, valid != nil && cfg.Patience >= 0, cfg.Patience)
	for ep := 0; ep < cfg.Epochs; ep++ {
		if err := ctx.Err(); err != nil {
			good.restore(m)
			return res, fmt.Errorf("completion: training stopped before sweep %d: %w", ep+1, err)
		}
		t0 := time.Now()
		sse, err := t.sweep()
		rec := EpochRecord{Epoch: ep + 1, Seconds: time.Since(t0).Seconds()}
		if err != nil {
			good.restore(m)
			return res, err
		}
		rec.TrainRMSE = math.Sqrt(sse / float64(train.NNZ()))
		rec.TrainLoss = sse + t.alsRegNorms()
		if !finite(rec.TrainLoss) || !modelFinite(m) {
			good.restore(m)
			res.History = append(res.History, rec)
			return res, &ErrDiverged{Epoch: ep + 1, Loss: rec.TrainLoss}
		}
		if valid != nil {
			rec.ValidRMSE = RMSE(m, valid, cfg.Threads)
		}
		res.History = append(res.History, rec)
		if progress != nil {
			progress(rec)
		}
		if stop.observe(m, res, rec.ValidRMSE, ep) {
			break
		}
	}
	good.restore(m)
	if !modelFinite(m) {
		return nil, errors.New("completion: ALS left non-finite parameters")
	}
	res.Privacy = cfg.Privacy.Report()
	return res, nil
}
