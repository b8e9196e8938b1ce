package main

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/ipc"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/apache/arrow/go/v15/parquet"
	"github.com/apache/arrow/go/v15/parquet/compress"
	"github.com/apache/arrow/go/v15/parquet/pqarrow"
	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/otd"
	"github.com/urfave/cli/v2"
	"gonum.org/v1/gonum/mat"
)

// spectralDocPrior is the document-topic Dirichlet prior used to infer
// documents' topic proportions: symmetric alpha0/K for LDA with --refine
// (the prior the sweeps used) and for the single-topic model (1/K), and
// alpha0 * w_k for a spectral LDA fit, floored at 1e-3 alpha0/K so that a
// zero-weight topic keeps a positive (negligible) prior.
func spectralDocPrior(model otd.Model, alpha0 float64, res *otd.Result) []float64 {
	k := len(res.Weights)
	a := make([]float64, k)
	for t := range a {
		switch {
		case model != otd.ModelLDA:
			a[t] = 1 / float64(k)
		default:
			a[t] = math.Max(alpha0*res.Weights[t], 1e-3*alpha0/float64(k))
		}
	}
	return a
}

// spectralRefinePrior is the symmetric prior of --refine.
func spectralRefinePrior(model otd.Model, alpha0 float64, k int) float64 {
	if model == otd.ModelLDA {
		return alpha0 / float64(k)
	}
	return 1 / float64(k)
}

// spectralCheckTableOut checks a --doc-topics / infer --out path: .csv or
// .parquet, not existing unless force.
func spectralCheckTableOut(path string, force bool) error {
	low := strings.ToLower(path)
	if path != "-" && !strings.HasSuffix(low, ".csv") && !strings.HasSuffix(low, ".parquet") {
		return cli.Exit(fmt.Sprintf("%s: the topic proportions file must end in .csv or .parquet", path), exitUsage)
	}
	if path != "-" && !force {
		if _, err := os.Stat(path); err == nil {
			return fmt.Errorf("%s: %w", path, data.ErrExists)
		}
	}
	return nil
}

// spectralDocName names document n of c in output tables: the text file's
// name, or the 1-based document id of a UCI file.
func spectralDocName(c *data.Corpus, n int) string {
	if c.DocIDs == nil {
		return strconv.Itoa(n + 1)
	}
	id := c.DocIDs[n]
	if c.InputNames != nil && id < len(c.InputNames) {
		return c.InputNames[id]
	}
	return strconv.Itoa(id + 1)
}

// spectralWriteDocTopics writes theta (N x K) atomically as CSV (columns
// doc, topic_1..topic_K) or Parquet (doc string, topic_k double), one row
// per kept document; "-" writes CSV to s.Out.
func spectralWriteDocTopics(s *iostreams, path string, force bool, c *data.Corpus, theta *mat.Dense) error {
	n, k := theta.Dims()
	names := make([]string, k+1)
	names[0] = "doc"
	for t := 1; t <= k; t++ {
		names[t] = fmt.Sprintf("topic_%d", t)
	}
	if strings.HasSuffix(strings.ToLower(path), ".parquet") {
		return s.writeFile(path, force, func(w io.Writer) error {
			return spectralDocTopicsParquet(w, c, theta, names)
		})
	}
	return s.writeFile(path, force, func(w io.Writer) error {
		bw := bufio.NewWriter(w)
		cw := csv.NewWriter(bw)
		if err := cw.Write(names); err != nil {
			return err
		}
		row := make([]string, k+1)
		for d := 0; d < n; d++ {
			row[0] = spectralDocName(c, d)
			for t := 0; t < k; t++ {
				row[t+1] = strconv.FormatFloat(theta.At(d, t), 'g', 6, 64)
			}
			if err := cw.Write(row); err != nil {
				return err
			}
		}
		cw.Flush()
		if err := cw.Error(); err != nil {
			return err
		}
		return bw.Flush()
	})
}

// spectralDocTopicsParquet writes theta as Parquet on w (columns doc and
// names[1:]).
func spectralDocTopicsParquet(w io.Writer, c *data.Corpus, theta *mat.Dense, names []string) error {
	n, k := theta.Dims()
	fields := []arrow.Field{{Name: "doc", Type: arrow.BinaryTypes.String}}
	for _, nm := range names[1:] {
		fields = append(fields, arrow.Field{Name: nm, Type: arrow.PrimitiveTypes.Float64})
	}
	sc := arrow.NewSchema(fields, nil)
	mem := memory.NewGoAllocator()
	b := array.NewRecordBuilder(mem, sc)
	defer b.Release()
	for d := 0; d < n; d++ {
		b.Field(0).(*array.StringBuilder).Append(spectralDocName(c, d))
		for t := 0; t < k; t++ {
			b.Field(t + 1).(*array.Float64Builder).Append(theta.At(d, t))
		}
	}
	rec := b.NewRecord()
	defer rec.Release()
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Snappy))
	pw, err := data.NewParquetWriter(sc, w, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		return err
	}
	if err := pw.WriteBuffered(rec); err != nil {
		pw.Close()
		return err
	}
	return pw.Close()
}

// spectralSelect keeps the documents whose line in FILE equals VALUE
// (spec "FILE:VALUE"; line i of FILE belongs to input document i).
func spectralSelect(c *data.Corpus, spec string) (*data.Corpus, error) {
	i := strings.LastIndex(spec, ":")
	if i <= 0 || i == len(spec)-1 {
		return nil, cli.Exit(fmt.Sprintf("--select %q: want FILE:VALUE, e.g. split.txt:train", spec), exitUsage)
	}
	path, value := spec[:i], spec[i+1:]
	lines, err := spectralReadLines(path)
	if err != nil {
		return nil, err
	}
	b := data.NewCorpusBuilder(c.Vocab, 1)
	for n := 0; n < c.NumDocs(); n++ {
		id := n
		if c.DocIDs != nil {
			id = c.DocIDs[n]
		}
		if id >= len(lines) {
			return nil, fmt.Errorf("%s: %d lines, but the corpus has document %d", path, len(lines), id+1)
		}
		if lines[id] != value {
			continue
		}
		b.SetNextID(id)
		ws, cs := c.Doc(n)
		b.AddDoc(ws, cs)
	}
	out, err := b.Finish()
	if err != nil {
		return nil, fmt.Errorf("--select %s: %w", spec, err)
	}
	out.InputNames = c.InputNames
	out.Stats.SkippedEmpty += c.Stats.SkippedEmpty
	out.Stats.SkippedShort += c.Stats.SkippedShort
	return out, nil
}

// spectralReadLines reads the trimmed lines of a small text file (labels,
// splits).
func spectralReadLines(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		out = append(out, strings.TrimSpace(sc.Text()))
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: line %d: %w", path, len(out)+1, err)
	}
	return out, nil
}

// spectralModel is a topic model read back from a spectral --out .arrow
// file.
type spectralModel struct {
	Summary spectralOutput
	Vocab   []string
	A       *mat.Dense // V x K
}

// spectralMaxModelBytes caps the size of a model file read by infer/eval.
const spectralMaxModelBytes = 4 << 30

// spectralReadModel reads a topic model written by dprec spectral --out
// FILE.arrow: the JSON summary in the schema metadata ("dprec.result")
// and the long-form (component, term, word, value) rows.
func spectralReadModel(path string) (*spectralModel, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() > spectralMaxModelBytes {
		return nil, fmt.Errorf("%s: %d bytes is larger than a topic model file can be (cap %d)", path, st.Size(), int64(spectralMaxModelBytes))
	}
	fr, err := ipc.NewFileReader(f, ipc.WithAllocator(memory.NewGoAllocator()))
	if err != nil {
		return nil, fmt.Errorf("%s: not a dprec spectral model file (Arrow IPC): %w", path, err)
	}
	defer fr.Close()
	md := fr.Schema().Metadata()
	i := md.FindKey("dprec.result")
	if i < 0 {
		return nil, fmt.Errorf("%s: no dprec.result metadata: not written by dprec spectral --out FILE.arrow", path)
	}
	m := &spectralModel{}
	if err := json.Unmarshal([]byte(md.Values()[i]), &m.Summary); err != nil {
		return nil, fmt.Errorf("%s: dprec.result metadata: %w", path, err)
	}
	s := &m.Summary
	if s.Model != otd.ModelLDA && s.Model != otd.ModelSTM {
		return nil, fmt.Errorf("%s: model %q is not a topic model (lda or stm)", path, s.Model)
	}
	k, v := s.K, s.VocabSize
	if k < 1 || v < k || len(s.Topics) != k || float64(k)*float64(v) > 1<<31 {
		return nil, fmt.Errorf("%s: inconsistent header (K = %d, vocabulary %d, %d topics)", path, k, v, len(s.Topics))
	}
	if int64(k)*int64(v)*(8+8+8) > st.Size()*64 {
		return nil, fmt.Errorf("%s: header claims %d x %d entries, more than the file can hold", path, v, k)
	}
	m.Vocab = make([]string, v)
	m.A = mat.NewDense(v, k, nil)
	seen := make([]bool, v*k)
	for r := 0; r < fr.NumRecords(); r++ {
		rec, err := fr.Record(r)
		if err != nil {
			return nil, fmt.Errorf("%s: record %d: %w", path, r, err)
		}
		if rec.NumCols() != 4 {
			return nil, fmt.Errorf("%s: want columns component, term, word, value", path)
		}
		comp, ok1 := rec.Column(0).(*array.Int32)
		term, ok2 := rec.Column(1).(*array.Int32)
		word, ok3 := rec.Column(2).(*array.String)
		val, ok4 := rec.Column(3).(*array.Float64)
		if !ok1 || !ok2 || !ok3 || !ok4 {
			return nil, fmt.Errorf("%s: unexpected column types", path)
		}
		for j := 0; j < int(rec.NumRows()); j++ {
			t, w, x := int(comp.Value(j))-1, int(term.Value(j)), val.Value(j)
			if t < 0 || t >= k || w < 0 || w >= v {
				return nil, fmt.Errorf("%s: row (%d, %d) outside K = %d, vocabulary %d", path, t+1, w, k, v)
			}
			if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
				return nil, fmt.Errorf("%s: topic %d word %d: value %v is not a probability", path, t+1, w, x)
			}
			seen[w*k+t] = true
			m.A.Set(w, t, x)
			if nm := word.Value(j); m.Vocab[w] == "" {
				m.Vocab[w] = nm
			} else if m.Vocab[w] != nm {
				return nil, fmt.Errorf("%s: term %d named both %q and %q", path, w, m.Vocab[w], nm)
			}
		}
	}
	for i, ok := range seen {
		if !ok {
			return nil, fmt.Errorf("%s: topic %d has no entry for term %d", path, i%k+1, i/k)
		}
	}
	if len(s.DocPrior) != k {
		return nil, fmt.Errorf("%s: no document-topic prior for %d topics (written by an older dprec: refit)", path, k)
	}
	return m, nil
}

// spectralMapCorpus reads a corpus (text directory or UCI docword with
// its vocabulary) and maps its words onto the model's vocabulary by
// string; words the model does not know are dropped and counted.
// Documents left empty are skipped and counted.
func spectralMapCorpus(path, vocabPath string, model []string) (c *data.Corpus, unknownWords int, unknownTokens int64, err error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, 0, 0, err
	}
	raw := data.CorpusOptions{MinDocLen: 1, KeepStopWords: true}
	var in *data.Corpus
	if st.IsDir() {
		in, err = data.ReadTextDir(path, raw)
	} else {
		if vocabPath == "" {
			guess := filepath.Join(filepath.Dir(path), strings.TrimSuffix(strings.Replace(filepath.Base(path), "docword", "vocab", 1), ".gz"))
			if guess != path {
				if _, e := os.Stat(guess); e == nil {
					vocabPath = guess
				}
			}
		}
		if vocabPath == "" {
			return nil, 0, 0, cli.Exit(fmt.Sprintf("%s: a docword file needs its vocabulary (--vocab) to be mapped onto the model's words", path), exitUsage)
		}
		in, err = data.ReadUCIBagOfWords(path, vocabPath, raw)
	}
	if err != nil {
		return nil, 0, 0, err
	}
	id := make(map[string]int32, len(model))
	for i, w := range model {
		id[w] = int32(i)
	}
	to := make([]int32, in.V())
	for w, s := range in.Vocab {
		if j, ok := id[s]; ok {
			to[w] = j
		} else {
			to[w] = -1
		}
	}
	used := make([]bool, in.V())
	b := data.NewCorpusBuilder(model, 1)
	type wc struct{ w, c int32 }
	var tmp []wc
	var ws, cs []int32
	for n := 0; n < in.NumDocs(); n++ {
		dw, dc := in.Doc(n)
		tmp = tmp[:0]
		for i, w := range dw {
			if j := to[w]; j >= 0 {
				tmp = append(tmp, wc{j, dc[i]})
			} else {
				unknownTokens += int64(dc[i])
				if !used[w] {
					used[w] = true
					unknownWords++
				}
			}
		}
		// Model ids may not be increasing in the input's order.
		for i := 1; i < len(tmp); i++ {
			for j := i; j > 0 && tmp[j].w < tmp[j-1].w; j-- {
				tmp[j], tmp[j-1] = tmp[j-1], tmp[j]
			}
		}
		ws, cs = ws[:0], cs[:0]
		for _, x := range tmp {
			if l := len(ws); l > 0 && ws[l-1] == x.w {
				cs[l-1] += x.c
				continue
			}
			ws, cs = append(ws, x.w), append(cs, x.c)
		}
		if in.DocIDs != nil {
			b.SetNextID(in.DocIDs[n])
		}
		b.AddDoc(ws, cs)
	}
	c, err = b.Finish()
	if err != nil {
		return nil, unknownWords, unknownTokens, fmt.Errorf("%s: %w (%d of its words are not in the model's vocabulary)", path, err, unknownWords)
	}
	c.InputNames = in.InputNames
	c.Stats.SkippedEmpty += in.Stats.SkippedEmpty
	return c, unknownWords, unknownTokens, nil
}

func spectralInferCmd() *cli.Command {
	return &cli.Command{
		Name:  "infer",
		Usage: "infer the topic proportions of documents with the topics of a saved model held fixed",
		Description: `Reads a topic model written by dprec spectral --out FILE.arrow and a corpus (text
directory, or UCI docword with its vocab.txt), maps the corpus's words onto the model's
vocabulary by string (unknown words are dropped and counted; documents left empty are skipped
and counted) and writes one row of topic proportions per document: variational fixed-point
iterations per document with the model's document-topic prior (see go doc otd.InferDocTopics).`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "model", Required: true, Usage: "topic model file (dprec spectral --out FILE.arrow)"},
			&cli.StringFlag{Name: "corpus", Required: true, Usage: "a directory of text documents or a UCI docword.txt[.gz]"},
			&cli.StringFlag{Name: "vocab", Usage: "UCI vocab.txt (default: next to the docword file)"},
			&cli.StringFlag{Name: "out", Value: "-", Usage: "FILE.csv or FILE.parquet (default: CSV on stdout)"},
			forceFlag("overwrite --out", ""),
			&cli.IntFlag{Name: "threads", Value: 1, Usage: "documents processed by this many goroutines"},
		},
		Action: runWithOptions(spectralInferOptionsOf, spectralInferRun),
	}
}

// spectralInferOptions are the settings of spectral infer.
type spectralInferOptions struct {
	globalOptions
	Model   string // --model: a topic model file (spectral --out FILE.arrow)
	Corpus  string // --corpus: text directory or UCI docword file
	Vocab   string // --vocab ("": next to the docword file)
	Out     string // --out FILE.csv or FILE.parquet ("-": CSV on the output stream)
	Force   bool
	Threads int
}

// spectralInferOptionsOf reads the flags of spectral infer; the output
// is checked by spectralInferRun before anything is read.
func spectralInferOptionsOf(c *cli.Context) (*spectralInferOptions, error) {
	return &spectralInferOptions{globalOptions: globalOptionsOf(c), Model: c.String("model"), Corpus: c.String("corpus"),
		Vocab: c.String("vocab"), Out: c.String("out"), Force: c.Bool("force"), Threads: c.Int("threads")}, nil
}

// spectralInferRun infers the topic proportions of o.Corpus's documents
// with the topics of o.Model and writes them to o.Out (s.Out for "-").
func spectralInferRun(o *spectralInferOptions, s *iostreams) error {
	if err := spectralCheckTableOut(o.Out, o.Force); err != nil {
		return err
	}
	m, err := spectralReadModel(o.Model)
	if err != nil {
		return err
	}
	corpus, uw, ut, err := spectralMapCorpus(o.Corpus, o.Vocab, m.Vocab)
	if err != nil {
		return err
	}
	theta, err := otd.InferDocTopics(corpus, m.A, m.Summary.DocPrior, otd.InferOptions{Threads: o.Threads})
	if err != nil {
		return err
	}
	if err := spectralWriteDocTopics(s, o.Out, o.Force, corpus, theta); err != nil {
		return err
	}
	if !o.Quiet {
		fmt.Fprintf(s.Err, "inferred %d documents (skipped %d empty after mapping); %d words (%d tokens) not in the model's vocabulary were ignored\n",
			corpus.NumDocs(), corpus.Stats.SkippedEmpty, uw, ut)
	}
	return nil
}
