package otd

import (
	"fmt"

	"github.com/dprec/dprec/data"
	"gonum.org/v1/gonum/mat"
)

// m3Accum accumulates the LDA / single-topic third moment (alpha0 = 0) in a
// projected space of dimension dim: either the whitened space (W is D x K,
// documents are projected to c~ = W^T c) or the word space itself (W nil,
// documents stay sparse). The per-document estimator of DeCarolis et al. 2020 eq. 8 and
// the U-statistic corrections of Lemma 25 are expanded so that everything
// is a sum of
//
//	sum_n beta_n c~_n^(x)3                        (cube, K^3/6 per document)
//	sum_i g_i w_i^(x)3                            (per-word scalar g)
//	sym3 sum_i w_i (x) w_i (x) h_i                (per-word K-vector h)
//	sym3 Q (x) S, S^(x)3                          (global terms)
//
// with w_i the i-th row of W and sym3 the sum of the three placements of
// the single factor, which gives O(nnz K + N K^3 + D K^3) work.
type m3Accum struct {
	W   *mat.Dense // nil: identity (word space)
	dim int
	pi  packedIndex
	p3  []float64 // packed accumulator
	h   []float64 // D x dim
	g   []float64 // D
	e2  []float64 // dim x dim: sum_n Z_n (whitened per-document E[x1 x2])
	y2  []float64 // dim x dim: sum_n y_n y_n^T
	s   []float64 // dim: sum_n y_n
	ct  []float64 // scratch: c~
	idx []int     // scratch: support of c~
	// wt, when set (single-topic model only), multiplies document n's
	// contribution by wt[n] (0 skips it: the clipping of (S10)); nDiv,
	// when positive, replaces N as the normaliser.
	wt   []float64
	nDiv float64
}

func newM3Accum(W *mat.Dense, d int) *m3Accum {
	dim := d
	if W != nil {
		_, dim = W.Dims()
	}
	return &m3Accum{W: W, dim: dim, pi: newPackedIndex(dim), p3: make([]float64, PackedLen(dim)),
		h: make([]float64, d*dim), g: make([]float64, d), e2: make([]float64, dim*dim),
		y2: make([]float64, dim*dim), s: make([]float64, dim), ct: make([]float64, dim)}
}

// project sets a.ct (dense) and a.idx (support) for the count vector.
func (a *m3Accum) project(ws, cs []int32) {
	a.idx = a.idx[:0]
	if a.W == nil {
		for i, w := range ws {
			a.ct[w] = float64(cs[i])
			a.idx = append(a.idx, int(w))
		}
		return
	}
	for k := range a.ct {
		a.ct[k] = 0
	}
	raw := a.W.RawMatrix()
	for i, w := range ws {
		x := float64(cs[i])
		row := raw.Data[int(w)*raw.Stride : int(w)*raw.Stride+a.dim]
		for k, v := range row {
			a.ct[k] += x * v
		}
	}
	for k := 0; k < a.dim; k++ {
		a.idx = append(a.idx, k)
	}
}

func (a *m3Accum) clearCt() {
	if a.W == nil {
		for _, i := range a.idx {
			a.ct[i] = 0
		}
	}
}

// addCube adds beta * c~^(x)3 over the sorted support.
func (a *m3Accum) addCube(beta float64) {
	idx, ct, p3, pi := a.idx, a.ct, a.p3, a.pi
	for x, i := range idx {
		bi := beta * ct[i]
		oi := pi.OffI[i] - pi.OffJ[i]
		for y := x; y < len(idx); y++ {
			j := idx[y]
			bij := bi * ct[j]
			base := oi + pi.OffJ[j] - j
			for _, k := range idx[y:] {
				p3[base+k] += bij * ct[k]
			}
		}
	}
}

// addOuter adds beta * c~ c~^T to m (upper triangle over the support).
func (a *m3Accum) addOuter(m []float64, beta float64) {
	for x, i := range a.idx {
		bi := beta * a.ct[i]
		row := m[i*a.dim:]
		for _, j := range a.idx[x:] {
			row[j] += bi * a.ct[j]
		}
	}
}

// run accumulates the corpus for concentration alpha0 (0: single topic)
// and returns the packed M3 in the projected space.
func (a *m3Accum) run(c *data.Corpus, alpha0 float64, prog ProgressFunc) []float64 {
	N := float64(c.NumDocs())
	if a.nDiv > 0 {
		N = a.nDiv
	}
	d := c.V()
	_, bc, cc := ldaCoef(alpha0)
	u2 := 0.0
	u3 := 0.0
	if alpha0 != 0 {
		u2 = 1 / (N * (N - 1))
		u3 = 1 / (N * (N - 1) * (N - 2))
	}
	g2 := make([]float64, d) // per-word diag weights of Z_n
	for n := 0; n < c.NumDocs(); n++ {
		ws, cs := c.Doc(n)
		l := float64(c.DocLen(n))
		beta3 := 1 / (l * (l - 1) * (l - 2)) // E3 per document
		if a.wt != nil {
			if a.wt[n] == 0 {
				prog.report("third moment", n+1, c.NumDocs())
				continue
			}
			beta3 *= a.wt[n]
		}
		beta2 := 1 / (l * l * (l - 1)) // Z_n (x) y_n
		beta1 := 1 / (l * l * l)       // y_n^(x)3
		a.project(ws, cs)
		// cube coefficient: E3/N + 3 b' beta2 u2 + 2 c beta1 u3 (see doc).
		a.addCube(beta3/N + 3*bc*beta2*u2 + 2*cc*beta1*u3)
		gamma := -beta3/N - bc*beta2*u2
		for p, w := range ws {
			x := float64(cs[p])
			a.g[w] += 2 * beta3 / N * x
			g2[w] += x / (l * (l - 1))
			hr := a.h[int(w)*a.dim : int(w)*a.dim+a.dim]
			for _, k := range a.idx {
				hr[k] += gamma * x * a.ct[k]
			}
		}
		a.addOuter(a.e2, 1/(l*(l-1)))
		if alpha0 != 0 {
			a.addOuter(a.y2, 1/(l*l))
			for _, k := range a.idx {
				a.s[k] += a.ct[k] / l
			}
		}
		a.clearCt()
		prog.report("third moment", n+1, c.NumDocs())
	}
	// e2 -= sum_i g2_i w_i w_i^T (diagonal part of Z_n); then symmetrise
	// both matrices from their upper triangles.
	a.subWW(a.e2, g2)
	fillLower(a.e2, a.dim)
	fillLower(a.y2, a.dim)
	a.addWWW(a.g)
	a.addWWH()
	if alpha0 != 0 {
		// -b' u2 sym3(E2sum (x) S) - c u3 sym3(Y2 (x) S) + c u3 S^(x)3
		q := make([]float64, a.dim*a.dim)
		for i := range q {
			q[i] = -bc*u2*a.e2[i] - cc*u3*a.y2[i]
		}
		a.addSymMatVec(q, a.s)
		a.idx = a.idx[:0]
		for k := 0; k < a.dim; k++ {
			a.idx = append(a.idx, k)
		}
		copy(a.ct, a.s)
		a.addCube(cc * u3)
	}
	return a.p3
}

func fillLower(m []float64, d int) {
	for i := 0; i < d; i++ {
		for j := i + 1; j < d; j++ {
			m[j*d+i] = m[i*d+j]
		}
	}
}

// wrow returns row i of W (nil in identity mode).
func (a *m3Accum) wrow(i int) []float64 {
	raw := a.W.RawMatrix()
	return raw.Data[i*raw.Stride : i*raw.Stride+a.dim]
}

// subWW subtracts sum_i g_i w_i w_i^T from the upper triangle of m.
func (a *m3Accum) subWW(m, g []float64) {
	for i, gi := range g {
		if gi == 0 {
			continue
		}
		if a.W == nil {
			m[i*a.dim+i] -= gi
			continue
		}
		w := a.wrow(i)
		for x := 0; x < a.dim; x++ {
			row := m[x*a.dim:]
			for y := x; y < a.dim; y++ {
				row[y] -= gi * w[x] * w[y]
			}
		}
	}
}

// addWWW adds sum_i g_i w_i^(x)3.
func (a *m3Accum) addWWW(g []float64) {
	for i, gi := range g {
		if gi == 0 {
			continue
		}
		if a.W == nil {
			a.p3[a.pi.at(i, i, i)] += gi
			continue
		}
		w := a.wrow(i)
		for x := 0; x < a.dim; x++ {
			for y := x; y < a.dim; y++ {
				f := gi * w[x] * w[y]
				base := a.pi.at(x, y, y) - y
				for z := y; z < a.dim; z++ {
					a.p3[base+z] += f * w[z]
				}
			}
		}
	}
}

// addWWH adds sym3 sum_i w_i (x) w_i (x) h_i: entry (x,y,z) gets
// sum_i w_ix w_iy h_iz + w_ix h_iy w_iz + h_ix w_iy w_iz.
func (a *m3Accum) addWWH() {
	dim := a.dim
	d := len(a.g)
	if a.W == nil {
		// w_i = e_i: entry {i,i,j} (i != j) gets h_i[j], entry {i,i,i} 3 h_i[i].
		for i := 0; i < d; i++ {
			hr := a.h[i*dim : i*dim+dim]
			for j, v := range hr {
				if v == 0 {
					continue
				}
				switch {
				case j == i:
					a.p3[a.pi.at(i, i, i)] += 3 * v
				case j < i:
					a.p3[a.pi.at(j, i, i)] += v
				default:
					a.p3[a.pi.at(i, i, j)] += v
				}
			}
		}
		return
	}
	for i := 0; i < d; i++ {
		hr := a.h[i*dim : i*dim+dim]
		w := a.wrow(i)
		for x := 0; x < dim; x++ {
			for y := x; y < dim; y++ {
				wxy := w[x] * w[y]
				hx, hy := hr[x], hr[y]
				wx, wy := w[x], w[y]
				base := a.pi.at(x, y, y) - y
				for z := y; z < dim; z++ {
					a.p3[base+z] += wxy*hr[z] + (wx*hy+hx*wy)*w[z]
				}
			}
		}
	}
}

// addSymMatVec adds sym3(Q (x) s): entry (x,y,z) += Q_xy s_z + Q_xz s_y + Q_yz s_x.
func (a *m3Accum) addSymMatVec(q, s []float64) {
	dim := a.dim
	for x := 0; x < dim; x++ {
		for y := x; y < dim; y++ {
			for z := y; z < dim; z++ {
				a.p3[a.pi.at(x, y, z)] += q[x*dim+y]*s[z] + q[x*dim+z]*s[y] + q[y*dim+z]*s[x]
			}
		}
	}
}

// whitenedM3 computes M3(W,W,W) for alpha0 (0: single topic).
func whitenedM3(c *data.Corpus, W *mat.Dense, alpha0 float64, prog ProgressFunc) (*SymTensor, error) {
	d, k := W.Dims()
	if d != c.V() {
		return nil, fmt.Errorf("otd: whitening matrix has %d rows, vocabulary has %d words", d, c.V())
	}
	a := newM3Accum(W, d)
	p := a.run(c, alpha0, prog)
	return FromPacked(k, p)
}

// denseMoments returns the dense D x D M2 and D x D x D M3 for alpha0.
func denseMoments(c *data.Corpus, alpha0 float64, prog ProgressFunc) (*mat.SymDense, *SymTensor, error) {
	d := c.V()
	if err := checkDense(d); err != nil {
		return nil, nil, err
	}
	M2 := secondMoment(c, alpha0)
	a := newM3Accum(nil, d)
	p := a.run(c, alpha0, prog)
	M3, err := FromPacked(d, p)
	if err != nil {
		return nil, nil, err
	}
	return M2, M3, nil
}
