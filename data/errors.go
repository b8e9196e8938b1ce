package data

import (
	"errors"
	"fmt"
)

// Sentinel errors of malformed input. Loaders wrap them (usually inside a
// *ParseError) so that callers can test the reason with errors.Is.
var (
	// ErrFieldCount: a row has fewer fields than the columns it needs, or
	// the file has fewer than three columns.
	ErrFieldCount = errors.New("too few fields")
	// ErrBadRating: a rating is empty, not a number, NaN or infinite.
	ErrBadRating = errors.New("bad rating")
	// ErrBadID: an ID is empty, or an integer ID is negative or overflows int64.
	ErrBadID = errors.New("bad ID")
	// ErrBadTime: a time stamp is empty or does not parse.
	ErrBadTime = errors.New("bad time stamp")
	// ErrNoData: the file is empty or holds only a header.
	ErrNoData = errors.New("no data rows")
	// ErrNoColumn: a named column does not exist, or no column matches a
	// role's default names.
	ErrNoColumn = errors.New("no such column")
	// ErrQuote: a quoted field is not terminated on its line or has text
	// after its closing quote.
	ErrQuote = errors.New("bad quoted field")
	// ErrDuplicateColumn: several columns have the name that selects a
	// role, so the file does not say which one is meant.
	ErrDuplicateColumn = errors.New("duplicate column name")
	// ErrLineTooLong: a line of delimited text is longer than
	// LoadOptions.MaxLine bytes.
	ErrLineTooLong = errors.New("line too long")
)

// ParseError reports a malformed row: the file, the 1-based line (for
// delimited text; for Arrow and Parquet the row counted from 1 across the
// file), the column (name, or role and position for headerless files) and
// the reason, which wraps one of the sentinel errors above.
type ParseError struct {
	File   string
	Line   int
	Column string
	Err    error
}

func (e *ParseError) Error() string {
	switch {
	case e.Column == "" && e.Line == 0:
		return fmt.Sprintf("%s: %v", e.File, e.Err)
	case e.Column == "":
		return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err)
	}
	return fmt.Sprintf("%s:%d: column %s: %v", e.File, e.Line, e.Column, e.Err)
}

// Unwrap returns the reason.
func (e *ParseError) Unwrap() error { return e.Err }
