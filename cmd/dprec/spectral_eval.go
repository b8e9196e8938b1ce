package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"sort"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/otd"
	"github.com/urfave/cli/v2"
	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat"
)

func spectralEvalCmd() *cli.Command {
	return &cli.Command{
		Name:  "eval",
		Usage: "score a saved topic model: coherence (NPMI, UMass) of its top words on a reference corpus, held-out per-word likelihood, agreement with document labels",
		Description: `Coherence: for each topic with positive weight, its --top-words most probable words; over
the documents of the reference --corpus (mapped onto the model's vocabulary), with D(w) the
number of documents holding w and D(w,v) those holding both, P = D/N:
  NPMI(w,v) = log(P(w,v) / (P(w) P(v))) / -log P(w,v)   (-1 when P(w,v) = 0)
  UMass(w_i,w_j) = log((D(w_i,w_j) + 1) / D(w_j)) for j ranked above i
averaged over the pairs of a topic, then over topics (also weighted by the topic weights).

Held-out likelihood (--heldout): document completion. Each document's tokens, in word-id
order, are dealt alternately into an observed and a held-out half; the topic proportions are
inferred from the observed half (topics fixed) and the held-out tokens scored:
  per-word log-likelihood = sum log(sum_k theta_k beta_k,w) / held-out tokens, perplexity =
exp(-that). Documents with fewer than 2 known tokens are skipped.

Labels (--labels FILE, one label per input document line): each reference document's
argmax topic against its label, normalised mutual information 2 I / (H(topics) + H(labels)).`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "model", Required: true, Usage: "topic model file (dprec spectral --out FILE.arrow)"},
			&cli.StringFlag{Name: "corpus", Required: true, Usage: "reference corpus for coherence (text directory or UCI docword)"},
			&cli.StringFlag{Name: "vocab", Usage: "UCI vocab.txt of --corpus (default: next to it)"},
			&cli.StringFlag{Name: "select", Usage: "FILE:VALUE: reference documents whose line in FILE is VALUE"},
			&cli.StringFlag{Name: "heldout", Usage: "held-out corpus for the per-word likelihood"},
			&cli.StringFlag{Name: "heldout-vocab", Usage: "UCI vocab.txt of --heldout (default: next to it)"},
			&cli.StringFlag{Name: "heldout-select", Usage: "FILE:VALUE: held-out documents whose line in FILE is VALUE"},
			&cli.StringFlag{Name: "labels", Usage: "FILE with one label per input document of --corpus: NMI of the argmax topic"},
			&cli.IntFlag{Name: "top-words", Value: 10, Usage: "words per topic for coherence"},
			&cli.BoolFlag{Name: "random-baseline", Usage: "also score as many random word lists (uniform over the model's vocabulary, or --random-from; --seed, default 1), the level of topics made of noise: mean and standard deviation over --random-draws draws"},
			&cli.IntFlag{Name: "random-draws", Value: 5, Usage: "--random-baseline: number of draws (each a full set of word lists)"},
			&cli.IntFlag{Name: "random-from", Usage: "--random-baseline: draw from the N words in most reference documents instead of the whole vocabulary (a frequency-matched baseline)"},
			&cli.BoolFlag{Name: "json", Usage: "print the scores as JSON"},
		},
		Action: runWithOptions(spectralEvalOptionsOf, spectralEvalRun),
	}
}

// spectralEvalTopic is one topic's scores.
type spectralEvalTopic struct {
	Index  int      `json:"index"`
	Weight float64  `json:"weight"`
	NPMI   float64  `json:"npmi"`
	UMass  float64  `json:"umass"`
	Words  []string `json:"words"`
}

type spectralEvalOutput struct {
	Model           string              `json:"model"`
	K               int                 `json:"k"`
	ScoredTopics    int                 `json:"scored_topics"`
	ReferenceDocs   int                 `json:"reference_docs"`
	UnknownWords    int                 `json:"reference_unknown_words"`
	NPMI            float64             `json:"npmi"`
	NPMIWeighted    float64             `json:"npmi_weighted"`
	UMass           float64             `json:"umass"`
	EffectiveTopics float64             `json:"effective_topics"`
	HeldoutDocs     int                 `json:"heldout_docs,omitempty"`
	HeldoutTokens   int64               `json:"heldout_tokens,omitempty"`
	PerWordLL       *float64            `json:"heldout_per_word_loglik,omitempty"`
	Perplexity      *float64            `json:"heldout_perplexity,omitempty"`
	NMI             *float64            `json:"nmi,omitempty"`
	RandomNPMI      *float64            `json:"random_baseline_npmi,omitempty"`
	RandomNPMISD    *float64            `json:"random_baseline_npmi_sd,omitempty"`
	RandomDraws     int                 `json:"random_baseline_draws,omitempty"`
	RandomFrom      int                 `json:"random_baseline_from,omitempty"`
	LabelledDocs    int                 `json:"labelled_docs,omitempty"`
	Topics          []spectralEvalTopic `json:"topics"`
}

// spectralEvalOptions are the settings of spectral eval.
type spectralEvalOptions struct {
	globalOptions
	Model         string // --model: a topic model file (spectral --out FILE.arrow)
	Corpus        string // --corpus: the reference corpus of coherence
	Vocab         string // --vocab of Corpus ("": next to it)
	Select        string // --select FILE:VALUE
	Heldout       string // --heldout corpus ("": no likelihood)
	HeldoutVocab  string
	HeldoutSelect string
	Labels        string // --labels FILE ("": no NMI)
	TopWords      int    // words per topic, at least 2
	Random        bool   // --random-baseline
	RandomDraws   int    // at least 2
	RandomFrom    int    // 0: the whole vocabulary
	Seed          uint64 // of the random baseline (1 unless --seed)
	JSON          bool
}

// spectralEvalOptionsOf reads and checks the flags of spectral eval.
func spectralEvalOptionsOf(c *cli.Context) (*spectralEvalOptions, error) {
	o := &spectralEvalOptions{globalOptions: globalOptionsOf(c), Model: c.String("model"), Corpus: c.String("corpus"),
		Vocab: c.String("vocab"), Select: c.String("select"), Heldout: c.String("heldout"),
		HeldoutVocab: c.String("heldout-vocab"), HeldoutSelect: c.String("heldout-select"), Labels: c.String("labels"),
		TopWords: c.Int("top-words"), Random: c.Bool("random-baseline"), RandomDraws: c.Int("random-draws"),
		RandomFrom: c.Int("random-from"), Seed: 1, JSON: c.Bool("json")}
	if seed, ok := seedOf(c); ok {
		o.Seed = seed
	}
	if o.TopWords < 2 {
		return nil, cli.Exit("--top-words must be at least 2 (coherence scores word pairs)", exitUsage)
	}
	if o.RandomDraws < 2 || o.RandomFrom < 0 {
		return nil, cli.Exit("--random-draws must be at least 2 (the spread needs two draws) and --random-from non-negative", exitUsage)
	}
	return o, nil
}

// spectralEvalRun scores the model of e and prints the scores on s.Out.
func spectralEvalRun(e *spectralEvalOptions, s *iostreams) error {
	m, err := spectralReadModel(e.Model)
	if err != nil {
		return err
	}
	ref, uw, _, err := spectralMapCorpus(e.Corpus, e.Vocab, m.Vocab)
	if err != nil {
		return err
	}
	if sel := e.Select; sel != "" {
		if ref, err = spectralSelect(ref, sel); err != nil {
			return err
		}
	}
	o := spectralEvalOutput{Model: e.Model, K: m.Summary.K, ReferenceDocs: ref.NumDocs(), UnknownWords: uw}
	tops := spectralEvalCoherence(e.TopWords, m, ref, &o)
	if e.Random && len(tops) > 0 {
		spectralEvalRandom(e, len(m.Vocab), ref, tops, &o)
	}
	if err := spectralEvalLabels(e.Labels, m, ref, &o); err != nil {
		return err
	}
	if err := spectralEvalHeldout(e, m, &o); err != nil {
		return err
	}
	if e.JSON {
		enc := json.NewEncoder(s.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(o)
	}
	spectralEvalPrint(s.Out, &o)
	return nil
}

// spectralEvalCoherence scores the top n words of each topic of positive
// weight and returns them.
func spectralEvalCoherence(n int, m *spectralModel, ref *data.Corpus, o *spectralEvalOutput) [][]int {
	weights := make([]float64, m.Summary.K)
	for t, tp := range m.Summary.Topics {
		weights[t] = tp.Weight
	}
	o.EffectiveTopics = otd.EffectiveTopics(weights)
	var tops [][]int
	for t, tp := range m.Summary.Topics {
		if tp.Zero || !(tp.Weight > 0) {
			continue
		}
		tops = append(tops, spectralTopIDs(m.A, t, n))
		o.Topics = append(o.Topics, spectralEvalTopic{Index: tp.Index, Weight: tp.Weight})
	}
	npmi, umass := spectralCoherence(ref, tops)
	var wsum float64
	for i := range o.Topics {
		o.Topics[i].NPMI, o.Topics[i].UMass = npmi[i], umass[i]
		for _, w := range tops[i] {
			o.Topics[i].Words = append(o.Topics[i].Words, m.Vocab[w])
		}
		o.NPMI += npmi[i] / float64(len(tops))
		o.UMass += umass[i] / float64(len(tops))
		o.NPMIWeighted += npmi[i] * o.Topics[i].Weight
		wsum += o.Topics[i].Weight
	}
	if wsum > 0 {
		o.NPMIWeighted /= wsum
	}
	o.ScoredTopics = len(tops)
	return tops
}

// spectralEvalRandom scores --random-draws sets of random word lists of
// the sizes of tops (distinct words within a list), drawn uniformly from
// the v words of the model or from the --random-from words in most
// reference documents, and records the mean and standard deviation over
// draws of the mean NPMI.
func spectralEvalRandom(e *spectralEvalOptions, v int, ref *data.Corpus, tops [][]int, o *spectralEvalOutput) {
	r := rand.New(rand.NewPCG(e.Seed, 0x5eed))
	pool := make([]int, v)
	for i := range pool {
		pool[i] = i
	}
	if from := e.RandomFrom; from > 0 && from < v {
		df := make([]int, v)
		for n := 0; n < ref.NumDocs(); n++ {
			ws, _ := ref.Doc(n)
			for _, w := range ws {
				df[w]++
			}
		}
		sort.SliceStable(pool, func(a, b int) bool { return df[pool[a]] > df[pool[b]] })
		pool = pool[:from]
		o.RandomFrom = from
	}
	draws := e.RandomDraws
	means := make([]float64, draws)
	for i := range means {
		rt := make([][]int, len(tops))
		for j := range rt {
			perm := r.Perm(len(pool))[:min(len(tops[j]), len(pool))]
			for _, p := range perm {
				rt[j] = append(rt[j], pool[p])
			}
		}
		np, _ := spectralCoherence(ref, rt)
		for _, x := range np {
			means[i] += x / float64(len(np))
		}
	}
	mean, sd := stat.MeanStdDev(means, nil)
	o.RandomNPMI, o.RandomNPMISD, o.RandomDraws = &mean, &sd, draws
}

// spectralEvalLabels computes the NMI of the argmax topic with the labels
// in the file lp (--labels; "": none).
func spectralEvalLabels(lp string, m *spectralModel, ref *data.Corpus, o *spectralEvalOutput) error {
	if lp == "" {
		return nil
	}
	labels, err := spectralReadLines(lp)
	if err != nil {
		return err
	}
	theta, err := otd.InferDocTopics(ref, m.A, m.Summary.DocPrior, otd.InferOptions{})
	if err != nil {
		return err
	}
	var a, b []string
	for n := 0; n < ref.NumDocs(); n++ {
		id := n
		if ref.DocIDs != nil {
			id = ref.DocIDs[n]
		}
		if id >= len(labels) {
			return fmt.Errorf("%s: %d lines, but the corpus has document %d", lp, len(labels), id+1)
		}
		a = append(a, labels[id])
		b = append(b, fmt.Sprint(argmaxRow(theta, n)))
	}
	v := nmi(a, b)
	o.NMI, o.LabelledDocs = &v, len(a)
	return nil
}

// spectralEvalHeldout computes --heldout's per-word likelihood.
func spectralEvalHeldout(e *spectralEvalOptions, m *spectralModel, o *spectralEvalOutput) error {
	hp := e.Heldout
	if hp == "" {
		return nil
	}
	ho, _, _, err := spectralMapCorpus(hp, e.HeldoutVocab, m.Vocab)
	if err != nil {
		return err
	}
	if sel := e.HeldoutSelect; sel != "" {
		if ho, err = spectralSelect(ho, sel); err != nil {
			return err
		}
	}
	ll, docs, toks, err := spectralHeldout(ho, m)
	if err != nil {
		return err
	}
	pp := math.Exp(-ll)
	o.PerWordLL, o.Perplexity, o.HeldoutDocs, o.HeldoutTokens = &ll, &pp, docs, toks
	return nil
}

// spectralEvalPrint writes the scores as text on w.
func spectralEvalPrint(w io.Writer, o *spectralEvalOutput) {
	fmt.Fprintf(w, "model %s: K = %d, %d topics scored on %d reference documents (%d reference words not in the model)\n", o.Model, o.K, o.ScoredTopics, o.ReferenceDocs, o.UnknownWords)
	fmt.Fprintf(w, "NPMI %.4f (weighted by topic weight %.4f), UMass %.4f, effective topics %.2f\n", o.NPMI, o.NPMIWeighted, o.UMass, o.EffectiveTopics)
	if o.RandomNPMI != nil {
		from := "the whole vocabulary"
		if o.RandomFrom > 0 {
			from = fmt.Sprintf("the %d words in most reference documents", o.RandomFrom)
		}
		fmt.Fprintf(w, "random word lists (same sizes, from %s): NPMI %.4f +- %.4f (mean +- sd over %d draws)\n", from, *o.RandomNPMI, *o.RandomNPMISD, o.RandomDraws)
	}
	if o.NMI != nil {
		fmt.Fprintf(w, "NMI of the argmax topic against the labels: %.4f (%d documents)\n", *o.NMI, o.LabelledDocs)
	}
	if o.PerWordLL != nil {
		fmt.Fprintf(w, "held-out per-word log-likelihood %.4f (perplexity %.1f) on %d documents, %d held-out tokens\n", *o.PerWordLL, *o.Perplexity, o.HeldoutDocs, o.HeldoutTokens)
	}
	for _, t := range o.Topics {
		fmt.Fprintf(w, "topic %d  weight %.4f  NPMI %.4f  UMass %.3f  %v\n", t.Index, t.Weight, t.NPMI, t.UMass, t.Words)
	}
}

// spectralTopIDs returns the ids of the n largest entries of column t.
func spectralTopIDs(A *mat.Dense, t, n int) []int {
	d, _ := A.Dims()
	idx := make([]int, d)
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return A.At(idx[a], t) > A.At(idx[b], t) })
	if n > d {
		n = d
	}
	return idx[:n]
}

// spectralCoherence returns each topic's mean NPMI and mean UMass over its
// word pairs, from document co-occurrence in c (see the eval help).
func spectralCoherence(c *data.Corpus, tops [][]int) (npmi, umass []float64) {
	// Column of each scored word in a dense presence table.
	col := map[int]int{}
	for _, ws := range tops {
		for _, w := range ws {
			if _, ok := col[w]; !ok {
				col[w] = len(col)
			}
		}
	}
	m := len(col)
	df := make([]float64, m)
	co := make([]float64, m*m)
	var present []int
	for n := 0; n < c.NumDocs(); n++ {
		present = present[:0]
		ws, _ := c.Doc(n)
		for _, w := range ws {
			if j, ok := col[int(w)]; ok {
				present = append(present, j)
			}
		}
		for _, a := range present {
			df[a]++
			for _, b := range present {
				co[a*m+b]++
			}
		}
	}
	nd := float64(c.NumDocs())
	for _, ws := range tops {
		var sn, su float64
		var pairs int
		for i := 1; i < len(ws); i++ {
			for j := 0; j < i; j++ {
				a, b := col[ws[i]], col[ws[j]]
				dab := co[a*m+b]
				if dab == 0 {
					sn += -1
				} else {
					pab := dab / nd
					pmi := math.Log(pab / (df[a] / nd * df[b] / nd))
					if pab == 1 {
						sn += 1
					} else {
						sn += pmi / -math.Log(pab)
					}
				}
				if df[b] > 0 {
					su += math.Log((dab + 1) / df[b])
				}
				pairs++
			}
		}
		if pairs == 0 {
			pairs = 1
		}
		npmi = append(npmi, sn/float64(pairs))
		umass = append(umass, su/float64(pairs))
	}
	return npmi, umass
}

func argmaxRow(m *mat.Dense, r int) int {
	_, k := m.Dims()
	best := 0
	for t := 1; t < k; t++ {
		if m.At(r, t) > m.At(r, best) {
			best = t
		}
	}
	return best
}

// nmi is the normalised mutual information 2 I(a;b) / (H(a) + H(b)) of
// two labelings (1 when both have a single class).
func nmi(a, b []string) float64 {
	n := float64(len(a))
	ca, cb, cab := map[string]float64{}, map[string]float64{}, map[[2]string]float64{}
	for i := range a {
		ca[a[i]]++
		cb[b[i]]++
		cab[[2]string{a[i], b[i]}]++
	}
	ent := func(m map[string]float64) float64 {
		var h float64
		for _, x := range m {
			p := x / n
			h -= p * math.Log(p)
		}
		return h
	}
	var mi float64
	for k, x := range cab {
		p := x / n
		mi += p * math.Log(p/(ca[k[0]]/n*cb[k[1]]/n))
	}
	ha, hb := ent(ca), ent(cb)
	if ha+hb == 0 {
		return 1
	}
	return 2 * mi / (ha + hb)
}

// spectralHeldout scores document completion on c (see the eval help):
// the per-word held-out log-likelihood, the documents and tokens scored.
func spectralHeldout(c *data.Corpus, m *spectralModel) (float64, int, int64, error) {
	obs := data.NewCorpusBuilder(c.Vocab, 1)
	type half struct{ ws, cs []int32 }
	var held []half
	for n := 0; n < c.NumDocs(); n++ {
		if c.DocLen(n) < 2 {
			continue
		}
		ws, cs := c.Doc(n)
		var ow, oc, hw, hc []int32
		parity := int64(0)
		for i, w := range ws {
			x := int64(cs[i])
			// Tokens parity, parity+1, ... of this word: alternate halves.
			o := (x + 1 - parity) / 2
			h := x - o
			if o > 0 {
				ow, oc = append(ow, w), append(oc, int32(o))
			}
			if h > 0 {
				hw, hc = append(hw, w), append(hc, int32(h))
			}
			parity = (parity + x) % 2
		}
		if obs.AddDoc(ow, oc) {
			held = append(held, half{hw, hc})
		}
	}
	oc, err := obs.Finish()
	if err != nil {
		return 0, 0, 0, fmt.Errorf("held-out corpus: %w", err)
	}
	theta, err := otd.InferDocTopics(oc, m.A, m.Summary.DocPrior, otd.InferOptions{})
	if err != nil {
		return 0, 0, 0, err
	}
	_, k := m.A.Dims()
	var ll float64
	var toks int64
	for n, h := range held {
		for i, w := range h.ws {
			var p float64
			for t := 0; t < k; t++ {
				p += theta.At(n, t) * m.A.At(int(w), t)
			}
			ll += float64(h.cs[i]) * math.Log(math.Max(p, 1e-300))
			toks += int64(h.cs[i])
		}
	}
	if toks == 0 {
		return 0, 0, 0, fmt.Errorf("held-out corpus: no document with 2 known tokens")
	}
	return ll / float64(toks), len(held), toks, nil
}
