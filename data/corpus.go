package data

import (
	"errors"
	"fmt"
)

// Corpus is a bag-of-words document collection in compressed sparse row
// form: document n has the distinct word ids Words[DocPtr[n]:DocPtr[n+1]]
// (strictly increasing) with the positive counts Counts[...] at the same
// positions. Vocab[w] is the string of word id w. A Corpus built by this
// package never holds an empty document, a zero count or an out-of-range id;
// Validate checks those invariants for hand-built values.
//
// A Corpus is read-only after construction and safe for concurrent reads.
type Corpus struct {
	Vocab  []string
	DocPtr []int64
	Words  []int32
	Counts []int32
	// DocIDs[n] is the 0-based position of document n in the input (the
	// UCI document id minus 1, or the index of the file of a text
	// directory in name order), so skipped documents leave gaps.
	DocIDs []int
	// InputNames, when set (text directories), names the input documents
	// by position: document n came from InputNames[DocIDs[n]].
	InputNames []string
	// Stats describes what the reader kept and skipped.
	Stats CorpusStats
}

// CorpusStats counts what a corpus reader kept and dropped.
type CorpusStats struct {
	// Docs is the number of documents kept.
	Docs int `json:"docs"`
	// Tokens is the number of word occurrences kept (the sum of the counts).
	Tokens int64 `json:"tokens"`
	// SkippedEmpty counts documents with no (remaining) word at all.
	SkippedEmpty int `json:"skipped_empty"`
	// SkippedShort counts documents dropped because they had fewer than
	// CorpusOptions.MinDocLen words after tokenization and pruning.
	SkippedShort int `json:"skipped_short"`
	// PrunedWords counts vocabulary entries dropped by MinCount/MaxVocab.
	PrunedWords int `json:"pruned_words"`
	// PrunedTokens counts word occurrences dropped with those entries or
	// as stop words.
	PrunedTokens int64 `json:"pruned_tokens"`
	// Pruning details, rule by rule, what PruneCorpus removed (nil when
	// the corpus was not pruned by it).
	Pruning *PruneReport `json:"pruning,omitempty"`
}

// CorpusOptions controls the corpus readers. The zero value keeps every
// non-empty document and every word.
type CorpusOptions struct {
	// MinDocLen drops documents with fewer words (tokens); they are counted
	// in CorpusStats.SkippedShort. The single-topic and LDA moment
	// estimators need MinDocLen >= 3 (three distinct word positions), and
	// dprec spectral sets 3 for those models. Zero means 1 (drop only empty
	// documents, counted in SkippedEmpty).
	MinDocLen int
	// MinCount drops words occurring fewer times in the whole corpus (text
	// directories only; 0 or 1 keeps all).
	MinCount int
	// MaxVocab keeps only the MaxVocab most frequent words (ties broken by
	// the word string; text directories only; 0 keeps all).
	MaxVocab int
	// KeepStopWords disables the built-in English stop-word list (text
	// directories only).
	KeepStopWords bool
	// MaxMemory bounds the vocabulary a UCI docword file without vocab.txt
	// may make the reader generate (one name per word id up to the largest
	// id used, about memVocabWordBytes each), and the text a directory may
	// hold (memTextBytesPerByte per byte): beyond it the readers fail with
	// ErrMemoryLimit before allocating. Zero means
	// DefaultMemoryFraction of the physical memory; negative, no limit.
	MaxMemory int64
}

// ErrEmptyCorpus is returned when no document survives reading.
var ErrEmptyCorpus = errors.New("corpus has no usable document")

// NumDocs returns the number of documents.
func (c *Corpus) NumDocs() int { return len(c.DocPtr) - 1 }

// NNZ returns the number of (document, word) pairs stored.
func (c *Corpus) NNZ() int { return len(c.Words) }

// V returns the vocabulary size.
func (c *Corpus) V() int { return len(c.Vocab) }

// Doc returns the word ids and counts of document n (slices of the corpus:
// do not modify).
func (c *Corpus) Doc(n int) (words, counts []int32) {
	a, b := c.DocPtr[n], c.DocPtr[n+1]
	return c.Words[a:b], c.Counts[a:b]
}

// DocLen returns the number of words (tokens) of document n.
func (c *Corpus) DocLen(n int) int64 {
	_, cs := c.Doc(n)
	var l int64
	for _, x := range cs {
		l += int64(x)
	}
	return l
}

// Validate checks the CSR invariants: DocPtr starts at 0, is non-decreasing
// and ends at len(Words); ids are in [0, V) and strictly increasing within a
// document; counts are positive; no document is empty.
func (c *Corpus) Validate() error {
	if len(c.DocPtr) == 0 || c.DocPtr[0] != 0 {
		return errors.New("corpus: DocPtr must start with 0")
	}
	if len(c.Words) != len(c.Counts) || c.DocPtr[len(c.DocPtr)-1] != int64(len(c.Words)) {
		return errors.New("corpus: DocPtr, Words and Counts lengths disagree")
	}
	v := int32(len(c.Vocab))
	for n := 0; n < c.NumDocs(); n++ {
		if c.DocPtr[n+1] <= c.DocPtr[n] {
			return fmt.Errorf("corpus: document %d is empty", n)
		}
		ws, cs := c.Doc(n)
		for i, w := range ws {
			if w < 0 || w >= v {
				return fmt.Errorf("corpus: document %d: word id %d out of range [0,%d)", n, w, v)
			}
			if i > 0 && w <= ws[i-1] {
				return fmt.Errorf("corpus: document %d: word ids not strictly increasing", n)
			}
			if cs[i] <= 0 {
				return fmt.Errorf("corpus: document %d: non-positive count %d", n, cs[i])
			}
		}
	}
	return nil
}

// CorpusBuilder accumulates documents into a Corpus.
type CorpusBuilder struct {
	c      Corpus
	minLen int64
	next   int // input position of the next AddDoc
}

// NewCorpusBuilder starts a corpus over vocab with documents of at least
// minDocLen tokens (values below 1 mean 1).
func NewCorpusBuilder(vocab []string, minDocLen int) *CorpusBuilder {
	if minDocLen < 1 {
		minDocLen = 1
	}
	return &CorpusBuilder{c: Corpus{Vocab: vocab, DocPtr: []int64{0}}, minLen: int64(minDocLen)}
}

// AddDoc appends a document given by word ids with strictly increasing ids
// and positive counts (zero counts are dropped). Empty and short documents
// are counted and skipped. It reports whether the document was kept.
// Successive calls are input positions 0, 1, 2, ... (recorded in
// Corpus.DocIDs) unless SetNextID says otherwise.
func (b *CorpusBuilder) AddDoc(words, counts []int32) bool {
	var l int64
	for _, x := range counts {
		l += int64(x)
	}
	id := b.next
	b.next++
	if l == 0 {
		b.c.Stats.SkippedEmpty++
		return false
	}
	if l < b.minLen {
		b.c.Stats.SkippedShort++
		return false
	}
	b.c.DocIDs = append(b.c.DocIDs, id)
	for i, w := range words {
		if counts[i] > 0 {
			b.c.Words = append(b.c.Words, w)
			b.c.Counts = append(b.c.Counts, counts[i])
		}
	}
	b.c.DocPtr = append(b.c.DocPtr, int64(len(b.c.Words)))
	b.c.Stats.Docs++
	b.c.Stats.Tokens += l
	return true
}

// SetNextID sets the input position recorded for the next AddDoc (for
// readers whose input has gaps, such as UCI files without entries for
// some document ids).
func (b *CorpusBuilder) SetNextID(id int) { b.next = id }

// Finish returns the corpus, or ErrEmptyCorpus (wrapped with the skip
// counts) when no document was kept.
func (b *CorpusBuilder) Finish() (*Corpus, error) {
	c := b.c
	if c.NumDocs() == 0 {
		return nil, fmt.Errorf("%w (%d empty, %d shorter than %d words)", ErrEmptyCorpus, c.Stats.SkippedEmpty, c.Stats.SkippedShort, b.minLen)
	}
	return &c, nil
}

// CorpusFromCounts builds a corpus from dense per-document count vectors
// (used by synthetic generators and tests); docs[n][w] is the count of word
// w in document n.
func CorpusFromCounts(vocab []string, docs [][]int32, minDocLen int) (*Corpus, error) {
	b := NewCorpusBuilder(vocab, minDocLen)
	var ws, cs []int32
	for n, d := range docs {
		if len(d) != len(vocab) {
			return nil, fmt.Errorf("document %d has %d counts, vocabulary has %d words", n, len(d), len(vocab))
		}
		ws, cs = ws[:0], cs[:0]
		for w, x := range d {
			if x < 0 {
				return nil, fmt.Errorf("document %d: negative count %d for word %d", n, x, w)
			}
			if x > 0 {
				ws = append(ws, int32(w))
				cs = append(cs, x)
			}
		}
		b.AddDoc(ws, cs)
	}
	return b.Finish()
}
