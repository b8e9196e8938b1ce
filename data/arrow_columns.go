package data

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
)

// Column roles, in the order of Columns' fields.
const (
	arrowUser = iota
	arrowItem
	arrowRating
	arrowTime
)

var arrowRoleNames = [4]string{"user", "item", "rating", "time"}

// arrowDefaultNames are the column names tried (case-insensitively, in this
// order) when Columns leaves a role empty; they are the names documented on
// Columns.
var arrowDefaultNames = [4][]string{
	{"userId", "user_id", "user"},
	{"movieId", "itemId", "item_id", "item", "movie"},
	{"rating", "value", "score"},
	{"timestamp", "time", "ts"},
}

// arrowResolveColumns finds the field index of each role in sc (-1 for an
// absent time column). An explicitly named column must exist; the time
// column is optional when not named.
func arrowResolveColumns(path string, sc *arrow.Schema, c Columns) ([4]int, error) {
	given := [4]string{c.User, c.Item, c.Rating, c.Time}
	var idx [4]int
	names := make([]string, sc.NumFields())
	for i, f := range sc.Fields() {
		names[i] = f.Name
	}
	var dup error
	find := func(name string) int {
		i, err := findColumn(names, name)
		if err != nil && dup == nil {
			dup = fmt.Errorf("%s: %w", path, err)
		}
		return i
	}
	for role := range idx {
		idx[role] = -1
		if given[role] != "" {
			idx[role] = find(given[role])
			if dup != nil {
				return idx, dup
			}
			if idx[role] < 0 {
				return idx, fmt.Errorf("%s: %w: no %s column %q (columns: %s)", path, ErrNoColumn, arrowRoleNames[role], given[role], arrowFieldList(sc))
			}
			continue
		}
		for _, name := range arrowDefaultNames[role] {
			if i := find(name); i >= 0 {
				idx[role] = i
				break
			}
		}
		if dup != nil {
			return idx, dup
		}
		if idx[role] < 0 && role != arrowTime {
			return idx, fmt.Errorf("%s: %w: no %s column (tried %s; columns: %s); name it with the %s column option",
				path, ErrNoColumn, arrowRoleNames[role], strings.Join(arrowDefaultNames[role], ", "), arrowFieldList(sc), arrowRoleNames[role])
		}
	}
	for a := range idx {
		for b := a + 1; b < len(idx); b++ {
			if idx[a] >= 0 && idx[a] == idx[b] {
				return idx, fmt.Errorf("%s: column %q used for both %s and %s", path, sc.Field(idx[a]).Name, arrowRoleNames[a], arrowRoleNames[b])
			}
		}
	}
	// Check the types now, so that a wrong type fails before any batch.
	for role, i := range idx {
		if i < 0 {
			continue
		}
		f := sc.Field(i)
		var ok bool
		switch role {
		case arrowUser, arrowItem:
			ok = arrowIsIntType(f.Type) || arrowIsStringType(f.Type)
			if dt, isDict := f.Type.(*arrow.DictionaryType); isDict {
				ok = arrowIsIntType(dt.ValueType) || arrowIsStringType(dt.ValueType)
			}
		case arrowRating:
			switch f.Type.ID() {
			case arrow.FLOAT16, arrow.FLOAT32, arrow.FLOAT64, arrow.DECIMAL128, arrow.DECIMAL256:
				ok = true
			default:
				ok = arrowIsIntType(f.Type)
			}
		case arrowTime:
			switch f.Type.ID() {
			case arrow.TIMESTAMP, arrow.DATE32, arrow.DATE64:
				ok = true
			default:
				ok = arrowIsIntType(f.Type)
			}
		}
		if !ok {
			return idx, fmt.Errorf("%s: %s column %q has unsupported type %s (want %s)", path, arrowRoleNames[role], f.Name, f.Type, arrowWantType[role])
		}
	}
	return idx, nil
}

var arrowWantType = [4]string{
	"an integer or string (utf8, large_utf8, dictionary) column",
	"an integer or string (utf8, large_utf8, dictionary) column",
	"an integer, floating-point (16, 32 or 64 bits) or decimal column",
	"an integer column of Unix seconds, a timestamp, date32 or date64",
}

func arrowFieldList(sc *arrow.Schema) string {
	names := make([]string, sc.NumFields())
	for i, f := range sc.Fields() {
		names[i] = fmt.Sprintf("%s (%s)", f.Name, f.Type)
	}
	return strings.Join(names, ", ")
}

func arrowIsIntType(dt arrow.DataType) bool {
	switch dt.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64:
		return true
	}
	return false
}

func arrowIsStringType(dt arrow.DataType) bool {
	switch dt.ID() {
	case arrow.STRING, arrow.LARGE_STRING:
		return true
	}
	return false
}

// arrowIsStringIDs reports whether an ID column of type dt yields a string
// dictionary (else integer).
func arrowIsStringIDs(dt arrow.DataType) bool {
	if d, ok := dt.(*arrow.DictionaryType); ok {
		return arrowIsStringType(d.ValueType)
	}
	return arrowIsStringType(dt)
}

// arrowBadFunc is told about an invalid value at a row of the batch. It
// returns a non-nil error to stop the load (the default) or nil to skip the
// row (SkipInvalid).
type arrowBadFunc func(row int, role int, reason string) error

// arrowNulls reports every null of a to bad.
func arrowNulls(a arrow.Array, role int, bad arrowBadFunc) error {
	if a.NullN() == 0 {
		return nil
	}
	for i := 0; i < a.Len(); i++ {
		if a.IsNull(i) {
			if err := bad(i, role, "null value"); err != nil {
				return err
			}
		}
	}
	return nil
}

type arrowSigned interface {
	~int8 | ~int16 | ~int32 | ~int64
}

type arrowUnsigned interface {
	~uint8 | ~uint16 | ~uint32 | ~uint64
}

// arrowSignedIDs copies integer IDs, reporting negative ones.
func arrowSignedIDs[T arrowSigned](a arrow.Array, v []T, out []int64, role int, bad arrowBadFunc) error {
	out = out[:len(v)]
	neg := false
	for i, x := range v {
		out[i] = int64(x)
		neg = neg || x < 0
	}
	if !neg {
		return nil
	}
	for i, x := range v {
		if x < 0 && !a.IsNull(i) {
			if err := bad(i, role, fmt.Sprintf("negative ID %d", x)); err != nil {
				return err
			}
		}
	}
	return nil
}

// arrowUnsignedIDs copies unsigned IDs, reporting values above MaxInt64.
func arrowUnsignedIDs[T arrowUnsigned](a arrow.Array, v []T, out []int64, role int, bad arrowBadFunc) error {
	out = out[:len(v)]
	over := false
	for i, x := range v {
		out[i] = int64(x)
		over = over || uint64(x) > math.MaxInt64
	}
	if !over {
		return nil
	}
	for i, x := range v {
		if uint64(x) > math.MaxInt64 && !a.IsNull(i) {
			if err := bad(i, role, fmt.Sprintf("ID %d overflows int64", uint64(x))); err != nil {
				return err
			}
		}
	}
	return nil
}

// arrowIntIDs decodes an integer ID column into out (length a.Len()).
func arrowIntIDs(a arrow.Array, out []int64, role int, bad arrowBadFunc) error {
	if err := arrowNulls(a, role, bad); err != nil {
		return err
	}
	switch a := a.(type) {
	case *array.Int64:
		return arrowSignedIDs(a, a.Int64Values(), out, role, bad)
	case *array.Int32:
		return arrowSignedIDs(a, a.Int32Values(), out, role, bad)
	case *array.Int16:
		return arrowSignedIDs(a, a.Int16Values(), out, role, bad)
	case *array.Int8:
		return arrowSignedIDs(a, a.Int8Values(), out, role, bad)
	case *array.Uint64:
		return arrowUnsignedIDs(a, a.Uint64Values(), out, role, bad)
	case *array.Uint32:
		return arrowUnsignedIDs(a, a.Uint32Values(), out, role, bad)
	case *array.Uint16:
		return arrowUnsignedIDs(a, a.Uint16Values(), out, role, bad)
	case *array.Uint8:
		return arrowUnsignedIDs(a, a.Uint8Values(), out, role, bad)
	}
	return fmt.Errorf("unsupported ID type %s", a.DataType())
}

// arrowIntRatings converts integer ratings.
func arrowIntRatings[T arrowSigned | arrowUnsigned](v []T, out []float64) {
	out = out[:len(v)]
	for i, x := range v {
		out[i] = float64(x)
	}
}

// arrowRatings decodes a rating column into out, reporting NaN and Inf.
func arrowRatings(a arrow.Array, out []float64, bad arrowBadFunc) error {
	if err := arrowNulls(a, arrowRating, bad); err != nil {
		return err
	}
	switch a := a.(type) {
	case *array.Float64:
		copy(out, a.Float64Values())
	case *array.Float32:
		for i, x := range a.Float32Values() {
			out[i] = float64(x)
		}
	case *array.Float16:
		for i, x := range a.Values() {
			out[i] = float64(x.Float32())
		}
	case *array.Decimal128:
		scale := a.DataType().(*arrow.Decimal128Type).Scale
		for i, x := range a.Values() {
			out[i] = x.ToFloat64(scale)
		}
	case *array.Decimal256:
		scale := a.DataType().(*arrow.Decimal256Type).Scale
		for i, x := range a.Values() {
			out[i] = x.ToFloat64(scale)
		}
	case *array.Int64:
		arrowIntRatings(a.Int64Values(), out)
	case *array.Int32:
		arrowIntRatings(a.Int32Values(), out)
	case *array.Int16:
		arrowIntRatings(a.Int16Values(), out)
	case *array.Int8:
		arrowIntRatings(a.Int8Values(), out)
	case *array.Uint64:
		arrowIntRatings(a.Uint64Values(), out)
	case *array.Uint32:
		arrowIntRatings(a.Uint32Values(), out)
	case *array.Uint16:
		arrowIntRatings(a.Uint16Values(), out)
	case *array.Uint8:
		arrowIntRatings(a.Uint8Values(), out)
	default:
		return fmt.Errorf("unsupported rating type %s", a.DataType())
	}
	out = out[:a.Len()]
	// x-x is NaN exactly when x is NaN or ±Inf: one cheap test per value.
	var acc float64
	for _, x := range out {
		acc += x - x
	}
	if acc == 0 {
		return nil
	}
	for i, x := range out {
		if x-x != 0 && !a.IsNull(i) {
			reason := "rating is NaN"
			if math.IsInf(x, 0) {
				reason = fmt.Sprintf("rating is %v", x)
			}
			if err := bad(i, arrowRating, reason); err != nil {
				return err
			}
		}
	}
	return nil
}

// arrowScaleTimes converts time values counted in units of 1/div seconds to
// Unix seconds, flooring.
func arrowScaleTimes[T ~int32 | ~int64](v []T, mul, div int64, out []int64) {
	out = out[:len(v)]
	switch {
	case div == 1:
		for i, x := range v {
			out[i] = int64(x) * mul
		}
	default:
		for i, x := range v {
			out[i] = floorDiv(int64(x), div)
		}
	}
}

// arrowTimes decodes a time column into Unix seconds.
func arrowTimes(a arrow.Array, out []int64, bad arrowBadFunc) error {
	if err := arrowNulls(a, arrowTime, bad); err != nil {
		return err
	}
	switch a := a.(type) {
	case *array.Timestamp:
		div := int64(1)
		switch a.DataType().(*arrow.TimestampType).Unit {
		case arrow.Millisecond:
			div = 1e3
		case arrow.Microsecond:
			div = 1e6
		case arrow.Nanosecond:
			div = 1e9
		}
		arrowScaleTimes(a.TimestampValues(), 1, div, out)
	case *array.Date32:
		// Days since the epoch; int64 arithmetic cannot overflow for int32 days.
		arrowScaleTimes(a.Date32Values(), 86400, 1, out)
	case *array.Date64:
		arrowScaleTimes(a.Date64Values(), 1, 1000, out)
	case *array.Uint64:
		for i, x := range a.Uint64Values() {
			if x > math.MaxInt64 && !a.IsNull(i) {
				if err := bad(i, arrowTime, fmt.Sprintf("time %d overflows int64", x)); err != nil {
					return err
				}
			}
			out[i] = int64(x)
		}
	case *array.Int64:
		copy(out, a.Int64Values())
	case *array.Int32:
		arrowScaleTimes(a.Int32Values(), 1, 1, out)
	case *array.Uint32:
		for i, x := range a.Uint32Values() {
			out[i] = int64(x)
		}
	case *array.Int16:
		for i, x := range a.Int16Values() {
			out[i] = int64(x)
		}
	case *array.Uint16:
		for i, x := range a.Uint16Values() {
			out[i] = int64(x)
		}
	case *array.Int8:
		for i, x := range a.Int8Values() {
			out[i] = int64(x)
		}
	case *array.Uint8:
		for i, x := range a.Uint8Values() {
			out[i] = int64(x)
		}
	default:
		return fmt.Errorf("unsupported time type %s", a.DataType())
	}
	return nil
}

// arrowInterner maps external IDs of one mode to dense indices through a
// Dict, with a dense slice cache for small non-negative integer IDs:
// dense[id] is the dense index plus one (zero: not cached). The cache grows
// only up to arrowDenseLimit(Len), so memory stays O(number of IDs) even
// for sparse ID spaces.
type arrowInterner struct {
	d     *Dict
	dense []int32
}

// arrowDenseLimit bounds the cache length: 8 slots per known ID plus 1M
// slots (4 MiB), enough for MovieLens-style IDs 1..n with gaps.
func arrowDenseLimit(n int) int64 { return 8*int64(n) + 1<<20 }

func (x *arrowInterner) intID(id int64) int32 {
	if uint64(id) < uint64(len(x.dense)) {
		if v := x.dense[id]; v != 0 {
			return v - 1
		}
		v := x.d.InternInt(id)
		x.dense[id] = v + 1
		return v
	}
	if id >= 0 && id < arrowDenseLimit(x.d.Len()) {
		n := max(2*int64(len(x.dense)), id+1, 1024)
		n = min(n, arrowDenseLimit(x.d.Len()))
		dense := make([]int32, n)
		copy(dense, x.dense)
		for i, v := range x.d.Ints() {
			if v < n {
				dense[v] = int32(i) + 1
			}
		}
		x.dense = dense
		return x.intID(id)
	}
	return x.d.InternInt(id)
}

// stringID interns a string that may alias Arrow memory: it is copied only
// when it is new.
func (x *arrowInterner) stringID(s string) int32 {
	if v, ok := x.d.LookupString(s); ok {
		return v
	}
	return x.d.InternString(strings.Clone(s))
}

// arrowArrayInt reads element i of an integer array as an ID; reason is
// non-empty when it is not a valid ID.
func arrowArrayInt(a arrow.Array, i int) (v int64, reason string) {
	switch a := a.(type) {
	case *array.Int64:
		v = a.Value(i)
	case *array.Int32:
		v = int64(a.Value(i))
	case *array.Int16:
		v = int64(a.Value(i))
	case *array.Int8:
		v = int64(a.Value(i))
	case *array.Uint64:
		if a.Value(i) > math.MaxInt64 {
			return 0, fmt.Sprintf("ID %d overflows int64", a.Value(i))
		}
		v = int64(a.Value(i))
	case *array.Uint32:
		v = int64(a.Value(i))
	case *array.Uint16:
		v = int64(a.Value(i))
	case *array.Uint8:
		v = int64(a.Value(i))
	default:
		return 0, fmt.Sprintf("unsupported ID type %s", a.DataType())
	}
	if v < 0 {
		return 0, fmt.Sprintf("negative ID %d", v)
	}
	return v, ""
}

// arrayID interns element i of a (an integer or string array whose element
// is valid), for the dictionary path.
func (x *arrowInterner) arrayID(a arrow.Array, i int) (int32, error) {
	switch a := a.(type) {
	case *array.String:
		return x.stringID(a.Value(i)), nil
	case *array.LargeString:
		return x.stringID(a.Value(i)), nil
	}
	v, reason := arrowArrayInt(a, i)
	if reason != "" {
		return 0, errors.New(reason)
	}
	return x.intID(v), nil
}

// findColumn returns the index of the column called name: the exact match,
// else the case-insensitive one (-1 when there is none). Several columns
// matching at the level that decides are an error wrapping
// ErrDuplicateColumn: the file does not say which one is meant.
func findColumn(names []string, name string) (int, error) {
	for _, fold := range []bool{false, true} {
		at, n := -1, 0
		for i, f := range names {
			if f == name || fold && strings.EqualFold(f, name) {
				if n == 0 {
					at = i
				}
				n++
			}
		}
		if n > 1 {
			how := "named"
			if fold {
				how = "matching (ignoring case)"
			}
			return -1, fmt.Errorf("%w: %d columns %s %q (columns %s); rename them or pick one by position", ErrDuplicateColumn, n, how, name, strings.Join(names, ", "))
		}
		if n == 1 {
			return at, nil
		}
	}
	return -1, nil
}
