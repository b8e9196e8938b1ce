package data

// TEMPORARY: replaced by the Arrow/Parquet implementation (delete this file
// when readArrow, readParquet, writeArrow and writeParquet exist).

import (
	"errors"
	"io"
)

func readArrow(path string, f Format, opts *LoadOptions, rep *LoadReport) (*Store, error) {
	return nil, errors.New("arrow loading not built yet")
}

func readParquet(path string, opts *LoadOptions, rep *LoadReport) (*Store, error) {
	return nil, errors.New("parquet loading not built yet")
}

func writeArrow(w io.Writer, s *Store, f Format, opts *WriteOptions) error {
	return errors.New("arrow writing not built yet")
}

func writeParquet(w io.Writer, s *Store, opts *WriteOptions) error {
	return errors.New("parquet writing not built yet")
}
