package data

import (
	"fmt"
	"strconv"
)

// Dict maps the external IDs of one mode (users or items), as they appear in
// the input, to dense indices 0..Len()-1 in order of first appearance, and
// back. IDs are either all integers (int64) or all strings: a loader that
// reads an integer column produces an integer dictionary, so "007" and "7"
// stay distinct in a string dictionary and equal in an integer one.
//
// A Dict is not safe for concurrent mutation; lookups on a finished Dict are.
type Dict struct {
	// Name is the column name the IDs came from (for messages and writing).
	Name string
	// IsString reports whether the IDs are strings.
	IsString bool

	ints   []int64
	strs   []string
	intIdx map[int64]int32
	strIdx map[string]int32
}

// NewIntDict returns an empty dictionary of integer IDs.
func NewIntDict(name string) *Dict {
	return &Dict{Name: name, intIdx: make(map[int64]int32)}
}

// NewStringDict returns an empty dictionary of string IDs.
func NewStringDict(name string) *Dict {
	return &Dict{Name: name, IsString: true, strIdx: make(map[string]int32)}
}

// Len returns the number of distinct IDs.
func (d *Dict) Len() int {
	if d.IsString {
		return len(d.strs)
	}
	return len(d.ints)
}

// InternInt returns the dense index of integer ID id, adding it if new.
// It panics if d holds strings (a programming error).
func (d *Dict) InternInt(id int64) int32 {
	if d.IsString {
		panic("data: InternInt on a string dictionary")
	}
	if i, ok := d.intIdx[id]; ok {
		return i
	}
	i := int32(len(d.ints))
	d.ints = append(d.ints, id)
	d.intIdx[id] = i
	return i
}

// InternString returns the dense index of string ID id, adding it if new.
// It panics if d holds integers (a programming error).
func (d *Dict) InternString(id string) int32 {
	if !d.IsString {
		panic("data: InternString on an integer dictionary")
	}
	if i, ok := d.strIdx[id]; ok {
		return i
	}
	i := int32(len(d.strs))
	d.strs = append(d.strs, id)
	d.strIdx[id] = i
	return i
}

// LookupInt returns the dense index of integer ID id and whether it is known.
func (d *Dict) LookupInt(id int64) (int32, bool) {
	if d.IsString {
		return 0, false
	}
	i, ok := d.intIdx[id]
	return i, ok
}

// LookupString returns the dense index of string ID id and whether it is
// known. For an integer dictionary the string is parsed as an integer first.
func (d *Dict) LookupString(id string) (int32, bool) {
	if d.IsString {
		i, ok := d.strIdx[id]
		return i, ok
	}
	v, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		return 0, false
	}
	i, ok := d.intIdx[v]
	return i, ok
}

// Int returns the integer ID of dense index i.
func (d *Dict) Int(i int32) int64 { return d.ints[i] }

// String returns the ID of dense index i as a string (integers formatted in
// base 10).
func (d *Dict) String(i int32) string {
	if d.IsString {
		return d.strs[i]
	}
	return strconv.FormatInt(d.ints[i], 10)
}

// Ints returns the integer IDs in dense-index order (nil for a string
// dictionary). The slice must not be modified.
func (d *Dict) Ints() []int64 { return d.ints }

// Strings returns the string IDs in dense-index order (nil for an integer
// dictionary). The slice must not be modified.
func (d *Dict) Strings() []string { return d.strs }

// DictFromInts builds an integer dictionary from IDs in dense-index order.
// It returns an error on a repeated ID.
func DictFromInts(name string, ids []int64) (*Dict, error) {
	d := &Dict{Name: name, ints: append([]int64(nil), ids...), intIdx: make(map[int64]int32, len(ids))}
	for i, id := range ids {
		if _, dup := d.intIdx[id]; dup {
			return nil, fmt.Errorf("data: dictionary %q repeats ID %d", name, id)
		}
		d.intIdx[id] = int32(i)
	}
	return d, nil
}

// DictFromStrings builds a string dictionary from IDs in dense-index order.
// It returns an error on a repeated ID.
func DictFromStrings(name string, ids []string) (*Dict, error) {
	d := &Dict{Name: name, IsString: true, strs: append([]string(nil), ids...), strIdx: make(map[string]int32, len(ids))}
	for i, id := range ids {
		if _, dup := d.strIdx[id]; dup {
			return nil, fmt.Errorf("data: dictionary %q repeats ID %q", name, id)
		}
		d.strIdx[id] = int32(i)
	}
	return d, nil
}

// Equal reports whether two dictionaries hold the same IDs in the same order.
func (d *Dict) Equal(o *Dict) bool {
	if d == nil || o == nil {
		return d == o
	}
	if d.IsString != o.IsString || d.Len() != o.Len() {
		return false
	}
	if d.IsString {
		for i := range d.strs {
			if d.strs[i] != o.strs[i] {
				return false
			}
		}
		return true
	}
	for i := range d.ints {
		if d.ints[i] != o.ints[i] {
			return false
		}
	}
	return true
}
