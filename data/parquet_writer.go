package data

import (
	"fmt"
	"io"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/parquet"
	"github.com/apache/arrow/go/v15/parquet/pqarrow"
)

// ParquetWriter writes Arrow records as a Parquet file (a
// pqarrow.FileWriter) so that a destination that fails, a full disk above
// all, comes back as the destination's own error ("no space left on
// device"), as the CSV and Arrow writers give it. pqarrow panics when it
// cannot write the file's opening magic number (file.NewParquetWriter:
// "failed to write magic number", raised inside pqarrow.NewFileWriter),
// and some of its column writers panic on a write error; a ParquetWriter
// keeps the first error of the destination, stops writing to it after
// that, and every method recovers such a panic and returns that error (or
// the panic as an error when the destination did not fail). Every Parquet
// writer of the module (data convert and split, export, recommend and
// predict --out, spectral --doc-topics) goes through it.
type ParquetWriter struct {
	fw   *pqarrow.FileWriter
	sink *parquetSink
}

// parquetSink is the destination with its first error kept: once a write
// has failed, every later write fails with that error without touching the
// destination. It has no Close method, so pqarrow never closes the
// caller's writer.
type parquetSink struct {
	w   io.Writer
	err error
}

func (s *parquetSink) Write(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	n, err := s.w.Write(p)
	if err == nil && n < len(p) {
		err = io.ErrShortWrite
	}
	if err != nil {
		s.err = err
	}
	return n, err
}

// cause returns the destination's error when it failed (the root cause of
// whatever pqarrow made of it), else err.
func (s *parquetSink) cause(err error) error {
	if err != nil && s.err != nil {
		return s.err
	}
	return err
}

// recovered turns a panic value of pqarrow into an error: the
// destination's, when it failed.
func (s *parquetSink) recovered(r any) error {
	if s.err != nil {
		return s.err
	}
	if e, ok := r.(error); ok {
		return fmt.Errorf("parquet writer: %w", e)
	}
	return fmt.Errorf("parquet writer: %v", r)
}

// NewParquetWriter starts a Parquet file of schema sc on w (which it never
// closes), as pqarrow.NewFileWriter does, returning w's error instead of
// panicking when w cannot be written.
func NewParquetWriter(sc *arrow.Schema, w io.Writer, props *parquet.WriterProperties, arrprops pqarrow.ArrowWriterProperties) (pw *ParquetWriter, err error) {
	sink := &parquetSink{w: w}
	defer func() {
		if r := recover(); r != nil {
			pw, err = nil, sink.recovered(r)
		}
	}()
	fw, err := pqarrow.NewFileWriter(sc, sink, props, arrprops)
	if err != nil {
		return nil, sink.cause(err)
	}
	return &ParquetWriter{fw: fw, sink: sink}, nil
}

// Write writes rec as one or more row groups (pqarrow.FileWriter.Write).
func (p *ParquetWriter) Write(rec arrow.Record) (err error) {
	defer p.recover(&err)
	return p.sink.cause(p.fw.Write(rec))
}

// WriteBuffered adds rec to the buffered row group
// (pqarrow.FileWriter.WriteBuffered).
func (p *ParquetWriter) WriteBuffered(rec arrow.Record) (err error) {
	defer p.recover(&err)
	return p.sink.cause(p.fw.WriteBuffered(rec))
}

// Close flushes the last row group and writes the footer; it does not
// close the destination. It returns the destination's first error if any
// write failed, even one an earlier call already returned.
func (p *ParquetWriter) Close() (err error) {
	defer p.recover(&err)
	return p.sink.cause(p.fw.Close())
}

func (p *ParquetWriter) recover(err *error) {
	if r := recover(); r != nil {
		*err = p.sink.recovered(r)
	}
}
