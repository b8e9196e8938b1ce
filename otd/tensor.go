package otd

import (
	"fmt"
	"math"

	"github.com/dprec/dprec/internal/packed"
	"gonum.org/v1/gonum/mat"
)

// MaxDenseBytes caps the memory a dense D x D x D SymTensor may take
// (2 GiB by default: D <= 645). NewSymTensor refuses larger tensors; use
// the whitened moment path (STMWhitenedM3, LDAWhitenedM3, MoGWhitenedM3),
// which never forms D^3 entries, for large vocabularies. Set it before use;
// it is not synchronised.
var MaxDenseBytes int64 = 2 << 30

// SymTensor is a dense symmetric third-order tensor of side D stored
// row-major: entry (i,j,k) is Data[(i*D+j)*D+k]. Symmetry (invariance under
// every permutation of (i,j,k)) is maintained by every constructor and
// method of this package; code that writes Data directly must keep it.
// A SymTensor is not safe for concurrent mutation.
type SymTensor struct {
	D    int
	Data []float64
}

// NewSymTensor returns a zero D x D x D tensor. It returns an error for
// d < 1 or when D^3 float64 values would exceed MaxDenseBytes.
func NewSymTensor(d int) (*SymTensor, error) {
	if d < 1 {
		return nil, fmt.Errorf("otd: tensor dimension %d must be positive", d)
	}
	if err := checkDense(d); err != nil {
		return nil, err
	}
	return &SymTensor{D: d, Data: make([]float64, d*d*d)}, nil
}

func checkDense(d int) error {
	fd := float64(d)
	need := fd * fd * fd * 8
	if need > float64(MaxDenseBytes) {
		return fmt.Errorf("otd: a dense %d x %d x %d tensor needs %.1f GiB, above the %.1f GiB cap (otd.MaxDenseBytes): use the whitened path (non-private, agn-whitened for stm, lda-whitened for lda) or a smaller public vocabulary",
			d, d, d, need/(1<<30), float64(MaxDenseBytes)/(1<<30))
	}
	return nil
}

// At returns entry (i,j,k).
func (t *SymTensor) At(i, j, k int) float64 { return t.Data[(i*t.D+j)*t.D+k] }

// Clone returns a deep copy.
func (t *SymTensor) Clone() *SymTensor {
	return &SymTensor{D: t.D, Data: append([]float64(nil), t.Data...)}
}

// Add adds other to t in place. It panics if the sides differ.
func (t *SymTensor) Add(other *SymTensor) {
	if other.D != t.D {
		panic(fmt.Sprintf("otd: Add of side %d to side %d", other.D, t.D))
	}
	for i, v := range other.Data {
		t.Data[i] += v
	}
}

// Scale multiplies every entry by s.
func (t *SymTensor) Scale(s float64) {
	for i := range t.Data {
		t.Data[i] *= s
	}
}

// AddRankOne adds w * v (x) v (x) v. It panics if len(v) != D.
func (t *SymTensor) AddRankOne(w float64, v []float64) {
	d := t.D
	if len(v) != d {
		panic("otd: AddRankOne length mismatch")
	}
	for i := 0; i < d; i++ {
		wi := w * v[i]
		for j := 0; j < d; j++ {
			wij := wi * v[j]
			row := t.Data[(i*d+j)*d : (i*d+j)*d+d]
			for k, vk := range v {
				row[k] += wij * vk
			}
		}
	}
}

// FrobeniusNorm returns sqrt(sum of squared entries).
func (t *SymTensor) FrobeniusNorm() float64 {
	var s float64
	for _, v := range t.Data {
		s += v * v
	}
	return math.Sqrt(s)
}

// TIuu writes T(I,u,u)_i = sum_jk T_ijk u_j u_k into dst (allocated when
// nil or too short) and returns it. It panics if len(u) != D.
func (t *SymTensor) TIuu(u, dst []float64) []float64 {
	d := t.D
	if len(u) != d {
		panic("otd: TIuu length mismatch")
	}
	if len(dst) < d {
		dst = make([]float64, d)
	}
	dst = dst[:d]
	for i := 0; i < d; i++ {
		var s float64
		for j := 0; j < d; j++ {
			row := t.Data[(i*d+j)*d : (i*d+j)*d+d]
			var r float64
			for k, uk := range u {
				r += row[k] * uk
			}
			s += r * u[j]
		}
		dst[i] = s
	}
	return dst
}

// Tuuu returns T(u,u,u) = sum_ijk T_ijk u_i u_j u_k. It panics if
// len(u) != D.
func (t *SymTensor) Tuuu(u []float64) float64 {
	v := t.TIuu(u, nil)
	var s float64
	for i, x := range v {
		s += x * u[i]
	}
	return s
}

// MultilinearGeneral returns T(V1,V2,V3)_{abc} = sum_ijk T_ijk V1_ia V2_jb
// V3_kc as a dense row-major slice of shape K1 x K2 x K3 (not necessarily
// symmetric), with the three shapes. It panics if a V has not D rows.
func (t *SymTensor) MultilinearGeneral(V1, V2, V3 *mat.Dense) (out []float64, k1, k2, k3 int) {
	d := t.D
	r1, c1 := V1.Dims()
	r2, c2 := V2.Dims()
	r3, c3 := V3.Dims()
	if r1 != d || r2 != d || r3 != d {
		panic("otd: MultilinearGeneral row mismatch")
	}
	// Contract the last mode: A[i][j][c] = sum_k T_ijk V3_kc  (D^3 K3 flops).
	a := make([]float64, d*d*c3)
	v3 := V3.RawMatrix()
	for ij := 0; ij < d*d; ij++ {
		row := t.Data[ij*d : ij*d+d]
		dst := a[ij*c3 : ij*c3+c3]
		for k, tv := range row {
			if tv == 0 {
				continue
			}
			vr := v3.Data[k*v3.Stride : k*v3.Stride+c3]
			for c, x := range vr {
				dst[c] += tv * x
			}
		}
	}
	// Contract the middle mode: B[i][b][c] = sum_j A[i][j][c] V2_jb.
	b := make([]float64, d*c2*c3)
	v2 := V2.RawMatrix()
	for i := 0; i < d; i++ {
		for j := 0; j < d; j++ {
			src := a[(i*d+j)*c3 : (i*d+j)*c3+c3]
			vr := v2.Data[j*v2.Stride : j*v2.Stride+c2]
			for bb, x := range vr {
				if x == 0 {
					continue
				}
				dst := b[(i*c2+bb)*c3 : (i*c2+bb)*c3+c3]
				for c, s := range src {
					dst[c] += x * s
				}
			}
		}
	}
	// Contract the first mode: out[a][b][c] = sum_i V1_ia B[i][b][c].
	out = make([]float64, c1*c2*c3)
	v1 := V1.RawMatrix()
	m := c2 * c3
	for i := 0; i < d; i++ {
		src := b[i*m : i*m+m]
		vr := v1.Data[i*v1.Stride : i*v1.Stride+c1]
		for aa, x := range vr {
			if x == 0 {
				continue
			}
			dst := out[aa*m : aa*m+m]
			for q, s := range src {
				dst[q] += x * s
			}
		}
	}
	return out, c1, c2, c3
}

// Multilinear returns T(W,W,W), a symmetric K x K x K tensor, for W of
// shape D x K. Cost O(D^3 K + D^2 K^2 + D K^3). It panics if W has not D
// rows.
func (t *SymTensor) Multilinear(W *mat.Dense) *SymTensor {
	out, k, _, _ := t.MultilinearGeneral(W, W, W)
	r := &SymTensor{D: k, Data: out}
	r.Symmetrize() // remove rounding asymmetry
	return r
}

// Symmetrize replaces t by the average of its six index permutations.
func (t *SymTensor) Symmetrize() {
	d := t.D
	for i := 0; i < d; i++ {
		for j := i; j < d; j++ {
			for k := j; k < d; k++ {
				idx := [6]int{(i*d+j)*d + k, (i*d+k)*d + j, (j*d+i)*d + k, (j*d+k)*d + i, (k*d+i)*d + j, (k*d+j)*d + i}
				var s float64
				for _, x := range idx {
					s += t.Data[x]
				}
				s /= 6
				for _, x := range idx {
					t.Data[x] = s
				}
			}
		}
	}
}

// PackedLen returns D_sym = C(D+2,3), the number of unique entries of a
// symmetric D x D x D tensor (the layout of the module's internal/packed).
func PackedLen(d int) int { return packed.Len(d) }

// Packed returns the C(D+2,3) unique entries T_ijk with i <= j <= k in
// lexicographic order ((0,0,0), (0,0,1), ..., (0,0,D-1), (0,1,1), ...), the
// order of perturb.SymmetricTensorFromPacked.
func (t *SymTensor) Packed() []float64 { return packed.Pack(t.D, t.Data) }

// FromPacked builds the symmetric tensor whose unique entries (order of
// Packed) are b. It returns an error if len(b) != C(d+2,3) or the dense
// tensor would exceed MaxDenseBytes.
func FromPacked(d int, b []float64) (*SymTensor, error) {
	if err := packed.Check("otd", d, len(b)); err != nil {
		return nil, err
	}
	t, err := NewSymTensor(d)
	if err != nil {
		return nil, err
	}
	packed.Unpack(d, b, t.Data)
	return t, nil
}

// packedIndex is packed.Index under the method name the accumulators of
// this package use (at, for i <= j <= k).
type packedIndex struct{ packed.Index }

func newPackedIndex(d int) packedIndex { return packedIndex{packed.NewIndex(d)} }

func (p packedIndex) at(i, j, k int) int { return p.Index.At(i, j, k) }
