package data

import (
	"bufio"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
)

// PruneOptions selects the vocabulary pruning of PruneCorpus. The zero
// value removes the built-in English stop words (StopWords) and nothing
// else.
type PruneOptions struct {
	// KeepStopWords disables the built-in English stop-word list.
	KeepStopWords bool
	// ExtraStopWords are removed in addition to the built-in list (even
	// with KeepStopWords); compared after lower-casing.
	ExtraStopWords []string
	// MinCount drops words occurring fewer times in the whole corpus
	// (0 or 1 keeps all).
	MinCount int
	// MinDF drops words occurring in fewer than MinDF documents (0 or 1
	// keeps all).
	MinDF int
	// MaxDF drops words occurring in more than the fraction MaxDF of the
	// documents (0 keeps all; otherwise 0 < MaxDF <= 1).
	MaxDF float64
	// MaxVocab keeps only the MaxVocab most frequent remaining words
	// (by corpus count, ties broken by the word; 0 keeps all).
	MaxVocab int
	// MinDocLen drops documents with fewer tokens after pruning (counted
	// in CorpusStats.SkippedShort); 0 means 1.
	MinDocLen int
}

// PruneReport says what PruneCorpus removed, rule by rule. Each word is
// counted under the first rule that removed it, in the order stop words,
// min count, min df, max df, max vocab.
type PruneReport struct {
	StopWords int `json:"stop_words"`
	MinCount  int `json:"min_count"`
	MinDF     int `json:"min_df"`
	MaxDF     int `json:"max_df"`
	MaxVocab  int `json:"max_vocab"`
	// MaxDFWords lists (up to 20, most frequent first) the words removed
	// by MaxDF: the corpus-specific background words.
	MaxDFWords []string `json:"max_df_words,omitempty"`
	// EmptiedDocs counts documents that had words before pruning and none
	// after; ShortDocs those left with fewer than MinDocLen tokens. Both
	// are skipped.
	EmptiedDocs int `json:"emptied_docs"`
	ShortDocs   int `json:"short_docs"`
}

// validate checks the option ranges.
func (o *PruneOptions) validate() error {
	switch {
	case o.MinCount < 0:
		return fmt.Errorf("min count %d must be non-negative", o.MinCount)
	case o.MinDF < 0:
		return fmt.Errorf("min df %d must be non-negative", o.MinDF)
	case o.MaxDF < 0 || o.MaxDF > 1 || math.IsNaN(o.MaxDF):
		return fmt.Errorf("max df %v must be a fraction in (0, 1] (0: no limit)", o.MaxDF)
	case o.MaxVocab < 0:
		return fmt.Errorf("max vocab %d must be non-negative", o.MaxVocab)
	}
	return nil
}

// PruneCorpus returns a copy of c restricted to the words that survive the
// rules of opts, with word ids renumbered in the original vocabulary order
// (ids of removed words disappear), and documents left empty or shorter
// than opts.MinDocLen skipped and counted. It works on any corpus, so UCI
// bag-of-words input gets the same preprocessing as text directories. The
// result's Stats add the new skips and pruned words/tokens to c's. It
// returns ErrEmptyCorpus (wrapped) when no document survives.
//
// Document frequencies and the MaxDF fraction are taken over c's
// documents. All rules except the stop-word lists look at the corpus, so
// the resulting vocabulary is a function of the documents: a private
// release must not use them (see dprec spectral --public-vocab).
func PruneCorpus(c *Corpus, opts PruneOptions) (*Corpus, *PruneReport, error) {
	if err := opts.validate(); err != nil {
		return nil, nil, err
	}
	v := c.V()
	df := make([]int64, v)
	cf := make([]int64, v)
	for i, w := range c.Words {
		df[w]++
		cf[w] += int64(c.Counts[i])
	}
	rep := &PruneReport{}
	keep := pruneRules(c, opts, df, cf, rep)
	if opts.MaxVocab > 0 {
		pruneMaxVocab(c, opts.MaxVocab, cf, keep, rep)
	}
	newID := make([]int32, v)
	var vocab []string
	var prunedTokens int64
	for w := 0; w < v; w++ {
		if keep[w] {
			newID[w] = int32(len(vocab))
			vocab = append(vocab, c.Vocab[w])
		} else {
			newID[w] = -1
			prunedTokens += cf[w]
		}
	}
	b := NewCorpusBuilder(vocab, opts.MinDocLen)
	var ws, cs []int32
	for n := 0; n < c.NumDocs(); n++ {
		dw, dc := c.Doc(n)
		ws, cs = ws[:0], cs[:0]
		for i, w := range dw {
			if id := newID[w]; id >= 0 {
				ws = append(ws, id)
				cs = append(cs, dc[i])
			}
		}
		if c.DocIDs != nil {
			b.SetNextID(c.DocIDs[n])
		}
		b.AddDoc(ws, cs)
	}
	out := b.c
	out.InputNames = c.InputNames
	rep.EmptiedDocs = out.Stats.SkippedEmpty
	rep.ShortDocs = out.Stats.SkippedShort
	out.Stats.SkippedEmpty += c.Stats.SkippedEmpty
	out.Stats.SkippedShort += c.Stats.SkippedShort
	out.Stats.PrunedWords = c.Stats.PrunedWords + (v - len(vocab))
	out.Stats.PrunedTokens = c.Stats.PrunedTokens + prunedTokens
	out.Stats.Pruning = rep
	if out.NumDocs() == 0 {
		return nil, rep, fmt.Errorf("%w after pruning (%d documents emptied, %d left shorter than %d words; %d of %d words removed)",
			ErrEmptyCorpus, rep.EmptiedDocs, rep.ShortDocs, b.minLen, v-len(vocab), v)
	}
	return &out, rep, nil
}

// pruneRules applies the stop-word, count and document-frequency rules
// and returns which words stay; it counts the removals in rep.
func pruneRules(c *Corpus, opts PruneOptions, df, cf []int64, rep *PruneReport) []bool {
	v := c.V()
	keep := make([]bool, v)
	extra := make(map[string]struct{}, len(opts.ExtraStopWords))
	for _, s := range opts.ExtraStopWords {
		extra[strings.ToLower(s)] = struct{}{}
	}
	nd := float64(c.NumDocs())
	var maxDF []int
	for w := 0; w < v; w++ {
		word := strings.ToLower(c.Vocab[w])
		_, isExtra := extra[word]
		switch {
		case isExtra || (!opts.KeepStopWords && isStopWord(word)):
			rep.StopWords++
		case opts.MinCount > 1 && cf[w] < int64(opts.MinCount):
			rep.MinCount++
		case opts.MinDF > 1 && df[w] < int64(opts.MinDF):
			rep.MinDF++
		case opts.MaxDF > 0 && float64(df[w]) > opts.MaxDF*nd:
			rep.MaxDF++
			maxDF = append(maxDF, w)
		default:
			keep[w] = true
		}
	}
	sort.SliceStable(maxDF, func(a, b int) bool { return cf[maxDF[a]] > cf[maxDF[b]] })
	for i := 0; i < len(maxDF) && i < 20; i++ {
		rep.MaxDFWords = append(rep.MaxDFWords, c.Vocab[maxDF[i]])
	}
	return keep
}

// pruneMaxVocab keeps only the maxVocab most frequent of the kept words
// (ties broken by the word), counting the removals in rep.
func pruneMaxVocab(c *Corpus, maxVocab int, cf []int64, keep []bool, rep *PruneReport) {
	var kept []int
	for w := range keep {
		if keep[w] {
			kept = append(kept, w)
		}
	}
	if len(kept) <= maxVocab {
		return
	}
	sort.SliceStable(kept, func(a, b int) bool {
		if cf[kept[a]] != cf[kept[b]] {
			return cf[kept[a]] > cf[kept[b]]
		}
		return c.Vocab[kept[a]] < c.Vocab[kept[b]]
	})
	for _, w := range kept[maxVocab:] {
		keep[w] = false
		rep.MaxVocab++
	}
}

// ReadStopWords reads a stop-word file: words separated by white space
// (one a line is usual), lower-cased; lines starting with '#' are
// comments. A missing or unreadable file is an error naming it.
func ReadStopWords(path string) ([]string, error) {
	r, closeFn, err := openMaybeGzip(path)
	if err != nil {
		return nil, fmt.Errorf("stop-word file: %w", err)
	}
	defer closeFn()
	sc := bufio.NewScanner(r)
	var out []string
	line := 0
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(s, "#") {
			continue
		}
		for _, f := range strings.Fields(s) {
			out = append(out, strings.ToLower(f))
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: line %d: %w", path, line+1, err)
	}
	if len(out) == 0 {
		return nil, errors.New(path + ": stop-word file holds no word")
	}
	return out, nil
}
