package completion

// ADD/REMOVE-ONE-USER PRIVACY for the billboard modes (bias and als,
// Unit = UnitUser). Neighbouring logs differ by adding or removing ONE
// user together with all of that user's ratings; every user contributes
// at most k = MaxRatingsPerUser ratings, at most one per item
// (BoundUserContributions). Nothing user-specific may then be released:
// no user rows or biases, no user dictionary, no number of ratings or of
// users without noise, and the item and time domains must not depend on
// who is in the log. This file fixes those domains from public inputs
// (RestrictToDomain: an item catalogue and a time range) or selects the
// items privately (SelectItems); private_bias.go and private_als.go
// release the noisy statistics. The sensitivities are derived in the
// package doc (Sensitivities, "User unit").

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/perturb"
)

// UserDomain is the public domain of a user-level release: what the
// add/remove-one-user relation treats as public.
type UserDomain struct {
	// Items is the public item catalogue: the model's item mode is exactly
	// this dictionary, whoever is in the log. Required by
	// RestrictToDomain (SelectItems builds one privately instead).
	Items *data.Dict
	// Time is the public time range of an order-3 log, in buckets: the
	// model's time mode is exactly these buckets. Required for order-3
	// stores, ignored for order 2.
	Time *data.TimeBucketing
}

// DomainDrops counts the training rows RestrictToDomain dropped. They are
// functions of the private log: the curator may read them, the model file
// and the privacy report never carry them.
type DomainDrops struct {
	// Items: rows whose item is not in the catalogue.
	Items int
	// Time: rows whose time bucket lies outside the public range.
	Time int
	// Users: users left with no row.
	Users int
}

// ErrDomain is wrapped by the errors of RestrictToDomain and SelectItems
// (no catalogue, no time range, empty result).
var ErrDomain = errors.New("completion: user-level domain")

// TimeRange returns the public time bucketing of unit u covering the Unix
// times [from, to] (inclusive, whole buckets).
func TimeRange(u data.TimeUnit, from, to int64) (*data.TimeBucketing, error) {
	if u == data.TimeNone {
		return nil, fmt.Errorf("%w: time unit none has no time range", ErrDomain)
	}
	if to < from {
		return nil, fmt.Errorf("%w: time range ends (%d) before it starts (%d)", ErrDomain, to, from)
	}
	a, b := u.AbsBucket(from), u.AbsBucket(to)
	if b-a+1 > int64(u.MaxBuckets()) {
		return nil, fmt.Errorf("%w: time range of %d %s buckets exceeds the largest time mode (%d)", ErrDomain, b-a+1, u, u.MaxBuckets())
	}
	return &data.TimeBucketing{Unit: u, First: a, Count: int(b - a + 1)}, nil
}

// RestrictToDomain re-indexes train onto the public domain d: item j of the
// result is d.Items' item j, time bucket k is d.Time's bucket k, and rows
// outside the domain are dropped and counted. Users keep train's indices
// (they are internal: grouped for contribution bounding, never released).
// The map is a per-row filter with public parameters, so it needs no
// budget. Item IDs are matched by value (an integer catalogue matches
// integer or decimal-string IDs).
func RestrictToDomain(train *data.Store, d UserDomain) (*data.Store, DomainDrops, error) {
	var dr DomainDrops
	if train == nil || train.Order() < 2 || len(train.Dicts) < 2 || train.Dicts[1] == nil {
		return nil, dr, fmt.Errorf("%w: the training store has no item dictionary", ErrDomain)
	}
	if d.Items == nil || d.Items.Len() == 0 {
		return nil, dr, fmt.Errorf("%w: empty or missing public item catalogue (give one, or select items privately)", ErrDomain)
	}
	order := train.Order()
	if order == 3 && (d.Time == nil || d.Time.Count < 1) {
		return nil, dr, fmt.Errorf("%w: an order-3 log needs a public time range (or a 2-way store)", ErrDomain)
	}
	if order == 3 && (train.Time == nil || train.Time.Unit != d.Time.Unit) {
		return nil, dr, fmt.Errorf("%w: the public time range must use the store's time unit", ErrDomain)
	}
	itemMap := catalogueMap(train.Dicts[1], d.Items)
	keep := make([]int, 0, train.NNZ())
	out := &data.Store{Dims: append([]int(nil), train.Dims...), Idx: make([][]int32, order)}
	out.Dims[1] = d.Items.Len()
	for e := range train.Val {
		j := itemMap[train.Idx[1][e]]
		if j < 0 {
			dr.Items++
			continue
		}
		k := int32(0)
		if order == 3 {
			abs := train.Time.First + int64(train.Idx[2][e])
			if abs < d.Time.First || abs >= d.Time.First+int64(d.Time.Count) {
				dr.Time++
				continue
			}
			k = int32(abs - d.Time.First)
		}
		keep = append(keep, e)
		out.Idx[0] = append(out.Idx[0], train.Idx[0][e])
		out.Idx[1] = append(out.Idx[1], j)
		if order == 3 {
			out.Idx[2] = append(out.Idx[2], k)
		}
		out.Val = append(out.Val, train.Val[e])
	}
	before, after := usersWithRows(train.Idx[0], train.Dims[0]), usersWithRows(out.Idx[0], train.Dims[0])
	dr.Users = before - after
	if len(keep) == 0 {
		return nil, dr, fmt.Errorf("%w: no training row lies in the public domain (%d rows of unlisted items, %d outside the time range)", ErrDomain, dr.Items, dr.Time)
	}
	out.Dicts = make([]*data.Dict, order)
	out.Dicts[0], out.Dicts[1] = train.Dicts[0], d.Items
	if order == 3 {
		out.Dims[2] = d.Time.Count
		tb := *d.Time
		out.Time = &tb
	}
	if train.Timestamps != nil {
		out.Timestamps = make([]int64, len(keep))
		for i, e := range keep {
			out.Timestamps[i] = train.Timestamps[e]
		}
	}
	return out, dr, nil
}

// catalogueMap maps every item index of from to its index in cat (-1 if
// absent).
func catalogueMap(from, cat *data.Dict) []int32 {
	m := make([]int32, from.Len())
	for i := range m {
		m[i] = -1
		var j int32
		ok := false
		switch {
		case !from.IsString && !cat.IsString:
			j, ok = cat.LookupInt(from.Int(int32(i)))
		case cat.IsString:
			j, ok = cat.LookupString(from.String(int32(i)))
		default:
			if v, err := strconv.ParseInt(from.String(int32(i)), 10, 64); err == nil {
				j, ok = cat.LookupInt(v)
			}
		}
		if ok {
			m[i] = j
		}
	}
	return m
}

func usersWithRows(users []int32, n int) int {
	seen := make([]bool, n)
	c := 0
	for _, u := range users {
		if !seen[u] {
			seen[u] = true
			c++
		}
	}
	return c
}

// BoundUserContributions returns the positions of a subset of train in
// which every user keeps at most one rating per item (chosen uniformly at
// random among that user's ratings of the item, which an order-3 log may
// hold in several time buckets) and at most k ratings in all (a uniformly
// random subset), and the store restricted to them. The choice depends on
// the user's own rows and the draws it takes from src. With one shared
// stream, removing a user shifts the draws of the users after it, so for a
// fixed seed other users' kept rows can change; but every user's kept
// subset is uniform and independent of the others' whoever else is in the
// log, so the bounded logs of two neighbours can be coupled to differ in
// the removed user's rows only, and the user-level sensitivities hold for
// the bounded log. Positions are
// returned in increasing order; k must be >= 1.
func BoundUserContributions(train *data.Store, k int, src rand.Source) (*data.Store, []int, error) {
	r, byUser, err := rowsByUser("BoundUserContributions", train, k, src)
	if err != nil {
		return nil, nil, err
	}
	var keep []int
	item := func(e int) int32 { return train.Idx[1][e] }
	for _, es := range byUser {
		keep = ChooseUserRatings(keep, es, item, k, r)
	}
	slices.Sort(keep)
	return train.Subset(keep), keep, nil
}

// ChooseUserRatings is the per-user step of the user unit's contribution
// bounding (BoundUserContributions, and the group-by-user step of the
// Beam pipelines): it shuffles rows, one user's ratings as the caller
// numbers them, in place with r (always, whatever their number, so a
// shared stream advances the same way), then scans them and keeps a row
// whose item (item(row)) was not kept before, until k are kept. The kept
// rows are appended to dst in shuffled order: a uniformly random subset of
// at most k ratings, one per item, each item's rating uniform among the
// user's ratings of it. Whether it is reproducible is r's: a caller whose
// rows come in no fixed order (a GroupByKey iterable) must sort them
// first.
func ChooseUserRatings(dst, rows []int, item func(row int) int32, k int, r *rand.Rand) []int {
	r.Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
	seen := make(map[int32]bool, len(rows))
	n := 0
	for _, e := range rows {
		if n == k {
			break
		}
		if i := item(e); !seen[i] {
			seen[i] = true
			dst = append(dst, e)
			n++
		}
	}
	return dst
}

// UserBoundSource returns the random source of the contribution bounding
// of the user keyed by key, for bounding done user by user where no
// storage order exists (a distributed group-by-user step): with seeded
// noise a stream that is a function of (seed, key) only
// (perturb.Noise.KeyedSource; NOT private), the same however the users
// are split among workers; with secure noise a secure source (create one
// per worker and reuse it: secure draws need no key).
func UserBoundSource(n perturb.Noise, key uint64) rand.Source {
	return n.KeyedSource(streamBound, key)
}

// checkUserContributions verifies the bound of BoundUserContributions. It
// sorts one 8-byte (user, item) key per rating rather than filling a map,
// so that checking a large log costs 8 bytes a rating.
func checkUserContributions(train *data.Store, k int) error {
	cnt := make([]int, train.Dims[0])
	for _, u := range train.Idx[0] {
		if cnt[u]++; cnt[u] > k {
			return fmt.Errorf("%w: user index %d has more than %d ratings; bound contributions first (BoundUserContributions / --max-ratings-per-user)", ErrUserBound, u, k)
		}
	}
	keys := make([]uint64, len(train.Idx[0]))
	for e, u := range train.Idx[0] {
		keys[e] = uint64(uint32(u))<<32 | uint64(uint32(train.Idx[1][e]))
	}
	slices.Sort(keys)
	for i := 1; i < len(keys); i++ {
		if keys[i] == keys[i-1] {
			return fmt.Errorf("%w: user index %d has two ratings of one item; bound contributions first (BoundUserContributions / --max-ratings-per-user)", ErrUserBound, keys[i]>>32)
		}
	}
	return nil
}

// ItemSelection is the result of SelectItems.
type ItemSelection struct {
	// Items holds the selected items' IDs in increasing order (numeric for
	// integer IDs, bytewise for strings): a public catalogue for
	// RestrictToDomain whose order is a function of the selected set only,
	// never of the log's file order.
	Items *data.Dict
	// Release records the selection (its own epsilon and delta).
	Release perturb.Release
	// Threshold is tau, on the weighted counts.
	Threshold float64
}

// SelectionDeltaShare is the share of the selection's delta spent on the
// Gaussian noise of the weighted counts; the rest bounds the chance that
// an item only the added user rated is selected.
const SelectionDeltaShare = 0.5

// SelectItems selects the item domain of a user-level release from the
// log itself, by weighted Gaussian thresholding (Gopi, Gulhane, Kulkarni,
// Shen, Shokouhi and Yekhanin, "Differentially Private Set Union", ICML
// 2020; Google's Gaussian partition selection): every user u of the
// bounded log (BoundUserContributions: n_u <= k distinct items) adds
// 1/sqrt(n_u) to each item they rated, so one user's vector has l2 norm 1;
// W~_i = W_i + N(0, sigma^2) and item i is kept when W~_i > tau. The
// candidates are exactly the items with W_i > 0, the items the bounded
// store rates: the store's item dictionary may also list items whose
// every rating was dropped (by the contribution bound, the time range or
// a held-out split), and such an item is absent from a neighbour without
// its raters, so it must never be a candidate (a user with M unique items
// would otherwise bring M - k zero-weight candidates, each kept with
// probability 1 - Phi(tau/sigma), and the leak would grow with M). Sigma is
// calibrated to (epsilon, SelectionDeltaShare delta) at l2 sensitivity 1
// (analytic Gaussian) and tau so that an item that only the added user
// rated is kept with probability at most the rest of delta: with m items
// of weight 1/sqrt(m), P(any kept) = 1 - Phi((tau - 1/sqrt(m))/sigma)^m,
// maximised over m = 1..k. Only the set of kept items is released (the
// weighted counts are not), as a dictionary sorted by ID: the order is a
// function of the set (post-processing), while the store's dictionary
// order is that of first appearance in the private file. The budget is
// the selection's own; it composes with the training's by basic
// composition.
func SelectItems(train *data.Store, k int, b perturb.Budget, noise perturb.Noise) (*ItemSelection, error) {
	if err := b.Validate(); err != nil {
		return nil, fmt.Errorf("completion: item selection: %w", err)
	}
	if err := perturb.CheckPositiveDelta(b.Delta); err != nil {
		return nil, fmt.Errorf("completion: item selection: %w", err)
	}
	if train == nil || train.Order() < 2 || len(train.Dicts) < 2 || train.Dicts[1] == nil {
		return nil, fmt.Errorf("%w: the training store has no item dictionary", ErrDomain)
	}
	if err := checkUserContributions(train, k); err != nil {
		return nil, fmt.Errorf("completion: item selection: %w", err)
	}
	g, err := perturb.NewGaussian(1, b.Epsilon, SelectionDeltaShare*b.Delta, perturb.Analytic)
	if err != nil {
		return nil, fmt.Errorf("completion: item selection: %w", err)
	}
	sigma := g.Sigma()
	tau := selectionThreshold(sigma, k, (1-SelectionDeltaShare)*b.Delta)
	nu := make([]int, train.Dims[0])
	for _, u := range train.Idx[0] {
		nu[u]++
	}
	w := make([]float64, train.Dims[1])
	for e, u := range train.Idx[0] {
		w[train.Idx[1][e]] += 1 / math.Sqrt(float64(nu[u]))
	}
	src := train.Dicts[1]
	cand := selectionCandidates(w, src)
	noisy := make([]float64, len(cand))
	for c, i := range cand {
		noisy[c] = w[i]
	}
	g.AddTo(noisy, rand.New(noise.Source(streamSelect)))
	var dict *data.Dict
	if src.IsString {
		dict = data.NewStringDict(src.Name)
	} else {
		dict = data.NewIntDict(src.Name)
	}
	for c, i := range cand {
		if noisy[c] <= tau {
			continue
		}
		if src.IsString {
			dict.InternString(src.String(i))
		} else {
			dict.InternInt(src.Int(i))
		}
	}
	if dict.Len() == 0 {
		return nil, fmt.Errorf("%w: private item selection kept no item (threshold %.4g on weighted counts, noise sigma %.4g; the threshold grows with k = %d ratings per user): give a public catalogue (--items), a larger selection budget (--selection-epsilon, or a larger --epsilon) or a smaller --max-ratings-per-user", ErrDomain, tau, sigma, k)
	}
	rel := g.Release(fmt.Sprintf("item selection: weighted user counts (each user 1/sqrt(n_u) per rated item) above tau = %.4g", tau))
	rel.Delta = b.Delta
	rel.Derivation = fmt.Sprintf("one user's weight vector has l2 norm 1 (n_u <= %d distinct items); Gaussian part delta %.3g, threshold part delta %.3g: an item rated only by the added user is kept with probability <= max_m 1 - Phi((tau - 1/sqrt(m))/sigma)^m (completion.SelectItems)", k, SelectionDeltaShare*b.Delta, (1-SelectionDeltaShare)*b.Delta)
	return &ItemSelection{Items: dict, Release: rel, Threshold: tau}, nil
}

// selectionCandidates returns the item indices with positive weight
// (items the bounded store rates), sorted by their IDs in src (numeric or
// bytewise), the public order of the released dictionary.
func selectionCandidates(w []float64, src *data.Dict) []int32 {
	var cand []int32
	for i, v := range w {
		if v > 0 {
			cand = append(cand, int32(i))
		}
	}
	if src.IsString {
		slices.SortFunc(cand, func(a, b int32) int { return strings.Compare(src.String(a), src.String(b)) })
	} else {
		slices.SortFunc(cand, func(a, b int32) int { return cmp.Compare(src.Int(a), src.Int(b)) })
	}
	return cand
}

// selectionThreshold returns the smallest tau (to 1e-9 relative) with
// max_{m=1..k} 1 - Phi((tau - 1/sqrt(m))/sigma)^m <= delta
// (selectionLeak).
func selectionThreshold(sigma float64, k int, delta float64) float64 {
	leak := func(tau float64) float64 { return selectionLeak(tau, sigma, k) }
	lo, hi := 1.0, 1+sigma
	for leak(hi) > delta {
		hi = 1 + 2*(hi-1)
	}
	for hi-lo > 1e-9*hi {
		mid := (lo + hi) / 2
		if leak(mid) > delta {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

// selectionLeakLeaf is the length of the ranges of m that selectionLeak
// evaluates point by point.
const selectionLeakLeaf = 64

// selectionLeak returns max_{m=1..k} f(m), f(m) = 1 - Phi((tau -
// 1/sqrt(m))/sigma)^m: the largest chance that one of the m items only the
// added user rated is kept, over the number m <= k of such items.
//
// It is the maximum of the same function over the same m as a loop over
// m = 1..k, found in time about logarithmic in k rather than linear: a
// branch and bound over ranges of m, pruning a range [lo, hi] whose upper
// bound 1 - Phi(z(lo))^hi, z(m) = (tau - 1/sqrt(m))/sigma, is at most the
// best value found (z grows with m, so Phi(z(m))^m >= Phi(z(lo))^hi on the
// range), and evaluating ranges of selectionLeakLeaf points one by one. A
// pruned range cannot hold a larger f, so the threshold, and with it the
// released distribution and its (epsilon, delta), are those of the loop
// over every m; only the time differs (issue 24 item 8: --privacy-unit user
// --max-ratings-per-user 1000000000000 without --items never finished).
// k cannot be clamped to the log's number of items instead: the added
// user's items need not be in the log, and the log's item count is
// private.
//
// Phi(z)^m is computed as exp(m log1p(-Q(z))), Q = 1 - Phi from erfc, so
// that a tail probability below the float64 spacing near 1 (1e-16) still
// counts when m is large: log(Phi(z)) rounds such a Q to 0 and would
// under-state the leak, and the threshold, for k above about delta 1e16.
func selectionLeak(tau, sigma float64, k int) float64 {
	q := func(m float64) float64 { return 0.5 * math.Erfc((tau-1/math.Sqrt(m))/sigma/math.Sqrt2) }
	f := func(m float64) float64 { return -math.Expm1(m * math.Log1p(-q(m))) }
	best := math.Max(f(1), f(float64(k)))
	var search func(lo, hi int)
	search = func(lo, hi int) {
		if hi-lo < selectionLeakLeaf {
			for m := lo; m <= hi; m++ {
				best = math.Max(best, f(float64(m)))
			}
			return
		}
		if -math.Expm1(float64(hi)*math.Log1p(-q(float64(lo)))) <= best {
			return
		}
		mid := lo + (hi-lo)/2
		search(mid+1, hi) // f grows with m once m is large: the upper half first finds a high best sooner
		search(lo, mid)
	}
	search(1, k)
	return best
}

// Stream ids of the user-level releases.
const (
	streamSelect    = 40
	streamUserStats = 41
)

// streamBound is the stream of the contribution bounding's random subset.
const streamBound = 42

// BoundForUnit bounds train's user contributions for o's user unit
// (BoundUserContributions with k = o.MaxRatingsPerUser) drawing the random
// subset from o's noise source (secure unless seeded).
func BoundForUnit(train *data.Store, o *PrivateOptions) (*data.Store, error) {
	b, _, err := BoundUserContributions(train, o.MaxRatingsPerUser, o.Noise.Source(streamBound))
	return b, err
}

// Compose adds the selection to the report of the training that used its
// items: its release comes first, and the totals add (basic composition of
// the selection with the training's own guarantee).
func (s *ItemSelection) Compose(rep *perturb.Report) {
	rep.Releases = append([]perturb.Release{s.Release}, rep.Releases...)
	rep.Epsilon += s.Release.Epsilon
	rep.Delta += s.Release.Delta
	rep.Composition = "basic (item selection + training); training: " + rep.Composition
	rep.Covered = append(rep.Covered, "item set (private selection)")
	rep.Notes = append(rep.Notes, fmt.Sprintf("item selection: epsilon %g, delta %.3g of the total (its own release, first above)", s.Release.Epsilon, s.Release.Delta))
}
