package data

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"strconv"
)

// writeDelimited writes s as delimited text: CSV and TSV with a header row,
// "::"-separated (.dat) without one, like MovieLens. The time column holds
// Store.Timestamps when kept, else the start of each observation's time
// bucket, and is left out for an order-2 store without time stamps.
// Ratings use the shortest decimal form that parses back to the same
// float64. String IDs that contain the delimiter or a quote, that have
// surrounding blanks, or that are empty, are quoted (RFC 4180: "" for a
// quote); an ID with a line break cannot be written (the reader keeps
// records on one line) and is an error.
func writeDelimited(w io.Writer, s *Store, f Format, gz bool, opts *WriteOptions) (err error) {
	if err := s.Validate(); err != nil {
		return err
	}
	if s.Order() < 2 || len(s.Dicts) < 2 || s.Dicts[0] == nil || s.Dicts[1] == nil {
		return fmt.Errorf("data: writing text needs user and item dictionaries")
	}
	var delim string
	header := true
	switch f {
	case FormatTSV:
		delim = "\t"
	case FormatDat:
		delim, header = "::", false
	case FormatCSV, FormatAuto:
		delim = ","
	default:
		return fmt.Errorf("data: %q is not a delimited text format", f)
	}
	if gz {
		zw := gzip.NewWriter(w)
		defer func() {
			if cerr := zw.Close(); err == nil {
				err = cerr
			}
		}()
		w = zw
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	hasTime := s.Timestamps != nil || s.Time != nil
	names := [4]string{opts.Columns.User, opts.Columns.Item, opts.Columns.Rating, opts.Columns.Time}
	for r, def := range [4]string{"userId", "movieId", "rating", "timestamp"} {
		if names[r] == "" {
			names[r] = def
		}
	}
	buf := make([]byte, 0, 256)
	if header {
		n := 3
		if hasTime {
			n = 4
		}
		for r := 0; r < n; r++ {
			if r > 0 {
				buf = append(buf, delim...)
			}
			buf = textAppendString(buf, names[r], delim)
		}
		buf = append(buf, '\n')
	}
	users, items := s.Dicts[0], s.Dicts[1]
	for m, d := range []*Dict{users, items} {
		for _, id := range d.Strings() {
			if bytes.ContainsAny([]byte(id), "\r\n") {
				return fmt.Errorf("data: %s ID %q contains a line break, which delimited text cannot hold", textRoleNames[m], id)
			}
		}
	}
	var timeIdx []int32
	if s.Time != nil && len(s.Idx) > 2 {
		timeIdx = s.Idx[2]
	}
	for e, v := range s.Val {
		buf = textAppendID(buf, users, s.Idx[0][e], delim)
		buf = append(buf, delim...)
		buf = textAppendID(buf, items, s.Idx[1][e], delim)
		buf = append(buf, delim...)
		buf = strconv.AppendFloat(buf, v, 'g', -1, 64)
		switch {
		case s.Timestamps != nil:
			buf = append(buf, delim...)
			buf = strconv.AppendInt(buf, s.Timestamps[e], 10)
		case timeIdx != nil:
			buf = append(buf, delim...)
			buf = strconv.AppendInt(buf, s.Time.Start(timeIdx[e]), 10)
		}
		buf = append(buf, '\n')
		if len(buf) > 64<<10 {
			if _, err := bw.Write(buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
	}
	if _, err := bw.Write(buf); err != nil {
		return err
	}
	return bw.Flush()
}

func textAppendID(buf []byte, d *Dict, i int32, delim string) []byte {
	if !d.IsString {
		return strconv.AppendInt(buf, d.Int(i), 10)
	}
	return textAppendString(buf, d.String(i), delim)
}

// textAppendString appends a field, quoted when reading it back unquoted
// would change it.
func textAppendString(buf []byte, s, delim string) []byte {
	needQuote := s == "" || s[0] == ' ' || s[len(s)-1] == ' ' || s[0] == '\t' || s[len(s)-1] == '\t' ||
		bytes.IndexByte([]byte(s), '"') >= 0 || bytes.Contains([]byte(s), []byte(delim))
	if !needQuote {
		return append(buf, s...)
	}
	buf = append(buf, '"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' {
			buf = append(buf, '"')
		}
		buf = append(buf, s[i])
	}
	return append(buf, '"')
}
