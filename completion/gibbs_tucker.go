package completion

import (
	"errors"
	"math"
	"sync"

	"github.com/dprec/dprec/decomposition"
)

// MaxGibbsCore is the largest Tucker core (product of the ranks) the Gibbs
// sampler draws: the core is drawn jointly from its Gaussian conditional,
// a dense MaxGibbsCore^2 system per worker and a Cholesky factorisation of
// cost |G|^3/3 per sweep (package doc, "Gibbs for Tucker"). Rank 12 on
// three modes (1,728 entries) is within it; larger cores are refused with
// a *SettingsError.
const MaxGibbsCore = 2000

// Gamma(coreA0, coreB0) (shape, rate) is the hyperprior of the core's
// prior precision.
const coreA0, coreB0 = 1.0, 1.0

// coreSampler draws the Tucker core of a Gibbs run (package doc, "Gibbs
// for Tucker"). The core's normal equations are accumulated row by row of
// mode s (the mode whose rows make the system cheapest): sum over a row's
// entries of g_e g_e^T = (a a^T) ⊗ M_i with M_i = sum h_e h_e^T, h_e the
// Kronecker product of the entry's rows in the other modes. Positions are
// in (mode s, other modes) order; perm maps them to the core's row-major
// order.
type coreSampler struct {
	s    int
	H    int   // product of the other modes' ranks
	nG   int   // core size
	perm []int // perm[position] = core index
	g0   []float64
	prec float64 // lambda_g, the prior precision of the core
	// bounds[w]..bounds[w+1] are worker w's rows of mode s (a fixed
	// partition balanced by entries, so sums do not depend on scheduling).
	bounds []int
	acc    [][]float64 // per worker nG x nG (upper triangle)
	rhs    [][]float64 // per worker nG
	M, r   [][]float64 // per worker kronBatch H x H matrices and H
	batch  [][]int     // per worker: the rows of mode s whose M_i are in M
	zc, ys [][]float64 // per worker gramAdd batches
}

func newCoreSampler(t *alsTrainer) *coreSampler {
	m := t.m
	nG := len(m.Core)
	// Cost per sweep of mode s: |Omega| H^2/2 for the M_i plus
	// rows_s R_s^2 H^2/2 for the Kronecker additions.
	best, bestCost := 0, math.Inf(1)
	for s := range m.Dims {
		H := nG / m.Ranks[s]
		cost := float64(H*H) * (float64(t.st.NNZ()) + float64(m.Dims[s]*m.Ranks[s]*m.Ranks[s]))
		if cost < bestCost {
			best, bestCost = s, cost
		}
	}
	c := &coreSampler{s: best, nG: nG, H: nG / m.Ranks[best], prec: 1,
		perm: corePerm(m.Ranks, best), g0: make([]float64, nG)}
	G0 := make([]float64, nG)
	superdiagonal(G0, m.Ranks)
	for k, q := range c.perm {
		c.g0[k] = G0[q]
	}
	W := len(t.work)
	c.bounds = make([]int, W+1)
	start, n := t.start[best], t.st.NNZ()
	for w, i := 1, 0; w <= W; w++ {
		for i < m.Dims[best] && start[i] < w*n/W {
			i++
		}
		c.bounds[w] = i
	}
	c.bounds[W] = m.Dims[best]
	for range W {
		c.acc = append(c.acc, make([]float64, nG*nG))
		c.rhs = append(c.rhs, make([]float64, nG))
		c.M = append(c.M, make([]float64, kronBatch*c.H*c.H))
		c.batch = append(c.batch, make([]int, 0, kronBatch))
		c.r = append(c.r, make([]float64, c.H))
		c.zc = append(c.zc, make([]float64, c.H*gramBatch))
		c.ys = append(c.ys, make([]float64, gramBatch))
	}
	return c
}

// corePerm lists, for each position of the core in (mode s, other modes
// in order) row-major order, its index in the row-major core.
func corePerm(ranks []int, s int) []int {
	nG := 1
	for _, r := range ranks {
		nG *= r
	}
	perm := make([]int, nG)
	idx := make([]int, len(ranks))
	for k := 0; k < nG; k++ {
		rem := k
		for mo := len(ranks) - 1; mo >= 0; mo-- {
			idx[mo] = rem % ranks[mo]
			rem /= ranks[mo]
		}
		rest := 0
		for mo, r := range ranks {
			if mo != s {
				rest = rest*r + idx[mo]
			}
		}
		perm[idx[s]*(nG/ranks[s])+rest] = k
	}
	return perm
}

// kronBatch is the number of rows of mode s whose (a a^T) ⊗ M_i addAll
// adds in one pass over the |G| x |G| accumulator (which then streams
// through the cache once per batch instead of once per row; the batch's
// M_i, 8 x 80 KB at rank 10, stay in the core's cache).
const kronBatch = 8

// accumulate adds the data part of the core's normal equations over worker
// w's rows of mode s to acc[w] (sum g g^T, upper triangle) and rhs[w]
// (sum g y, y the value minus the offset).
func (c *coreSampler) accumulate(t *alsTrainer, w int) {
	HH := c.H * c.H
	clear(c.acc[w])
	clear(c.rhs[w])
	batch := c.batch[w][:0]
	for i := c.bounds[w]; i < c.bounds[w+1]; i++ {
		if t.start[c.s][i] == t.start[c.s][i+1] {
			continue
		}
		c.rowGram(t, w, i, c.M[w][len(batch)*HH:(len(batch)+1)*HH])
		batch = append(batch, i)
		if len(batch) == kronBatch {
			c.addKron(c.acc[w], t.m, batch, c.M[w])
			batch = batch[:0]
		}
	}
	if len(batch) > 0 {
		c.addKron(c.acc[w], t.m, batch, c.M[w])
	}
}

// rowGram writes M_i = sum h_e h_e^T over row i of mode s into M (full
// storage) and adds a_i ⊗ sum h_e y_e to rhs[w].
func (c *coreSampler) rowGram(t *alsTrainer, w, i int, M []float64) {
	m, s, H := t.m, c.s, c.H
	r, zc, ys, ws := c.r[w], c.zc[w], c.ys[w], t.work[w]
	clear(M)
	clear(r)
	nb := 0
	for q := t.start[s][i]; q < t.start[s][i+1]; q++ {
		v, pp := t.grouped(s, q, ws.idx)
		c.kron(m, ws.idx, zc, nb)
		ys[nb] = v - t.offsetAt(ws.idx, pp, -1)
		nb++
		if nb == gramBatch {
			gramAdd(M, r, zc, ys, H, nb)
			nb = 0
		}
	}
	if nb > 0 {
		gramAdd(M, r, zc, ys, H, nb)
	}
	for x := 0; x < H; x++ {
		for y := x + 1; y < H; y++ {
			M[y*H+x] = M[x*H+y]
		}
	}
	rhs := c.rhs[w]
	for p, ap := range m.Row(s, i) {
		for x, rx := range r {
			rhs[p*H+x] += ap * rx
		}
	}
}

// kron writes h, the Kronecker product of the entry's rows in the modes
// other than s (row-major), into column e of the gramAdd batch zc.
func (c *coreSampler) kron(m *decomposition.Model, idx []int32, zc []float64, e int) {
	const G = gramBatch
	if m.Order() == 2 {
		for p, x := range m.Row(1-c.s, int(idx[1-c.s])) {
			zc[p*G+e] = x
		}
		return
	}
	u, v := otherModes(c.s)
	fu, fv := m.Row(u, int(idx[u])), m.Row(v, int(idx[v]))
	Rv := len(fv)
	for p, x := range fu {
		for q, y := range fv {
			zc[(p*Rv+q)*G+e] = x * y
		}
	}
}

// addKron adds (a_i a_i^T) ⊗ M_i (upper triangle) to acc for the rows i
// of mode s in rows, M_i the i-th H x H matrix of Ms.
func (c *coreSampler) addKron(acc []float64, m *decomposition.Model, rows []int, Ms []float64) {
	H, n, HH := c.H, c.nG, c.H*c.H
	R := m.Ranks[c.s]
	var f [kronBatch]float64
	for p := 0; p < R; p++ {
		for p2 := p; p2 < R; p2++ {
			for b, i := range rows {
				a := m.Row(c.s, i)
				f[b] = a[p] * a[p2]
			}
			for x := 0; x < H; x++ {
				y0 := 0
				if p2 == p {
					y0 = x
				}
				dst := acc[(p*H+x)*n+p2*H+y0 : (p*H+x)*n+p2*H+H]
				off := x*H + y0
				if len(rows) == kronBatch {
					add8(dst, Ms, &f, off, HH)
					continue
				}
				for b := range rows {
					src := Ms[b*HH+off : b*HH+off+len(dst)]
					fb := f[b]
					for y, v := range src {
						dst[y] += fb * v
					}
				}
			}
		}
	}
}

// add8 adds sum_b f[b] Ms[b*HH+off:][:len(dst)] to dst for a full batch,
// each element of dst loaded and stored once.
func add8(dst, Ms []float64, f *[kronBatch]float64, off, HH int) {
	n := len(dst)
	s0, s1 := Ms[off:off+n], Ms[HH+off:HH+off+n]
	s2, s3 := Ms[2*HH+off:2*HH+off+n], Ms[3*HH+off:3*HH+off+n]
	s4, s5 := Ms[4*HH+off:4*HH+off+n], Ms[5*HH+off:5*HH+off+n]
	s6, s7 := Ms[6*HH+off:6*HH+off+n], Ms[7*HH+off:7*HH+off+n]
	f0, f1, f2, f3, f4, f5, f6, f7 := f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7]
	for y := range dst {
		dst[y] += (f0*s0[y] + f1*s1[y] + f2*s2[y] + f3*s3[y]) + (f4*s4[y] + f5*s5[y] + f6*s6[y] + f7*s7[y])
	}
}

// sampleCore draws the core from its Gaussian conditional, precision
// lambda_g I + alpha sum g g^T and mean its inverse times lambda_g G0 +
// alpha sum g y, then lambda_g from its Gamma conditional (package doc,
// "Gibbs for Tucker").
func (g *gibbsTrainer) sampleCore() error {
	c := g.core
	var wg sync.WaitGroup
	for w := range g.work {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.accumulate(g.alsTrainer, w)
		}()
	}
	wg.Wait()
	n := c.nG
	A, b := c.acc[0], c.rhs[0]
	for w := 1; w < len(c.acc); w++ {
		addTo(A, c.acc[w])
		addTo(b, c.rhs[w])
	}
	lam := c.prec
	if g.cfg.RegCore > 0 {
		lam = g.alpha * g.cfg.RegCore * float64(g.st.NNZ())
	}
	for p := 0; p < n; p++ {
		b[p] = g.alpha*b[p] + lam*c.g0[p]
		row := A[p*n+p : p*n+n]
		for q := range row {
			row[q] *= g.alpha
		}
		row[0] += lam
	}
	if !g.cholUpperRows(A, n) {
		return errors.New("completion: Gibbs core precision not positive definite")
	}
	forwardSolveUpperT(A, b, n)
	for p := range b {
		b[p] += g.rng.NormFloat64()
	}
	backSolveUpper(A, b, n)
	ss := 0.0
	for k, q := range c.perm {
		g.m.Core[q] = b[k]
		d := b[k] - c.g0[k]
		ss += d * d
	}
	if g.cfg.RegCore <= 0 {
		c.prec = sampleGamma(coreA0+float64(n)/2, g.rng) / (coreB0 + ss/2)
	}
	return nil
}

// cholUpperRows is cholUpper (A = U^T U, upper triangle read and
// overwritten) ordered by rows and blocked by four, for the core's large
// system: four rows of U are computed (each updating the other three),
// then every later row is updated by all four at once (contiguous memory,
// each element loaded and stored once per block), those rows split over
// the workers (each row updated by one worker, so the result does not
// depend on scheduling).
func (g *gibbsTrainer) cholUpperRows(A []float64, n int) bool {
	for j0 := 0; j0 < n; j0 += 4 {
		jb := min(4, n-j0)
		for j := j0; j < j0+jb; j++ {
			d := A[j*n+j]
			if !(d > 0) {
				return false
			}
			d = math.Sqrt(d)
			A[j*n+j] = d
			rj := A[j*n+j+1 : j*n+n]
			for k := range rj {
				rj[k] /= d
			}
			for i := j + 1; i < j0+jb; i++ {
				axpyRow(A[i*n+i:i*n+n], A[j*n+i:j*n+n], -A[j*n+i])
			}
		}
		update := func(_, lo, hi int) {
			for i := j0 + jb + lo; i < j0+jb+hi; i++ {
				dst := A[i*n+i : i*n+n]
				if jb < 4 {
					for j := j0; j < j0+jb; j++ {
						axpyRow(dst, A[j*n+i:j*n+n], -A[j*n+i])
					}
					continue
				}
				r0, r1 := A[j0*n+i:j0*n+n], A[(j0+1)*n+i:(j0+1)*n+n]
				r2, r3 := A[(j0+2)*n+i:(j0+2)*n+n], A[(j0+3)*n+i:(j0+3)*n+n]
				r0, r1, r2, r3 = r0[:len(dst)], r1[:len(dst)], r2[:len(dst)], r3[:len(dst)]
				f0, f1, f2, f3 := r0[0], r1[0], r2[0], r3[0]
				for k := range dst {
					dst[k] -= (f0*r0[k] + f1*r1[k]) + (f2*r2[k] + f3*r3[k])
				}
			}
		}
		if rest := n - j0 - jb; rest > 256 {
			g.parallel(rest, 32, update)
		} else {
			update(0, 0, rest)
		}
	}
	return true
}

// axpyRow adds f src to dst (src at least as long as dst).
func axpyRow(dst, src []float64, f float64) {
	src = src[:len(dst)]
	for k, v := range src {
		dst[k] += f * v
	}
}

// coreTable holds, for every row j of mode v of an order-3 Tucker model,
// the core contracted with that row, T_j = G ×_v f_v(j), an Ra x Rb matrix
// over the other two modes a < b. With it an entry's design vector for
// mode a or b and its multilinear value cost Ra Rb operations instead of
// the R^3 of a contraction with the whole core.
type coreTable struct {
	v, a, b int
	T       []float64
}

// build fills t for mode v from the current core and factor rows.
func (t *coreTable) build(tr *alsTrainer, v int) {
	m := tr.m
	t.v = v
	t.a, t.b = otherModes(v)
	Ra, Rb := m.Ranks[t.a], m.Ranks[t.b]
	size := m.Dims[v] * Ra * Rb
	if cap(t.T) < size {
		t.T = make([]float64, size)
	}
	t.T = t.T[:size]
	// Each core position's place in T_j and its index in mode v.
	R1, R2 := m.Ranks[1], m.Ranks[2]
	dst, vi := make([]int, len(m.Core)), make([]int, len(m.Core))
	for k := range m.Core {
		pos := [3]int{k / (R1 * R2), k / R2 % R1, k % R2}
		dst[k], vi[k] = pos[t.a]*Rb+pos[t.b], pos[v]
	}
	tr.parallel(m.Dims[v], 64, func(_, lo, hi int) {
		for j := lo; j < hi; j++ {
			f := m.Row(v, j)
			Tj := t.T[j*Ra*Rb : (j+1)*Ra*Rb]
			clear(Tj)
			for k, gk := range m.Core {
				Tj[dst[k]] += gk * f[vi[k]]
			}
		}
	})
}

// design writes the design vector of the entry at idx for mode mo (a or b
// of the table) into z.
func (t *coreTable) design(m *decomposition.Model, mo int, idx []int32, z []float64) {
	Ra, Rb := m.Ranks[t.a], m.Ranks[t.b]
	Tj := t.T[int(idx[t.v])*Ra*Rb : (int(idx[t.v])+1)*Ra*Rb]
	if mo == t.a {
		fb := m.Row(t.b, int(idx[t.b]))
		for p := 0; p < Ra; p++ {
			s := 0.0
			for x, y := range fb {
				s += Tj[p*Rb+x] * y
			}
			z[p] = s
		}
		return
	}
	fa := m.Row(t.a, int(idx[t.a]))
	clear(z[:Rb])
	for p, ap := range fa {
		row := Tj[p*Rb : p*Rb+Rb]
		for x, y := range row {
			z[x] += ap * y
		}
	}
}

// value is the multilinear term of the entry at idx.
func (t *coreTable) value(m *decomposition.Model, idx []int32) float64 {
	Ra, Rb := m.Ranks[t.a], m.Ranks[t.b]
	Tj := t.T[int(idx[t.v])*Ra*Rb : (int(idx[t.v])+1)*Ra*Rb]
	fa, fb := m.Row(t.a, int(idx[t.a])), m.Row(t.b, int(idx[t.b]))
	s := 0.0
	for p, ap := range fa {
		row := Tj[p*Rb : p*Rb+Rb]
		u := 0.0
		for x, y := range fb {
			u += row[x] * y
		}
		s += ap * u
	}
	return s
}

// tableMode is the mode whose rows the table for sampling mode mo (or,
// with mo = -1, for the multilinear values) contracts: the other mode with
// the fewest rows.
func tableMode(m *decomposition.Model, mo int) int {
	v := -1
	for k, d := range m.Dims {
		if k != mo && (v < 0 || d < m.Dims[v]) {
			v = k
		}
	}
	return v
}
