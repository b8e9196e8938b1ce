package data

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/ipc"
	"github.com/apache/arrow/go/v15/arrow/memory"
)

// arrowFileMagic starts (and ends) an Arrow IPC file; a stream starts with
// a message (0xFFFFFFFF continuation marker, or a length in old streams).
var arrowFileMagic = []byte("ARROW1")

// readArrow loads an Arrow IPC file (f == FormatArrow) or stream
// (FormatArrowStream). When the content says the other IPC format, that
// format is read and the report says so.
func readArrow(path string, f Format, opts *LoadOptions, rep *LoadReport) (s *Store, err error) {
	defer arrowRecover(path, &err)
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() == 0 {
		return nil, fmt.Errorf("%s: empty file (not Arrow IPC)", path)
	}
	head := make([]byte, 8)
	nh, _ := fh.ReadAt(head, 0)
	isFile := bytes.HasPrefix(head[:nh], arrowFileMagic)
	switch {
	case bytes.HasPrefix(head[:nh], []byte("PAR1")):
		rep.Detected = append(rep.Detected, "PAR1 magic: reading as Parquet")
		fh.Close()
		return readParquet(path, opts, rep)
	case bytes.HasPrefix(head[:nh], []byte("FEA1")):
		return nil, fmt.Errorf("%s: a Feather version 1 file, which is not supported: rewrite it as Arrow IPC (Feather version 2)", path)
	case f == FormatArrow && !isFile:
		f = FormatArrowStream
		rep.Detected = append(rep.Detected, "no ARROW1 magic: reading as an Arrow IPC stream")
	case f == FormatArrowStream && isFile:
		f = FormatArrow
		rep.Detected = append(rep.Detected, "ARROW1 magic: reading as an Arrow IPC file")
	}
	rep.Format = f
	mem := &arrowCappedAllocator{Allocator: arrowAlloc, limit: arrowAllocLimit(st.Size())}
	if f == FormatArrow {
		return readArrowFile(path, fh, st.Size(), mem, opts, rep)
	}
	return readArrowStream(path, fh, st.Size(), mem, opts, rep)
}

// readArrowFile reads an Arrow IPC file (random access, footer verified).
func readArrowFile(path string, fh *os.File, size int64, mem memory.Allocator, opts *LoadOptions, rep *LoadReport) (*Store, error) {
	total, err := arrowVerifyFooter(fh, size)
	if err != nil {
		return nil, fmt.Errorf("%s: not a valid Arrow IPC file: %w", path, err)
	}
	r, err := ipc.NewFileReader(fh, ipc.WithAllocator(mem))
	if err != nil {
		return nil, fmt.Errorf("%s: not a valid Arrow IPC file: %w", path, err)
	}
	defer r.Close()
	l, err := arrowNewIPCLoader(path, r.Schema(), total, size, opts, rep)
	if err != nil {
		return nil, err
	}
	err = l.pipeline(opts.Threads, func(emit func(*arrowBatch) bool) error {
		var fileRow int64
		for i := 0; i < r.NumRecords(); i++ {
			rec, err := r.RecordAt(i)
			if err != nil {
				return fmt.Errorf("%s: batch %d: corrupt or truncated file: %w", path, i, err)
			}
			if ok, err := arrowEmitRecord(l, emit, rec, fmt.Sprintf("batch %d", i), 0, fileRow); !ok {
				return err
			}
			fileRow += rec.NumRows()
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return l.finish()
}

// readArrowStream reads an Arrow IPC stream (sequential batches).
func readArrowStream(path string, fh *os.File, size int64, mem memory.Allocator, opts *LoadOptions, rep *LoadReport) (*Store, error) {
	total, err := arrowVerifyStream(fh, size)
	if err != nil {
		return nil, fmt.Errorf("%s: not a valid Arrow IPC stream: %w", path, err)
	}
	r, err := ipc.NewReader(bufio.NewReaderSize(fh, 1<<20), ipc.WithAllocator(mem))
	if err != nil {
		return nil, fmt.Errorf("%s: not a valid Arrow IPC stream: %w", path, err)
	}
	defer r.Release()
	l, err := arrowNewIPCLoader(path, r.Schema(), total, size, opts, rep)
	if err != nil {
		return nil, err
	}
	err = l.pipeline(opts.Threads, func(emit func(*arrowBatch) bool) error {
		var fileRow int64
		i := 0
		for r.Next() {
			rec := r.Record()
			rec.Retain()
			if ok, err := arrowEmitRecord(l, emit, rec, fmt.Sprintf("batch %d", i), 0, fileRow); !ok {
				return err
			}
			fileRow += rec.NumRows()
			i++
		}
		if err := r.Err(); err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("%s: batch %d: corrupt or truncated stream: %w", path, i, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return l.finish()
}

func arrowNewIPCLoader(path string, sc *arrow.Schema, total, fileSize int64, opts *LoadOptions, rep *LoadReport) (*arrowLoader, error) {
	cols, err := arrowResolveColumns(path, sc, opts.Columns)
	if err != nil {
		return nil, err
	}
	return newArrowLoader(path, sc, cols, total, fileSize, opts, rep)
}

// arrowEmitRecord wraps an owned record into a batch and emits it; it
// releases the record itself when the schema does not fit. It reports
// whether loading goes on.
func arrowEmitRecord(l *arrowLoader, emit func(*arrowBatch) bool, rec arrow.Record, where string, first, fileRow int64) (bool, error) {
	cols, err := l.colsIn(rec.Schema())
	if err != nil {
		rec.Release()
		return false, fmt.Errorf("%s: %w", where, err)
	}
	b := l.getBatch()
	b.rec, b.where, b.first, b.fileRow, b.cols = rec, where, first, fileRow, cols
	return emit(b), nil
}

// arrowWriteSeeker adapts an io.Writer to the io.WriteSeeker the IPC file
// writer wants: it only ever asks for the current position.
type arrowWriteSeeker struct {
	w   io.Writer
	pos int64
}

func (a *arrowWriteSeeker) Write(p []byte) (int, error) {
	n, err := a.w.Write(p)
	a.pos += int64(n)
	return n, err
}

func (a *arrowWriteSeeker) Seek(off int64, whence int) (int64, error) {
	if off == 0 && whence == io.SeekCurrent {
		return a.pos, nil
	}
	return 0, errors.New("data: arrow writer cannot seek")
}

// writeArrow writes s as an Arrow IPC file (FormatArrow) or stream.
func writeArrow(w io.Writer, s *Store, f Format, opts *WriteOptions) (err error) {
	sc, err := arrowWriteSchema(s, opts)
	if err != nil {
		return err
	}
	ws := &arrowWriteSeeker{w: w}
	type recWriter interface {
		Write(arrow.Record) error
		Close() error
	}
	var rw recWriter
	if f == FormatArrowStream {
		rw = ipc.NewWriter(ws, ipc.WithSchema(sc), ipc.WithAllocator(arrowAlloc))
	} else {
		fw, err := ipc.NewFileWriter(ws, ipc.WithSchema(sc), ipc.WithAllocator(arrowAlloc))
		if err != nil {
			return err
		}
		rw = fw
	}
	if err := arrowWriteRecords(s, sc, arrowWriteBatch, rw.Write); err != nil {
		rw.Close()
		return err
	}
	return rw.Close()
}
