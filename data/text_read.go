package data

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"sync"
)

// textChunkSize is the size of the blocks read and parsed in parallel:
// large enough that per-chunk overhead (allocation, scheduling) is noise,
// small enough that a few in-flight chunks per thread cost little memory.
// It is a variable only so that tests can exercise many chunk boundaries.
var textChunkSize = 2 << 20

// textFast enables parseFast; a variable only so that tests can compare
// the loads with and without it.
var textFast = true

// textMaxReasons bounds the skip reasons kept in a LoadReport.
const textMaxReasons = 5

// readDelimited loads delimited text (see the package doc for the grammar).
// The ID columns start as integer columns; when a value that is not an
// integer literal turns up, the load restarts with that column read as
// strings, so the result does not depend on where the value sits.
func readDelimited(path string, opts *LoadOptions, rep *LoadReport) (*Store, error) {
	var forced [2]string // why a column is read as strings ("" if not)
	for attempt := 0; ; attempt++ {
		*rep = LoadReport{Path: rep.Path, Format: rep.Format}
		r := &textReader{path: path, opts: opts, rep: rep, strWhy: forced}
		s, err := r.run()
		again := false
		for m := range forced {
			if forced[m] == "" && r.needWhy[m] != "" {
				forced[m] = r.needWhy[m]
				again = true
			}
		}
		if !again || attempt >= 2 {
			return s, err
		}
	}
}

// textReader is one attempt at loading a delimited file.
type textReader struct {
	path   string
	opts   *LoadOptions
	rep    *LoadReport
	lay    *textLayout
	strWhy [2]string // ID columns read as strings, and why
	str    [2]bool
	// needWhy is set when a column read as integers met a non-integer
	// value: the load must restart with it read as strings.
	needWhy [2]string
	maxLine int
	// preErrs are the too-long lines skipped before the layout was
	// sniffed (SkipInvalid only).
	preErrs []*ParseError
}

// textChunk is a block of whole lines and, once parsed, its rows in compact
// arrays (no per-field allocation).
type textChunk struct {
	raw       []byte // the whole allocated buffer (reused)
	buf       []byte
	firstLine int   // 1-based line number of buf[0]
	srcPos    int64 // bytes of the (possibly compressed) file read so far
	done      chan struct{}

	rows        int     // data rows (non-blank lines) seen
	uid, iid    []int64 // integer IDs
	uEnd, iEnd  []int32 // string IDs: end offsets into uStrs, iStrs
	uStrs       []byte
	iStrs       []byte
	val         []float64
	ts          []int64
	nbad        int
	errs        []*ParseError // the first textMaxReasons malformed rows
	fatalIDOnly bool          // the first error is a negative/overflowing integer ID
	needWhy     [2]string
	tooLong     bool // the chunk stands for one line longer than MaxLine (buf empty)
}

// reset prepares a (possibly recycled) chunk for new lines.
func (c *textChunk) reset(data []byte, firstLine int, srcPos int64) {
	c.buf, c.firstLine, c.srcPos, c.done = data, firstLine, srcPos, make(chan struct{})
	c.rows, c.nbad, c.errs, c.fatalIDOnly, c.needWhy = 0, 0, nil, false, [2]string{}
	c.tooLong = false
}

// textDiscardLine reads src up to and including the next line end, using
// buf (non-empty) as scratch, and returns the bytes read after the line end
// (a subslice of buf) and whether src ended. Memory stays bounded whatever
// the length of the line.
func textDiscardLine(src io.Reader, buf []byte) (rest []byte, eof bool, err error) {
	for {
		n, err := src.Read(buf)
		if i := bytes.IndexByte(buf[:n], '\n'); i >= 0 {
			rest = buf[i+1 : n]
			if err == io.EOF {
				return rest, true, nil
			}
			return rest, false, nil
		}
		if err == io.EOF {
			return nil, true, nil
		}
		if err != nil {
			return nil, false, err
		}
	}
}

// textReuse returns s emptied, with room for n elements.
func textReuse[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, 0, n)
	}
	return s[:0]
}

type textCountingReader struct {
	r io.Reader
	n int64
}

func (c *textCountingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// textInput is an opened rating file: the (decompressed) byte stream and
// the counters that progress reports read.
type textInput struct {
	src   io.Reader
	cr    *textCountingReader
	br    *bufio.Reader
	total int64 // the file size, -1 if unknown
	close func()
}

// openText opens path, decompressing it when it starts with the gzip magic.
func openText(path string, rep *LoadReport) (*textInput, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	in := &textInput{total: -1, close: func() { f.Close() }}
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
		in.total = st.Size()
	}
	in.cr = &textCountingReader{r: f}
	in.br = bufio.NewReaderSize(in.cr, 64<<10)
	in.src = in.br
	if magic, _ := in.br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(in.br)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("%s: gzip: %w", path, err)
		}
		in.close = func() {
			zr.Close()
			f.Close()
		}
		in.src = zr
		rep.Detected = append(rep.Detected, "gzip-compressed")
	}
	return in, nil
}

// pos returns the bytes of the (possibly compressed) file consumed so far.
func (in *textInput) pos() int64 { return in.cr.n - int64(in.br.Buffered()) }

func (r *textReader) readErr(err error) error { return fmt.Errorf("%s: read: %w", r.path, err) }

func (r *textReader) tooLong(line int) *ParseError {
	return &ParseError{File: r.path, Line: line, Err: fmt.Errorf("%w: the line is longer than the maximum of %d bytes (raise it with --max-line)", ErrLineTooLong, r.maxLine)}
}

// textHead is the first block of a file.
type textHead struct {
	raw  []byte // the allocated buffer
	buf  []byte // the bytes not yet consumed, a subslice of raw
	eof  bool   // the file ends with buf
	line int    // the 1-based number of the line buf starts with
}

// readHead reads the first block. The block grows until it holds a whole
// line or more than maxLine bytes; leading lines longer than that are
// skipped (SkipInvalid, recorded in preErrs) or fail.
func (r *textReader) readHead(src io.Reader) (*textHead, error) {
	h := &textHead{raw: make([]byte, textChunkSize), line: 1}
	n, err := io.ReadFull(src, h.raw)
	h.eof = err == io.EOF || err == io.ErrUnexpectedEOF
	if err != nil && !h.eof {
		return nil, r.readErr(err)
	}
	h.buf = bytes.TrimPrefix(h.raw[:n], []byte("\xef\xbb\xbf")) // UTF-8 byte-order mark
	r.preErrs = nil
	for {
		for !h.eof && bytes.IndexByte(h.buf, '\n') < 0 && len(h.buf) <= r.maxLine {
			more := make([]byte, max(len(h.buf)+textChunkSize, 2*len(h.buf)))
			copy(more, h.buf)
			n, err := io.ReadFull(src, more[len(h.buf):])
			if h.eof = err == io.EOF || err == io.ErrUnexpectedEOF; err != nil && !h.eof {
				return nil, r.readErr(err)
			}
			h.raw, h.buf = more, more[:len(h.buf)+n]
		}
		if h.eof || bytes.IndexByte(h.buf, '\n') >= 0 {
			return h, nil
		}
		if !r.opts.SkipInvalid {
			return nil, r.tooLong(h.line)
		}
		r.preErrs = append(r.preErrs, r.tooLong(h.line))
		h.line++
		rest, atEOF, err := textDiscardLine(src, h.raw)
		if err != nil {
			return nil, r.readErr(err)
		}
		h.buf, h.eof = rest, atEOF
	}
}

// skipHeader drops the blank lines and the header line at the start of h.
func (h *textHead) skipHeader() {
	for {
		i := bytes.IndexByte(h.buf, '\n')
		var l []byte
		if i < 0 {
			l, h.buf = h.buf, h.buf[len(h.buf):]
		} else {
			l, h.buf = h.buf[:i], h.buf[i+1:]
		}
		h.line++
		if len(textTrimBlanks(bytes.TrimRight(l, "\r"))) > 0 || i < 0 {
			return
		}
	}
}

// textReportFormat is the format a load reports: the one asked for, else
// the one the sniffed delimiter implies.
func textReportFormat(hint Format, delimiter string) Format {
	switch {
	case hint == FormatCSV || hint == FormatTSV || hint == FormatDat:
		return hint
	case delimiter == "\t":
		return FormatTSV
	case delimiter == "::":
		return FormatDat
	default:
		return FormatCSV
	}
}

// run performs one load attempt: a reader goroutine cuts the file into
// chunks of whole lines, parser goroutines convert them, and the consumer
// builds the store in file order.
func (r *textReader) run() (*Store, error) {
	opts, rep := r.opts, r.rep
	for m := range r.str {
		r.str[m] = r.strWhy[m] != ""
	}
	in, err := openText(r.path, rep)
	if err != nil {
		return nil, err
	}
	defer in.close()
	r.maxLine = opts.maxLine()
	h, err := r.readHead(in.src)
	if err != nil {
		return nil, err
	}
	hint := opts.Format
	if hint == FormatAuto {
		hint = DetectFormat(r.path)
	}
	lay, err := textSniff(r.path, h.buf, h.eof, hint, opts, rep)
	if err != nil {
		return nil, err
	}
	r.lay = lay
	rep.Format = textReportFormat(hint, rep.Delimiter)
	if lay.header {
		h.skipHeader()
	}
	for m, why := range r.strWhy {
		if why != "" {
			rep.Detected = append(rep.Detected, fmt.Sprintf("%s IDs are strings (%s)", textRoleNames[m], why))
		}
	}

	threads := opts.Threads
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	p := &textPipe{
		work:  make(chan *textChunk, threads),
		order: make(chan *textChunk, 2*threads+2),
		stop:  make(chan struct{}),
		free:  make(chan *textChunk, 3*threads+4),
	}
	var wg sync.WaitGroup
	var ioErr error // set by the reader before wg.Done
	wg.Add(1)
	go func() {
		defer wg.Done()
		ioErr = r.produce(in, h, p)
	}()
	for w := 0; w < threads; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range p.work {
				r.parse(c)
				close(c.done)
			}
		}()
	}
	s, err := r.consume(p.order, p.free, in.total)
	close(p.stop)
	wg.Wait()
	if err == nil && ioErr != nil {
		err = ioErr
	}
	if err != nil {
		return nil, err
	}
	return s, nil
}

// textPipe connects the stages of a load: the reader sends each chunk to
// the parsers (work) and, in file order, to the consumer (order); the
// consumer recycles parsed chunks (buffers and arrays) back to the reader
// (free); stop closes when the consumer is done.
type textPipe struct {
	work, order, free chan *textChunk
	stop              chan struct{}
}

// send hands c to the parsers and the consumer. It returns false once the
// consumer has stopped.
func (p *textPipe) send(c *textChunk) bool {
	select {
	case p.work <- c:
	case <-p.stop:
		return false
	}
	select {
	case p.order <- c:
	case <-p.stop:
		return false
	}
	return true
}

// produce cuts the input after the head into chunks of whole lines and
// sends them down the pipe, closing it at the end. It returns the read
// error, if any.
func (r *textReader) produce(in *textInput, h *textHead, p *textPipe) error {
	defer close(p.order)
	defer close(p.work)
	buf, eof, line := h.buf, h.eof, h.line
	owner := &textChunk{raw: h.raw} // the chunk whose raw holds buf
	var carry, scratch []byte
	for {
		var data []byte
		if eof {
			data, buf = buf, nil
		} else if i := bytes.LastIndexByte(buf, '\n'); i >= 0 {
			data, buf = buf[:i+1], buf[i+1:]
		}
		carry = append(carry[:0], buf...)
		long := len(carry) > r.maxLine
		if long {
			// The unfinished line is already too long: report it
			// after the complete lines before it, then stop (or,
			// under SkipInvalid, drop the rest of the line unread).
			carry = carry[:0]
		}
		if data != nil {
			c := owner
			c.reset(data, line, in.pos())
			line += bytes.Count(data, []byte{'\n'})
			if !p.send(c) {
				return nil
			}
			select {
			case owner = <-p.free:
			default:
				owner = &textChunk{}
			}
		}
		if long {
			c := &textChunk{}
			c.reset(nil, line, in.pos())
			c.tooLong = true
			line++
			if !p.send(c) || !r.opts.SkipInvalid {
				return nil
			}
			if scratch == nil {
				scratch = make([]byte, 64<<10)
			}
			rest, atEOF, err := textDiscardLine(in.src, scratch)
			if err != nil {
				return r.readErr(err)
			}
			carry = append(carry[:0], rest...)
			if atEOF {
				// The rest after the long line is the last block.
				eof = true
				buf, carry = carry, nil
				continue
			}
		}
		if eof {
			return nil
		}
		// Next block: the unfinished line, then fresh bytes (a line
		// longer than a block makes the block grow).
		need := len(carry) + textChunkSize
		if cap(owner.raw) < need {
			owner.raw = make([]byte, need)
		}
		nb := owner.raw[:need]
		copy(nb, carry)
		n, err := io.ReadFull(in.src, nb[len(carry):])
		if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
			return r.readErr(err)
		}
		eof = err != nil
		buf = nb[:len(carry)+n]
	}
}

// consume feeds the parsed chunks to a Builder in file order, so that
// dictionaries get first-appearance order whatever the thread count.
func (r *textReader) consume(order <-chan *textChunk, free chan<- *textChunk, total int64) (*Store, error) {
	opts, rep, lay := r.opts, r.rep, r.lay
	dicts, interners := r.newDicts()
	b := NewBuilder(dicts[0], dicts[1], lay.col[textTime] >= 0, opts.Builder)
	var fatal *ParseError
	read := 0 // valid rows read
	memLimit := opts.memLimit()
	for _, e := range r.preErrs {
		rep.Rows++
		rep.Skipped++
		r.reason(e)
	}
	for c := range order {
		<-c.done
		for m, why := range c.needWhy {
			if why != "" && r.needWhy[m] == "" {
				r.needWhy[m] = why
			}
		}
		if r.needWhy != [2]string{} {
			// Restart with string IDs; nothing of this attempt is kept.
			return nil, errors.New("restart")
		}
		if fatal != nil {
			continue // only looking for string ID columns
		}
		rep.Rows += c.rows
		if c.nbad > 0 {
			if !opts.SkipInvalid {
				fatal = c.errs[0]
				if !c.fatalIDOnly {
					return nil, fatal
				}
				// A bad integer ID is an error only if the column stays an
				// integer column: read on to make sure.
				continue
			}
			rep.Skipped += c.nbad
			for _, e := range c.errs {
				r.reason(e)
			}
		}
		// The rows go straight into the builder's arrays, reserved for
		// the whole input from the rows per byte so far, and the chunk
		// with its arrays is reused: the rows are held once, not once
		// per chunk and again concatenated.
		b.textReserve(len(c.val), c.srcPos, total)
		r.intern(c, &interners, b)
		read += len(c.val)
		if err := memFit(r.path, memLimit, b, 0, read, nil); err != nil {
			return nil, err
		}
		if opts.Progress != nil {
			opts.Progress(c.srcPos, total)
		}
		select {
		case free <- c:
		default:
		}
	}
	if fatal != nil {
		return nil, fatal
	}
	interners[0].finish()
	interners[1].finish()
	return r.finish(b)
}

// newDicts makes the user and item dictionaries of a load (string or
// integer, named after the header when there is one) and their interners.
func (r *textReader) newDicts() ([2]*Dict, [2]textInterner) {
	var dicts [2]*Dict
	var interners [2]textInterner
	for m := range dicts {
		name := textRoleNames[m]
		if r.lay.header && r.lay.col[m] < len(r.lay.names) {
			name = r.lay.names[r.lay.col[m]]
		}
		if r.str[m] {
			dicts[m] = NewStringDict(name)
		} else {
			dicts[m] = NewIntDict(name)
		}
		interners[m].d = dicts[m]
	}
	return dicts, interners
}

// reason keeps the reason a row was skipped while there is room.
func (r *textReader) reason(e *ParseError) {
	if len(r.rep.SkipReasons) < textMaxReasons {
		r.rep.SkipReasons = append(r.rep.SkipReasons, e.Error())
	}
}

// intern appends the chunk's rows to b (with room for them): the dense
// user and item indices (interning the IDs), the values and the time
// stamps.
func (r *textReader) intern(c *textChunk, interners *[2]textInterner, b *Builder) {
	n0, n := len(b.u), len(c.val)
	du, di := b.u[n0:n0+n], b.i[n0:n0+n]
	var ustart, istart int32
	for k := range c.val {
		if r.str[0] {
			du[k] = interners[0].bytesID(c.uStrs[ustart:c.uEnd[k]])
			ustart = c.uEnd[k]
		} else {
			du[k] = interners[0].intID(c.uid[k])
		}
		if r.str[1] {
			di[k] = interners[1].bytesID(c.iStrs[istart:c.iEnd[k]])
			istart = c.iEnd[k]
		} else {
			di[k] = interners[1].intID(c.iid[k])
		}
	}
	b.u, b.i = b.u[:n0+n], b.i[:n0+n]
	b.r = append(b.r, c.val...)
	if b.hasTime {
		b.t = append(b.t, c.ts...)
	}
}

// textReserve makes room for n more rows in b, pos of total bytes of the
// input read with them. When the arrays are full they grow to the rows the
// whole input will hold at the rows per byte so far (2% margin; exactly
// what is needed at the end of the input), so that a file is loaded with
// one or two allocations per array rather than a doubling series; without
// a known size they double.
func (b *Builder) textReserve(n int, pos, total int64) {
	need := b.Len() + n
	if need <= cap(b.r) && need <= cap(b.u) && need <= cap(b.i) && (!b.hasTime || need <= cap(b.t)) {
		return
	}
	want := 2 * need
	switch {
	case total > 0 && pos >= total:
		want = need
	case total > 0 && pos > 0:
		want = int(float64(need)*float64(total)/float64(pos)*1.02) + 1024
	}
	b.Grow(max(want, need) - b.Len())
}

// finish builds the store and turns an empty result into the error that
// says why it is empty.
func (r *textReader) finish(b *Builder) (*Store, error) {
	rep, lay := r.rep, r.lay
	s, ds, err := b.Finish()
	rep.Duplicates = ds
	switch {
	case errors.Is(err, ErrEmpty) && rep.Rows == 0 && lay.header:
		return nil, &ParseError{File: r.path, Err: fmt.Errorf("%w: the file holds only a header line (%s)", ErrNoData, textJoin(lay.names))}
	case errors.Is(err, ErrEmpty) && rep.Rows == 0:
		return nil, &ParseError{File: r.path, Err: fmt.Errorf("%w: the file is empty", ErrNoData)}
	case errors.Is(err, ErrEmpty):
		first := ""
		if len(rep.SkipReasons) > 0 {
			first = "; first: " + rep.SkipReasons[0]
		}
		return nil, fmt.Errorf("%s: %w: all %d rows were malformed and skipped%s", r.path, ErrEmpty, rep.Rows, first)
	case err != nil:
		return nil, fmt.Errorf("%s: %w", r.path, err)
	}
	textTrim(s)
	return s, nil
}

// textTrim copies the store's slices to their exact length when the
// reservation left more than 1/32 unused, so that the store holds no slack.
func textTrim(s *Store) {
	n := len(s.Val)
	if cap(s.Val)-n <= n/32 {
		return
	}
	for m := range s.Idx {
		s.Idx[m] = slices.Clone(s.Idx[m])
	}
	s.Val = slices.Clone(s.Val)
	if s.Timestamps != nil {
		s.Timestamps = slices.Clone(s.Timestamps)
	}
}

func textJoin(names []string) string {
	b := []byte{}
	for i, n := range names {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, n...)
	}
	return string(b)
}

// parse splits and converts the rows of one chunk.
func (r *textReader) parse(c *textChunk) {
	r.reserve(c)
	if c.tooLong {
		c.rows++
		r.bad(c, c.firstLine, -1, false, r.tooLong(c.firstLine).Err)
		return
	}
	fields := make([][]byte, r.lay.need)
	scratch := make([]byte, 0, 256)
	fast := r.fastRoles()
	data := c.buf
	line := c.firstLine - 1
	for len(data) > 0 {
		var ln []byte
		if j := bytes.IndexByte(data, '\n'); j >= 0 {
			ln, data = data[:j], data[j+1:]
		} else {
			ln, data = data, nil
		}
		line++
		if len(ln) > 0 && ln[len(ln)-1] == '\r' {
			ln = ln[:len(ln)-1]
		}
		if len(ln) > r.maxLine {
			c.rows++
			r.bad(c, line, -1, false, r.tooLong(line).Err)
			continue
		}
		if len(ln) == 0 || (ln[0] == ' ' || ln[0] == '\t') && len(textTrimBlanks(ln)) == 0 {
			continue
		}
		c.rows++
		if fast != nil && r.parseFast(c, ln, fast) {
			continue
		}
		if cap(scratch) < len(ln) {
			scratch = make([]byte, 0, len(ln))
		}
		r.parseRow(c, line, ln, fields, scratch[:0])
	}
}

// reserve readies the chunk's row arrays, sized from its byte length.
func (r *textReader) reserve(c *textChunk) {
	est := len(c.buf)/20 + 16 // MovieLens rows are 20-30 bytes
	c.val = textReuse(c.val, est)
	if r.str[0] {
		c.uEnd = textReuse(c.uEnd, est)
		c.uStrs = textReuse(c.uStrs, len(c.buf)/4)
	} else {
		c.uid = textReuse(c.uid, est)
	}
	if r.str[1] {
		c.iEnd = textReuse(c.iEnd, est)
		c.iStrs = textReuse(c.iStrs, len(c.buf)/4)
	} else {
		c.iid = textReuse(c.iid, est)
	}
	if r.lay.col[textTime] >= 0 {
		c.ts = textReuse(c.ts, est)
	}
}

// bad records a malformed row of c; role is the column at fault (-1 for
// the whole row) and idErr says the fault is a negative or overflowing
// integer ID.
func (r *textReader) bad(c *textChunk, line, role int, idErr bool, err error) {
	col := ""
	if role >= 0 {
		col = r.lay.colMsg[role]
	}
	c.nbad++
	if c.nbad == 1 {
		c.fatalIDOnly = idErr
	}
	if len(c.errs) < textMaxReasons {
		c.errs = append(c.errs, &ParseError{File: r.path, Line: line, Column: col, Err: err})
	}
}

// parseRow converts one non-blank line and appends it to c (or records
// why it is malformed). fields and scratch are reusable buffers.
func (r *textReader) parseRow(c *textChunk, line int, ln []byte, fields [][]byte, scratch []byte) {
	lay := r.lay
	n, err := lay.split.split(ln, fields, scratch)
	if err != nil {
		r.bad(c, line, -1, false, err)
		return
	}
	if n < lay.need {
		r.bad(c, line, -1, false, fmt.Errorf("%w: the row has %d field(s), need %d", ErrFieldCount, n, lay.need))
		return
	}
	var ids [2]int64
	var idf [2][]byte
	for m := range ids {
		f := fields[lay.col[m]]
		idf[m] = f
		if len(f) == 0 {
			r.bad(c, line, m, false, fmt.Errorf("%w: empty ID", ErrBadID))
			return
		}
		if r.str[m] {
			continue
		}
		v, kind := textParseID(f)
		switch kind {
		case textIDNotInt:
			if c.needWhy[m] == "" {
				c.needWhy[m] = fmt.Sprintf("non-integer value %q on line %d", textShort(f), line)
			}
			return
		case textIDNegative:
			r.bad(c, line, m, true, fmt.Errorf("%w: negative ID %s", ErrBadID, textShort(f)))
			return
		case textIDOverflow:
			r.bad(c, line, m, true, fmt.Errorf("%w: ID %s overflows int64", ErrBadID, textShort(f)))
			return
		}
		ids[m] = v
	}
	v, reason := 1.0, ""
	if lay.col[textRating] >= 0 {
		v, reason = textParseFloat(fields[lay.col[textRating]])
	}
	if reason != "" {
		if reason == "empty" {
			reason = "empty rating"
		}
		r.bad(c, line, textRating, false, fmt.Errorf("%w: %s", ErrBadRating, reason))
		return
	}
	if lay.col[textTime] >= 0 {
		t, reason := textParseTime(fields[lay.col[textTime]])
		if reason != "" {
			r.bad(c, line, textTime, false, fmt.Errorf("%w: %s", ErrBadTime, reason))
			return
		}
		c.ts = append(c.ts, t)
	}
	c.val = append(c.val, v)
	if r.str[0] {
		c.uStrs = append(c.uStrs, idf[0]...)
		c.uEnd = append(c.uEnd, int32(len(c.uStrs)))
	} else {
		c.uid = append(c.uid, ids[0])
	}
	if r.str[1] {
		c.iStrs = append(c.iStrs, idf[1]...)
		c.iEnd = append(c.iEnd, int32(len(c.iStrs)))
	} else {
		c.iid = append(c.iid, ids[1])
	}
}

// fastRoles returns the role of each of the first lay.need fields (-1: a
// column the load ignores) when the fast path of parseFast applies to the
// layout: a one-byte delimiter other than a blank and integer user and
// item columns. It returns nil otherwise.
func (r *textReader) fastRoles() []int8 {
	lay := r.lay
	if !textFast || lay.split.spaces || len(lay.split.delim) != 1 || lay.split.delim[0] == ' ' || lay.split.delim[0] == '"' || r.str[0] || r.str[1] {
		return nil
	}
	roles := make([]int8, lay.need)
	for f := range roles {
		roles[f] = -1
	}
	for role, f := range lay.col {
		if f >= 0 {
			roles[f] = int8(role)
		}
	}
	return roles
}

// parseFast converts one row in the common plain form: every field the
// load uses is bare (no blanks, quotes or signs), IDs are at most 18
// decimal digits, the rating is digits[.digits] with at most 15 digits and
// the time stamp is at most 17 digits of Unix seconds. It appends the row
// to c and returns true, or returns false, having appended nothing, for
// any other row, which parseRow then handles (and, for a malformed row,
// reports). On the rows it accepts it computes exactly what parseRow
// does: the same digit arithmetic as textParseID, the fast path of
// textParseFloat and the integer path of textParseTime.
func (r *textReader) parseFast(c *textChunk, ln []byte, roles []int8) bool {
	d := r.lay.split.delim[0]
	var ids [2]int64
	v := 1.0
	var ts int64
	pos := 0
	for f, role := range roles {
		switch role {
		case textUser, textItem, textTime:
			var x int64
			k := pos
			for k < len(ln) && ln[k]-'0' <= 9 {
				x = x*10 + int64(ln[k]-'0')
				k++
			}
			if k == pos || k-pos > 17 {
				return false
			}
			if role == textTime {
				ts = x
			} else {
				ids[role] = x
			}
			pos = k
		case textRating:
			var mant uint64
			digits, frac := 0, 0
			dot := false
			k := pos
			for ; k < len(ln); k++ {
				ch := ln[k]
				if ch == '.' && !dot {
					dot = true
					continue
				}
				if ch-'0' > 9 {
					break
				}
				mant = mant*10 + uint64(ch-'0')
				digits++
				if dot {
					frac++
				}
			}
			if digits == 0 || digits > 15 {
				return false
			}
			v = float64(mant)
			if frac > 0 {
				v /= textPow10[frac]
			}
			pos = k
		default:
			// An ignored column: anything but a field split would read
			// as quoted (a quote, possibly after blanks).
			if pos < len(ln) && (ln[pos] == '"' || ln[pos] == ' ') {
				return false
			}
			if i := bytes.IndexByte(ln[pos:], d); i >= 0 {
				pos += i
			} else {
				pos = len(ln)
			}
		}
		if pos == len(ln) {
			if f < len(roles)-1 {
				return false // too few fields
			}
			break
		}
		if ln[pos] != d {
			return false
		}
		pos++
		if f == len(roles)-1 && pos < len(ln) && (ln[pos] == '"' || ln[pos] == ' ') {
			// A further field that split would examine (for a
			// quote).
			return false
		}
	}
	if r.lay.col[textTime] >= 0 {
		c.ts = append(c.ts, ts)
	}
	c.val = append(c.val, v)
	c.uid = append(c.uid, ids[0])
	c.iid = append(c.iid, ids[1])
	return true
}

// textShort returns a field for a message, cut to 40 bytes.
func textShort(f []byte) string {
	if len(f) > 40 {
		return string(f[:40]) + "..."
	}
	return string(f)
}

// textInterner maps external IDs to dense indices through a Dict, with a
// dense slice cache for small non-negative integer IDs: dense[id] is the
// dense index plus one (zero: not cached). The cache grows only up to
// textDenseLimit(Len) slots, so memory stays O(number of IDs) even for
// sparse ID spaces.
//
// IDs met through the cache are appended to the Dict's ID list only; the
// Dict's map is built once, at its final size, by finish (much cheaper
// than growing it one ID at a time).
type textInterner struct {
	d        *Dict
	dense    []int32
	unmapped bool // some IDs are missing from d's map
}

// finish completes the Dict's map.
func (x *textInterner) finish() {
	if !x.unmapped {
		return
	}
	m := make(map[int64]int32, len(x.d.ints))
	for i, v := range x.d.ints {
		m[v] = int32(i)
	}
	x.d.intIdx = m
	x.unmapped = false
}

// textDenseLimit bounds the cache length: 8 slots per known ID plus 1M
// slots (4 MiB), enough for MovieLens-style IDs 1..n with gaps.
func textDenseLimit(n int) int64 { return 8*int64(n) + 1<<20 }

func (x *textInterner) intID(id int64) int32 {
	if uint64(id) < uint64(len(x.dense)) {
		if v := x.dense[id]; v != 0 {
			return v - 1
		}
		v := int32(len(x.d.ints))
		x.d.ints = append(x.d.ints, id)
		x.dense[id] = v + 1
		x.unmapped = true
		return v
	}
	if id >= 0 && id < textDenseLimit(x.d.Len()) {
		n := max(2*int64(len(x.dense)), id+1, 1024)
		n = min(n, textDenseLimit(x.d.Len()))
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

// bytesID interns a string ID given as bytes; the string is allocated only
// when the ID is new.
func (x *textInterner) bytesID(b []byte) int32 {
	if i, ok := x.d.strIdx[string(b)]; ok {
		return i
	}
	return x.d.InternString(string(b))
}
