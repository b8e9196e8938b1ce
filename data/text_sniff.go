package data

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Column roles of delimited text, in the order of Columns' fields.
const (
	textUser = iota
	textItem
	textRating
	textTime
)

var textRoleNames = [4]string{"user", "item", "rating", "time"}

// textDefaultNames are the header names tried (case-insensitively, in this
// order) when Columns leaves a role empty; they are the names documented on
// Columns.
var textDefaultNames = [4][]string{
	{"userId", "user_id", "user"},
	{"movieId", "itemId", "item_id", "item", "movie"},
	{"rating", "value", "score"},
	{"timestamp", "time", "ts"},
}

// textDelimiters are the delimiters tried by detection, in order of
// preference.
var textDelimiters = []string{"::", "\t", ",", ";", "|", " "}

// textLayout is what sniffing decided about a delimited file.
type textLayout struct {
	split  textSplitter
	header bool
	names  []string // header names (nil without a header)
	col    [4]int   // field index of each role; -1: no time column
	need   int      // fields a row needs: max(col)+1
	colMsg [4]string
}

// textDelimName is a readable form of a delimiter for messages.
func textDelimName(d string) string {
	switch d {
	case "\t":
		return "tab"
	case " ":
		return "space"
	}
	return strconv.Quote(d)
}

// textSampleLines returns up to max non-blank lines at the start of head
// (the last line only if complete is set or it ends with a newline), with
// their 1-based line numbers.
func textSampleLines(head []byte, complete bool, max int) (lines [][]byte, nums []int) {
	ln := 0
	for len(head) > 0 && len(lines) < max {
		i := bytes.IndexByte(head, '\n')
		var line []byte
		if i < 0 {
			if !complete {
				break
			}
			line, head = head, nil
		} else {
			line, head = head[:i], head[i+1:]
		}
		ln++
		line = bytes.TrimRight(line, "\r")
		if len(textTrimBlanks(line)) == 0 {
			continue
		}
		lines = append(lines, line)
		nums = append(nums, ln)
	}
	return lines, nums
}

// textCountFields splits line with sp and returns the field count (or -1
// when the line does not split, e.g. a broken quote).
func textCountFields(sp *textSplitter, line []byte, fields [][]byte) int {
	scratch := make([]byte, 0, len(line))
	n, err := sp.split(line, fields, scratch)
	if err != nil {
		return -1
	}
	return n
}

// textNumeric reports whether a field is a number (a rating or a time stamp
// could be; header names are not).
func textNumeric(f []byte) bool {
	if _, reason := textParseFloat(f); reason == "" {
		return true
	}
	_, reason := textParseTime(f)
	return reason == "" && len(f) > 0 && (f[0] >= '0' && f[0] <= '9' || f[0] == '-' || f[0] == '+')
}

// textSniff decides the delimiter, the header and the column of each role
// from the first lines of the file, recording what it detected in rep.
// path is for messages.
func textSniff(path string, head []byte, complete bool, hint Format, opts *LoadOptions, rep *LoadReport) (*textLayout, error) {
	lines, nums := textSampleLines(head, complete, 50)
	if len(lines) == 0 {
		return nil, &ParseError{File: path, Err: fmt.Errorf("%w: the file is empty", ErrNoData)}
	}
	lay := &textLayout{}
	fields := make([][]byte, 256)
	minFields := 3 // user, item, rating
	if opts.Columns.NoRating() {
		minFields = 2
	}

	// A file of two columns and no column option is a click log: user and
	// item, every row counting 1 (implicit feedback).
	cols := opts.Columns
	auto := cols.User == "" && cols.Item == "" && cols.Rating == "" && cols.Time == "" && len(cols.Order) == 0
	twoCols := false
	delim := opts.Delimiter
	if delim != "" {
		rep.Detected = append(rep.Detected, fmt.Sprintf("delimiter %s (given)", textDelimName(delim)))
	} else {
		var err error
		if delim, err = textSniffDelimiter(path, lines, nums[0], hint, minFields, fields); err != nil {
			d2, err2 := "", err
			if auto && errors.Is(err, ErrFieldCount) {
				d2, err2 = textSniffDelimiter(path, lines, nums[0], hint, 2, fields)
			}
			if err2 != nil {
				return nil, err
			}
			delim, twoCols = d2, true
		}
		rep.Detected = append(rep.Detected, fmt.Sprintf("delimiter %s (detected)", textDelimName(delim)))
	}
	lay.split = textSplitter{delim: []byte(delim), spaces: delim == " "}
	rep.Delimiter = delim

	// Header.
	n0, err := lay.split.split(lines[0], fields, make([]byte, 0, len(lines[0])))
	if err != nil {
		return nil, &ParseError{File: path, Line: nums[0], Err: err}
	}
	n0 = min(n0, len(fields))
	first := fields[:n0]
	if lay.header, err = textSniffHeader(path, opts.Header, first, nums[0], rep); err != nil {
		return nil, err
	}
	rep.Header = lay.header
	if lay.header {
		for _, f := range first {
			lay.names = append(lay.names, string(f))
		}
		if len(lines) == 1 && complete {
			return nil, &ParseError{File: path, Err: fmt.Errorf("%w: the file holds only a header line (%s)", ErrNoData, strings.Join(lay.names, ","))}
		}
	}
	if n0 == 2 && auto {
		twoCols = true
	}
	if twoCols {
		cols.Rating = "-"
		rep.Detected = append(rep.Detected, "two columns: read as user and item with no rating (a click log: every row counts 1)")
	} else if n0 < minFields {
		return nil, &ParseError{File: path, Line: nums[0], Err: fmt.Errorf(
			"%w: the file has only %d column(s) with delimiter %s; need at least user, item and rating columns", ErrFieldCount, n0, textDelimName(delim))}
	}
	if err := lay.resolve(path, n0, cols, rep); err != nil {
		return nil, err
	}
	return lay, nil
}

// textSniffDelimiter picks the delimiter of lines (the first is on line
// line0 of the file), trying the one the format hint implies first. The
// first candidate that splits every sampled line into the same number (at
// least minFields) of fields wins; failing that, the first that gives the
// first line at least minFields fields (the bad lines then fail with their
// line numbers). fields is scratch.
func textSniffDelimiter(path string, lines [][]byte, line0 int, hint Format, minFields int, fields [][]byte) (string, error) {
	cands := textDelimiters
	switch hint {
	case FormatDat:
		cands = append([]string{"::"}, cands...)
	case FormatTSV:
		cands = append([]string{"\t"}, cands...)
	case FormatCSV:
		cands = append([]string{","}, cands...)
	}
	delim := ""
	for _, d := range cands {
		sp := textSplitter{delim: []byte(d), spaces: d == " "}
		n0 := textCountFields(&sp, lines[0], fields)
		if n0 < minFields {
			continue
		}
		consistent := true
		for _, l := range lines[1:] {
			if textCountFields(&sp, l, fields) != n0 {
				consistent = false
				break
			}
		}
		if consistent {
			return d, nil
		}
		if delim == "" {
			delim = d
		}
	}
	if delim != "" {
		return delim, nil
	}
	n := 1
	for _, d := range cands {
		sp := textSplitter{delim: []byte(d), spaces: d == " "}
		n = max(n, textCountFields(&sp, lines[0], fields))
	}
	return "", &ParseError{File: path, Line: line0, Err: fmt.Errorf(
		"%w: the first line has at most %d field(s) with any delimiter (comma, tab, \"::\", semicolon, pipe, space); need at least user, item and rating columns",
		ErrFieldCount, n)}
}

// textSniffHeader decides whether the first line (first, on line line0)
// is a header: as the header option says, else detected.
func textSniffHeader(path, option string, first [][]byte, line0 int, rep *LoadReport) (bool, error) {
	switch strings.ToLower(option) {
	case "yes", "true":
		rep.Detected = append(rep.Detected, "header row (given)")
		return true, nil
	case "no", "false":
		rep.Detected = append(rep.Detected, "no header row (given)")
		return false, nil
	case "", "auto":
		// A data row always has a numeric rating, so a first line without
		// any numeric field can only be a header.
		for _, f := range first {
			if textNumeric(f) {
				rep.Detected = append(rep.Detected, "no header row (detected: line "+strconv.Itoa(line0)+" has numbers)")
				return false, nil
			}
		}
		rep.Detected = append(rep.Detected, "header row (detected: no numeric field on line "+strconv.Itoa(line0)+")")
		return true, nil
	default:
		return false, fmt.Errorf("%s: header option %q: want auto, yes or no", path, option)
	}
}

// resolve sets the column of each role.
func (lay *textLayout) resolve(path string, ncols int, c Columns, rep *LoadReport) error {
	for r := range lay.col {
		lay.col[r] = -1
	}
	var err error
	switch {
	case len(c.Order) > 0:
		err = lay.byOrder(path, c)
	case lay.header:
		err = lay.byHeader(path, c)
	default:
		err = lay.byPosition(path, ncols, c)
	}
	if err != nil {
		return err
	}
	for a := range lay.col {
		for b := a + 1; b < len(lay.col); b++ {
			if lay.col[a] >= 0 && lay.col[a] == lay.col[b] {
				return fmt.Errorf("%s: column %d used for both %s and %s", path, lay.col[a]+1, textRoleNames[a], textRoleNames[b])
			}
		}
	}
	lay.describe(rep)
	return nil
}

// describe sets the column messages and reports the columns in rep.
func (lay *textLayout) describe(rep *LoadReport) {
	var desc []string
	for r, i := range lay.col {
		if i < 0 {
			lay.colMsg[r] = ""
			continue
		}
		lay.need = max(lay.need, i+1)
		if lay.header && i < len(lay.names) {
			lay.colMsg[r] = strconv.Quote(lay.names[i])
		} else {
			lay.colMsg[r] = fmt.Sprintf("%d (%s)", i+1, textRoleNames[r])
		}
		desc = append(desc, textRoleNames[r]+"="+lay.colMsg[r])
	}
	if lay.col[textRating] < 0 {
		desc = append(desc, "no rating column (every row counts 1)")
	}
	if lay.col[textTime] < 0 {
		desc = append(desc, "no time column")
	}
	rep.UserColumn, rep.ItemColumn, rep.RatingColumn, rep.TimeColumn = lay.colMsg[0], lay.colMsg[1], lay.colMsg[2], lay.colMsg[3]
	rep.Detected = append(rep.Detected, "columns "+strings.Join(desc, " "))
}

// byOrder sets the columns from an explicit order of roles.
func (lay *textLayout) byOrder(path string, c Columns) error {
	for i, role := range c.Order {
		r := -1
		for k, name := range textRoleNames {
			if strings.EqualFold(role, name) {
				r = k
			}
		}
		switch {
		case r < 0 && role != "-" && role != "":
			return fmt.Errorf("%s: column order: unknown role %q (want user, item, rating, time or -)", path, role)
		case r < 0:
			continue
		case lay.col[r] >= 0:
			return fmt.Errorf("%s: column order: role %s given twice", path, role)
		}
		lay.col[r] = i
	}
	for r := textUser; r <= textRating; r++ {
		if lay.col[r] < 0 && !(r == textRating && c.NoRating()) {
			return fmt.Errorf("%s: column order %q has no %s column", path, strings.Join(c.Order, ","), textRoleNames[r])
		}
	}
	return nil
}

// byHeader finds the columns in the header, by the names given or else by
// the default names of each role.
func (lay *textLayout) byHeader(path string, c Columns) error {
	given := [4]string{c.User, c.Item, c.Rating, c.Time}
	var dup error
	find := func(name string) int {
		i, err := findColumn(lay.names, name)
		if err != nil && dup == nil {
			dup = &ParseError{File: path, Err: err}
		}
		return i
	}
	for r := range lay.col {
		if r == textRating && c.NoRating() {
			continue
		}
		if given[r] != "" {
			lay.col[r] = find(given[r])
			if dup != nil {
				return dup
			}
			if lay.col[r] < 0 {
				return &ParseError{File: path, Err: fmt.Errorf("%w: no %s column %q in the header (columns: %s)",
					ErrNoColumn, textRoleNames[r], given[r], strings.Join(lay.names, ", "))}
			}
			continue
		}
		for _, name := range textDefaultNames[r] {
			if i := find(name); i >= 0 {
				lay.col[r] = i
				break
			}
		}
		if dup != nil {
			return dup
		}
		if lay.col[r] < 0 && r != textTime {
			return &ParseError{File: path, Err: fmt.Errorf("%w: no %s column (tried %s; header has %s); name it with --columns %s=NAME",
				ErrNoColumn, textRoleNames[r], strings.Join(textDefaultNames[r], ", "), strings.Join(lay.names, ", "), textRoleNames[r])}
		}
	}
	return nil
}

// byPosition sets the columns of a file without a header: user, item,
// rating (unless there is none), then time when there is a further column.
func (lay *textLayout) byPosition(path string, ncols int, c Columns) error {
	given := [4]string{c.User, c.Item, c.Rating, c.Time}
	for r, g := range given {
		if g != "" && !(r == textRating && g == "-") {
			return fmt.Errorf("%s: the %s column is named %q but the file has no header row; give the columns by position (--columns user,item,rating,time)", path, textRoleNames[r], g)
		}
	}
	lay.col = [4]int{0, 1, 2, -1}
	if ncols >= 4 {
		lay.col[textTime] = 3
	}
	if c.NoRating() {
		lay.col = [4]int{0, 1, -1, -1}
		if ncols >= 3 {
			lay.col[textTime] = 2
		}
	}
	return nil
}
