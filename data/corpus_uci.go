package data

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
)

// openMaybeGzip opens path, transparently decompressing gzip content
// (detected by its magic bytes).
func openMaybeGzip(path string) (io.Reader, func() error, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	br := bufio.NewReaderSize(f, 1<<16)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		gz, err := gzip.NewReader(br)
		if err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("%s: %w", path, err)
		}
		return gz, func() error { gz.Close(); return f.Close() }, nil
	}
	return br, f.Close, nil
}

// ReadUCIBagOfWords reads the UCI bag-of-words format: docword (plain or
// gzip) starts with three lines D (documents), W (vocabulary size) and NNZ,
// followed by NNZ lines "docID wordID count" (1-based ids, positive
// counts; repeated (doc, word) pairs are summed); blank lines are ignored.
// vocabPath, if not empty, is vocab.txt with W lines, line w naming word
// id w; without it words are named by their ids ("1", "2", ...) and the
// vocabulary ends at the largest id used. Documents with no entry
// are counted as empty and skipped; documents shorter than opts.MinDocLen
// are counted and skipped. Errors name the file and line: a malformed line,
// an id outside [1, D] or [1, W] (unknown word), a non-positive count, a
// line count that disagrees with NNZ, or a vocabulary with other than W
// lines.
func ReadUCIBagOfWords(docwordPath, vocabPath string, opts CorpusOptions) (*Corpus, error) {
	r, closeFn, err := openMaybeGzip(docwordPath)
	if err != nil {
		return nil, err
	}
	defer closeFn()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	line := 0
	header, err := uciHeader(sc, docwordPath, &line)
	if err != nil {
		return nil, err
	}
	nd, nw, nnz := header[0], header[1], header[2]
	if nd > 1<<31-1 || nw > 1<<31-1 {
		return nil, fmt.Errorf("%s: D = %d or W = %d too large", docwordPath, nd, nw)
	}
	ents, err := uciEntries(sc, docwordPath, &line, nd, nw, nnz)
	if err != nil {
		return nil, err
	}
	var vocab []string
	if vocabPath != "" {
		vocab, err = readVocab(vocabPath)
		if err != nil {
			return nil, err
		}
		if int64(len(vocab)) != nw {
			return nil, fmt.Errorf("%s: %d words, but %s declares W = %d", vocabPath, len(vocab), docwordPath, nw)
		}
	} else if vocab, err = uciNumberedVocab(ents, docwordPath, opts.MaxMemory); err != nil {
		return nil, err
	}
	sort.Slice(ents, func(a, b int) bool {
		if ents[a].d != ents[b].d {
			return ents[a].d < ents[b].d
		}
		return ents[a].w < ents[b].w
	})
	b := NewCorpusBuilder(vocab, opts.MinDocLen)
	var ws, cs []int32
	present := 0
	for p := 0; p < len(ents); {
		d := ents[p].d
		present++
		ws, cs = ws[:0], cs[:0]
		for ; p < len(ents) && ents[p].d == d; p++ {
			e := ents[p]
			if n := len(ws); n > 0 && ws[n-1] == e.w {
				if int64(cs[n-1])+int64(e.c) > 1<<31-1 {
					return nil, fmt.Errorf("%s: document %d word %d: count overflows", docwordPath, d+1, e.w+1)
				}
				cs[n-1] += e.c
				continue
			}
			ws = append(ws, e.w)
			cs = append(cs, e.c)
		}
		b.SetNextID(int(d))
		b.AddDoc(ws, cs)
	}
	// Document ids in [1, D] without any entry are empty documents.
	b.c.Stats.SkippedEmpty += int(nd) - present
	c, err := b.Finish()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", docwordPath, err)
	}
	return c, nil
}

// uciEntry is one docword line, 0-based.
type uciEntry struct{ d, w, c int32 }

// uciHeader reads the D, W and NNZ header lines (blank lines skipped).
func uciHeader(sc *bufio.Scanner, path string, line *int) ([3]int64, error) {
	var header [3]int64
	for h := 0; h < 3; {
		if !sc.Scan() {
			if err := sc.Err(); err != nil {
				return header, fmt.Errorf("%s: %w", path, err)
			}
			return header, fmt.Errorf("%s: line %d: missing header (want D, W and NNZ lines)", path, *line+1)
		}
		*line++
		s := strings.TrimSpace(sc.Text())
		if s == "" {
			continue
		}
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil || v < 0 {
			return header, fmt.Errorf("%s: line %d: header value %q is not a non-negative integer", path, *line, s)
		}
		header[h] = v
		h++
	}
	return header, nil
}

// uciEntries reads the "docID wordID count" lines, checking the ids
// against [1, nd] and [1, nw] and their number against nnz.
func uciEntries(sc *bufio.Scanner, path string, line *int, nd, nw, nnz int64) ([]uciEntry, error) {
	capHint := nnz
	if capHint > 1<<24 {
		capHint = 1 << 24 // the header is untrusted: grow beyond 16M on demand
	}
	ents := make([]uciEntry, 0, capHint)
	for sc.Scan() {
		*line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		f := strings.Fields(string(b))
		if len(f) != 3 {
			return nil, fmt.Errorf("%s: line %d: want \"docID wordID count\", got %q", path, *line, b)
		}
		var v [3]int64
		for i := range f {
			x, err := strconv.ParseInt(f[i], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%s: line %d: field %d %q is not an integer", path, *line, i+1, f[i])
			}
			v[i] = x
		}
		switch {
		case v[0] < 1 || v[0] > nd:
			return nil, fmt.Errorf("%s: line %d: document id %d outside [1, %d]", path, *line, v[0], nd)
		case v[1] < 1 || v[1] > nw:
			return nil, fmt.Errorf("%s: line %d: unknown word id %d (vocabulary has %d words)", path, *line, v[1], nw)
		case v[2] < 1 || v[2] > 1<<31-1:
			return nil, fmt.Errorf("%s: line %d: count %d must be a positive 32-bit integer", path, *line, v[2])
		}
		ents = append(ents, uciEntry{int32(v[0] - 1), int32(v[1] - 1), int32(v[2])})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: line %d: %w", path, *line+1, err)
	}
	if int64(len(ents)) != nnz {
		return nil, fmt.Errorf("%s: header says NNZ = %d but the file has %d entries (truncated?)", path, nnz, len(ents))
	}
	return ents, nil
}

// uciNumberedVocab names the words, without vocab.txt, by their 1-based
// ids up to the largest id used (the header's W is untrusted and may be
// huge).
func uciNumberedVocab(ents []uciEntry, path string, maxMemory int64) ([]string, error) {
	var maxW int32 = -1
	for _, e := range ents {
		if e.w > maxW {
			maxW = e.w
		}
	}
	lo := LoadOptions{MaxMemory: maxMemory}
	if limit, est := lo.memLimit(), int64(maxW+1)*memVocabWordBytes; limit > 0 && est > limit {
		return nil, fmt.Errorf("%s: %w: word id %d makes a generated vocabulary of about %s, more than the limit of %s (--max-memory); give the vocab.txt or renumber the words",
			path, ErrMemoryLimit, maxW+1, FormatBytes(est), FormatBytes(limit))
	}
	vocab := make([]string, maxW+1)
	for i := range vocab {
		vocab[i] = strconv.Itoa(i + 1)
	}
	return vocab, nil
}

func readVocab(path string) ([]string, error) {
	r, closeFn, err := openMaybeGzip(path)
	if err != nil {
		return nil, err
	}
	defer closeFn()
	sc := bufio.NewScanner(r)
	var out []string
	line := 0
	for sc.Scan() {
		line++
		w := strings.TrimSpace(sc.Text())
		if w == "" {
			return nil, fmt.Errorf("%s: line %d: empty word", path, line)
		}
		out = append(out, w)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: line %d: %w", path, line+1, err)
	}
	return out, nil
}
