package data

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"time"
)

// textSplitter splits one line of delimited text into fields.
type textSplitter struct {
	delim []byte
	// spaces: the delimiter is a blank, and runs of blanks (spaces and
	// tabs) separate fields; leading and trailing blanks are ignored.
	spaces bool
}

// split fills fields with up to len(fields) fields of line and returns how
// many fields the line has (counting at most len(fields)+1, so a caller can
// tell "exactly" from "more"). Quoted fields ("a,b", "say ""hi""") are
// unquoted into scratch, whose capacity must be at least len(line) so that
// earlier fields stay valid. Unquoted fields have surrounding spaces trimmed.
func (sp *textSplitter) split(line []byte, fields [][]byte, scratch []byte) (int, error) {
	if sp.spaces {
		line = textTrimBlanks(line)
	}
	n := 0
	for {
		var f, rest []byte
		if t := line[textLeadSpaces(line):]; len(t) > 0 && t[0] == '"' {
			var err error
			f, rest, scratch, err = sp.quoted(t, scratch)
			if err != nil {
				return n, err
			}
		} else {
			var i int
			switch {
			case sp.spaces:
				i = bytes.IndexAny(line, " \t")
			case len(sp.delim) == 1:
				i = bytes.IndexByte(line, sp.delim[0])
			default:
				i = bytes.Index(line, sp.delim)
			}
			if i < 0 {
				f = line
			} else {
				f, rest = line[:i], line[i:]
			}
			f = textTrimSpaces(f)
		}
		if n < len(fields) {
			fields[n] = f
		}
		n++
		if rest == nil || n > len(fields) {
			return n, nil
		}
		if sp.spaces {
			line = textTrimBlanks(rest)
		} else {
			line = rest[len(sp.delim):]
		}
	}
}

// quoted parses a quoted field at the start of line and returns it, the rest
// of the line (starting at the delimiter, or empty; nil when the field ended
// the line) and the grown scratch.
func (sp *textSplitter) quoted(line, scratch []byte) (field, rest, scratchOut []byte, err error) {
	start := len(scratch)
	i := 1
	for {
		j := bytes.IndexByte(line[i:], '"')
		if j < 0 {
			return nil, nil, scratch, fmt.Errorf("%w: no closing quote on the line", ErrQuote)
		}
		scratch = append(scratch, line[i:i+j]...)
		i += j + 1
		if i < len(line) && line[i] == '"' {
			scratch = append(scratch, '"')
			i++
			continue
		}
		break
	}
	field = scratch[start:len(scratch):len(scratch)]
	rest = line[i:]
	if sp.spaces {
		t := textTrimBlanks(rest)
		switch {
		case len(t) == 0:
			return field, nil, scratch, nil
		case len(t) == len(rest):
			return nil, nil, scratch, fmt.Errorf("%w: text after the closing quote", ErrQuote)
		}
		return field, rest, scratch, nil
	}
	rest = rest[textLeadSpaces(rest):]
	switch {
	case len(rest) == 0:
		return field, nil, scratch, nil
	case bytes.HasPrefix(rest, sp.delim):
		return field, rest, scratch, nil
	}
	return nil, nil, scratch, fmt.Errorf("%w: text after the closing quote", ErrQuote)
}

func textLeadSpaces(b []byte) int {
	i := 0
	for i < len(b) && b[i] == ' ' {
		i++
	}
	return i
}

func textTrimSpaces(b []byte) []byte {
	for len(b) > 0 && b[0] == ' ' {
		b = b[1:]
	}
	for len(b) > 0 && b[len(b)-1] == ' ' {
		b = b[:len(b)-1]
	}
	return b
}

func textTrimBlanks(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

// textIDKind classifies an ID field.
type textIDKind uint8

const (
	textIDInt      textIDKind = iota // a non-negative integer that fits int64
	textIDNotInt                     // not an integer literal: a string ID
	textIDNegative                   // a negative integer literal
	textIDOverflow                   // an integer literal beyond int64
	textIDEmpty                      // an empty field
)

// textParseID parses an integer ID: an optional sign and decimal digits.
func textParseID(b []byte) (int64, textIDKind) {
	if len(b) == 0 {
		return 0, textIDEmpty
	}
	neg := false
	s := b
	if s[0] == '+' || s[0] == '-' {
		neg = s[0] == '-'
		s = s[1:]
		if len(s) == 0 {
			return 0, textIDNotInt
		}
	}
	var v uint64
	over := false
	for _, c := range s {
		d := uint64(c - '0')
		if d > 9 {
			return 0, textIDNotInt
		}
		if v > (math.MaxInt64-d)/10 {
			over = true
		}
		v = v*10 + d
	}
	switch {
	case over:
		return 0, textIDOverflow
	case neg && v != 0:
		return 0, textIDNegative
	}
	return int64(v), textIDInt
}

// textPow10 holds the exactly representable powers of ten used by the
// decimal fast path.
var textPow10 = [...]float64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15}

// textParseFloat parses a finite decimal number. The fast path handles
// [sign]digits[.digits] with at most 15 significant digits: the mantissa
// (< 10^15 < 2^53) and the power of ten are exact, so one IEEE division
// gives the correctly rounded value, the same as strconv.ParseFloat. Other
// syntax (exponents, long mantissas) goes through strconv.ParseFloat.
func textParseFloat(b []byte) (float64, string) {
	if len(b) == 0 {
		return 0, "empty"
	}
	s := b
	neg := false
	if s[0] == '+' || s[0] == '-' {
		neg = s[0] == '-'
		s = s[1:]
	}
	var mant uint64
	digits, frac := 0, 0
	dot := false
	ok := len(s) > 0
	for _, c := range s {
		if c == '.' && !dot {
			dot = true
			continue
		}
		d := uint64(c - '0')
		if d > 9 {
			ok = false
			break
		}
		mant = mant*10 + d
		digits++
		if dot {
			frac++
		}
	}
	if ok && digits > 0 && digits <= 15 {
		v := float64(mant)
		if frac > 0 {
			v /= textPow10[frac]
		}
		if neg {
			v = -v
		}
		return v, ""
	}
	v, err := strconv.ParseFloat(string(b), 64)
	switch {
	case err != nil && math.IsInf(v, 0):
		return 0, fmt.Sprintf("%q is out of the float64 range", b)
	case err != nil:
		return 0, fmt.Sprintf("%q is not a number", b)
	case math.IsNaN(v):
		return 0, "NaN"
	case math.IsInf(v, 0):
		return 0, fmt.Sprintf("%q is infinite", b)
	}
	return v, ""
}

// textTimeLayouts are the date forms accepted for time stamps besides Unix
// seconds; times without a zone are UTC.
var textTimeLayouts = []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02"}

// textParseTime parses a time stamp: integer Unix seconds, decimal Unix
// seconds (floored to the second), or an ISO-8601 / RFC 3339 date.
func textParseTime(b []byte) (int64, string) {
	if len(b) == 0 {
		return 0, "empty time stamp"
	}
	s := b
	neg := false
	if s[0] == '+' || s[0] == '-' {
		neg = s[0] == '-'
		s = s[1:]
	}
	var v int64
	i := 0
	for ; i < len(s) && i < 18; i++ {
		d := int64(s[i] - '0')
		if d > 9 {
			break
		}
		v = v*10 + d
	}
	if i > 0 && i < 18 {
		if i == len(s) {
			if neg {
				v = -v
			}
			return v, ""
		}
		if s[i] == '.' {
			fracNonZero, okFrac := false, i+1 < len(s)
			for _, c := range s[i+1:] {
				if c < '0' || c > '9' {
					okFrac = false
					break
				}
				fracNonZero = fracNonZero || c != '0'
			}
			if okFrac {
				if neg {
					v = -v
					if fracNonZero {
						v-- // floor towards minus infinity
					}
				}
				return v, ""
			}
		}
	}
	if len(b) >= 10 && b[4] == '-' {
		for _, layout := range textTimeLayouts {
			if t, err := time.Parse(layout, string(b)); err == nil {
				return t.Unix(), ""
			}
		}
	}
	return 0, fmt.Sprintf("%q is neither Unix seconds nor an ISO-8601 date (2006-01-02 or 2006-01-02T15:04:05Z)", b)
}
