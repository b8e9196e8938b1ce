package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/otd"
	"github.com/dprec/dprec/perturb"
	"github.com/schollz/progressbar/v3"
	"github.com/urfave/cli/v2"
	"gonum.org/v1/gonum/mat"
)

// spectralMethods lists the accepted --method values.
var spectralMethods = func() []string {
	out := make([]string, len(otd.Methods))
	for i, m := range otd.Methods {
		out[i] = string(m)
	}
	return out
}()

func spectralCmd() *cli.Command {
	const in, mo, pr, out = "Input", "Model", "Privacy", "Output"
	cmd := &cli.Command{
		Name:  "spectral",
		Usage: "fit a single-topic, LDA or Gaussian-mixture model by tensor decomposition (optionally private)",
		Description: `Reads a corpus (a directory of plain-text files, or UCI bag-of-words docword.txt with
vocab.txt) or numeric rows (CSV, for --model mog), estimates the second and third moments,
whitens, runs the robust tensor power method and prints each component's weight with its top
words (or its mean), followed by the privacy report.

Both corpus formats are pruned by the same rules: the built-in English stop words (unless
--keep-stopwords), --stop-words FILE, --min-count, --min-df, --max-df and --max-vocab; what
each rule removed is reported. Documents with fewer than 3 words after pruning are skipped and
counted (the moment estimators need three word positions); empty documents are skipped and
counted; a vocabulary smaller than K after pruning is an error. Non-UTF-8 text files, unknown
word ids and malformed lines are errors naming the file and line.

Topics are distributions (simplex-projected) and weights sum to 1 (mixture weights
too, printed beside their estimates); a topic with a non-positive estimated weight is
flagged and shown without top words. A private fit whose estimated weights are far from
a distribution (one outside (0, 1], or a sum more than 1/(2 sqrt K) from 1) prints a
WARNING: at that epsilon and N the noise is comparable to the weights. Non-private,
centralised lda and stm runs then refine the topics by 20 sweeps of variational EM (go doc
otd.Refine) and say so on stderr; --refine N runs N sweeps instead and --refine 0 keeps the
spectral topics alone (private runs are never refined: the sweeps would read the documents
again without noise, outside the privacy report). --doc-topics writes the
training documents' topic proportions. Subcommands: infer (proportions of new documents with
a saved --out FILE.arrow), eval (NPMI, UMass, held-out likelihood, label NMI).

Private methods need a public vocabulary: --vocab FILE --public-vocab, and no data-dependent
pruning rule; --epsilon without a private --method is refused. At real vocabulary sizes use
--method agn-whitened (--model stm or lda): it selects --private-vocab words privately, clips
each document's contributions (--clip-len, --clip-m3) and adds noise only to the selected
words' second moment and the K x K x K whitened tensor (go doc otd, (S10) and (S11)); a run
whose noise swamps the K-th eigenvalue of M2 warns with the N it would need.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "corpus", Category: in, Usage: "a directory of text documents, a UCI docword.txt[.gz], or a CSV of numeric rows (mog)"},
			&cli.StringFlag{Name: "vocab", Category: in, Usage: "UCI vocab.txt (default: the docword file's name with docword replaced by vocab, when it exists)"},
			&cli.BoolFlag{Name: "public-vocab", Category: pr, Usage: "declare the --vocab file public (chosen without looking at the private documents); required by private methods"},
			&cli.StringFlag{Name: "select", Category: in, Usage: "FILE:VALUE: keep only the documents whose line in FILE (one line per input document) is VALUE, e.g. split.txt:train"},
			&cli.IntFlag{Name: "min-count", Category: in, Usage: "drop words occurring fewer times in the corpus"},
			&cli.IntFlag{Name: "min-df", Category: in, Usage: "drop words occurring in fewer documents"},
			&cli.Float64Flag{Name: "max-df", Category: in, Usage: "drop words occurring in more than this fraction of the documents (e.g. 0.5)"},
			&cli.IntFlag{Name: "max-vocab", Category: in, Usage: "keep only the most frequent words (after the other rules)"},
			&cli.BoolFlag{Name: "keep-stopwords", Category: in, Usage: "keep the built-in English stop words"},
			&cli.StringFlag{Name: "stop-words", Category: in, Usage: "FILE of extra stop words (white-space separated; # comments)"},
			&cli.BoolFlag{Name: "rescale", Category: in, Usage: "mog: divide rows by the largest row norm when it exceeds 1 (sigma2 is divided by its square)"},
			&cli.StringFlag{Name: "model", Value: "lda", Category: mo, Usage: "stm (single topic), lda or mog (mixture of spherical Gaussians)"},
			&cli.IntFlag{Name: "topics", Aliases: []string{"k"}, Category: mo, Usage: "number of topics / components K (required)"},
			&cli.IntFlag{Name: "refine", Category: mo, Usage: "lda, stm: N sweeps of variational EM for LDA started from the spectral topics (non-private, centralised runs only; 0: the spectral topics alone)", DefaultText: fmt.Sprintf("%d for non-private, centralised lda and stm runs, else 0", spectralDefaultRefine)},
			&cli.Float64Flag{Name: "eta", Category: mo, Usage: "--refine: topic-word Dirichlet prior (default 1/K)"},
			&cli.IntFlag{Name: "threads", Value: 1, Category: mo, Usage: "--refine and --doc-topics: documents processed by this many goroutines (CPU time is unchanged; results are deterministic per thread count)"},
			&cli.BoolFlag{Name: "background", Value: true, Category: mo, Usage: "--refine: a background topic fixed at the corpus word frequencies absorbs generic words (dropped from the output; --background=false: plain LDA)"},
			&cli.Float64Flag{Name: "alpha0", Value: 1, Category: mo, Usage: "lda: Dirichlet concentration sum_k alpha_k"},
			&cli.Float64Flag{Name: "sigma2", Category: mo, Usage: "mog: common component variance (in the units of the input rows)"},
			&cli.StringFlag{Name: "estimator", Value: "all-triples", Category: mo, Usage: "stm moments: all-triples (unbiased, every word) or first-three"},
			&cli.IntFlag{Name: "restarts", Category: mo, Usage: "tensor power method restarts L (default 20)"},
			&cli.IntFlag{Name: "iters", Category: mo, Usage: "tensor power method iterations R (default 100)"},
			&cli.StringFlag{Name: "method", Value: "nonprivate", Category: pr, Usage: strings.Join(spectralMethods, "|")},
			&cli.Float64Flag{Name: "epsilon", Category: pr, Usage: "total privacy budget epsilon (private methods)"},
			&cli.Float64Flag{Name: "delta", Category: pr, Usage: "total privacy budget delta (private methods)"},
			&cli.IntFlag{Name: "private-vocab", Category: pr, Usage: "agn-whitened: words kept by the private vocabulary selection (default 1000, at most 3000)"},
			&cli.Float64Flag{Name: "clip-len", Category: pr, Usage: "agn-whitened: clip each document's frequency and pair contributions to those of a document of L distinct words (default 20; negative: off)"},
			&cli.Float64Flag{Name: "clip-m3", Category: pr, Usage: "agn-whitened: clip each document's whitened triple contribution to kappa K^1.5 (default 1; negative: off)"},
			&cli.StringFlag{Name: "budget-split", Category: pr, Usage: "agn-whitened: fractions of the budget for the vocabulary selection, the second moment and the whitened tensor, e.g. 0.1,0.6,0.3 (the default)"},
			&cli.IntFlag{Name: "top-words", Value: 10, Category: out, Usage: "words shown per topic"},
			&cli.BoolFlag{Name: "json", Category: out, Usage: "print the result as JSON on stdout"},
			&cli.StringFlag{Name: "out", Category: out, Usage: "also write the full result (every component entry, weights, privacy report) to FILE.json or FILE.arrow (Arrow IPC, long form)"},
			forceFlag("overwrite --out and --doc-topics", out),
			&cli.StringFlag{Name: "doc-topics", Category: out, Usage: "lda, stm: write the training documents' topic proportions to FILE.csv or FILE.parquet"},
			&cli.StringFlag{Name: "max-memory", Category: mo, Usage: "refuse a fit whose memory estimate exceeds this: bytes with a unit (e.g. 8GiB, 500MiB), or \"none\"", DefaultText: "half of the physical memory"},
			&cli.Uint64Flag{Name: "seed", Usage: "seed all randomness: reproducible, and private noise is NOT private"},
		},
		Action:      runWithOptions(spectralOptionsOf, spectralRun),
		Subcommands: []*cli.Command{spectralInferCmd(), spectralEvalCmd()},
	}
	cmd.Flags = append(cmd.Flags, spectralSitesFlag)
	return cmd
}

// spectralInput loads the corpus or rows for the model.
func spectralInput(o *spectralOptions) (*otd.Input, *data.CorpusStats, float64, error) {
	path, model := o.Corpus, o.Model
	st, err := os.Stat(path)
	if err != nil {
		return nil, nil, 0, err
	}
	if model == otd.ModelMoG {
		if st.IsDir() {
			return nil, nil, 0, fmt.Errorf("%s: --model mog needs a CSV file of numeric rows, not a directory", path)
		}
		rows, err := data.ReadRows(path, data.RowsOptions{Rescale: o.Rescale})
		if err != nil {
			return nil, nil, 0, err
		}
		return &otd.Input{Rows: mat.NewDense(rows.N, rows.D, rows.Data)}, nil, rows.Scale, nil
	}
	// Read every word (text directories: every token of two letters or
	// more), then prune by the same rules whatever the format.
	raw := data.CorpusOptions{MinDocLen: 1, KeepStopWords: true}
	if limit := o.MemLimit; limit <= 0 {
		raw.MaxMemory = -1
	} else {
		raw.MaxMemory = limit
	}
	var corpus *data.Corpus
	if st.IsDir() {
		corpus, err = data.ReadTextDir(path, raw)
	} else {
		vocab := o.Vocab
		if vocab == "" {
			guess := filepath.Join(filepath.Dir(path), strings.Replace(filepath.Base(path), "docword", "vocab", 1))
			guess = strings.TrimSuffix(guess, ".gz")
			if guess != path {
				if _, err := os.Stat(guess); err == nil {
					vocab = guess
				}
			}
		}
		corpus, err = data.ReadUCIBagOfWords(path, vocab, raw)
	}
	if err != nil {
		return nil, nil, 0, err
	}
	if sel := o.Select; sel != "" {
		if corpus, err = spectralSelect(corpus, sel); err != nil {
			return nil, nil, 0, err
		}
	}
	popts, err := spectralPruneOptions(o)
	if err != nil {
		return nil, nil, 0, err
	}
	corpus, _, err = data.PruneCorpus(corpus, popts)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("%s: %w", path, err)
	}
	if err := spectralCheckVocabK(corpus.V(), o.K, corpus.Stats.Pruning); err != nil {
		return nil, nil, 0, fmt.Errorf("%s: %w", path, err)
	}
	return &otd.Input{Corpus: corpus}, &corpus.Stats, 1, nil
}

// spectralProgress returns a progress callback drawing one bar per stage
// on s.
func spectralProgress(s *iostreams, g globalOptions) otd.ProgressFunc {
	var bar *progressbar.ProgressBar
	stage := ""
	return func(st string, done, total int) {
		if st != stage || bar == nil {
			if bar != nil {
				bar.Finish()
			}
			stage = st
			bar = s.bar(g, int64(total), st)
		}
		bar.Set(done)
		if done >= total {
			bar.Finish()
		}
	}
}

// spectralTopic is one component in the output.
type spectralTopic struct {
	Index  int     `json:"index"`
	Weight float64 `json:"weight"`
	// RawWeight is a mixture component's weight as estimated, before the
	// weights were normalised to sum 1 (mog only).
	RawWeight *float64 `json:"raw_weight,omitempty"`
	Alpha     *float64 `json:"alpha,omitempty"`
	// Zero flags a topic whose estimated weight was not positive: not a
	// topic of the corpus; no top words are shown for it.
	Zero     bool              `json:"zero_weight,omitempty"`
	TopWords []spectralWordVal `json:"top_words,omitempty"`
	Mean     []float64         `json:"mean,omitempty"`
	// Column is the full component (only in --out files).
	Column []float64 `json:"column,omitempty"`
}

type spectralWordVal struct {
	Word string  `json:"word"`
	Prob float64 `json:"prob"`
}

type spectralOutput struct {
	Model     otd.Model         `json:"model"`
	Method    otd.Method        `json:"method"`
	K         int               `json:"k"`
	Alpha0    float64           `json:"alpha0,omitempty"`
	Sigma2    float64           `json:"sigma2,omitempty"`
	Estimator string            `json:"estimator,omitempty"`
	Path      string            `json:"path"`
	Corpus    *data.CorpusStats `json:"corpus,omitempty"`
	VocabSize int               `json:"vocab_size,omitempty"`
	Scale     float64           `json:"rescaled_by,omitempty"`
	Seconds   float64           `json:"seconds"`
	// EffectiveTopics is exp(entropy of the weights).
	EffectiveTopics float64 `json:"effective_topics,omitempty"`
	// Refine is the number of variational EM sweeps run after the
	// spectral fit (0: none); Eta their topic-word prior.
	Refine int     `json:"refine,omitempty"`
	Eta    float64 `json:"eta,omitempty"`
	// Rebirths counts tiny topics the refinement replaced by splitting
	// the largest; BackgroundShare is the share of tokens its background
	// topic took.
	Rebirths        int     `json:"rebirths,omitempty"`
	BackgroundShare float64 `json:"background_share,omitempty"`
	// DocPrior is the document-topic Dirichlet prior used to infer
	// documents' topic proportions (--doc-topics, spectral infer).
	DocPrior []float64       `json:"doc_topic_prior,omitempty"`
	Topics   []spectralTopic `json:"topics"`
	Vocab    []string        `json:"vocab,omitempty"`
	Privacy  *perturb.Report `json:"privacy"`
	// Warnings say when a private fit's result is mostly noise
	// (otd.WeightNoiseWarning).
	Warnings []string `json:"warnings,omitempty"`
}

// spectralTopWords returns the n largest entries of a topic column after
// Imtiaz and Sarwate 2018a's post-processing (negatives zeroed, renormalised to sum 1).
func spectralTopWords(col []float64, vocab []string, n int) []spectralWordVal {
	var s float64
	for _, v := range col {
		if v > 0 {
			s += v
		}
	}
	idx := make([]int, len(col))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return col[idx[a]] > col[idx[b]] })
	if n > len(idx) {
		n = len(idx)
	}
	out := make([]spectralWordVal, 0, n)
	for _, i := range idx[:n] {
		p := 0.0
		if s > 0 && col[i] > 0 {
			p = col[i] / s
		}
		out = append(out, spectralWordVal{Word: vocab[i], Prob: p})
	}
	return out
}

// spectralDefaultRefine is the number of variational EM sweeps a
// non-private, centralised lda or stm run refines its spectral topics by
// when --refine is not given (issue 23). A fixed small number: on 20news
// (K 10, training split) NPMI 0.187 -> 0.208 and effective topics 7.4 ->
// 9.4, on Cora 0.104 -> 0.112 and 8.0 -> 9.4; on the Associated Press
// corpus 0.152 -> 0.198 and 3.6 -> 9.6 (scikit-learn 0.153, 9.5).
const spectralDefaultRefine = 20

// spectralOptions are the settings of one spectral run, read from the
// flags once and checked by spectralOptionsOf.
type spectralOptions struct {
	globalOptions
	Seed   uint64 // --seed (Seeded: given): seeded, NOT private noise
	Seeded bool

	// Input
	Corpus      string // --corpus: text directory, UCI docword file or CSV rows (mog)
	Vocab       string // --vocab ("": next to a docword file, when it exists)
	PublicVocab bool   // --public-vocab
	Select      string // --select FILE:VALUE
	Rescale     bool   // --rescale (mog)
	// Prune holds --keep-stopwords, --min-count, --min-df, --max-df and
	// --max-vocab as given; spectralPruneOptions checks them and reads
	// StopWords when the corpus is pruned.
	Prune     data.PruneOptions
	MaxDFSet  bool   // --max-df was given
	StopWords string // --stop-words FILE

	// Model
	Model         otd.Model
	Method        otd.Method
	Est           otd.Estimator
	K             int  // --topics
	Refine        int  // variational EM sweeps after the fit (0: none)
	RefineDefault bool // Refine holds spectralDefaultRefine because --refine was not given
	RefineSet     bool // --refine was given
	Eta           float64
	Threads       int
	Background    bool
	Alpha0        float64
	Sigma2        float64
	TPM           otd.TPMOptions // --restarts, --iters
	MemLimit      int64          // --max-memory in bytes (0: none)

	// Privacy
	Epsilon, Delta float64
	Private        otd.PrivateOptions // --private-vocab, --clip-len, --clip-m3
	Split          []float64          // --budget-split (nil: the default)
	Sites          int                // --sites (0 or 1: centralised)

	// Output
	TopWords  int
	JSON      bool
	Out       string // --out FILE.json or FILE.arrow ("": none)
	Force     bool
	DocTopics string // --doc-topics FILE.csv or FILE.parquet ("-": the output stream)
}

// spectralRun fits the model of o and writes the result on s.Out (and the
// --out and --doc-topics files), notes on s.Err.
func spectralRun(o *spectralOptions, s *iostreams) error {
	start := time.Now()
	in, stats, scale, err := spectralInput(o)
	if err != nil {
		return err
	}
	if err := spectralMemCheck(in, o.K, o.MemLimit); err != nil {
		return fmt.Errorf("%s: %w", o.Corpus, err)
	}
	if in.Corpus != nil && !o.Quiet {
		if used, v := spectralUsedWords(in.Corpus), in.Corpus.V(); v > otd.DenseWhitenMax && used*10 < v {
			fmt.Fprintf(s.Err, "warning: only %d of the %d vocabulary words occur in the corpus; every word costs memory and time (estimated %s), so drop unused words from the vocabulary\n",
				used, v, data.FormatBytes(int64(min(spectralMemBytes(v, o.K), 1<<62))))
		}
	}
	sigma2 := o.Sigma2
	if scale != 1 {
		sigma2 /= scale * scale
	}
	opts := otd.FitOptions{
		Model: o.Model, K: o.K, Alpha0: o.Alpha0, Sigma2: sigma2,
		Method: o.Method, Epsilon: o.Epsilon, Delta: o.Delta,
		TPM:       o.TPM,
		Estimator: o.Est, Progress: spectralProgress(s, o.globalOptions),
		Private: o.Private,
		Split:   o.Split,
	}
	res, extra, err := spectralFit(o, s, in, opts)
	if err != nil {
		return err
	}
	extra.Corpus, extra.Seconds = stats, time.Since(start).Seconds()
	out, full := spectralBuildOutput(o, &opts, res, extra, scale)
	return spectralWriteResults(o, s, &out, &full)
}

// spectralOptionsOf reads and checks the flags of a spectral run; every
// failure is a usage error naming the flag.
func spectralOptionsOf(c *cli.Context) (*spectralOptions, error) {
	f := &spectralOptions{globalOptions: globalOptionsOf(c),
		Corpus: c.String("corpus"), Vocab: c.String("vocab"), PublicVocab: c.Bool("public-vocab"),
		Select: c.String("select"), Rescale: c.Bool("rescale"),
		Prune: data.PruneOptions{KeepStopWords: c.Bool("keep-stopwords"), MinCount: c.Int("min-count"), MinDF: c.Int("min-df"),
			MaxDF: c.Float64("max-df"), MaxVocab: c.Int("max-vocab")},
		MaxDFSet: c.IsSet("max-df"), StopWords: c.String("stop-words"),
		K: c.Int("topics"), RefineSet: c.IsSet("refine"), Eta: c.Float64("eta"), Threads: c.Int("threads"),
		Background: c.Bool("background"), Alpha0: c.Float64("alpha0"), Sigma2: c.Float64("sigma2"),
		TPM:     otd.TPMOptions{Restarts: c.Int("restarts"), Iters: c.Int("iters")},
		Epsilon: c.Float64("epsilon"), Delta: c.Float64("delta"),
		Private:  otd.PrivateOptions{Vocab: c.Int("private-vocab"), ClipLen: c.Float64("clip-len"), ClipM3: c.Float64("clip-m3")},
		Sites:    c.Int("sites"),
		TopWords: c.Int("top-words"), JSON: c.Bool("json"), Force: c.Bool("force"),
	}
	f.Seed, f.Seeded = seedOf(c)
	var err error
	if f.Model, err = otd.ParseModel(c.String("model")); err != nil {
		return f, cli.Exit(fmt.Sprintf("--model %q: want stm, lda or mog", c.String("model")), exitUsage)
	}
	if f.Method, err = otd.ParseMethod(c.String("method")); err != nil {
		return f, cli.Exit(fmt.Sprintf("--method %q: want one of %s", c.String("method"), strings.Join(spectralMethods, ", ")), exitUsage)
	}
	if f.Corpus == "" || !c.IsSet("topics") {
		return f, cli.Exit("spectral needs --corpus and --topics (see dprec spectral --help)", exitUsage)
	}
	if err := spectralCheckPrivacyFlags(c, f.Model, f.Method); err != nil {
		return f, err
	}
	if f.Split, err = spectralBudgetSplit(c.String("budget-split")); err != nil {
		return f, err
	}
	refinable := f.Model != otd.ModelMoG && !f.Method.Private() && f.Sites <= 1
	if !f.RefineSet {
		// Issue 23: topics at their best by default. Unset --refine means
		// the default sweeps where refinement applies, none elsewhere
		// (private runs: the sweeps would read the documents again without
		// noise, outside the privacy report).
		if refinable {
			f.Refine, f.RefineDefault = spectralDefaultRefine, true
		}
	} else if f.Refine = c.Int("refine"); f.Refine < 0 {
		return f, cli.Exit("--refine must be non-negative", exitUsage)
	}
	if f.Refine > 0 && !refinable {
		return f, cli.Exit("--refine applies to non-private, centralised lda and stm runs only (the sweeps read the documents again and add no noise)", exitUsage)
	}
	if c.IsSet("eta") && !(f.Eta > 0) {
		return f, cli.Exit("--eta must be positive", exitUsage)
	}
	if f.DocTopics = c.String("doc-topics"); f.DocTopics != "" {
		if f.Model == otd.ModelMoG || f.Sites > 1 {
			return f, cli.Exit("--doc-topics applies to centralised lda and stm runs", exitUsage)
		}
		if err := spectralCheckTableOut(f.DocTopics, f.Force); err != nil {
			return f, err
		}
	}
	if f.TopWords < 1 {
		return f, cli.Exit("--top-words must be positive", exitUsage)
	}
	if f.Est, err = otd.ParseEstimator(c.String("estimator")); err != nil {
		return f, cli.Exit(err.Error(), exitUsage)
	}
	if f.Out, err = spectralCheckOut(c.String("out"), f.Force); err != nil {
		return f, err
	}
	f.MemLimit, err = spectralMaxMemory(c.String("max-memory"))
	return f, err
}

// spectralCheckPrivacyFlags: a private method needs --epsilon, a
// non-private run refuses --epsilon/--delta, private inputs must be
// public-vocabulary corpora or publicly scaled rows, and the agn-whitened
// settings apply to that method only.
func spectralCheckPrivacyFlags(c *cli.Context, model otd.Model, method otd.Method) error {
	if method.Private() && !c.IsSet("epsilon") {
		return cli.Exit(fmt.Sprintf("--method %s needs --epsilon (and --delta for Gaussian mechanisms)", method), exitUsage)
	}
	if !method.Private() && (c.IsSet("epsilon") || c.IsSet("delta")) {
		return cli.Exit("--epsilon/--delta given without a private --method: the run would not be private; choose --method ("+strings.Join(spectralMethods[1:], ", ")+")", exitUsage)
	}
	for _, fl := range []string{"private-vocab", "clip-len", "clip-m3", "budget-split"} {
		if c.IsSet(fl) && method != otd.MethodAGNWhitened {
			return cli.Exit(fmt.Sprintf("--%s applies to --method agn-whitened only", fl), exitUsage)
		}
	}
	if err := spectralCheckPrivateInput(c, model, method); err != nil {
		return err
	}
	if method.Private() && c.Bool("rescale") {
		// The largest row norm is a function of the private data: dividing
		// by it would leak, and the sensitivities assume ||t|| <= 1 for a
		// public bound. Private runs need data already scaled by a public
		// constant.
		return cli.Exit("--rescale divides by the largest row norm, which depends on the private data; private methods need rows already scaled by a public bound (||t|| <= 1)", exitUsage)
	}
	return nil
}

// spectralBudgetSplit parses --budget-split: three comma-separated
// fractions summing to 1 ("" means the default, nil).
func spectralBudgetSplit(v string) ([]float64, error) {
	if v == "" {
		return nil, nil
	}
	parts := strings.Split(v, ",")
	out := make([]float64, len(parts))
	var sum float64
	for i, p := range parts {
		x, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || !(x >= 0 && x <= 1) {
			return nil, cli.Exit(fmt.Sprintf("--budget-split %q: %q is not a fraction in [0, 1]", v, p), exitUsage)
		}
		out[i], sum = x, sum+x
	}
	if len(out) != 3 || math.Abs(sum-1) > 1e-9 || out[1] == 0 || out[2] == 0 {
		return nil, cli.Exit(fmt.Sprintf("--budget-split %q: want three fractions (vocabulary, second moment, whitened tensor) summing to 1, the last two positive", v), exitUsage)
	}
	return out, nil
}

// spectralCheckOut checks --out's suffix and that it would not overwrite
// an existing file without --force (checkIO has refused an output that is
// an input), and returns it.
func spectralCheckOut(out string, force bool) (string, error) {
	low := strings.ToLower(out)
	if out != "" && !strings.HasSuffix(low, ".json") && !strings.HasSuffix(low, ".arrow") {
		return out, cli.Exit(fmt.Sprintf("--out %s: the result file must end in .json or .arrow", out), exitUsage)
	}
	if out != "" && !force {
		if _, err := os.Stat(out); err == nil {
			return out, fmt.Errorf("%s: %w", out, data.ErrExists)
		}
	}
	return out, nil
}

// spectralFit runs the fit (centralised or over --sites), then the
// optional refinement and per-document topics; extra carries what the
// output reports about them.
func spectralFit(f *spectralOptions, s *iostreams, in *otd.Input, opts otd.FitOptions) (*otd.Result, spectralOutput, error) {
	var extra spectralOutput
	var src = perturb.SecureSource()
	if f.Seeded {
		src = perturb.SeededSource(f.Seed)
	} else if f.Method.Private() {
		src = nil // private methods: perturb's secure source
	}
	var res *otd.Result
	var err error
	if S := f.Sites; S > 1 {
		res, err = spectralSites(in, opts, S, f.Seed, f.Seeded)
	} else {
		res, err = otd.Fit(in, opts, src)
	}
	if err != nil {
		return nil, extra, err
	}
	spectralNoteDataDependentInputs(f, res.Report)
	if in.Corpus == nil || f.Sites > 1 {
		return res, extra, nil
	}
	extra.DocPrior = spectralDocPrior(f.Model, opts.Alpha0, res)
	if f.Refine > 0 {
		eta := f.Eta
		ref, err := otd.Refine(in.Corpus, res.A, otd.RefineOptions{Sweeps: f.Refine, Alpha: spectralRefinePrior(f.Model, opts.Alpha0, opts.K), Eta: eta, Progress: opts.Progress,
			NoBackground: !f.Background, Infer: otd.InferOptions{Threads: f.Threads}})
		if err != nil {
			return nil, extra, err
		}
		if eta == 0 {
			eta = 1 / float64(opts.K)
		}
		res.A, res.Weights, res.Zero, res.Alpha, res.RawWeights = ref.A, ref.Weights, nil, nil, nil
		res.Lambda = nil
		extra.Refine, extra.Eta, extra.DocPrior = f.Refine, eta, ref.Alpha
		extra.Rebirths, extra.BackgroundShare = ref.Rebirths, ref.BackgroundShare
	}
	if f.DocTopics != "" {
		theta, err := otd.InferDocTopics(in.Corpus, res.A, extra.DocPrior, otd.InferOptions{Threads: f.Threads})
		if err != nil {
			return nil, extra, err
		}
		if err := spectralWriteDocTopics(s, f.DocTopics, f.Force, in.Corpus, theta); err != nil {
			return nil, extra, err
		}
		if f.Method.Private() && res.Report != nil {
			res.Report.NotCovered = append(res.Report.NotCovered, "--doc-topics "+f.DocTopics+": the training documents' own topic proportions (computed from each document without noise; keep the file with the data)")
		}
	}
	return res, extra, nil
}

// spectralBuildOutput returns the printed output o (top words) and the
// full output (every column) of a fit.
func spectralBuildOutput(f *spectralOptions, opts *otd.FitOptions, res *otd.Result, extra spectralOutput, scale float64) (o, full spectralOutput) {
	o = extra
	o.Model, o.Method, o.K, o.Path, o.Privacy = f.Model, f.Method, opts.K, res.Path, res.Report
	switch f.Model {
	case otd.ModelLDA:
		o.Alpha0 = opts.Alpha0
	case otd.ModelSTM:
		o.Estimator = f.Est.String()
	case otd.ModelMoG:
		o.Sigma2 = opts.Sigma2
		if scale != 1 {
			o.Scale = scale
		}
	}
	if f.Model != otd.ModelMoG {
		o.EffectiveTopics = otd.EffectiveTopics(res.Weights)
		o.VocabSize = len(res.Vocab)
	}
	if res.Report.Private() && res.RawWeights != nil {
		if w := otd.WeightNoiseWarning(res.RawWeights); w != "" {
			o.Warnings = append(o.Warnings, w)
		}
	}
	full = o
	_, k := res.A.Dims()
	for t := 0; t < k; t++ {
		col := mat.Col(nil, t, res.A)
		tp := spectralTopic{Index: t + 1, Weight: res.Weights[t], Zero: res.Zero != nil && res.Zero[t]}
		if f.Model == otd.ModelMoG && res.RawWeights != nil {
			raw := res.RawWeights[t]
			tp.RawWeight = &raw
		}
		if res.Alpha != nil {
			a := res.Alpha[t]
			tp.Alpha = &a
		}
		ft := tp
		switch {
		case f.Model == otd.ModelMoG:
			tp.Mean, ft.Mean = col, col
		case !tp.Zero:
			tp.TopWords = spectralTopWords(col, res.Vocab, f.TopWords)
			ft.TopWords, ft.Column = tp.TopWords, col
		default:
			ft.Column = col
		}
		o.Topics = append(o.Topics, tp)
		full.Topics = append(full.Topics, ft)
	}
	if f.Model != otd.ModelMoG {
		full.Vocab = res.Vocab
	}
	return o, full
}

// spectralWriteResults writes --out, then the result (JSON or text) on
// s.Out and the corpus summary on s.Err.
func spectralWriteResults(f *spectralOptions, s *iostreams, o, full *spectralOutput) error {
	if f.Out != "" {
		if err := data.WriteFileAtomic(f.Out, f.Force, func(w io.Writer) error {
			if strings.HasSuffix(strings.ToLower(f.Out), ".arrow") {
				return spectralWriteArrow(w, *full)
			}
			enc := json.NewEncoder(w)
			enc.SetIndent("", " ")
			return enc.Encode(spectralJSONSafe(*full))
		}); err != nil {
			return err
		}
	}
	if note := spectralRefineNote(f, o.Corpus != nil); note != "" && !f.Quiet {
		fmt.Fprintln(s.Err, note)
	}
	if f.JSON {
		enc := json.NewEncoder(s.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(spectralJSONSafe(*o))
	}
	spectralPrint(s.Out, o)
	if !f.Quiet {
		if st := o.Corpus; st != nil {
			fmt.Fprintf(s.Err, "corpus: %d documents, %d words, vocabulary %d; skipped %d empty and %d shorter than 3 words\n",
				st.Docs, st.Tokens, o.VocabSize, st.SkippedEmpty, st.SkippedShort)
			fmt.Fprintf(s.Err, "pruning: %s\n", spectralPruneSummary(st.Pruning))
		}
		if f.Out != "" {
			fmt.Fprintf(s.Err, "wrote %s\n", f.Out)
		}
	}
	return nil
}

// spectralRefineNote says what the default refinement did (or, for a
// private lda or stm run on a corpus, why it did not run); "" when
// --refine was given or no refinement applies.
func spectralRefineNote(f *spectralOptions, corpus bool) string {
	switch {
	case !corpus || f.RefineSet:
		return ""
	case f.RefineDefault:
		return fmt.Sprintf("refined with %d sweeps of variational EM (the default of non-private lda and stm runs); --refine 0 for the spectral topics alone", f.Refine)
	case f.Method.Private() && f.Model != otd.ModelMoG:
		return "not refined: a private run keeps its spectral topics (refinement would read the documents again without noise, which the privacy report does not cover)"
	}
	return ""
}

// spectralJSONSafe replaces non-finite numbers (which encoding/json
// rejects) by 0 in weights, and reports them in the privacy notes.
func spectralJSONSafe(o spectralOutput) spectralOutput {
	for i := range o.Topics {
		if math.IsNaN(o.Topics[i].Weight) || math.IsInf(o.Topics[i].Weight, 0) {
			o.Topics[i].Weight = 0
		}
	}
	return o
}

func spectralPrint(w io.Writer, o *spectralOutput) {
	fmt.Fprintf(w, "model %s, method %s, K = %d (%s path, %.2fs)", o.Model, o.Method, o.K, o.Path, o.Seconds)
	if o.Refine > 0 {
		fmt.Fprintf(w, ", refined by %d variational EM sweeps (%d topics reborn, background share %.3f)", o.Refine, o.Rebirths, o.BackgroundShare)
	}
	if o.EffectiveTopics > 0 {
		fmt.Fprintf(w, ", effective topics %.2f", o.EffectiveTopics)
	}
	fmt.Fprintln(w)
	for _, t := range o.Topics {
		if t.Alpha != nil {
			fmt.Fprintf(w, "topic %d  weight %.4f  alpha %.4f\n", t.Index, t.Weight, *t.Alpha)
		} else if o.Model == otd.ModelMoG {
			fmt.Fprintf(w, "component %d  weight %.4f", t.Index, t.Weight)
			if t.RawWeight != nil {
				fmt.Fprintf(w, "  (estimated %.4f)", *t.RawWeight)
			}
			fmt.Fprintln(w)
		} else {
			fmt.Fprintf(w, "topic %d  weight %.4f\n", t.Index, t.Weight)
		}
		if t.Zero && o.Model == otd.ModelMoG {
			fmt.Fprintf(w, "  (non-positive estimated weight: not a component of this data)\n")
		} else if t.Zero {
			fmt.Fprintf(w, "  (zero estimated weight: not a topic of this corpus; no top words)\n")
		}
		if t.Mean != nil {
			parts := make([]string, len(t.Mean))
			for i, v := range t.Mean {
				parts[i] = fmt.Sprintf("%.4f", v)
			}
			fmt.Fprintf(w, "  mean [%s]\n", strings.Join(parts, " "))
		}
		for _, wv := range t.TopWords {
			fmt.Fprintf(w, "  %-20s %.4f\n", wv.Word, wv.Prob)
		}
	}
	for _, x := range o.Warnings {
		fmt.Fprintln(w, "WARNING:", x)
	}
	r := o.Privacy
	if r == nil {
		return
	}
	fmt.Fprintf(w, "privacy: mode %s", r.Mode)
	if r.Private() {
		fmt.Fprintf(w, ", (epsilon, delta) = (%s, %s), relation: %s, composition: %s, randomness: %s\n", fmtFloat(r.Epsilon), fmtFloat(r.Delta), r.Relation, r.Composition, r.Randomness)
		for _, rel := range r.Releases {
			fmt.Fprintf(w, "  release %s: %s, %s sensitivity %.4g (%s), scale %.4g, epsilon %s, delta %s\n", rel.What, rel.Mechanism, rel.SensitivityNorm, rel.Sensitivity, rel.Derivation, rel.Scale, fmtFloat(rel.Epsilon), fmtFloat(rel.Delta))
		}
		if len(r.NotCovered) > 0 {
			fmt.Fprintf(w, "  NOT covered: %s\n", strings.Join(r.NotCovered, ", "))
		}
	} else {
		fmt.Fprintln(w)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
}

// spectralNoteDataDependentInputs records in a private report what the
// guarantee assumes about how the input was prepared: the vocabulary is
// public (spectralCheckPrivateInput refuses private topic-model runs
// without --vocab and --public-vocab, and every data-dependent pruning
// rule), and the number of usable documents N (after skipping short ones)
// is treated as public.
func spectralNoteDataDependentInputs(f *spectralOptions, r *perturb.Report) {
	if !f.Method.Private() || r == nil {
		return
	}
	if f.Model != otd.ModelMoG {
		r.Notes = append(r.Notes, fmt.Sprintf("the vocabulary %s was declared public (--public-vocab): chosen without looking at the private documents; stop-word removal uses fixed public lists", f.Vocab))
	}
	r.Notes = append(r.Notes, "N, the number of usable documents or rows after skipping short or empty ones, is treated as public, as in the seeds")
}

// spectralCheckPrivateInput refuses private topic-model runs whose
// vocabulary is, or may be, a function of the private documents: a text
// directory (its vocabulary is the documents' words), a docword file
// without a --vocab declared public, and the corpus-dependent pruning
// rules (--min-count, --min-df, --max-df, --max-vocab). A word of one
// document at the top of a topic is exactly what such a vocabulary leaks.
func spectralCheckPrivateInput(c *cli.Context, model otd.Model, method otd.Method) error {
	if !method.Private() || model == otd.ModelMoG {
		return nil
	}
	if st, err := os.Stat(c.String("corpus")); err == nil && st.IsDir() {
		return cli.Exit("private methods need a public vocabulary: a text directory's vocabulary is made of the private documents' words; give a UCI docword file with --vocab FILE --public-vocab", exitUsage)
	}
	if c.String("vocab") == "" || !c.Bool("public-vocab") {
		return cli.Exit("private methods need a public vocabulary: pass --vocab FILE and --public-vocab to declare that FILE was chosen without looking at the private documents (otherwise the released topics can reveal a document's rare words)", exitUsage)
	}
	for _, f := range []string{"min-count", "min-df", "max-df", "max-vocab"} {
		if c.IsSet(f) {
			return cli.Exit(fmt.Sprintf("--%s prunes the vocabulary by counts of the private documents; private methods accept only the public stop-word lists", f), exitUsage)
		}
	}
	return nil
}

// spectralPruneOptions returns the corpus pruning rules of f with the
// --stop-words file read; a bad value or a missing stop-word file is a
// usage error.
func spectralPruneOptions(f *spectralOptions) (data.PruneOptions, error) {
	o := f.Prune
	o.MinDocLen = 3
	if o.MinCount < 0 || o.MinDF < 0 || o.MaxVocab < 0 {
		return o, cli.Exit("--min-count, --min-df and --max-vocab must be non-negative", exitUsage)
	}
	if f.MaxDFSet && !(o.MaxDF > 0 && o.MaxDF <= 1) {
		return o, cli.Exit(fmt.Sprintf("--max-df %v: want a fraction of the documents in (0, 1]", o.MaxDF), exitUsage)
	}
	if p := f.StopWords; p != "" {
		ws, err := data.ReadStopWords(p)
		if err != nil {
			return o, cli.Exit(fmt.Sprintf("--stop-words: %v", err), exitUsage)
		}
		o.ExtraStopWords = ws
	}
	return o, nil
}

// spectralPruneSummary is the one-line account of what pruning removed.
func spectralPruneSummary(r *data.PruneReport) string {
	if r == nil {
		return "no pruning"
	}
	s := fmt.Sprintf("removed %d stop words, %d by --min-count, %d by --min-df, %d by --max-df, %d by --max-vocab; skipped %d documents emptied and %d left shorter than 3 words",
		r.StopWords, r.MinCount, r.MinDF, r.MaxDF, r.MaxVocab, r.EmptiedDocs, r.ShortDocs)
	if len(r.MaxDFWords) > 0 {
		s += "; --max-df removed " + strings.Join(r.MaxDFWords, " ")
	}
	return s
}

// spectralCheckVocabK refuses a vocabulary smaller than K after pruning.
func spectralCheckVocabK(v, k int, r *data.PruneReport) error {
	if v >= k {
		return nil
	}
	return fmt.Errorf("after pruning the vocabulary has %d words, fewer than K = %d topics (%s); relax the pruning or lower --topics",
		v, k, spectralPruneSummary(r))
}

// spectralMemBytes estimates the peak memory of a spectral fit on
// D-dimensional observations with K components, before any moment is
// computed. Every vocabulary-sized structure is D x O(K): the randomized
// whitening of a corpus (D > otd.DenseWhitenMax) holds the iterate Q, the
// product Z = M2 Q, their orthonormalization and Ritz vectors (D x (K+10)
// each), and the whitening matrix and the M3 accumulator are D x K; a
// measured run (D = 200,000, K = 20: 322 MB peak) used 1.6 KB per word,
// about 6.7 doubles per column of K+10, so 8 doubles per column are
// assumed: 64 D (K+10) bytes. Dense paths (D <= otd.DenseWhitenMax, and
// mixtures) add the D x D second moment and its eigendecomposition: 32 D^2
// bytes. The corpus itself is already in memory and not counted.
func spectralMemBytes(d, k int) float64 {
	est := 64 * float64(d) * float64(k+10)
	if d <= otd.DenseWhitenMax {
		est += 32 * float64(d) * float64(d)
	}
	return est
}

// spectralMemCheck refuses a fit whose estimate exceeds limit (0: none),
// naming the dimension, the estimate and the flag.
func spectralMemCheck(in *otd.Input, k int, limit int64) error {
	d := 0
	switch {
	case in.Corpus != nil:
		d = in.Corpus.V()
	case in.Rows != nil:
		_, d = in.Rows.Dims()
	}
	est := spectralMemBytes(d, k)
	if limit <= 0 || est <= float64(limit) {
		return nil
	}
	return fmt.Errorf("%w: a spectral fit with %d components on %d dimensions (vocabulary words) needs about %s, more than the limit of %s; raise it with --max-memory, or shrink the vocabulary (--max-vocab, --min-count for text directories; drop unused words from a UCI vocabulary)",
		data.ErrMemoryLimit, k, d, data.FormatBytes(int64(min(est, 1<<62))), data.FormatBytes(limit))
}

// spectralMaxMemory returns the --max-memory limit v in bytes (0: none);
// the default ("") is data.DefaultMemoryFraction of the physical memory.
func spectralMaxMemory(v string) (int64, error) {
	n, err := parseMaxMemory(v)
	switch {
	case err != nil:
		return 0, cli.Exit("--max-memory: "+err.Error(), exitUsage)
	case n < 0:
		return 0, nil
	case n == 0:
		return int64(float64(data.PhysicalMemory()) * data.DefaultMemoryFraction), nil
	}
	return n, nil
}

// spectralUsedWords counts the vocabulary words that occur in the corpus.
func spectralUsedWords(c *data.Corpus) int {
	seen := make([]bool, c.V())
	n := 0
	for _, w := range c.Words {
		if !seen[w] {
			seen[w] = true
			n++
		}
	}
	return n
}
