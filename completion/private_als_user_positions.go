package completion

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/mat"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/perturb"
)

// Public constants of the user unit's position columns
// (userPositionColumns; package doc, "Private ALS, user unit: the
// position columns").
const (
	// ALSUserPositionsMaxItems caps the items for which the user unit's
	// fallback releases the co-occurrence matrix: it is dense, I(I+1)/2
	// values (400 MB at the cap), and its eigenvectors cost I^2 R a
	// subspace iteration. Above the cap the fallback releases the counts
	// and sums alone, as it did before the columns existed.
	ALSUserPositionsMaxItems = 10000
	// ALSUserPositionsEdge is g of the columns' rule: an eigenvector
	// after the first is kept when its eigenvalue exceeds g times 2 sigma
	// sqrt(I), the edge of the spectrum of the released noise alone (a
	// symmetric I x I matrix of independent N(0, sigma^2) entries: the
	// semicircle's edge); it must be at least 1 (leadingEigen). Validation part of MovieLens-100K, user unit
	// (k = 100), epsilon 100: 0.9091 at g = 0.8 and 1 (8 columns), 0.9097
	// at 1.1 (5); eigenvectors just under the edge still carry some of
	// the positions' structure.
	ALSUserPositionsEdge = 1.0
	// ALSUserPositionsShare is the co-occurrence release's share of the
	// fallback's budget, as a share of mu^2 under Gaussian composition
	// (the counts and sums get the rest). Same validation part, epsilon
	// 100 (edge 1.1): 0.9177 / 0.9131 / 0.9097 / 0.9097 / 0.9118 at 0.1 /
	// 0.25 / 0.5 / 0.75 / 1 (at 1 no second release of the counts and
	// sums: it is worth keeping). It must be in (0, 1).
	ALSUserPositionsShare = 0.5
	// ALSUserPositionsGate is tau of the release's gate
	// (userPositionsGate). Same validation part: at epsilon 30, where the
	// edge is 0.029 of the users, the columns lost to the counts and sums
	// alone (0.9264-0.9323 against 0.9249); at 100 (0.013) they won
	// (0.9091 against 0.9182).
	ALSUserPositionsGate = 0.02
	// ALSUserPositionsScale sets the columns' spread: each kept unit
	// eigenvector is scaled to this times the slope column's standard
	// deviation (a unit vector over I items has spread about 1/sqrt(I)).
	// Same validation part, epsilon 100 (noise sd 0.149, eight columns):
	// 0.9143 / 0.9116 / 0.9091 / 0.9089 at 0.25 / 0.35 / 0.5 / 0.7 (the
	// fallback without the columns 0.9182, non-private ALS 0.9018); on the
	// MovieLens-shaped synthetic log, whose positions are random (no
	// structure to find), 0.8237 / 0.8238 / 0.8243 / 0.8253 against 0.8226
	// without. Scaling each column by its eigenvalue (sqrt(lambda_j /
	// lambda_2), or its excess over the edge) was worse: 0.9095-0.9185.
	ALSUserPositionsScale = 0.5
	// ALSUserFallbackFoldRow is the fixed ridge on a user's row and bias
	// when they fold in to the user unit's fallback model (the item rows
	// the free columns and the position columns; no item step ran): the
	// bias mode's penalties with this ridge in place of BiasUserPenalty,
	// as the entry unit's positions stage does (ALSPositionsFoldRow).
	// Post-processing of the release and of the user's own ratings. A
	// user fits a weight on each column, and the bias mode's 10 shrank
	// the weights that real logs carry. Validation parts (user unit, k =
	// 100, epsilon 1 / 3 / 10 / 30 / 100, wherever the fallback ran),
	// ridge 10 / 5 / 3, or 1 plus 0.05 per rating (the item steps'
	// fold-in): Jester5k at 1 and 3 4.2737 / 4.2483 / 4.2400 / 4.2437 and
	// 4.2603 / 4.2338 / 4.2287 / 4.2310; MovieLens-100K 1.0256 / 1.0245 /
	// 1.0239 / 1.0252 at 1 and 0.9312 / 0.9274 / 0.9275 / 0.9310 at 100;
	// ml-latest-small 0.9212 / 0.9204 / 0.9202 / 0.9208 at 1 and 0.8707 /
	// 0.8685 / 0.8676 / 0.8726 at 100; the MovieLens-shaped synthetic
	// log (random positions, no taste in them) 0.8248 / 0.8276 / 0.8313 /
	// 0.8277 at 100; the joke-shaped synthetic log at 1 1.6029 / 1.6065 /
	// 1.6103 / 1.6103; `wide` (k = 50) at 1 and 3 0.8455 / 0.8465 and
	// 0.8430 / 0.8470 (10 / 5). 5 gains on every real log at every
	// epsilon and costs at most 0.004 on the synthetic ones, whose users
	// have no slope or popularity taste; 3 gains a little more on the real
	// logs and costs about twice as much on the synthetic ones.
	ALSUserFallbackFoldRow = 5.0
	// ALSUserPositionsMaxPerUser caps the items a user adds to the
	// co-occurrence when it is read from the log before the contribution
	// bound (PrivateOptions.Unbounded): a user with more contributes a
	// random subset of this many. It bounds the time, n_u^2/2 additions a
	// user, and not the sensitivity (1 at any n_u). Validation part of
	// MovieLens-100K (no user above the cap), k = 100, epsilon 100: 0.9295
	// from every rating against 0.9312 from the k-bounded log (before
	// ALSUserFallbackFoldRow); at k = 200, 0.9275 against 0.9277.
	ALSUserPositionsMaxPerUser = 1000
	// alsUserPositionsIters is the number of subspace iterations.
	alsUserPositionsIters = 40
)

const streamALSUserPositions = 15

// streamALSUserPositionsCap draws the seed of the random subsets of the
// users above ALSUserPositionsMaxPerUser.
const streamALSUserPositionsCap = 17

// alsUserPosWhat names the co-occurrence release in the report.
const alsUserPosWhat = "the users' normalised item co-occurrence C = sum_u p_u p_u^T, p_u = 1/sqrt(n_u) on each item user u rated, n_u at most ALSUserPositionsMaxPerUser (upper triangle, diagonal included; second release, the item steps' share)"

// userPositions are the user unit's position columns: the leading
// eigenvectors, after the first, of the released co-occurrence matrix.
type userPositions struct {
	I, K  int
	cols  []float64 // I x K row-major, unit columns before scaling
	vals  []float64 // the released matrix's leading eigenvalues (all computed)
	sigma float64   // the release's noise sd
	edge  float64   // the rule's threshold, g 2 sigma sqrt(I)
	g     float64
	scale float64 // the columns' spread over the slope column's (ALSUserPositionsScale)
	from  string  // the ratings C was computed from, for the report
	// unbounded says C was computed from PrivateOptions.Unbounded.
	unbounded bool
}

// checkUnbounded refuses an Unbounded store that is not on train's item
// domain: another item count or dictionary, or an entry outside its
// dimensions.
func checkUnbounded(u, train *data.Store) error {
	if u.Order() < 2 || len(u.Idx) < 2 || len(train.Dims) < 2 || u.Dims[1] != train.Dims[1] || len(u.Idx[0]) != len(u.Val) || len(u.Idx[1]) != len(u.Val) {
		return fmt.Errorf("completion: user unit: %w: the unbounded store (PrivateOptions.Unbounded) is not on the training store's item domain (%d items against %d)", ErrDomain, u.Dims[1], train.Dims[1])
	}
	if len(u.Dicts) > 1 && len(train.Dicts) > 1 && u.Dicts[1] != nil && train.Dicts[1] != nil && !u.Dicts[1].Equal(train.Dicts[1]) {
		return fmt.Errorf("completion: user unit: %w: the unbounded store (PrivateOptions.Unbounded) has another item dictionary than the training store", ErrDomain)
	}
	for e := range u.Val {
		if u.Idx[0][e] < 0 || int(u.Idx[0][e]) >= u.Dims[0] || u.Idx[1][e] < 0 || int(u.Idx[1][e]) >= u.Dims[1] {
			return fmt.Errorf("completion: user unit: %w: the unbounded store (PrivateOptions.Unbounded) has entry %d outside its dimensions", ErrDomain, e)
		}
	}
	return nil
}

// userPositionsRun reports whether the user unit's fallback releases the
// co-occurrence matrix at model rank R over I items: when there is a
// column beyond the two free ones and I is at most the cap.
func userPositionsRun(R, I int, p alsPrivateParams) bool {
	return !p.userPosOff && R > ALSFreeColumns && I >= 3 && I <= ALSUserPositionsMaxItems
}

// userPositionsGate reports whether the co-occurrence is released at
// noise sd sigma over I items, and why not: when the noise's spectral
// edge 2 sigma sqrt(I) is at most tau times the released number of users
// n~. C's trace is the number of users (each p_u has unit norm), so an
// eigenvalue above the edge needs a direction that carries at least that
// share of the users' mass; below it the columns would be noise, and
// the budget is better spent on the counts and sums.
func userPositionsGate(sigma float64, I int, users, tau float64) (bool, string) {
	edge := 2 * sigma * math.Sqrt(float64(I))
	if edge <= tau*users {
		return true, ""
	}
	return false, fmt.Sprintf("the users' item co-occurrence is not released: at its noise sd %.4g the noise's spectral edge 2 sigma sqrt(I) = %.4g exceeds %g times the released number of users (%.4g; ALSUserPositionsGate)", sigma, edge, tau, users)
}

// userCooccurrence returns C = sum_u p_u p_u^T over train's users as a
// packed upper triangle (row i holds C[i][i..I-1]); p_u has 1/sqrt(n_u)
// on each of the n_u items user u rated (one rating an item, as the user
// unit's bound leaves them: a repeated item is counted once).
//
// Sensitivity: removing user u removes p_u p_u^T, whose upper triangle
// has n_u diagonal entries and n_u(n_u - 1)/2 others, each 1/n_u: squared
// norm (n_u + 1)/(2 n_u) <= 1, with equality at n_u = 1. The other
// users' vectors do not depend on u, so Delta_2 = 1 for every k.
func userCooccurrence(train *data.Store, I int) []float64 {
	return userCooccurrenceCapped(train, I, 0, 0)
}

// userCooccurrenceCapped is userCooccurrence with each user's distinct
// items cut to a random subset of maxItems when there are more (maxItems
// > 0): a shuffle seeded by seed and a hash of the user's own sorted
// items. A user's subset is then a function of their own items and the
// seed only, so removing a user moves C by exactly their p_u p_u^T for
// every seed: Delta_2 = 1 still.
func userCooccurrenceCapped(train *data.Store, I, maxItems int, seed uint64) []float64 {
	C := make([]float64, I*(I+1)/2)
	by := make([][]int32, train.Dims[0])
	for e, u := range train.Idx[0] {
		by[u] = append(by[u], train.Idx[1][e])
	}
	// Users in index order, so that the sums, and the seeded release, are
	// the same on every run.
	for _, items := range by {
		if len(items) == 0 {
			continue
		}
		slices.Sort(items)
		items = slices.Compact(items) // the bounded log has one rating an item; the unbounded may repeat one
		if maxItems > 0 && len(items) > maxItems {
			h := fnv.New64a()
			var b [4]byte
			for _, i := range items {
				binary.LittleEndian.PutUint32(b[:], uint32(i))
				_, _ = h.Write(b[:])
			}
			r := rand.New(rand.NewPCG(seed, h.Sum64()))
			r.Shuffle(len(items), func(a, b int) { items[a], items[b] = items[b], items[a] })
			items = items[:maxItems]
			slices.Sort(items)
		}
		w := 1 / float64(len(items))
		for a, i := range items {
			row := packedRow(i, I)
			for _, j := range items[a:] {
				C[row+int(j)] += w
			}
		}
	}
	return C
}

// packedRow is the offset such that C[packedRow(i, I) + j] is entry (i,
// j), j >= i, of the packed upper triangle.
func packedRow(i int32, I int) int {
	ii := int(i)
	return ii*I - ii*(ii-1)/2 - ii
}

// packedMulCols returns Y = C X for the packed symmetric C and the I x k
// row-major X.
func packedMulCols(C []float64, I int, X []float64, k int) []float64 {
	Y := make([]float64, I*k)
	for i := 0; i < I; i++ {
		row := packedRow(int32(i), I)
		xi, yi := X[i*k:i*k+k], Y[i*k:i*k+k]
		d := C[row+i]
		for c := range yi {
			yi[c] += d * xi[c]
		}
		for j := i + 1; j < I; j++ {
			v := C[row+j]
			if v == 0 {
				continue
			}
			xj, yj := X[j*k:j*k+k], Y[j*k:j*k+k]
			for c := 0; c < k; c++ {
				yi[c] += v * xj[c]
				yj[c] += v * xi[c]
			}
		}
	}
	return Y
}

// leadingEigen returns k eigenpairs of the packed symmetric C, those of
// largest magnitude (vectors I x k row-major, values decreasing), by
// subspace iteration from a data-independent start, then Rayleigh-Ritz.
// For the released co-occurrence (C positive semi-definite plus noise of
// spectral norm about E = 2 sigma sqrt(I)) every eigenvalue below zero is
// above -E, so every eigenvalue above E (the columns' rule keeps no
// other: ALSUserPositionsEdge >= 1) is among those of largest magnitude.
func leadingEigen(C []float64, I, k int) ([]float64, []float64) {
	rng := rand.New(rand.NewPCG(streamALSUserPositions, 1))
	X := make([]float64, I*k)
	for i := range X {
		X[i] = rng.NormFloat64()
	}
	orthonormalCols(X, I, k)
	for range alsUserPositionsIters {
		Y := packedMulCols(C, I, X, k)
		orthonormalCols(Y, I, k)
		X = Y
	}
	// Rayleigh-Ritz: the eigenpairs of X^T C X.
	Y := packedMulCols(C, I, X, k)
	H := mat.NewSymDense(k, nil)
	for a := 0; a < k; a++ {
		for b := a; b < k; b++ {
			s := 0.0
			for i := 0; i < I; i++ {
				s += X[i*k+a] * Y[i*k+b]
			}
			H.SetSym(a, b, s)
		}
	}
	var es mat.EigenSym
	if !es.Factorize(H, true) {
		return X, make([]float64, k)
	}
	vals := es.Values(nil)
	var W mat.Dense
	es.VectorsTo(&W)
	order := make([]int, k)
	for j := range order {
		order[j] = j
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(vals[b], vals[a]) })
	V := make([]float64, I*k)
	sorted := make([]float64, k)
	for c, j := range order {
		sorted[c] = vals[j]
		for i := 0; i < I; i++ {
			s := 0.0
			for a := 0; a < k; a++ {
				s += X[i*k+a] * W.At(a, j)
			}
			V[i*k+c] = s
		}
	}
	return V, sorted
}

// userPositionColumns releases C (userCooccurrenceCapped) of o.Unbounded,
// every user's ratings at most ALSUserPositionsMaxPerUser items each (the
// bounded train when it is nil), with Gaussian noise sigma at l2 sensitivity 1 (the noise drawn on the
// packed upper triangle and mirrored), and returns its leading
// eigenvectors after the first that the rule keeps: those whose
// eigenvalue exceeds ALSUserPositionsEdge 2 sigma sqrt(I), at most R - 2
// (the free columns take two). Everything after the noise is
// post-processing.
func userPositionColumns(train *data.Store, o *PrivateOptions, R int, sigma, gEdge, scale float64) (*userPositions, error) {
	I := train.Dims[1]
	g, err := perturb.NewGaussianSigma(1, sigma)
	if err != nil {
		return nil, fmt.Errorf("completion: private ALS: %w", err)
	}
	src, from := train, "the k-bounded log"
	if o.Unbounded != nil {
		if err := checkUnbounded(o.Unbounded, train); err != nil {
			return nil, err
		}
		src, from = o.Unbounded, fmt.Sprintf("every rating of each user, not the k-bounded subset (at most %d items a user, a random subset above; PrivateOptions.Unbounded)", ALSUserPositionsMaxPerUser)
	}
	C := userCooccurrenceCapped(src, I, ALSUserPositionsMaxPerUser, rand.New(o.source(streamALSUserPositionsCap)).Uint64())
	g.AddTo(C, rand.New(o.source(streamALSUserPositions)))
	o.observe(alsUserPosWhat, C, nil)
	want := R - ALSFreeColumns
	k := min(want+1+2, I) // the first, the R - 2, and two to speed the convergence
	edge := gEdge * 2 * sigma * math.Sqrt(float64(I))
	V, vals := leadingEigen(C, I, k)
	up := &userPositions{I: I, vals: vals, sigma: sigma, edge: edge, g: gEdge, scale: scale, from: from, unbounded: src != train}
	for j := 1; j < k && up.K < want; j++ {
		if vals[j] <= edge {
			break
		}
		up.K++
	}
	up.cols = make([]float64, I*up.K)
	for i := 0; i < I; i++ {
		for c := 0; c < up.K; c++ {
			up.cols[i*up.K+c] = V[i*k+1+c]
		}
	}
	return up, nil
}

// columns returns the number of position columns up sets (0 for nil).
func (up *userPositions) columns() int {
	if up == nil {
		return 0
	}
	return up.K
}

// apply writes the kept columns into m's item rows after the free
// columns (columns 2 .. 2 + K - 1), each scaled to ALSUserPositionsScale
// times the slope column's standard deviation (a unit vector over I
// items has spread about 1/sqrt(I)).
func (up *userPositions) apply(m *decomposition.Model) {
	if up == nil || up.K == 0 {
		return
	}
	R := m.Ranks[0]
	s := up.scale * columnSD(m.Factors[1], R, 0) * math.Sqrt(float64(up.I))
	for i := 0; i < up.I; i++ {
		for c := 0; c < up.K; c++ {
			m.Factors[1][i*R+ALSFreeColumns+c] = s * up.cols[i*up.K+c]
		}
	}
}

// note states the columns in a report.
func (up *userPositions) note() string {
	shown := up.vals[:min(len(up.vals), up.K+2)]
	kept := "none is kept: the item rows are the free columns and the curve columns (above)"
	if up.K > 0 {
		kept = fmt.Sprintf("%d kept, item columns 3 to %d, each scaled to %g times the slope column's standard deviation (post-processing); each user fits weights of their own on them when folding in", up.K, ALSFreeColumns+up.K, up.scale)
	}
	return fmt.Sprintf("position columns (user unit): %s, computed from %s, released with Gaussian noise sigma %.4g at l2 sensitivity 1 (removing a user removes p_u p_u^T, whose upper triangle has squared norm (n_u + 1)/(2 n_u) <= 1 whatever n_u is); its leading eigenvalues %.4g; of the eigenvectors after the first, those whose eigenvalue exceeds %g x 2 sigma sqrt(I) = %.4g (the noise's spectral edge), at most R - 2: %s", alsUserPosWhat, up.from, up.sigma, shown, up.g, up.edge, kept)
}
