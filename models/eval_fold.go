package models

import (
	"fmt"
	"slices"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
)

// foldedUser is a test user folded into a billboard model from their own
// training ratings: the solved row and the model items they rated (left
// out of their ranking).
type foldedUser struct {
	row   Row
	items []int32 // sorted, distinct model items of the user's training ratings
}

// foldUsers folds every test user who has ratings of items the model knows
// in train into the frozen model (decomposition.FoldInUser with penalties
// pen): the billboard model's prediction for each user from that user's
// own ratings only. The result is indexed by test user; nil for a user
// without usable training ratings. Users are matched by external id,
// items through the model's dictionary and times through its bucketing
// (train.Timestamps, or the start of train's own bucket).
func foldUsers(p *Predictor, test, train *data.Store, pen decomposition.FoldPenalties, foldRow func([]int32, []float64) (Row, error)) ([]*foldedUser, error) {
	if len(train.Dicts) < 2 || train.Dicts[0] == nil || train.Dicts[1] == nil {
		return nil, fmt.Errorf("models: the training store has no user and item dictionaries")
	}
	toTest := mapDict(train.Dicts[0], test.Dicts[0])
	imap := mapDict(train.Dicts[1], p.items)
	m := p.m
	if train.Timestamps == nil && (train.Time == nil || len(train.Idx) < 3) {
		// Undated training ratings have no day of their own: no bucket
		// biases (else the last bucket's would stand for "undated").
		pen.Bucket = 0
	}
	byUser := make([][]int, test.Dicts[0].Len())
	for e, tu := range train.Idx[0] {
		if u := toTest[tu]; u >= 0 && imap[train.Idx[1][e]] >= 0 {
			byUser[u] = append(byUser[u], e)
		}
	}
	out := make([]*foldedUser, len(byUser))
	for u, es := range byUser {
		if len(es) == 0 {
			continue
		}
		items := make([]int32, len(es))
		ratings := make([]float64, len(es))
		var times []int32
		if m.Order() == 3 {
			times = make([]int32, len(es))
		}
		for i, e := range es {
			// Clamped to the model's range (a private model's public
			// scale), as training and predict's fold-in clamp.
			items[i], ratings[i] = imap[train.Idx[1][e]], m.Clamp(train.Val[e])
			if times != nil {
				times[i] = p.trainBucket(train, e)
			}
		}
		if foldRow != nil {
			// The values as logged (an implicit model's confidences use
			// them; it has no clamp to apply).
			for i, e := range es {
				ratings[i] = train.Val[e]
			}
			row, err := foldRow(items, ratings)
			if err != nil {
				return nil, fmt.Errorf("models: fold-in of user %s: %w", test.Dicts[0].String(int32(u)), err)
			}
			slices.Sort(items)
			row.Items = slices.Compact(items)
			out[u] = &foldedUser{row: row, items: row.Items}
			continue
		}
		f, err := decomposition.FoldInUser(m, items, times, ratings, pen)
		if err != nil {
			return nil, fmt.Errorf("models: fold-in of user %s: %w", test.Dicts[0].String(int32(u)), err)
		}
		R := m.Ranks[0]
		fu := &foldedUser{row: Row{Factor: f.Row[:R], Buckets: f.Buckets, BucketBias: f.BucketBias}}
		if len(f.Row) > R {
			fu.row.Bias = f.Row[R]
		}
		slices.Sort(items)
		fu.items = slices.Compact(items)
		fu.row.Items = fu.items
		out[u] = fu
	}
	return out, nil
}

// trainBucket is the model's time bucket of training entry e (the last
// bucket when train carries no time).
func (p *Predictor) trainBucket(train *data.Store, e int) int32 {
	t := entryTime(train, e)
	if t == nil || p.tb == nil {
		return int32(p.m.Dims[2] - 1)
	}
	k, _ := p.tb.Bucket(*t)
	return k
}

// trainSupport counts the distinct training users of every model item in
// train (the most-popular baseline of a fold-in evaluation, whose model
// may know no users): the (item, user) keys sorted, each distinct one
// counted once.
func trainSupport(train *data.Store, imap []int32, J int) []int {
	keys := make([]uint64, 0, train.NNZ())
	for e, u := range train.Idx[0] {
		if j := imap[train.Idx[1][e]]; j >= 0 {
			keys = append(keys, uint64(uint32(j))<<32|uint64(uint32(u)))
		}
	}
	slices.Sort(keys)
	sup := make([]int, J)
	for i, k := range keys {
		if i == 0 || k != keys[i-1] {
			sup[k>>32]++
		}
	}
	return sup
}

// mergeSorted returns the sorted union of two sorted, distinct lists.
func mergeSorted(a, b []int32) []int32 {
	if len(b) == 0 {
		return a
	}
	out := make([]int32, 0, len(a)+len(b))
	out = append(out, a...)
	out = append(out, b...)
	slices.Sort(out)
	return slices.Compact(out)
}
