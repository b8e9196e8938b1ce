package data

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
)

// DetectFormat guesses a file's format from its name (a trailing .gz is
// ignored). It returns FormatAuto for names it does not know; the text
// loader then sniffs the content.
func DetectFormat(path string) Format {
	name := strings.ToLower(filepath.Base(path))
	name = strings.TrimSuffix(name, ".gz")
	switch filepath.Ext(name) {
	case ".csv":
		return FormatCSV
	case ".tsv", ".tab", ".data":
		return FormatTSV
	case ".dat":
		return FormatDat
	case ".arrow", ".feather", ".ipc":
		return FormatArrow
	case ".arrows":
		return FormatArrowStream
	case ".parquet", ".pq":
		return FormatParquet
	}
	return FormatAuto
}

// ParseFormat parses a format name ("" is FormatAuto).
func ParseFormat(s string) (Format, error) {
	switch f := Format(strings.ToLower(s)); f {
	case FormatAuto, FormatCSV, FormatTSV, FormatDat, FormatArrow, FormatArrowStream, FormatParquet:
		return f, nil
	}
	return "", fmt.Errorf("data: unknown format %q (want csv, tsv, dat, arrow, arrows or parquet)", s)
}

// Load reads a rating log into a Store. The format comes from
// opts.Format, else from the file name, else from the content (delimited
// text). Every error names the file and, for malformed rows, the line (or
// batch / row group and row), the column and the reason.
func Load(path string, opts LoadOptions) (*Store, *LoadReport, error) {
	f := opts.Format
	if f == FormatAuto {
		f = DetectFormat(path)
	}
	rep := &LoadReport{Path: path, Format: f}
	var (
		s   *Store
		err error
	)
	switch f {
	case FormatArrow, FormatArrowStream:
		s, err = readArrow(path, f, &opts, rep)
	case FormatParquet:
		s, err = readParquet(path, &opts, rep)
	default:
		s, err = readDelimited(path, &opts, rep)
	}
	if err != nil {
		return nil, rep, err
	}
	return s, rep, nil
}

// Save writes s to path atomically (temporary file, fsync, rename),
// refusing to replace an existing file unless opts.Force is set. The format
// comes from opts.Format or the file name (CSV when unknown). A path ending
// in .gz is gzip-compressed (delimited text only). The path "-" is refused
// (ErrNotAFile): to write standard output, call Write with it.
func Save(path string, s *Store, opts WriteOptions) error {
	f := opts.Format
	if f == FormatAuto {
		f = DetectFormat(path)
	}
	if f == FormatAuto {
		f = FormatCSV
	}
	return WriteFileAtomic(path, opts.Force, func(w io.Writer) error {
		return writeStore(w, s, f, strings.HasSuffix(strings.ToLower(path), ".gz"), &opts)
	})
}

// Write writes s to w in opts.Format (CSV when FormatAuto), uncompressed;
// opts.Force is ignored. It is Save for a stream (standard output, say).
func Write(w io.Writer, s *Store, opts WriteOptions) error {
	f := opts.Format
	if f == FormatAuto {
		f = FormatCSV
	}
	return writeStore(w, s, f, false, &opts)
}

func writeStore(w io.Writer, s *Store, f Format, gz bool, opts *WriteOptions) error {
	switch f {
	case FormatArrow, FormatArrowStream:
		return writeArrow(w, s, f, opts)
	case FormatParquet:
		return writeParquet(w, s, opts)
	default:
		return writeDelimited(w, s, f, gz, opts)
	}
}
