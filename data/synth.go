package data

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
)

// SynthOptions configure Synth. Zero values mean the documented defaults.
type SynthOptions struct {
	// Users, Items are the numbers of users and items to draw from; Times is
	// the number of time buckets (0 makes an order-2 user x item store).
	// Users and items that receive no rating do not appear in the store.
	Users, Items, Times int
	// Ratings is the number of distinct observed cells.
	Ratings int
	// Kind is "cp" (the default) or "tucker".
	Kind string
	// Rank is the CP rank (default 5).
	Rank int
	// Ranks are the Tucker ranks per mode (default 5, 5, 3; the third is
	// ignored for an order-2 store).
	Ranks [3]int
	// Bias adds per-user, per-item and per-time-bucket offsets.
	Bias bool
	// Mean is the global mean rating (0 means 3.5, MovieLens' mean).
	Mean float64
	// Noise is the standard deviation of the Gaussian noise (0: none).
	Noise float64
	// Scale rounds ratings after the noise: "" keeps them continuous, "1-5"
	// rounds to whole stars and "0.5-5" to half stars, then clamps to the
	// scale.
	Scale string
	// Start is the Unix time (seconds) of the first time bucket (0 means
	// 2015-01-01 00:00 UTC); TimeUnit is the bucket width (default day).
	Start    int64
	TimeUnit TimeUnit
	// Skew is the exponent of the Zipf-like popularity of users and items:
	// the k-th most popular (in a random order) is drawn with weight
	// (k+1)^-Skew. 0 draws uniformly.
	Skew float64
	// Choice > 0 draws implicit feedback, a click log whose positions
	// carry the users' tastes: each user's events (their number drawn by
	// user popularity, as Ratings are) are distinct items drawn without
	// replacement with weight popularity(i) x exp(Choice x z(u, i)), z the
	// model's user x item value (item bias plus the low-rank part) over its
	// standard deviation; every value is 1 (Noise and Scale do not apply).
	// It needs Times 0. 0 draws ratings.
	Choice float64
}

// SynthTruth is the model a synthetic log was drawn from, indexed like the
// store (dense indices; users and items that received no rating are
// dropped, time buckets shifted so that bucket 0 is the first observed).
type SynthTruth struct {
	Kind string `json:"kind"`
	// Dims are the store's mode sizes; Ranks the rank of each mode.
	Dims  []int `json:"dims"`
	Ranks []int `json:"ranks"`
	// Factors[m] is the row-major Dims[m] x Ranks[m] factor matrix of mode m.
	Factors [][]float64 `json:"factors"`
	// Core is the row-major Ranks[0] x Ranks[1] (x Ranks[2]) Tucker core
	// (nil for CP).
	Core []float64 `json:"core,omitempty"`
	Mean float64   `json:"mean"`
	// Bias[m][k] is the offset of index k of mode m (nil without biases).
	Bias [][]float64 `json:"bias,omitempty"`
	// Noise is the noise standard deviation and Scale the rounding scale.
	Noise float64 `json:"noise"`
	Scale string  `json:"scale,omitempty"`
	// Clean is the noiseless value of each observation, in store order. It
	// is not written by WriteSynthTruth (recompute it with Value).
	Clean []float64 `json:"-"`
}

// Value returns the noiseless model value at a cell: Mean + the biases +
// the CP sum_r prod_m A_m[i_m, r], or the Tucker contraction of the core
// with the factor rows.
func (t *SynthTruth) Value(idx []int32) float64 {
	v := t.Mean
	for m, b := range t.Bias {
		v += b[idx[m]]
	}
	order := len(t.Dims)
	row := func(m int) []float64 {
		r := t.Ranks[m]
		return t.Factors[m][int(idx[m])*r : (int(idx[m])+1)*r]
	}
	if t.Core == nil {
		a, b := row(0), row(1)
		var c []float64
		if order > 2 {
			c = row(2)
		}
		for r := range a {
			p := a[r] * b[r]
			if c != nil {
				p *= c[r]
			}
			v += p
		}
		return v
	}
	a, b := row(0), row(1)
	if order == 2 {
		q := len(b)
		for p, x := range a {
			for j, y := range b {
				v += t.Core[p*q+j] * x * y
			}
		}
		return v
	}
	c := row(2)
	q, r := len(b), len(c)
	for p, x := range a {
		for j, y := range b {
			g := t.Core[(p*q+j)*r : (p*q+j+1)*r]
			var s float64
			for k, z := range c {
				s += g[k] * z
			}
			v += x * y * s
		}
	}
	return v
}

// Factor scales. The low-rank part is drawn with variance synthLowRankVar
// (so its standard deviation is about 0.71), biases with standard deviation
// 0.4 (users), 0.4 (items) and 0.1 (time): the noiseless ratings then have
// standard deviation about 0.91 and, with the default noise 0.5, about 1.04,
// around the mean 3.5 — the spread of MovieLens ratings (mean 3.5, sd 1.04
// in ml-latest-small).
const synthLowRankVar = 0.5

var synthBiasSD = [3]float64{0.4, 0.4, 0.1}

// synthDefaultStart is 2015-01-01 00:00 UTC.
const synthDefaultStart = 1420070400

// Synth draws a MovieLens-like rating log from a known low-rank model.
//
// Cells are drawn (users and items by popularity, time buckets uniformly)
// until Ratings distinct cells are found; their noiseless values come from
// the model, then Gaussian noise is added and ratings are rounded to the
// scale. The store is ordered by user, then item, then time (like
// MovieLens' ratings.csv); users and items get the integer IDs 1..n in
// order of first appearance, so that their dictionaries are 1..n in natural
// order and a file written from the store loads back identical. Raw time
// stamps (Store.Timestamps) lie inside their buckets, uniformly, so
// re-bucketing reproduces the store.
//
// With Ratings above half of the cells the popularity skew is ignored and
// cells are drawn uniformly without replacement. The result depends only
// on opts and the stream of src.
func Synth(opts SynthOptions, src rand.Source) (*Store, *SynthTruth, error) {
	o, err := synthDefaults(opts)
	if err != nil {
		return nil, nil, err
	}
	r := rand.New(src)
	order := 2
	if o.Times > 0 {
		order = 3
	}
	full := []int{o.Users, o.Items, max(o.Times, 1)}[:order]
	tr := synthDrawTruth(o, full, r)
	cellsOf := synthCells
	if o.Choice > 0 {
		cellsOf = func(o SynthOptions, full []int, r *rand.Rand) ([]uint64, error) {
			tr.Dims = full // Value needs the order
			return synthChoiceCells(o, tr, r)
		}
	}
	keys, err := cellsOf(o, full, r)
	if err != nil {
		return nil, nil, err
	}
	n := len(keys)
	cells := synthDecode(keys, o.Items, full)
	keys = nil
	idx := cells.idx
	// Noiseless values at the original indices.
	tr.Dims = full
	tr.Clean = make([]float64, n)
	cell := make([]int32, order)
	for e := range tr.Clean {
		for m := range cell {
			cell[m] = idx[m][e]
		}
		tr.Clean[e] = tr.Value(cell)
	}
	dims := []int{int(cells.counts[0]), int(cells.counts[1])}
	synthRelabel(tr, idx, cells.relabel, dims)
	s := &Store{Idx: idx, Dicts: make([]*Dict, order)}
	names := [2]string{"userId", "movieId"}
	for m := 0; m < 2; m++ {
		ids := make([]int64, dims[m])
		for i := range ids {
			ids[i] = int64(i) + 1
		}
		if s.Dicts[m], err = DictFromInts(names[m], ids); err != nil {
			return nil, nil, err
		}
	}
	if order == 3 {
		dims = synthShiftTime(s, tr, o, cells.minT, cells.maxT, dims, r)
	}
	s.Dims = dims
	tr.Dims = slices.Clone(dims)
	// Noise and rounding.
	s.Val = make([]float64, n)
	for e, c := range tr.Clean {
		if o.Choice > 0 {
			s.Val[e] = 1
			continue
		}
		v := c
		if o.Noise > 0 {
			v += o.Noise * r.NormFloat64()
		}
		s.Val[e] = synthRound(v, o.Scale)
	}
	return s, tr, nil
}

// synthDrawTruth draws the model parameters at full size: factors, the
// Tucker core and the biases, in that order from r.
func synthDrawTruth(o SynthOptions, full []int, r *rand.Rand) *SynthTruth {
	order := len(full)
	tr := &SynthTruth{Kind: o.Kind, Mean: o.Mean, Noise: o.Noise, Scale: o.Scale}
	tr.Ranks = make([]int, order)
	for m := range tr.Ranks {
		if o.Kind == "cp" {
			tr.Ranks[m] = o.Rank
		} else {
			tr.Ranks[m] = o.Ranks[m]
		}
	}
	coreSize := 1
	for _, k := range tr.Ranks {
		coreSize *= k
	}
	var factorSD float64
	if o.Kind == "cp" {
		// Var(sum_r prod_m a_mr) = R s^(2N) for independent N(0, s^2) entries.
		factorSD = math.Pow(synthLowRankVar/float64(o.Rank), 1/(2*float64(order)))
	} else {
		// Unit factors, core entries N(0, var/|core|): the contraction has
		// variance var.
		factorSD = 1
	}
	tr.Factors = make([][]float64, order)
	for m := range tr.Factors {
		f := make([]float64, full[m]*tr.Ranks[m])
		for i := range f {
			f[i] = factorSD * r.NormFloat64()
		}
		tr.Factors[m] = f
	}
	if o.Kind == "tucker" {
		tr.Core = make([]float64, coreSize)
		sd := math.Sqrt(synthLowRankVar / float64(coreSize))
		for i := range tr.Core {
			tr.Core[i] = sd * r.NormFloat64()
		}
	}
	if o.Bias {
		tr.Bias = make([][]float64, order)
		for m := range tr.Bias {
			b := make([]float64, full[m])
			for i := range b {
				b[i] = synthBiasSD[m] * r.NormFloat64()
			}
			tr.Bias[m] = b
		}
	}
	return tr
}

// synthDecoded are the drawn cells at their original indices, with the
// relabelling of users and items by first appearance and the observed
// time range.
type synthDecoded struct {
	idx        [][]int32
	relabel    [][]int32 // original index -> new index, -1 if unobserved
	counts     [2]int32  // observed users and items
	minT, maxT int32
}

// synthDecode decodes the sorted cell keys (user-major).
func synthDecode(keys []uint64, items int, full []int) synthDecoded {
	order, n := len(full), len(keys)
	d := synthDecoded{idx: make([][]int32, order), relabel: make([][]int32, 2)}
	for m := range d.idx {
		d.idx[m] = make([]int32, n)
	}
	for m := range d.relabel {
		d.relabel[m] = make([]int32, full[m])
		for i := range d.relabel[m] {
			d.relabel[m][i] = -1
		}
	}
	T := uint64(full[len(full)-1])
	if order == 2 {
		T = 1
	}
	d.minT, d.maxT = int32(math.MaxInt32), int32(-1)
	for e, k := range keys {
		t := int32(k % T)
		k /= T
		i := int32(k % uint64(items))
		u := int32(k / uint64(items))
		for m, v := range [2]int32{u, i} {
			if d.relabel[m][v] < 0 {
				d.relabel[m][v] = d.counts[m]
				d.counts[m]++
			}
		}
		d.idx[0][e], d.idx[1][e] = u, i
		if order == 3 {
			d.idx[2][e] = t
			d.minT, d.maxT = min(d.minT, t), max(d.maxT, t)
		}
	}
	return d
}

// synthRelabel reindexes the user and item factors, biases and indices to
// the observed users and items (dims).
func synthRelabel(tr *SynthTruth, idx, relabel [][]int32, dims []int) {
	for m := 0; m < 2; m++ {
		rk := tr.Ranks[m]
		f := make([]float64, dims[m]*rk)
		var b []float64
		if tr.Bias != nil {
			b = make([]float64, dims[m])
		}
		for old, nw := range relabel[m] {
			if nw < 0 {
				continue
			}
			copy(f[int(nw)*rk:], tr.Factors[m][old*rk:(old+1)*rk])
			if b != nil {
				b[nw] = tr.Bias[m][old]
			}
		}
		tr.Factors[m] = f
		if b != nil {
			tr.Bias[m] = b
		}
		for e, v := range idx[m] {
			idx[m][e] = relabel[m][v]
		}
	}
}

// synthShiftTime shifts time so that the first observed bucket is 0, sets
// the store's bucketing and draws a timestamp inside each row's bucket. It
// returns dims with the time mode appended.
func synthShiftTime(s *Store, tr *SynthTruth, o SynthOptions, minT, maxT int32, dims []int, r *rand.Rand) []int {
	idx := s.Idx
	rk := tr.Ranks[2]
	tr.Factors[2] = slices.Clone(tr.Factors[2][int(minT)*rk : int(maxT+1)*rk])
	if tr.Bias != nil {
		tr.Bias[2] = slices.Clone(tr.Bias[2][minT : maxT+1])
	}
	for e := range idx[2] {
		idx[2][e] -= minT
	}
	dims = append(dims, int(maxT-minT+1))
	first := o.TimeUnit.AbsBucket(o.Start) + int64(minT)
	s.Time = &TimeBucketing{Unit: o.TimeUnit, First: first, Count: dims[2]}
	s.Timestamps = make([]int64, len(idx[2]))
	for e, k := range idx[2] {
		start := s.Time.Start(k)
		width := s.Time.Start(k+1) - start
		s.Timestamps[e] = start + r.Int64N(width)
	}
	return dims
}

func synthRound(v float64, scale string) float64 {
	switch scale {
	case "1-5":
		return min(max(math.Round(v), 1), 5)
	case "0.5-5":
		return min(max(math.Round(2*v)/2, 0.5), 5)
	}
	return v
}

func synthDefaults(o SynthOptions) (SynthOptions, error) {
	if o.Kind == "" {
		o.Kind = "cp"
	}
	if o.Rank == 0 {
		o.Rank = 5
	}
	for m, d := range [3]int{5, 5, 3} {
		if o.Ranks[m] == 0 {
			o.Ranks[m] = d
		}
	}
	if o.Mean == 0 {
		o.Mean = 3.5
	}
	if o.Start == 0 {
		o.Start = synthDefaultStart
	}
	if o.TimeUnit == "" {
		o.TimeUnit = TimeDay
	}
	switch {
	case o.Kind != "cp" && o.Kind != "tucker":
		return o, fmt.Errorf("data: synth: unknown kind %q (want cp or tucker)", o.Kind)
	case o.Users < 1 || o.Items < 1 || o.Times < 0 || o.Users > math.MaxInt32 || o.Items > math.MaxInt32 || o.Times > math.MaxInt32:
		return o, fmt.Errorf("data: synth: need users, items >= 1 and times >= 0 (got %d, %d, %d)", o.Users, o.Items, o.Times)
	case o.Ratings < 1:
		return o, fmt.Errorf("data: synth: need at least one rating (got %d)", o.Ratings)
	case o.Rank < 1 || o.Ranks[0] < 1 || o.Ranks[1] < 1 || o.Ranks[2] < 1:
		return o, errors.New("data: synth: ranks must be positive")
	case math.IsNaN(o.Noise) || o.Noise < 0 || math.IsInf(o.Noise, 0):
		return o, fmt.Errorf("data: synth: noise %v must be finite and >= 0", o.Noise)
	case math.IsNaN(o.Mean) || math.IsInf(o.Mean, 0):
		return o, fmt.Errorf("data: synth: mean %v must be finite", o.Mean)
	case math.IsNaN(o.Skew) || o.Skew < 0 || o.Skew > 10:
		return o, fmt.Errorf("data: synth: skew %v must be in [0, 10]", o.Skew)
	case o.Scale != "" && o.Scale != "1-5" && o.Scale != "0.5-5":
		return o, fmt.Errorf("data: synth: unknown scale %q (want \"\", 1-5 or 0.5-5)", o.Scale)
	case o.TimeUnit == TimeNone:
		return o, errors.New("data: synth: time unit none: use times 0 for an order-2 store")
	case math.IsNaN(o.Choice) || o.Choice < 0 || o.Choice > 20:
		return o, fmt.Errorf("data: synth: choice %v must be in [0, 20]", o.Choice)
	case o.Choice > 0 && o.Times != 0:
		return o, errors.New("data: synth: choice (a click log) draws user x item events: use times 0")
	}
	if _, err := ParseTimeUnit(string(o.TimeUnit)); err != nil {
		return o, err
	}
	cells := float64(o.Users) * float64(o.Items) * float64(max(o.Times, 1))
	if cells > 1<<62 {
		return o, fmt.Errorf("data: synth: %g cells are too many", cells)
	}
	if float64(o.Ratings) > cells {
		return o, fmt.Errorf("data: synth: %d ratings do not fit %d x %d x %d = %.0f cells", o.Ratings, o.Users, o.Items, max(o.Times, 1), cells)
	}
	return o, nil
}

// synthCells draws o.Ratings distinct cells, returned as sorted keys
// (user*Items + item)*T + t.
func synthCells(o SynthOptions, full []int, r *rand.Rand) ([]uint64, error) {
	T := uint64(1)
	if o.Times > 0 {
		T = uint64(o.Times)
	}
	cells := uint64(o.Users) * uint64(o.Items) * T
	n := o.Ratings
	if uint64(n) > cells/2 {
		// Dense: a partial Fisher-Yates shuffle of all cells.
		all := make([]uint64, cells)
		for i := range all {
			all[i] = uint64(i)
		}
		for i := 0; i < n; i++ {
			j := i + r.IntN(len(all)-i)
			all[i], all[j] = all[j], all[i]
		}
		keys := all[:n:n]
		slices.Sort(keys)
		return keys, nil
	}
	var users, items *synthAlias
	if o.Skew > 0 {
		users, items = newSynthZipf(o.Users, o.Skew, r), newSynthZipf(o.Items, o.Skew, r)
	}
	draw := func(a *synthAlias, n int) uint64 {
		if a == nil {
			return uint64(r.IntN(n))
		}
		return uint64(a.draw(r))
	}
	keys := make([]uint64, 0, n)
	// Draw, sort, drop repeats; draw again for the missing ones. Popular
	// cells can repeat often under a strong skew, so give up after a while.
	for round := 0; len(keys) < n; round++ {
		if round == 200 {
			return nil, fmt.Errorf("data: synth: could not find %d distinct cells (found %d): lower the skew or the number of ratings", n, len(keys))
		}
		for len(keys) < n {
			u, i := draw(users, o.Users), draw(items, o.Items)
			var t uint64
			if T > 1 {
				t = uint64(r.IntN(int(T)))
			}
			keys = append(keys, (u*uint64(o.Items)+i)*T+t)
		}
		synthRadixSort(keys, cells-1)
		keys = slices.Compact(keys)
	}
	return keys, nil
}

// synthChoiceCells draws the cells of a click log (SynthOptions.Choice):
// o.Ratings user draws by popularity give each user's number of events
// (capped at the catalogue; a capped user's surplus is drawn again), then
// each user's items are drawn without replacement with weight
// popularity(i) x exp(Choice z(u, i)) by Efraimidis and Spirakis' keys
// (the c largest of U^(1/w), computed as log(U)/w): O(Items) time and
// memory per user with events. Keys are sorted (user*Items + item).
func synthChoiceCells(o SynthOptions, tr *SynthTruth, r *rand.Rand) ([]uint64, error) {
	var users *synthAlias
	pop := make([]float64, o.Items)
	for i := range pop {
		pop[i] = 1
	}
	if o.Skew > 0 {
		users = newSynthZipf(o.Users, o.Skew, r)
		perm := r.Perm(o.Items)
		for i, k := range perm {
			pop[i] = math.Pow(float64(k+1), -o.Skew)
		}
	}
	count := make([]int, o.Users)
	for left := o.Ratings; left > 0; {
		u := 0
		if users != nil {
			u = users.draw(r)
		} else {
			u = r.IntN(o.Users)
		}
		if count[u] < o.Items {
			count[u]++
			left--
		}
	}
	// z = (item bias + <a_u, b_i>) / sd, sd the standard deviation of that
	// part under the truth's priors.
	sd := math.Sqrt(synthLowRankVar + synthBiasSD[1]*synthBiasSD[1])
	rk := tr.Ranks[0]
	logw := make([]float64, o.Items)
	keys := make([]float64, o.Items)
	idx := make([]int, o.Items)
	out := make([]uint64, 0, o.Ratings)
	for u, c := range count {
		if c == 0 {
			continue
		}
		a := tr.Factors[0][u*rk : (u+1)*rk]
		for i := range logw {
			v := 0.0
			if tr.Bias != nil {
				v = tr.Bias[1][i]
			}
			if tr.Core == nil {
				b := tr.Factors[1][i*rk : (i+1)*rk]
				for k, x := range a {
					v += x * b[k]
				}
			} else {
				v += tr.Value([]int32{int32(u), int32(i)}) - tr.Mean - tr.userBias(u)
			}
			logw[i] = math.Log(pop[i]) + o.Choice*v/sd
		}
		for i := range keys {
			// log(U)/w = log(U) exp(-log w): larger is more likely chosen.
			keys[i] = math.Log(1-r.Float64()) * math.Exp(-logw[i])
			idx[i] = i
		}
		slices.SortFunc(idx, func(x, y int) int {
			switch {
			case keys[x] > keys[y]:
				return -1
			case keys[x] < keys[y]:
				return 1
			}
			return x - y
		})
		sel := slices.Clone(idx[:c])
		slices.Sort(sel)
		for _, i := range sel {
			out = append(out, uint64(u)*uint64(o.Items)+uint64(i))
		}
	}
	return out, nil
}

// userBias is the user bias of original user u (0 without biases).
func (t *SynthTruth) userBias(u int) float64 {
	if t.Bias == nil {
		return 0
	}
	return t.Bias[0][u]
}

// synthRadixSort sorts keys (all <= maxKey) with a least-significant-digit
// radix sort on 11-bit digits: a few linear passes instead of the
// n log n comparisons of a general sort (10 million keys sort about five
// times faster).
func synthRadixSort(keys []uint64, maxKey uint64) {
	if len(keys) < 1<<12 {
		slices.Sort(keys)
		return
	}
	const bits = 11
	buf := make([]uint64, len(keys))
	src, dst := keys, buf
	var count [1 << bits]int
	for shift := uint(0); shift < 64 && maxKey>>shift != 0; shift += bits {
		clear(count[:])
		for _, k := range src {
			count[(k>>shift)&(1<<bits-1)]++
		}
		sum := 0
		for i, c := range count {
			count[i] = sum
			sum += c
		}
		for _, k := range src {
			d := (k >> shift) & (1<<bits - 1)
			dst[count[d]] = k
			count[d]++
		}
		src, dst = dst, src
	}
	if &src[0] != &keys[0] {
		copy(keys, src)
	}
}

// synthAlias samples a discrete distribution in O(1) (Vose's alias method).
type synthAlias struct {
	prob  []float64
	alias []int32
}

// newSynthZipf returns weights (rank+1)^-s over a random ranking of n.
func newSynthZipf(n int, s float64, r *rand.Rand) *synthAlias {
	perm := r.Perm(n)
	w := make([]float64, n)
	for i, k := range perm {
		w[i] = math.Pow(float64(k+1), -s)
	}
	return newSynthAlias(w)
}

func newSynthAlias(w []float64) *synthAlias {
	n := len(w)
	var sum float64
	for _, x := range w {
		sum += x
	}
	a := &synthAlias{prob: make([]float64, n), alias: make([]int32, n)}
	scaled := make([]float64, n)
	var small, large []int32
	for i, x := range w {
		scaled[i] = x * float64(n) / sum
		if scaled[i] < 1 {
			small = append(small, int32(i))
		} else {
			large = append(large, int32(i))
		}
	}
	for len(small) > 0 && len(large) > 0 {
		l := small[len(small)-1]
		small = small[:len(small)-1]
		g := large[len(large)-1]
		a.prob[l], a.alias[l] = scaled[l], g
		scaled[g] -= 1 - scaled[l]
		if scaled[g] < 1 {
			large = large[:len(large)-1]
			small = append(small, g)
		}
	}
	for _, i := range large {
		a.prob[i], a.alias[i] = 1, i
	}
	for _, i := range small { // rounding leftovers
		a.prob[i], a.alias[i] = 1, i
	}
	return a
}

func (a *synthAlias) draw(r *rand.Rand) int {
	i := r.IntN(len(a.prob))
	if r.Float64() < a.prob[i] {
		return i
	}
	return int(a.alias[i])
}

// DefaultSynthOptions are the options of DefaultSynth: 1000 users x 1700
// items x 200 days (from 2015-01-01), 100,000 ratings, CP rank 5 plus
// biases, noise 0.5, half stars, popularity skew 0.5.
func DefaultSynthOptions() SynthOptions {
	return SynthOptions{
		Users: 1000, Items: 1700, Times: 200, Ratings: 100_000,
		Kind: "cp", Rank: 5, Bias: true, Mean: 3.5, Noise: 0.5, Scale: "0.5-5",
		Start: synthDefaultStart, TimeUnit: TimeDay, Skew: 0.5,
	}
}

// DefaultSynthSeed seeds DefaultSynth (PCG with both words equal to it).
const DefaultSynthSeed = 20260101

// DefaultSynth returns the embedded default rating log that commands use
// when no data file is given: Synth(DefaultSynthOptions()) with the fixed
// seed DefaultSynthSeed, so every run sees the same data.
func DefaultSynth() (*Store, *SynthTruth, error) {
	return Synth(DefaultSynthOptions(), rand.NewPCG(DefaultSynthSeed, DefaultSynthSeed))
}

// WriteSynthTruth writes t as JSON (without Clean).
func WriteSynthTruth(w io.Writer, t *SynthTruth) error {
	enc := json.NewEncoder(w)
	return enc.Encode(t)
}

// ReadSynthTruth reads a truth written by WriteSynthTruth and checks that
// its shapes agree.
func ReadSynthTruth(r io.Reader) (*SynthTruth, error) {
	var t SynthTruth
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&t); err != nil {
		return nil, fmt.Errorf("data: synth truth: %w", err)
	}
	if err := t.check(); err != nil {
		return nil, fmt.Errorf("data: synth truth: %w", err)
	}
	return &t, nil
}

func (t *SynthTruth) check() error {
	order := len(t.Dims)
	if order < 2 || order > 3 || len(t.Ranks) != order || len(t.Factors) != order {
		return fmt.Errorf("inconsistent order: %d dims, %d ranks, %d factors", order, len(t.Ranks), len(t.Factors))
	}
	core := 1
	for m := range t.Dims {
		if t.Dims[m] < 0 || t.Ranks[m] < 1 || len(t.Factors[m]) != t.Dims[m]*t.Ranks[m] {
			return fmt.Errorf("factor %d has %d entries for %d x %d", m, len(t.Factors[m]), t.Dims[m], t.Ranks[m])
		}
		core *= t.Ranks[m]
	}
	switch t.Kind {
	case "cp":
		if t.Core != nil {
			return errors.New("a CP truth has no core")
		}
		for _, r := range t.Ranks {
			if r != t.Ranks[0] {
				return fmt.Errorf("CP ranks differ: %v", t.Ranks)
			}
		}
	case "tucker":
		if len(t.Core) != core {
			return fmt.Errorf("core has %d entries, want %d", len(t.Core), core)
		}
	default:
		return fmt.Errorf("unknown kind %q", t.Kind)
	}
	if t.Bias != nil {
		if len(t.Bias) != order {
			return fmt.Errorf("%d bias vectors for %d modes", len(t.Bias), order)
		}
		for m, b := range t.Bias {
			if len(b) != t.Dims[m] {
				return fmt.Errorf("bias %d has %d entries for %d", m, len(b), t.Dims[m])
			}
		}
	}
	return nil
}
