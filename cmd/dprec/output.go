package main

import (
	"bufio"
	"encoding/json"
	"io"
	"math"
	"strconv"

	"github.com/urfave/cli/v2"
)

// Machine output: --json prints exactly one JSON document (a stream of
// records becomes one array, written as the records come, so memory stays
// bounded); --jsonl prints one JSON value per line (JSON Lines), for
// streams a consumer reads line by line.

// jsonFlags returns the --json and --jsonl flags of a command whose output
// is a list of records.
func jsonFlags(what string) []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "json", Usage: "print " + what + " as one JSON document (an array for several records)"},
		&cli.BoolFlag{Name: "jsonl", Usage: "print " + what + " as JSON Lines: one JSON object per line"},
	}
}

// checkJSONFlags refuses --json together with --jsonl.
func checkJSONFlags(c *cli.Context) error {
	if c.Bool("json") && c.Bool("jsonl") {
		return usagef("give --json (one document) or --jsonl (one object per line), not both")
	}
	return nil
}

// recordWriter writes a sequence of records as one JSON array (lines ==
// false) or as JSON Lines.
type recordWriter struct {
	w     *bufio.Writer
	lines bool
	n     int
}

func newRecordWriter(w io.Writer, lines bool) *recordWriter {
	return &recordWriter{w: bufio.NewWriterSize(w, 1<<16), lines: lines}
}

// Write appends one record.
func (r *recordWriter) Write(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	switch {
	case r.lines:
	case r.n == 0:
		r.w.WriteString("[\n")
	default:
		r.w.WriteString(",\n")
	}
	r.n++
	r.w.Write(b)
	if r.lines {
		r.w.WriteByte('\n')
	}
	return nil
}

// Close ends the array (an empty one if nothing was written) and flushes.
func (r *recordWriter) Close() error {
	if !r.lines {
		if r.n == 0 {
			r.w.WriteString("[")
		}
		r.w.WriteString("\n]\n")
	}
	return r.w.Flush()
}

// fmtFloat formats a float for people: the shortest decimal that reads
// back as a float64 rounded to 10 significant digits, so sums like
// 0.1 + 0.2 print as 0.3 and not 0.30000000000000004.
func fmtFloat(v float64) string {
	if math.IsInf(v, 0) || math.IsNaN(v) || v == 0 {
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 10, 64), 64)
	return strconv.FormatFloat(r, 'g', -1, 64)
}
