package models

import (
	"fmt"
	"math"
	"slices"

	"github.com/dprec/dprec/decomposition"
)

// Neighbor is one similar item or user: dense index, external id and the
// cosine similarity to the query.
type Neighbor struct {
	Index  int32   `json:"-"`
	ID     string  `json:"id"`
	Cosine float64 `json:"cosine"`
}

// SimilarItems returns the n items most similar to item (itself left out),
// by cosine similarity of their embeddings, best first (ties by lower
// index). The embedding of item j is its factor row b_j; for an order-3 CP
// model it is b_j * cbar elementwise, cbar the time-averaged time row, the
// vector an item's score is linear in when recommend averages over time
// (score = base + b_i + <a_u * cbar, b_j>). Tucker models use b_j. An
// unknown id fails with ErrUnknownID; an item whose embedding is zero (no
// training signal) has no direction and fails too. Items with a zero
// embedding score 0.
func (p *Predictor) SimilarItems(item string, n int) ([]Neighbor, error) {
	j, ok := p.items.LookupString(item)
	if !ok {
		return nil, fmt.Errorf("models: item %q: %w", item, ErrUnknownID)
	}
	return p.similar(1, j, n, item)
}

// SimilarUsers is SimilarItems for users (embedding a_u, or a_u * cbar for
// an order-3 CP model).
func (p *Predictor) SimilarUsers(user string, n int) ([]Neighbor, error) {
	u, ok := p.users.LookupString(user)
	if !ok {
		return nil, fmt.Errorf("models: user %q: %w", user, ErrUnknownID)
	}
	return p.similar(0, u, n, user)
}

func (p *Predictor) similar(mode int, q int32, n int, id string) ([]Neighbor, error) {
	if n <= 0 {
		return nil, fmt.Errorf("models: top-N size %d must be positive", n)
	}
	// An item-item model, and the items of a private model with ranking
	// weights (their rows of W; its users have no history in the file).
	if p.f.ItemItem() || (p.f.RankingWeights() && mode == 1) {
		return p.similarSparse(mode, q, n, id)
	}
	m := p.m
	R := m.Ranks[mode]
	var scale []float64
	if m.Order() == 3 && m.Kind == decomposition.CP {
		scale = p.meanTime
	}
	emb := func(i int32, dst []float64) float64 {
		row := m.Row(mode, int(i))
		s := 0.0
		for r, v := range row {
			if scale != nil {
				v *= scale[r]
			}
			dst[r] = v
			s += v * v
		}
		return math.Sqrt(s)
	}
	qv := make([]float64, R)
	qn := emb(q, qv)
	if qn == 0 {
		return nil, fmt.Errorf("models: %s %q has a zero embedding (no training signal), so no similarity is defined", modeNames[mode], id)
	}
	for r := range qv {
		qv[r] /= qn
	}
	N := m.Dims[mode]
	h := newTopN(min(n, N-1))
	if h.n == 0 {
		return nil, nil
	}
	v := make([]float64, R)
	for i := int32(0); i < int32(N); i++ {
		if i == q {
			continue
		}
		nv := emb(i, v)
		c := 0.0
		if nv > 0 {
			for r, x := range v {
				c += x * qv[r]
			}
			c /= nv
		}
		if h.admits(c, i) {
			h.push(c, i)
		}
	}
	dict := p.items
	if mode == 0 {
		dict = p.users
	}
	// Reuse the recommendation sort (best first, ties by index).
	out := make([]Neighbor, 0, len(h.score))
	for _, s := range p.sortedRaw(&h) {
		out = append(out, Neighbor{Index: s.j, ID: dict.String(s.j), Cosine: s.s})
	}
	return out, nil
}

type scoredRaw struct {
	j int32
	s float64
}

// sortedRaw returns the heap's content best first and empties it.
func (p *Predictor) sortedRaw(h *topN) []scoredRaw {
	out := make([]scoredRaw, len(h.score))
	for i := range out {
		out[i] = scoredRaw{h.item[i], h.score[i]}
	}
	slices.SortFunc(out, func(a, b scoredRaw) int {
		if worse(a.s, a.j, b.s, b.j) {
			return 1
		}
		return -1
	})
	h.reset()
	return out
}

// similarSparse is similar for an item-item model: the embedding of item i
// is its row of weights W[i, .] (the scores it adds to every other item
// when it is in a history), that of user u its binary history; both are
// sparse, so the query's cosine with every row costs one pass over the
// stored entries.
func (p *Predictor) similarSparse(mode int, q int32, n int, id string) ([]Neighbor, error) {
	var rows int
	row := func(i int32) ([]int32, []float64) { return p.f.Weights.Row(i) }
	dim := p.m.Dims[1]
	if mode == 0 {
		row = func(u int32) ([]int32, []float64) { return p.f.Seen.Items(u), nil }
	}
	rows = p.m.Dims[mode]
	val := func(v []float64, k int) float64 {
		if v == nil {
			return 1
		}
		return v[k]
	}
	qv := make([]float64, dim)
	qc, qw := row(q)
	qn := 0.0
	for k, j := range qc {
		x := val(qw, k)
		qv[j] = x
		qn += x * x
	}
	if qn == 0 {
		return nil, fmt.Errorf("models: %s %q has a zero embedding (no training signal), so no similarity is defined", modeNames[mode], id)
	}
	qn = math.Sqrt(qn)
	h := newTopN(min(n, rows-1))
	if h.n == 0 {
		return nil, nil
	}
	for i := int32(0); i < int32(rows); i++ {
		if i == q {
			continue
		}
		c, w := row(i)
		dot, nn := 0.0, 0.0
		for k, j := range c {
			x := val(w, k)
			dot += x * qv[j]
			nn += x * x
		}
		cos := 0.0
		if nn > 0 {
			cos = dot / (qn * math.Sqrt(nn))
		}
		if h.admits(cos, i) {
			h.push(cos, i)
		}
	}
	dict := p.items
	if mode == 0 {
		dict = p.users
	}
	out := make([]Neighbor, 0, len(h.score))
	for _, s := range p.sortedRaw(&h) {
		out = append(out, Neighbor{Index: s.j, ID: dict.String(s.j), Cosine: s.s})
	}
	return out, nil
}
