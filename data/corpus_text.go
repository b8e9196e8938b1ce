package data

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ReadTextDir reads every regular file of dir (sorted by name; names
// starting with "." are skipped; no recursion) as one plain-text document.
// Files must be UTF-8: a file that is not is an error naming it. The
// tokenizer lower-cases the text and splits it into maximal runs of
// letters (unicode.IsLetter; digits, punctuation and space separate
// words); words of one letter and the built-in English stop words
// (StopWords) are dropped unless opts.KeepStopWords. The vocabulary is
// then pruned to words occurring at least opts.MinCount times in the
// corpus and to the opts.MaxVocab most frequent (ties broken by the word),
// and sorted alphabetically. Documents left empty or shorter than
// opts.MinDocLen are counted in Stats and skipped.
func ReadTextDir(dir string, opts CorpusOptions) (*Corpus, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	if err := textDirMemory(dir, ents, opts.MaxMemory); err != nil {
		return nil, err
	}
	var docs []map[string]int32
	var names []string
	freq := map[string]int64{}
	var stats CorpusStats
	for _, e := range ents {
		if e.IsDir() || strings.HasPrefix(e.Name(), ".") || !e.Type().IsRegular() {
			continue
		}
		path := filepath.Join(dir, e.Name())
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		if !utf8.Valid(b) {
			return nil, invalidUTF8(path, b)
		}
		doc := map[string]int32{}
		for _, tok := range Tokenize(string(b)) {
			if !opts.KeepStopWords && isStopWord(tok) {
				stats.PrunedTokens++
				continue
			}
			doc[tok]++
			freq[tok]++
		}
		docs = append(docs, doc)
		names = append(names, e.Name())
	}
	if len(docs) == 0 {
		return nil, fmt.Errorf("%s: %w (no regular files)", dir, ErrEmptyCorpus)
	}
	words := textVocab(freq, opts, &stats)
	id := make(map[string]int32, len(words))
	for i, w := range words {
		id[w] = int32(i)
	}
	b := NewCorpusBuilder(words, opts.MinDocLen)
	var ws, cs []int32
	type wc struct{ w, c int32 }
	var tmp []wc
	for _, doc := range docs {
		tmp = tmp[:0]
		for w, c := range doc {
			if i, ok := id[w]; ok {
				tmp = append(tmp, wc{i, c})
			}
		}
		sort.Slice(tmp, func(a, b int) bool { return tmp[a].w < tmp[b].w })
		ws, cs = ws[:0], cs[:0]
		for _, x := range tmp {
			ws = append(ws, x.w)
			cs = append(cs, x.c)
		}
		b.AddDoc(ws, cs)
	}
	c, err := b.Finish()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	c.Stats.PrunedWords = stats.PrunedWords
	c.Stats.PrunedTokens = stats.PrunedTokens
	c.InputNames = names
	return c, nil
}

// textDirMemory refuses a directory whose files would need more memory to
// tokenize than the limit. Memory: each file's bytes, their string copy,
// the lower-cased tokens and a map entry per distinct token of the
// document; a text of short distinct words costs up to about
// memTextBytesPerByte times its size.
func textDirMemory(dir string, ents []os.DirEntry, maxMemory int64) error {
	var total int64
	for _, e := range ents {
		if e.IsDir() || strings.HasPrefix(e.Name(), ".") || !e.Type().IsRegular() {
			continue
		}
		if info, err := e.Info(); err == nil {
			total += info.Size()
		}
	}
	lo := LoadOptions{MaxMemory: maxMemory}
	if limit, est := lo.memLimit(), total*memTextBytesPerByte; limit > 0 && est > limit {
		return fmt.Errorf("%s: %w: %s of text need up to about %s to tokenize, more than the limit of %s (--max-memory)",
			dir, ErrMemoryLimit, FormatBytes(total), FormatBytes(est), FormatBytes(limit))
	}
	return nil
}

// invalidUTF8 is the error for a file that is not UTF-8: it names the
// first invalid byte and its offset.
func invalidUTF8(path string, b []byte) error {
	off := 0
	for off < len(b) {
		r, n := utf8.DecodeRune(b[off:])
		if r == utf8.RuneError && n <= 1 {
			break
		}
		off += n
	}
	return fmt.Errorf("%s: not valid UTF-8 text (invalid byte 0x%02x at offset %d); convert it, e.g. iconv -f latin1 -t utf-8", path, b[off], off)
}

// textVocab returns the sorted vocabulary: the words occurring at least
// opts.MinCount times, cut to the opts.MaxVocab most frequent (ties broken
// by the word). It counts the removed words and tokens in stats.
func textVocab(freq map[string]int64, opts CorpusOptions, stats *CorpusStats) []string {
	words := make([]string, 0, len(freq))
	for w, f := range freq {
		if opts.MinCount > 1 && f < int64(opts.MinCount) {
			stats.PrunedWords++
			stats.PrunedTokens += f
			continue
		}
		words = append(words, w)
	}
	if opts.MaxVocab > 0 && len(words) > opts.MaxVocab {
		sort.Slice(words, func(a, b int) bool {
			if freq[words[a]] != freq[words[b]] {
				return freq[words[a]] > freq[words[b]]
			}
			return words[a] < words[b]
		})
		for _, w := range words[opts.MaxVocab:] {
			stats.PrunedWords++
			stats.PrunedTokens += freq[w]
		}
		words = words[:opts.MaxVocab]
	}
	sort.Strings(words)
	return words
}

// Tokenize lower-cases s and returns its maximal runs of letters of at
// least two letters.
func Tokenize(s string) []string {
	var out []string
	f := strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) })
	for _, w := range f {
		if utf8.RuneCountInString(w) >= 2 {
			out = append(out, w)
		}
	}
	return out
}

func isStopWord(w string) bool { _, ok := stopSet[w]; return ok }

// StopWords is the built-in English stop-word list: function words,
// auxiliaries, pronouns and adverbs of degree after the SMART, NLTK and
// Glasgow lists (no content words), plus contraction stems left by
// tokenisers that split at apostrophes ("didn", "doesn", "ive").
var StopWords = strings.Fields(`a about above after again against all am an and any are as at be
because been before being below between both but by can could did do does doing down during each
few for from further had has have having he her here hers herself him himself his how i if in into
is it its itself just me more most my myself no nor not now of off on once only or other our ours
ourselves out over own same she should so some such than that the their theirs them themselves then
there these they this those through to too under until up very was we were what when where which
while who whom why will with would you your yours yourself yourselves also may might must shall
us upon said says one two
across afterwards almost alone along already although always among amongst another anyhow anyone
anything anyway anywhere around became become becomes becoming beforehand behind beside besides
beyond cannot cant couldn didn doesn don done due either else elsewhere enough etc ever every
everyone everything everywhere except fewer first former formerly get gets getting go goes going
got hence hereafter hereby herein hereupon however im isn ive least less let like made many
meanwhile mine moreover mostly much namely neither never nevertheless next nobody none noone
nothing nowhere often otherwise others perhaps please put rather really re seem seemed seeming
seems several since someone something sometime sometimes somewhere still thence thereafter thereby
therefore therein thereupon though thus together toward towards unless unlike us via wasn
whatever whence whenever whereafter whereas whereby wherein whereupon wherever whether whither
whoever whole whose within without won wouldn yet`)

var stopSet = func() map[string]struct{} {
	m := make(map[string]struct{}, len(StopWords))
	for _, w := range StopWords {
		m[w] = struct{}{}
	}
	return m
}()
