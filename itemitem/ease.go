package itemitem

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/models"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack/lapack64"
)

// Defaults of Settings.
const (
	// DefaultMaxItems bounds the closed form's catalogue: gonum's Cholesky
	// inversion of 2,500 items takes a few seconds on one core (the
	// default lambda search fits B eight times), 50 MB.
	DefaultMaxItems = 2500
	// DefaultValidationFraction of each validation user's items is held
	// out to choose lambda.
	DefaultValidationFraction = 0.2
	// DefaultValidationUsers bounds the users scored on validation.
	DefaultValidationUsers = 5000
	// DefaultSeed seeds the validation hold-out.
	DefaultSeed = 1
	// ValidationK is the cut-off of the validation NDCG.
	ValidationK = 10
)

// Settings configure Train. The zero value means the documented defaults.
type Settings struct {
	// Lambda > 0 is the ridge penalty; 0 chooses it on validation.
	Lambda float64 `json:"lambda,omitempty"`
	// MaxItems bounds the items of the closed form (0: DefaultMaxItems;
	// negative: every item).
	MaxItems int `json:"max_items,omitempty"`
	// ValidationFraction (0: DefaultValidationFraction) and
	// ValidationUsers (0: DefaultValidationUsers) shape the hold-out
	// that chooses lambda; Seed (0: DefaultSeed) draws it.
	ValidationFraction float64 `json:"validation_fraction,omitempty"`
	ValidationUsers    int     `json:"validation_users,omitempty"`
	Seed               uint64  `json:"seed,omitempty"`
	// Threads building the Gram matrix and scoring validation users
	// (0: GOMAXPROCS); gonum's LAPACK (the inversion) schedules its own
	// goroutines over GOMAXPROCS.
	Threads int `json:"threads,omitempty"`
	// MaxMemory in bytes bounds a fit's estimate (0: the machine's
	// physical memory; negative: no limit).
	MaxMemory float64 `json:"-"`
	// Note, when set, receives progress messages.
	Note func(string) `json:"-"`
}

func (s Settings) resolved() (Settings, error) {
	if s.Lambda < 0 || math.IsNaN(s.Lambda) || math.IsInf(s.Lambda, 0) {
		return s, fmt.Errorf("itemitem: lambda %g must be positive and finite (0: choose on validation)", s.Lambda)
	}
	if s.MaxItems == 0 {
		s.MaxItems = DefaultMaxItems
	}
	if s.ValidationFraction == 0 {
		s.ValidationFraction = DefaultValidationFraction
	}
	if !(s.ValidationFraction > 0 && s.ValidationFraction < 1) {
		return s, fmt.Errorf("itemitem: validation fraction %g: want a fraction in (0, 1)", s.ValidationFraction)
	}
	if s.ValidationUsers == 0 {
		s.ValidationUsers = DefaultValidationUsers
	}
	if s.ValidationUsers < 0 {
		return s, fmt.Errorf("itemitem: validation users %d must be positive", s.ValidationUsers)
	}
	if s.Seed == 0 {
		s.Seed = DefaultSeed
	}
	if s.Threads <= 0 {
		s.Threads = runtime.GOMAXPROCS(0)
	}
	return s, nil
}

// GridPoint is one lambda tried on validation and its NDCG@10.
type GridPoint struct {
	Lambda float64 `json:"lambda"`
	NDCG   float64 `json:"ndcg10"`
}

// Result is a trained item-item model and how it was chosen.
type Result struct {
	// Lambda is the penalty of the saved weights; Chosen says it was
	// chosen on validation (Grid), not given.
	Lambda float64     `json:"lambda"`
	Chosen bool        `json:"chosen_on_validation"`
	Grid   []GridPoint `json:"grid,omitempty"`
	// PopularityNDCG is most-popular's NDCG@10 on the same validation.
	PopularityNDCG float64 `json:"validation_popularity_ndcg10,omitempty"`
	// ValidationUsers and ValidationPairs are the held-out users and
	// (user, item) pairs.
	ValidationUsers int `json:"validation_users,omitempty"`
	ValidationPairs int `json:"validation_pairs,omitempty"`
	// Items is the closed form's catalogue, Catalogue every item.
	Items     int `json:"items"`
	Catalogue int `json:"catalogue"`
	// Settings are the resolved settings.
	Settings Settings `json:"settings"`
	// Weights (B over the model's items) and Seen (every user's distinct
	// training items) make the model.
	Weights *models.ItemWeights `json:"-"`
	Seen    *models.Exclusions  `json:"-"`
}

// TooLargeError refuses a fit whose memory estimate exceeds the limit.
type TooLargeError struct {
	Items       int
	Need, Limit float64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("itemitem: the closed form over %d items needs about %s (8 n^2 bytes for X^T X, inverted in place, 30 n^2 for the sparse weights and the model file), more than the %s allowed: lower the items of the closed form (--max-items: the most popular items keep their weights) or train a factor model (--objective implicit)",
		e.Items, data.FormatBytes(int64(e.Need)), data.FormatBytes(int64(e.Limit)))
}

// ErrTooLarge is matched by errors.Is on a *TooLargeError.
var ErrTooLarge = errors.New("itemitem: catalogue too large for the closed form")

// Is reports whether target is ErrTooLarge.
func (e *TooLargeError) Is(target error) bool { return target == ErrTooLarge }

// Estimate is the memory in bytes of a fit of the closed form over items
// items for a log of pairs distinct (user, item) pairs and users users:
// the Gram matrix, inverted in place (8 n^2), the sparse weights (12 n^2:
// an int32 column and a float64 value each), their encoding and the model
// file in memory (9 n^2 each at most), and the histories.
func Estimate(items, users, pairs int) float64 {
	n := float64(items)
	return 8*n*n + 12*n*n + 18*n*n + 16*float64(pairs) + 8*float64(users)
}

func memoryLimit(s Settings) float64 {
	switch {
	case s.MaxMemory < 0:
		return math.Inf(1)
	case s.MaxMemory > 0:
		return s.MaxMemory
	}
	if m := data.PhysicalMemory(); m > 0 {
		return float64(m)
	}
	return 1 << 46
}

// Train fits EASE on the (user, item) pairs of st (values and any time
// mode are ignored: an event is a positive), choosing lambda on a
// validation part of st when s.Lambda is 0.
func Train(ctx context.Context, st *data.Store, s Settings) (*Result, error) {
	s, err := s.resolved()
	if err != nil {
		return nil, err
	}
	if st.Order() < 2 || st.NNZ() == 0 {
		return nil, errors.New("itemitem: an empty training log")
	}
	U, J := st.Dims[0], st.Dims[1]
	seen, err := models.SeenFromStore(st, U, J)
	if err != nil {
		return nil, err
	}
	h := histories{ptr: make([]int64, U+1)}
	for u := 0; u < U; u++ {
		h.items = append(h.items, seen.Items(int32(u))...)
		h.ptr[u+1] = int64(len(h.items))
	}
	cat := catalogue(h, J, s.MaxItems)
	res := &Result{Items: len(cat), Catalogue: J, Settings: s, Seen: seen}
	if lim := memoryLimit(s); Estimate(len(cat), U, len(h.items)) > lim {
		return nil, &TooLargeError{Items: len(cat), Need: Estimate(len(cat), U, len(h.items)), Limit: lim}
	}
	note := func(format string, a ...any) {
		if s.Note != nil {
			s.Note(fmt.Sprintf(format, a...))
		}
	}
	if len(cat) < J {
		note("EASE: the closed form covers the %d items with the most users of %d (--max-items); the others get no weights", len(cat), J)
	}
	res.Lambda = s.Lambda
	if s.Lambda == 0 {
		if err := chooseLambda(ctx, h, J, cat, s, res, note); err != nil {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	b, err := fit(h, J, cat, res.Lambda, s.Threads)
	if err != nil {
		return nil, err
	}
	res.Weights, err = weights(b, cat, J)
	return res, err
}

// File returns the model file of r for its training store (dictionaries,
// seen items, weights; the header's settings, history and data
// fingerprint). The caller sets Created and Software.
func (r *Result) File(st *data.Store) (*models.File, error) {
	f, err := models.NewItemItemFile(st.Dicts[0], st.Dicts[1], r.Seen, r.Weights)
	if err != nil {
		return nil, err
	}
	if f.Header.Settings, err = json.Marshal(r); err != nil {
		return nil, err
	}
	f.Header.Data = models.Fingerprint(st)
	return f, nil
}

// histories is a users x items binary matrix in CSR form (sorted items).
type histories struct {
	ptr   []int64
	items []int32
}

func (h histories) users() int { return len(h.ptr) - 1 }

func (h histories) of(u int) []int32 { return h.items[h.ptr[u]:h.ptr[u+1]] }

// catalogue returns the items of the closed form, sorted: every item with
// a user when they are at most max (max < 0: no bound), else the max items
// with the most users (ties by lower index).
func catalogue(h histories, J, max int) []int32 {
	sup := make([]int, J)
	for _, j := range h.items {
		sup[j]++
	}
	var cat []int32
	for j, n := range sup {
		if n > 0 {
			cat = append(cat, int32(j))
		}
	}
	if max < 0 || len(cat) <= max {
		return cat
	}
	slices.SortStableFunc(cat, func(a, b int32) int { return sup[b] - sup[a] })
	cat = cat[:max]
	slices.Sort(cat)
	return cat
}

// fit returns EASE's B over the items cat (sorted item indices) for the
// histories h over J items: a dense len(cat) x len(cat) row-major matrix,
// B[a][b] the weight of item cat[a] in a history toward item cat[b].
func fit(h histories, J int, cat []int32, lambda float64, threads int) ([]float64, error) {
	g := gram(h, J, cat, threads)
	if err := ClosedForm(g, len(cat), lambda); err != nil {
		return nil, err
	}
	return g, nil
}

// gram returns the upper triangle (row-major, n x n, n = len(cat)) of
// X^T X restricted to the items cat: entry (a, b), a <= b, counts the users
// with both cat[a] and cat[b]. Workers own interleaved rows.
func gram(h histories, J int, cat []int32, threads int) []float64 {
	n := len(cat)
	pos := make([]int32, J)
	for j := range pos {
		pos[j] = -1
	}
	for a, j := range cat {
		pos[j] = int32(a)
	}
	g := make([]float64, n*n)
	threads = max(1, min(threads, n))
	var wg sync.WaitGroup
	for w := 0; w < threads; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var p []int32
			for u := 0; u < h.users(); u++ {
				p = p[:0]
				for _, j := range h.of(u) {
					if a := pos[j]; a >= 0 {
						p = append(p, a) // ascending: h and cat are sorted
					}
				}
				for x, a := range p {
					if int(a)%threads != w {
						continue
					}
					row := g[int(a)*n : int(a)*n+n]
					for _, b := range p[x:] {
						row[b]++
					}
				}
			}
		}()
	}
	wg.Wait()
	return g
}

// ClosedForm turns the upper triangle of the Gram matrix g (n x n,
// row-major; the strict lower triangle is ignored) into EASE's B in place:
// P = (g + lambda I)^-1 by Cholesky factorisation and inversion, then
// B_ij = -P_ij / P_jj for i != j and B_jj = 0 (see the package doc).
func ClosedForm(g []float64, n int, lambda float64) error {
	if !(lambda > 0) || math.IsInf(lambda, 0) {
		return fmt.Errorf("itemitem: lambda %g must be positive and finite", lambda)
	}
	if len(g) != n*n {
		return fmt.Errorf("itemitem: Gram matrix of %d entries for %d items", len(g), n)
	}
	if n == 0 {
		return nil
	}
	for i := 0; i < n; i++ {
		g[i*n+i] += lambda
	}
	if _, ok := lapack64.Potrf(blas64.Symmetric{Uplo: blas.Upper, N: n, Stride: n, Data: g}); !ok {
		return errors.New("itemitem: X^T X + lambda I is not positive definite (lambda too small for the arithmetic)")
	}
	if _, ok := lapack64.Potri(blas64.Triangular{Uplo: blas.Upper, Diag: blas.NonUnit, N: n, Stride: n, Data: g}); !ok {
		return errors.New("itemitem: the Cholesky factor of X^T X + lambda I is singular")
	}
	d := make([]float64, n)
	for j := range d {
		d[j] = g[j*n+j]
	}
	for i := 0; i < n; i++ {
		for j := 0; j < i; j++ {
			g[i*n+j] = g[j*n+i] // the lower triangle from the upper
		}
	}
	for i := 0; i < n; i++ {
		row := g[i*n : i*n+n]
		for j := range row {
			row[j] = -row[j] / d[j]
		}
		row[i] = 0
	}
	return nil
}

// weights turns the dense B over cat into the sparse weights over all J
// items (rows and columns outside cat empty; zeros are not stored).
func weights(b []float64, cat []int32, J int) (*models.ItemWeights, error) {
	n := len(cat)
	ptr := make([]int64, J+1)
	nnz := 0
	for _, v := range b {
		if v != 0 {
			nnz++
		}
	}
	cols := make([]int32, 0, nnz)
	vals := make([]float64, 0, nnz)
	a := 0
	for j := 0; j < J; j++ {
		if a < n && cat[a] == int32(j) {
			for c, v := range b[a*n : a*n+n] {
				if v != 0 {
					cols = append(cols, cat[c])
					vals = append(vals, v)
				}
			}
			a++
		}
		ptr[j+1] = int64(len(cols))
	}
	return models.NewItemWeights(J, ptr, cols, vals)
}

// chooseLambda carves the validation part, fits the grid and sets
// res.Lambda, res.Grid and the validation figures.
func chooseLambda(ctx context.Context, h histories, J int, cat []int32, s Settings, res *Result, note func(string, ...any)) error {
	tr, val := holdOut(h, s)
	if len(val) == 0 {
		return errors.New("itemitem: no user has two items to hold one out: give the penalty (--lambda)")
	}
	res.Chosen = true
	res.ValidationUsers = len(val)
	for _, v := range val {
		res.ValidationPairs += len(v.held)
	}
	// The scale: the mean number of users per fitted item.
	var c float64
	pos := make(map[int32]bool, len(cat))
	for _, j := range cat {
		pos[j] = true
	}
	for _, j := range tr.items {
		if pos[j] {
			c++
		}
	}
	c = max(c/float64(max(1, len(cat))), 1)
	res.PopularityNDCG = popularityNDCG(tr, J, val)
	score := func(lambda float64) (float64, error) {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		b, err := fit(tr, J, cat, lambda, s.Threads)
		if err != nil {
			return 0, err
		}
		v := validationNDCG(b, cat, J, tr, val, s.Threads)
		res.Grid = append(res.Grid, GridPoint{Lambda: lambda, NDCG: v})
		note("EASE: lambda %.4g: validation NDCG@%d %.4f", lambda, ValidationK, v)
		return v, nil
	}
	best, bestV := 0.0, math.Inf(-1)
	for k := -2; k <= 2; k++ {
		l := c * math.Pow(10, float64(k))
		v, err := score(l)
		if err != nil {
			return err
		}
		if v > bestV {
			best, bestV = l, v
		}
	}
	for _, l := range []float64{best / math.Sqrt(10), best * math.Sqrt(10)} {
		v, err := score(l)
		if err != nil {
			return err
		}
		if v > bestV {
			best, bestV = l, v
		}
	}
	slices.SortFunc(res.Grid, func(a, b GridPoint) int { return cmpF(a.Lambda, b.Lambda) })
	res.Lambda = best
	note("EASE: chose lambda %.4g (validation NDCG@%d %.4f; most-popular %.4f) on %d held-out pairs of %d users; refitting on every event", best, ValidationK, bestV, res.PopularityNDCG, res.ValidationPairs, res.ValidationUsers)
	return nil
}

func cmpF(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// valUser is a validation user: index and held-out items (sorted).
type valUser struct {
	u    int
	held []int32
}

// holdOut draws up to s.ValidationUsers users with at least two items and
// holds out a fraction of each one's items (at least one, at least one
// left); it returns the remaining histories and the held-out users.
func holdOut(h histories, s Settings) (histories, []valUser) {
	rng := rand.New(rand.NewPCG(s.Seed, 0x6561736521))
	var cand []int
	for u := 0; u < h.users(); u++ {
		if len(h.of(u)) >= 2 {
			cand = append(cand, u)
		}
	}
	rng.Shuffle(len(cand), func(a, b int) { cand[a], cand[b] = cand[b], cand[a] })
	cand = cand[:min(len(cand), s.ValidationUsers)]
	slices.Sort(cand)
	held := make(map[int][]int32, len(cand))
	var val []valUser
	for _, u := range cand {
		items := slices.Clone(h.of(u))
		k := min(max(1, int(math.Round(s.ValidationFraction*float64(len(items))))), len(items)-1)
		rng.Shuffle(len(items), func(a, b int) { items[a], items[b] = items[b], items[a] })
		out := slices.Clone(items[:k])
		slices.Sort(out)
		held[u] = out
		val = append(val, valUser{u: u, held: out})
	}
	tr := histories{ptr: make([]int64, h.users()+1)}
	for u := 0; u < h.users(); u++ {
		for _, j := range h.of(u) {
			if out, ok := held[u]; ok {
				if _, found := slices.BinarySearch(out, j); found {
					continue
				}
			}
			tr.items = append(tr.items, j)
		}
		tr.ptr[u+1] = int64(len(tr.items))
	}
	return tr, val
}

// ndcg is NDCG@k of list against the sorted relevant items.
func ndcg(list []int32, rel []int32, k int) float64 {
	dcg, idcg := 0.0, 0.0
	for r, j := range list {
		if _, ok := slices.BinarySearch(rel, j); ok {
			dcg += 1 / math.Log2(float64(r+2))
		}
	}
	for r := 0; r < min(k, len(rel)); r++ {
		idcg += 1 / math.Log2(float64(r+2))
	}
	if idcg == 0 {
		return 0
	}
	return dcg / idcg
}

// topK returns the k best items by score (ties by lower index), leaving
// out the sorted items ex.
func topK(score func(j int) float64, J, k int, ex []int32) []int32 {
	list := make([]int32, 0, k+1)
	sc := make([]float64, 0, k+1)
	for j := 0; j < J; j++ {
		s := score(j)
		if len(list) == k && !(s > sc[k-1]) {
			continue
		}
		if _, found := slices.BinarySearch(ex, int32(j)); found {
			continue
		}
		i := len(list)
		for i > 0 && s > sc[i-1] {
			i--
		}
		list = slices.Insert(list, i, int32(j))
		sc = slices.Insert(sc, i, s)
		if len(list) > k {
			list, sc = list[:k], sc[:k]
		}
	}
	return list
}

// validationNDCG is the mean NDCG@10 of the validation users ranked by B
// (over cat) from their remaining histories in tr.
func validationNDCG(b []float64, cat []int32, J int, tr histories, val []valUser, threads int) float64 {
	n := len(cat)
	pos := make([]int32, J)
	for j := range pos {
		pos[j] = -1
	}
	for a, j := range cat {
		pos[j] = int32(a)
	}
	sums := make([]float64, threads)
	var wg sync.WaitGroup
	for w := 0; w < threads; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := make([]float64, n)
			for i := w; i < len(val); i += threads {
				clear(s)
				hist := tr.of(val[i].u)
				for _, j := range hist {
					if a := pos[j]; a >= 0 {
						for c, v := range b[int(a)*n : int(a)*n+n] {
							s[c] += v
						}
					}
				}
				list := topK(func(j int) float64 {
					if a := pos[j]; a >= 0 {
						return s[a]
					}
					return 0
				}, J, ValidationK, hist)
				sums[w] += ndcg(list, val[i].held, ValidationK)
			}
		}()
	}
	wg.Wait()
	t := 0.0
	for _, v := range sums {
		t += v
	}
	return t / float64(len(val))
}

// popularityNDCG is most-popular's validation NDCG@10 (popularity from tr).
func popularityNDCG(tr histories, J int, val []valUser) float64 {
	sup := make([]float64, J)
	for _, j := range tr.items {
		sup[j]++
	}
	t := 0.0
	for _, v := range val {
		t += ndcg(topK(func(j int) float64 { return sup[j] }, J, ValidationK, tr.of(v.u)), v.held, ValidationK)
	}
	return t / float64(len(val))
}
