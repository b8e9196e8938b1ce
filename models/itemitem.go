package models

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
)

// ObjectiveItemItem marks an item-item model (Header.Objective): EASE
// (Steck 2019) or any model whose score of item j for user u is
//
//	s(u, j) = sum over the items i in u's seen items of W[i, j]
//
// for a sparse items x items weight matrix W (File.Weights). See the
// package doc, "Item-item models".
const ObjectiveItemItem = "ease"

// WeightsEncoding names the encoding of the weights stream (file version 3).
const WeightsEncoding = "uvarint csr-gaps v1 + float64le in weights rows"

// weightsMode is the mode column of the weights rows (version 3 files).
const weightsMode = math.MinInt32 + 1

// WeightsInfo describes the item-item weights of a model file in its header.
type WeightsInfo struct {
	Items    int    `json:"items"`
	NNZ      int    `json:"nnz"`
	Encoding string `json:"encoding"`
}

// ItemWeights is a sparse items x items matrix W in compressed sparse row
// form: row i holds the weights W[i, j] that item i in a user's history
// gives to the other items j. Rows are sorted by column, without repeats.
// An ItemWeights is read-only once built.
type ItemWeights struct {
	pat  Exclusions // row pointers and column indices
	vals []float64
}

// NewItemWeights builds the weights of an items x items matrix from its
// CSR arrays (ptr of length items+1, each row's columns strictly
// increasing and inside [0, items), finite values). It keeps the slices.
func NewItemWeights(items int, ptr []int64, cols []int32, vals []float64) (*ItemWeights, error) {
	if items <= 0 || len(ptr) != items+1 || ptr[0] != 0 || ptr[items] != int64(len(cols)) || len(cols) != len(vals) {
		return nil, fmt.Errorf("models: item weights of %d items with %d row pointers, %d columns and %d values", items, len(ptr), len(cols), len(vals))
	}
	for i := 0; i < items; i++ {
		if ptr[i+1] < ptr[i] {
			return nil, fmt.Errorf("models: item weights: row %d has a negative length", i)
		}
		for k := ptr[i]; k < ptr[i+1]; k++ {
			if cols[k] < 0 || int(cols[k]) >= items || (k > ptr[i] && cols[k] <= cols[k-1]) {
				return nil, fmt.Errorf("models: item weights: row %d's columns are not sorted, distinct and inside the %d items", i, items)
			}
		}
	}
	if err := finite(vals, "item weights"); err != nil {
		return nil, err
	}
	return &ItemWeights{pat: Exclusions{ptr: ptr, items: cols}, vals: vals}, nil
}

// Items returns the number of items (rows and columns) of W.
func (w *ItemWeights) Items() int { return w.pat.Users() }

// NNZ returns the number of stored weights.
func (w *ItemWeights) NNZ() int { return len(w.vals) }

// Row returns the columns and weights of row i (views, not copies).
func (w *ItemWeights) Row(i int32) ([]int32, []float64) {
	lo, hi := w.pat.ptr[i], w.pat.ptr[i+1]
	return w.pat.items[lo:hi], w.vals[lo:hi]
}

// Scores sets dst (length Items) to the scores of a user with the given
// history: dst[j] = sum over i in hist of W[i, j]. Items outside the
// matrix are ignored.
func (w *ItemWeights) Scores(hist []int32, dst []float64) {
	clear(dst)
	for _, i := range hist {
		if i < 0 || int(i) >= w.Items() {
			continue
		}
		cols, vals := w.Row(i)
		for k, j := range cols {
			dst[j] += vals[k]
		}
	}
}

// encodeWeights encodes w as: uvarint length of the pattern, the pattern
// in the seen-items encoding (rows as users), then every value as
// float64 little endian in row order.
func encodeWeights(w *ItemWeights) []byte {
	pat := encodeSeen(&w.pat)
	buf := make([]byte, 0, 10+len(pat)+8*len(w.vals))
	buf = binary.AppendUvarint(buf, uint64(len(pat)))
	buf = append(buf, pat...)
	for _, v := range w.vals {
		buf = binary.LittleEndian.AppendUint64(buf, math.Float64bits(v))
	}
	return buf
}

// decodeWeights decodes and checks the weights stream against the model's
// item count and the header.
func decodeWeights(raw []byte, info *WeightsInfo, items int) (*ItemWeights, error) {
	if info.Encoding != WeightsEncoding {
		return nil, fmt.Errorf("%w: item weights in unknown encoding %q", ErrFormat, info.Encoding)
	}
	if info.Items != items {
		return nil, fmt.Errorf("%w: item weights of %d items, the model has %d", ErrFormat, info.Items, items)
	}
	n, k := binary.Uvarint(raw)
	if k <= 0 || n > uint64(len(raw)-k) {
		return nil, fmt.Errorf("%w: item weights: bad pattern length", ErrFormat)
	}
	pat, rest := raw[k:k+int(n)], raw[k+int(n):]
	if uint64(len(rest)) != 8*uint64(info.NNZ) {
		return nil, fmt.Errorf("%w: item weights: %d value bytes for %d weights", ErrFormat, len(rest), info.NNZ)
	}
	e, err := decodeSeen(pat, &SeenInfo{Users: items, Pairs: info.NNZ}, items, items)
	if err != nil {
		return nil, fmt.Errorf("item weights: %w", err)
	}
	vals := make([]float64, info.NNZ)
	for i := range vals {
		vals[i] = math.Float64frombits(binary.LittleEndian.Uint64(rest[8*i:]))
	}
	if err := finite(vals, "item weights"); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	return &ItemWeights{pat: *e, vals: vals}, nil
}

// NewItemItemFile returns the model file of an item-item model: the user
// and item dictionaries, every user's training items (the histories the
// scores sum over) and the weights. Its Model is an order-2 CP model of
// rank 1 with zero factors and no biases, which carries the mode sizes
// only; its Header.Objective is ObjectiveItemItem. The caller fills the
// rest of the header (settings, data, created, software).
func NewItemItemFile(users, items *data.Dict, seen *Exclusions, w *ItemWeights) (*File, error) {
	if users == nil || items == nil || seen == nil || w == nil {
		return nil, errors.New("models: an item-item model needs its dictionaries, seen items and weights")
	}
	m, err := decomposition.NewModel(decomposition.CP, []int{users.Len(), items.Len()}, []int{1}, false)
	if err != nil {
		return nil, err
	}
	f := &File{Model: m, Dicts: []*data.Dict{users, items}, Seen: seen, Weights: w}
	f.Header.Objective = ObjectiveItemItem
	if err := f.check(); err != nil {
		return nil, err
	}
	return f, nil
}

// ItemItem reports whether f is an item-item model (objective
// ObjectiveItemItem: its scores are sums of weights over a history).
func (f *File) ItemItem() bool { return f.Weights != nil && f.Header.Objective == ObjectiveItemItem }

// RankingWeights reports whether f is a private rating model that carries
// item-item weights for its lists (see "Lists of a private rating model"
// in the package doc): predictions come from the factor model, rankings
// of a user given by their history (a Row with Items) from the weights.
func (f *File) RankingWeights() bool {
	return f.Weights != nil && f.Header.Objective != ObjectiveItemItem
}

// checkWeights checks an item-item model: weights over the model's items,
// seen items (the histories), the objective, and the shell model (order 2,
// rank 1, zero factors, no biases).
func (f *File) checkWeights() error {
	if f.Weights == nil {
		if f.Header.Objective == ObjectiveItemItem {
			return errors.New("models: an item-item model without weights")
		}
		return nil
	}
	m := f.Model
	if f.Header.Objective != ObjectiveItemItem {
		// Ranking weights of a private billboard rating model.
		switch {
		case !f.Billboard():
			return fmt.Errorf("models: item weights in a model of objective %q that is not a private billboard model (only those carry ranking weights)", f.Header.Objective)
		case f.Seen != nil:
			return errors.New("models: a private model cannot store its users' training items")
		case f.Weights.Items() != m.Dims[1]:
			return fmt.Errorf("models: item weights over %d items, the model has %d", f.Weights.Items(), m.Dims[1])
		}
		return nil
	}
	switch {
	case f.Seen == nil:
		return errors.New("models: an item-item model needs every user's seen items (its scores sum over them)")
	case m.Order() != 2 || m.Kind != decomposition.CP || m.Ranks[0] != 1 || m.HasBias:
		return errors.New("models: an item-item model's Model must be an order-2 CP model of rank 1 without biases (NewItemItemFile)")
	case f.Weights.Items() != m.Dims[1]:
		return fmt.Errorf("models: item weights over %d items, the model has %d", f.Weights.Items(), m.Dims[1])
	}
	for mo := range m.Factors {
		if slices.ContainsFunc(m.Factors[mo], func(v float64) bool { return v != 0 }) {
			return errors.New("models: an item-item model with nonzero factors")
		}
	}
	return nil
}

// weightsRaw returns the encoded weights (nil without).
func (f *File) weightsRaw() []byte {
	if f.Weights == nil {
		return nil
	}
	return encodeWeights(f.Weights)
}
