package models

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/dprec/dprec/data"
)

// metaSeen is the schema metadata key of the seen-items part of a version
// 1 file.
const metaSeen = "dprec.seen"

// SeenEncoding names the encoding of the seen-items part that Save writes
// (see the package doc, "Seen items"): the uvarint stream stored raw in the
// "seen" column of the seen rows (file version 2).
const SeenEncoding = "uvarint csr-gaps v1 in seen rows"

// seenEncodingMeta is the encoding of version 1 files: the same stream,
// base64'd into the schema metadata.
const seenEncodingMeta = "base64 uvarint csr-gaps v1"

// seenMode is the mode column of the seen rows (version 2 files).
const seenMode = math.MinInt32

// seenPieceBytes is the size of the pieces the seen stream is cut into,
// one seen row each: small enough for any Arrow binary column, large enough
// that the rows' other (null) columns cost nothing. seenPiecesPerBatch
// bounds a record batch of seen rows (to 64 MiB). They are variables only
// so that tests can cut small streams into many pieces and batches.
var seenPieceBytes, seenPiecesPerBatch = 1 << 20, 64

// SeenInfo describes the seen-items part of a model file in its header.
type SeenInfo struct {
	Users    int    `json:"users"`
	Pairs    int    `json:"pairs"`
	Encoding string `json:"encoding"`
}

// SeenFromStore returns, for every user of a training store whose indices
// are the model's own (the store the model was trained on), the sorted
// distinct items of that user, as Exclusions. users and items are the
// model's mode sizes.
//
// Two stable counting sorts, no comparison sort: the users of the
// observations are grouped by item, then the items are dealt to their
// users in ascending item order, so each user's list comes out sorted and
// repeats (the same pair at several times) are adjacent.
func SeenFromStore(st *data.Store, users, items int) (*Exclusions, error) {
	if st.Order() < 2 || st.Dims[0] != users || st.Dims[1] != items {
		return nil, fmt.Errorf("models: training store of dims %v for a model of %d users and %d items", st.Dims, users, items)
	}
	us, is := st.Idx[0], st.Idx[1]
	iptr := make([]int64, items+1)
	for _, j := range is {
		iptr[j+1]++
	}
	for j := 0; j < items; j++ {
		iptr[j+1] += iptr[j]
	}
	byItem := make([]int32, len(is)) // the users of item j at iptr[j]:iptr[j+1]
	fill := slices.Clone(iptr[:items])
	for k, j := range is {
		byItem[fill[j]] = us[k]
		fill[j]++
	}
	e := &Exclusions{ptr: make([]int64, users+1)}
	for _, u := range us {
		e.ptr[u+1]++
	}
	for u := 0; u < users; u++ {
		e.ptr[u+1] += e.ptr[u]
	}
	e.items = make([]int32, e.ptr[users])
	fill = slices.Clone(e.ptr[:users])
	for j := 0; j < items; j++ {
		for _, u := range byItem[iptr[j]:iptr[j+1]] {
			e.items[fill[u]] = int32(j)
			fill[u]++
		}
	}
	// Drop the repeats, compacting in place.
	w := int64(0)
	for u := 0; u < users; u++ {
		lo, hi := e.ptr[u], e.ptr[u+1]
		e.ptr[u] = w
		for k := lo; k < hi; k++ {
			if k == lo || e.items[k] != e.items[k-1] {
				e.items[w] = e.items[k]
				w++
			}
		}
	}
	e.ptr[users] = w
	e.items = e.items[:w:w]
	return e, nil
}

// Users returns the number of users e covers.
func (e *Exclusions) Users() int {
	if e == nil || len(e.ptr) == 0 {
		return 0
	}
	return len(e.ptr) - 1
}

// Pairs returns the number of (user, item) pairs in e.
func (e *Exclusions) Pairs() int {
	if e == nil {
		return 0
	}
	return len(e.items)
}

// Support returns, for each of the items item indices, the number of users
// whose list holds it (for seen items: the item's number of distinct
// training users).
func (e *Exclusions) Support(items int) []int {
	out := make([]int, items)
	if e == nil {
		return out
	}
	for _, j := range e.items {
		if int(j) < items {
			out[j]++
		}
	}
	return out
}

// Union returns the per-user union of e and o (either may be nil; both
// must cover the same users when non-nil). Allowed is taken from e, else o.
// Unmatched adds up.
func (e *Exclusions) Union(o *Exclusions) *Exclusions {
	switch {
	case e == nil:
		return o
	case o == nil:
		return e
	}
	U := max(e.Users(), o.Users())
	out := &Exclusions{ptr: make([]int64, U+1), Unmatched: e.Unmatched + o.Unmatched, Allowed: e.Allowed}
	if out.Allowed == nil {
		out.Allowed = o.Allowed
	}
	out.items = make([]int32, 0, len(e.items)+len(o.items))
	for u := 0; u < U; u++ {
		a, b := e.Items(int32(u)), o.Items(int32(u))
		i, k := 0, 0
		for i < len(a) || k < len(b) {
			switch {
			case k == len(b) || (i < len(a) && a[i] < b[k]):
				out.items = append(out.items, a[i])
				i++
			case i == len(a) || b[k] < a[i]:
				out.items = append(out.items, b[k])
				k++
			default:
				out.items = append(out.items, a[i])
				i, k = i+1, k+1
			}
		}
		out.ptr[u+1] = int64(len(out.items))
	}
	return out
}

// For returns the sorted items to leave out of user u's list: u's items in
// e, the sorted extra items, and every item not in Allowed (when set). u < 0
// (a user the model does not know) has no items of its own.
func (e *Exclusions) For(u int32, items int, extra []int32) []int32 {
	var own []int32
	if u >= 0 {
		own = e.Items(u)
	}
	out := slices.Concat(own, extra)
	if e != nil && e.Allowed != nil {
		for j := 0; j < items && j < len(e.Allowed); j++ {
			if !e.Allowed[j] {
				out = append(out, int32(j))
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// encodeSeen encodes e as: uvarint users, uvarint pairs, then for every user
// uvarint count, then for every user its items as gaps (first item, then
// item - previous - 1), all uvarint.
func encodeSeen(e *Exclusions) []byte {
	buf := make([]byte, 0, 16+len(e.items)*2+len(e.ptr))
	buf = binary.AppendUvarint(buf, uint64(e.Users()))
	buf = binary.AppendUvarint(buf, uint64(len(e.items)))
	for u := 0; u < e.Users(); u++ {
		buf = binary.AppendUvarint(buf, uint64(e.ptr[u+1]-e.ptr[u]))
	}
	for u := 0; u < e.Users(); u++ {
		prev := int64(-1)
		for _, j := range e.Items(int32(u)) {
			buf = binary.AppendUvarint(buf, uint64(int64(j)-prev-1))
			prev = int64(j)
		}
	}
	return buf
}

// decodeSeenBase64 decodes the base64'd seen-items part of a version 1 file.
func decodeSeenBase64(s string, info *SeenInfo, users, items int) (*Exclusions, error) {
	if info.Encoding != seenEncodingMeta {
		return nil, fmt.Errorf("%w: seen items in unknown encoding %q", ErrFormat, info.Encoding)
	}
	raw, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("%w: seen items: %v", ErrFormat, err)
	}
	return decodeSeen(raw, info, users, items)
}

// decodeSeen decodes and checks the seen-items stream against the model's
// mode sizes and the header's counts. Every count is checked against the
// bytes that remain before anything is allocated from it.
func decodeSeen(raw []byte, info *SeenInfo, users, items int) (*Exclusions, error) {
	pos := 0
	next := func() (uint64, error) {
		v, n := binary.Uvarint(raw[pos:])
		if n <= 0 {
			return 0, fmt.Errorf("%w: seen items: truncated or overlong varint at byte %d", ErrFormat, pos)
		}
		pos += n
		return v, nil
	}
	U, err := next()
	if err != nil {
		return nil, err
	}
	P, err := next()
	if err != nil {
		return nil, err
	}
	if U != uint64(users) || U != uint64(info.Users) || P != uint64(info.Pairs) {
		return nil, fmt.Errorf("%w: seen items for %d users and %d pairs; the model has %d users, the header says %d and %d", ErrFormat, U, P, users, info.Users, info.Pairs)
	}
	// Every user count and every item takes at least one byte.
	if U+P > uint64(len(raw)-pos) {
		return nil, fmt.Errorf("%w: seen items announce %d users and %d pairs in %d bytes", ErrFormat, U, P, len(raw))
	}
	e := &Exclusions{ptr: make([]int64, U+1), items: make([]int32, P)}
	for u := uint64(0); u < U; u++ {
		c, err := next()
		if err != nil {
			return nil, err
		}
		if c > P-uint64(e.ptr[u]) {
			return nil, fmt.Errorf("%w: seen items: user %d's count %d exceeds the pairs left", ErrFormat, u, c)
		}
		e.ptr[u+1] = e.ptr[u] + int64(c)
	}
	if uint64(e.ptr[U]) != P {
		return nil, fmt.Errorf("%w: seen items: user counts add up to %d, not %d", ErrFormat, e.ptr[U], P)
	}
	for u := uint64(0); u < U; u++ {
		prev := int64(-1)
		for k := e.ptr[u]; k < e.ptr[u+1]; k++ {
			g, err := next()
			if err != nil {
				return nil, err
			}
			if g >= uint64(items) || prev+1+int64(g) >= int64(items) {
				return nil, fmt.Errorf("%w: seen items: user %d has an item beyond the model's %d items", ErrFormat, u, items)
			}
			prev += 1 + int64(g)
			e.items[k] = int32(prev)
		}
	}
	if pos != len(raw) {
		return nil, fmt.Errorf("%w: seen items: %d trailing bytes", ErrFormat, len(raw)-pos)
	}
	return e, nil
}
