package main

import (
	"encoding/json"
	"errors"
	"io"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/ipc"
	"github.com/apache/arrow/go/v15/arrow/memory"
)

// spectralWriteArrow writes the full result as an Arrow IPC file in long
// form: one row per (component, term) with columns component (1-based),
// term (0-based word id or coordinate), word (vocabulary string; empty for
// mog) and value (the entry: a topic's probability of the word, or a
// mean's coordinate). The schema metadata holds "dprec.result" (the JSON
// summary: model, K, vocabulary size, weights, alpha, the document-topic
// prior, refinement, corpus and pruning stats) and "dprec.privacy" (the
// JSON privacy report). For lda and stm this is the topic model file that
// dprec spectral infer and eval read (spectralReadModel); the vocabulary
// is the word column. It is written atomically (data.WriteFileAtomic, as
// the completion models).
func spectralWriteArrow(w io.Writer, o spectralOutput) error {
	summary := o
	summary.Vocab = nil
	topics := make([]spectralTopic, len(o.Topics))
	for i, t := range o.Topics {
		t.Column, t.Mean = nil, nil
		topics[i] = t
	}
	summary.Topics = topics
	sj, err := json.Marshal(spectralJSONSafe(summary))
	if err != nil {
		return err
	}
	pj, err := json.Marshal(o.Privacy)
	if err != nil {
		return err
	}
	md := arrow.NewMetadata([]string{"dprec.result", "dprec.privacy"}, []string{string(sj), string(pj)})
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "component", Type: arrow.PrimitiveTypes.Int32},
		{Name: "term", Type: arrow.PrimitiveTypes.Int32},
		{Name: "word", Type: arrow.BinaryTypes.String},
		{Name: "value", Type: arrow.PrimitiveTypes.Float64},
	}, &md)
	mem := memory.NewGoAllocator()
	b := array.NewRecordBuilder(mem, sc)
	defer b.Release()
	comp := b.Field(0).(*array.Int32Builder)
	term := b.Field(1).(*array.Int32Builder)
	word := b.Field(2).(*array.StringBuilder)
	val := b.Field(3).(*array.Float64Builder)
	for _, t := range o.Topics {
		col := t.Column
		if col == nil {
			col = t.Mean
		}
		for i, v := range col {
			comp.Append(int32(t.Index))
			term.Append(int32(i))
			if o.Vocab != nil {
				word.Append(o.Vocab[i])
			} else {
				word.Append("")
			}
			val.Append(v)
		}
	}
	rec := b.NewRecord()
	defer rec.Release()
	fw, err := ipc.NewFileWriter(&spectralSeeker{w: w}, ipc.WithSchema(sc), ipc.WithAllocator(mem))
	if err != nil {
		return err
	}
	if err := fw.Write(rec); err != nil {
		fw.Close()
		return err
	}
	return fw.Close()
}

// spectralSeeker adapts an io.Writer to the io.WriteSeeker the Arrow file
// writer asks for; the writer only queries the current position.
type spectralSeeker struct {
	w   io.Writer
	pos int64
}

func (s *spectralSeeker) Write(p []byte) (int, error) {
	n, err := s.w.Write(p)
	s.pos += int64(n)
	return n, err
}

func (s *spectralSeeker) Seek(off int64, whence int) (int64, error) {
	if off == 0 && whence == io.SeekCurrent {
		return s.pos, nil
	}
	return 0, errors.New("spectral: arrow output cannot seek")
}
