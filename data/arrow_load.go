package data

import (
	"errors"
	"fmt"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"
)

// arrowAlloc is the allocator behind Arrow and Parquet reading and writing.
// Tests replace it with a checked allocator to catch leaks.
var arrowAlloc memory.Allocator = memory.DefaultAllocator

// arrowRoleErr is the sentinel error wrapped for an invalid value of each
// role.
var arrowRoleErr = [4]error{ErrBadID, ErrBadID, ErrBadRating, ErrBadTime}

// arrowMaxSkipReasons is how many skip reasons a load keeps for the report.
const arrowMaxSkipReasons = 5

// arrowAllocLimit caps a single allocation while reading a file of the
// given size: a corrupt length field must not make the reader allocate
// gigabytes. Compressed buffers may legitimately expand, so the cap is 64
// times the file size plus 64 MiB.
func arrowAllocLimit(size int64) int { return int(min(64*size+64<<20, 1<<40)) }

// arrowCappedAllocator panics with arrowTooBig on an allocation above limit;
// the reader recovers the panic into an error naming the file.
type arrowCappedAllocator struct {
	memory.Allocator
	limit int
}

type arrowTooBig int

func (a *arrowCappedAllocator) Allocate(n int) []byte {
	if n > a.limit {
		panic(arrowTooBig(n))
	}
	return a.Allocator.Allocate(n)
}

func (a *arrowCappedAllocator) Reallocate(n int, b []byte) []byte {
	if n > a.limit {
		panic(arrowTooBig(n))
	}
	return a.Allocator.Reallocate(n, b)
}

// arrowRecover converts a panic inside the Arrow or Parquet library (which
// some corrupt inputs provoke) into an error naming the file.
func arrowRecover(path string, err *error) {
	if r := recover(); r != nil {
		if n, ok := r.(arrowTooBig); ok {
			*err = fmt.Errorf("%s: corrupt file: a length field asks for %d bytes", path, int(n))
			return
		}
		*err = fmt.Errorf("%s: corrupt or truncated file: %v", path, r)
	}
}

// arrowBatch is one record batch, decoded by the reading goroutine and
// interned by the building one.
type arrowBatch struct {
	rec     arrow.Record // retained; released after interning
	where   string       // "batch 3" or "row group 2"
	first   int64        // index of the batch's first row within where
	fileRow int64        // index of the batch's first row in the file
	cols    [4]int       // field index of each role in rec (-1: absent)
	uraw    []int64      // integer user IDs (integer ID columns only)
	iraw    []int64      // integer item IDs
	r       []float64
	t       []int64
	bad     []bool // nil when every row is valid
	nbad    int
	reasons []string
}

// arrowLoader turns record batches into a Store.
type arrowLoader struct {
	path         string
	opts         *LoadOptions
	rep          *LoadReport
	names        [4]string
	strIDs       [2]bool // user / item IDs are strings
	hasTime      bool
	b            *Builder
	users, items arrowInterner
	uidx, iidx   []int32
	rows, total  int64
	free         chan *arrowBatch // recycled batch buffers
	memLimit     int64
}

// getBatch returns a batch with recycled buffers when one is free.
func (l *arrowLoader) getBatch() *arrowBatch {
	select {
	case b := <-l.free:
		return b
	default:
		return new(arrowBatch)
	}
}

func (l *arrowLoader) putBatch(b *arrowBatch) {
	b.rec = nil
	select {
	case l.free <- b:
	default:
	}
}

func newArrowLoader(path string, sc *arrow.Schema, cols [4]int, total, fileSize int64, opts *LoadOptions, rep *LoadReport) (*arrowLoader, error) {
	l := &arrowLoader{path: path, opts: opts, rep: rep, total: total, free: make(chan *arrowBatch, 8), memLimit: opts.memLimit()}
	for role, i := range cols {
		if i >= 0 {
			l.names[role] = sc.Field(i).Name
		}
	}
	l.hasTime = cols[arrowTime] >= 0
	l.strIDs[0] = arrowIsStringIDs(sc.Field(cols[arrowUser]).Type)
	l.strIDs[1] = arrowIsStringIDs(sc.Field(cols[arrowItem]).Type)
	dict := func(role int) *Dict {
		if l.strIDs[role] {
			return NewStringDict(l.names[role])
		}
		return NewIntDict(l.names[role])
	}
	l.users.d, l.items.d = dict(arrowUser), dict(arrowItem)
	l.b = NewBuilder(l.users.d, l.items.d, l.hasTime, opts.Builder)
	rep.UserColumn, rep.ItemColumn, rep.RatingColumn, rep.TimeColumn = l.names[0], l.names[1], l.names[2], l.names[3]
	// Reserve the whole store up front (no append slack) when the row count
	// is plausible: at most 64 rows per byte of file, so a corrupt count
	// cannot reserve gigabytes (compressed data may still exceed it and
	// then grows by appending).
	// Nor beyond the memory limit: a file of many repeated rows is merged
	// as it is read (memFit) and may never need its announced rows.
	if total > 0 && total <= 64*fileSize && (l.memLimit <= 0 || memEstimate(total, l.hasTime) <= l.memLimit/2) {
		l.b.Grow(int(total))
	}
	return l, nil
}

// colsIn finds the roles' fields in a record schema by name.
func (l *arrowLoader) colsIn(sc *arrow.Schema) ([4]int, error) {
	var cols [4]int
	for role, name := range l.names {
		cols[role] = -1
		if name == "" {
			continue
		}
		idx := sc.FieldIndices(name)
		if len(idx) == 0 {
			return cols, fmt.Errorf("%s: record batch lacks column %q", l.path, name)
		}
		cols[role] = idx[0]
	}
	return cols, nil
}

// decode validates and converts one batch (reading goroutine).
func (l *arrowLoader) decode(b *arrowBatch) error {
	n := int(b.rec.NumRows())
	for _, c := range b.cols {
		if c >= 0 && b.rec.Column(c).Len() != n {
			return fmt.Errorf("%s: %s: corrupt file: column lengths differ", l.path, b.where)
		}
	}
	b.bad, b.nbad, b.reasons = nil, 0, b.reasons[:0]
	bad := func(row, role int, reason string) error {
		msg := fmt.Sprintf("row %d (%s, offset %d), column %q", b.fileRow+int64(row)+1, b.where, b.first+int64(row), l.names[role])
		if !l.opts.SkipInvalid {
			return fmt.Errorf("%s: %s: %w: %s", l.path, msg, arrowRoleErr[role], reason)
		}
		if b.bad == nil {
			b.bad = make([]bool, n)
		}
		if !b.bad[row] {
			b.bad[row] = true
			b.nbad++
			if len(b.reasons) < arrowMaxSkipReasons {
				b.reasons = append(b.reasons, fmt.Sprintf("%s: %v: %s", msg, arrowRoleErr[role], reason))
			}
		}
		return nil
	}
	b.r = arrowResize(b.r, n)
	if err := arrowRatings(b.rec.Column(b.cols[arrowRating]), b.r, bad); err != nil {
		return err
	}
	if l.hasTime {
		b.t = arrowResize(b.t, n)
		if err := arrowTimes(b.rec.Column(b.cols[arrowTime]), b.t, bad); err != nil {
			return err
		}
	}
	for role, raw := range [2]*[]int64{&b.uraw, &b.iraw} {
		a := b.rec.Column(b.cols[role])
		if d, ok := a.(*array.Dictionary); ok {
			if err := arrowCheckDictIDs(d, role, bad); err != nil {
				return err
			}
			continue
		}
		if l.strIDs[role] {
			if err := arrowCheckStringIDs(a, role, bad); err != nil {
				return err
			}
			continue
		}
		*raw = arrowResize(*raw, n)
		if err := arrowIntIDs(a, *raw, role, bad); err != nil {
			return err
		}
	}
	return nil
}

func arrowResize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// arrowCheckStringIDs reports nulls and empty IDs.
func arrowCheckStringIDs(a arrow.Array, role int, bad arrowBadFunc) error {
	if err := arrowNulls(a, role, bad); err != nil {
		return err
	}
	for i := 0; i < a.Len(); i++ {
		var empty bool
		switch a := a.(type) {
		case *array.String:
			empty = a.ValueLen(i) == 0
		case *array.LargeString:
			empty = a.ValueLen(i) == 0
		}
		if empty && !a.IsNull(i) {
			if err := bad(i, role, "empty ID"); err != nil {
				return err
			}
		}
	}
	return nil
}

// arrowCheckDictIDs reports nulls and rows whose dictionary value is not a
// valid ID (null, empty, negative or overflowing).
func arrowCheckDictIDs(d *array.Dictionary, role int, bad arrowBadFunc) error {
	vals := d.Dictionary()
	reason := make([]string, vals.Len())
	for j := range reason {
		switch v := vals.(type) {
		case *array.String:
			if v.ValueLen(j) == 0 {
				reason[j] = "empty ID"
			}
		case *array.LargeString:
			if v.ValueLen(j) == 0 {
				reason[j] = "empty ID"
			}
		default:
			_, reason[j] = arrowArrayInt(vals, j)
		}
		if vals.IsNull(j) {
			reason[j] = "null value"
		}
	}
	for i := 0; i < d.Len(); i++ {
		if d.IsNull(i) {
			if err := bad(i, role, "null value"); err != nil {
				return err
			}
			continue
		}
		j := d.GetValueIndex(i)
		if j < 0 || j >= len(reason) {
			if err := bad(i, role, fmt.Sprintf("dictionary index %d out of range", j)); err != nil {
				return err
			}
			continue
		}
		if reason[j] != "" {
			if err := bad(i, role, reason[j]); err != nil {
				return err
			}
		}
	}
	return nil
}

// intern maps the batch's IDs to dense indices and adds its rows to the
// builder (building goroutine, in batch order).
func (l *arrowLoader) intern(b *arrowBatch) error {
	n := int(b.rec.NumRows())
	l.uidx = arrowResize(l.uidx, n)
	l.iidx = arrowResize(l.iidx, n)
	for role, x := range [2]*arrowInterner{&l.users, &l.items} {
		out := l.uidx
		raw := b.uraw
		if role == arrowItem {
			out, raw = l.iidx, b.iraw
		}
		if err := l.internColumn(x, b.rec.Column(b.cols[role]), raw, out, b.bad); err != nil {
			return fmt.Errorf("%s: %s, column %q: %w", l.path, b.where, l.names[role], err)
		}
	}
	l.b.Grow(n - b.nbad)
	bad := b.bad
	switch {
	case bad == nil && l.hasTime:
		for k, r := range b.r[:n] {
			l.b.Add(l.uidx[k], l.iidx[k], r, b.t[k])
		}
	case bad == nil:
		for k, r := range b.r[:n] {
			l.b.Add(l.uidx[k], l.iidx[k], r, 0)
		}
	default:
		for k, r := range b.r[:n] {
			if bad[k] {
				continue
			}
			var t int64
			if l.hasTime {
				t = b.t[k]
			}
			l.b.Add(l.uidx[k], l.iidx[k], r, t)
		}
	}
	l.rows += int64(n)
	l.rep.Rows += n
	l.rep.Skipped += b.nbad
	for _, r := range b.reasons {
		if len(l.rep.SkipReasons) < arrowMaxSkipReasons {
			l.rep.SkipReasons = append(l.rep.SkipReasons, r)
		}
	}
	if err := memFit(l.path, l.memLimit, l.b, 0, l.rep.Rows-l.rep.Skipped, nil); err != nil {
		return err
	}
	if l.opts.Progress != nil {
		l.opts.Progress(l.rows, l.total)
	}
	return nil
}

func (l *arrowLoader) internColumn(x *arrowInterner, a arrow.Array, raw []int64, out []int32, bad []bool) error {
	switch a := a.(type) {
	case *array.Dictionary:
		vals := a.Dictionary()
		cache := make([]int32, vals.Len())
		for i := range out {
			if bad != nil && bad[i] {
				continue
			}
			j := a.GetValueIndex(i)
			if cache[j] == 0 {
				v, err := x.arrayID(vals, j)
				if err != nil {
					return err
				}
				cache[j] = v + 1
			}
			out[i] = cache[j] - 1
		}
	case *array.String:
		for i := range out {
			if bad == nil || !bad[i] {
				out[i] = x.stringID(a.Value(i))
			}
		}
	case *array.LargeString:
		for i := range out {
			if bad == nil || !bad[i] {
				out[i] = x.stringID(a.Value(i))
			}
		}
	default:
		if bad == nil {
			for i, id := range raw[:len(out)] {
				out[i] = x.intID(id)
			}
			return nil
		}
		for i, id := range raw[:len(out)] {
			if !bad[i] {
				out[i] = x.intID(id)
			}
		}
	}
	return nil
}

// arrowBeforeFinish, when set (by benchmarks), is called when all rows are
// read, just before Builder.Finish, to time the two phases apart.
var arrowBeforeFinish func()

// finish builds the store.
func (l *arrowLoader) finish() (*Store, error) {
	if arrowBeforeFinish != nil {
		arrowBeforeFinish()
	}
	s, ds, err := l.b.Finish()
	l.rep.Duplicates = ds
	if err != nil {
		if errors.Is(err, ErrEmpty) {
			if l.rep.Skipped > 0 {
				first := ""
				if len(l.rep.SkipReasons) > 0 {
					first = "; first: " + l.rep.SkipReasons[0]
				}
				return nil, fmt.Errorf("%s: %w: all %d rows were invalid and skipped%s", l.path, ErrEmpty, l.rep.Skipped, first)
			}
			return nil, fmt.Errorf("%s: %w: the file has a schema but no rows", l.path, ErrNoData)
		}
		return nil, fmt.Errorf("%s: %w", l.path, err)
	}
	return s, nil
}

// arrowPipeline runs produce on its own goroutine (reading and decoding
// batches) while the calling goroutine interns them in order, so the two
// stages use two cores and the result does not depend on timing. With
// threads == 1 everything runs on the calling goroutine.
//
// produce calls emit for each batch in file order; emit returns false when
// the load has stopped. The batch's record must be retained by produce and
// is released here.
func (l *arrowLoader) pipeline(threads int, produce func(emit func(*arrowBatch) bool) error) (err error) {
	if threads == 1 {
		var cerr error
		perr := func() (err error) {
			defer arrowRecover(l.path, &err)
			return produce(func(b *arrowBatch) bool {
				defer b.rec.Release()
				if cerr = l.decode(b); cerr != nil {
					return false
				}
				cerr = l.intern(b)
				l.putBatch(b)
				return cerr == nil
			})
		}()
		return errors.Join(cerr, perr)
	}
	const depth = 3 // batches in flight between the two stages
	full := make(chan *arrowBatch, depth)
	stop := make(chan struct{})
	perr := make(chan error, 1)
	go func() {
		var err, derr error
		defer func() {
			close(full)
			perr <- errors.Join(derr, err)
		}()
		defer arrowRecover(l.path, &err)
		err = produce(func(b *arrowBatch) bool {
			if derr = l.decode(b); derr != nil {
				b.rec.Release()
				return false
			}
			select {
			case full <- b:
				return true
			case <-stop:
				b.rec.Release()
				return false
			}
		})
	}()
	var cerr error
	func() {
		defer arrowRecover(l.path, &cerr)
		for b := range full {
			cerr = l.intern(b)
			b.rec.Release()
			if cerr != nil {
				return
			}
			l.putBatch(b)
		}
	}()
	if cerr != nil {
		close(stop)
		for b := range full {
			b.rec.Release()
		}
	}
	pe := <-perr
	if cerr != nil {
		return cerr
	}
	return pe
}
