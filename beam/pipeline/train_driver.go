package pipeline

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/textio"

	"github.com/dprec/dprec"
	"github.com/dprec/dprec/completion"
	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/models"
)

// SeedStream is the second PCG word dprec train pairs with --seed: the
// same --seed initialises the same factors here and there.
const SeedStream = 0x9e3779b97f4a7c15

// TrainOptions configure Train.
type TrainOptions struct {
	// Data is the comma-separated list of input globs; Load how to read them.
	Data string
	Load LoadSpec
	// Out is the model file written (dprec's format, models.Save); empty
	// writes none.
	Out   string
	Force bool
	// Work is the scratch directory for the data passed between pipelines
	// (dictionaries, dense ratings, factor rows); empty means a temporary
	// local directory, removed at the end. On a cluster it must be a path
	// every worker reaches (gs://...).
	Work string
	// Rank is the rank of the factors (zero: 10); NoBias drops the global
	// mean and the biases.
	Rank   int
	NoBias bool
	// Seed seeds the initial factors as dprec train --seed does.
	Seed uint64
	// Settings are completion's ALS settings (Solver is set to ALS):
	// Epochs (sweeps), Reg, RegBias, InitScale and Patience are used.
	Settings completion.Settings
	// Validation is a log glob whose RMSE after every sweep drives early
	// stopping (Settings.Patience), as Train's validation store does.
	Validation string
	// Seen stores every user's training items in the model (they are read
	// into the driver, as the model is).
	Seen bool
	// Shards is the number of files of each sharded intermediate (zero: 4).
	Shards int
	// BroadcastLimit is the largest fixed mode, in bytes of its rows and
	// biases as float64s, that a half-sweep broadcasts to every worker
	// (each loads it into memory, and the ratings are shuffled once,
	// without factor rows); above it the half-sweep joins the ratings with
	// the rows by a shuffle. Zero means DefaultBroadcastLimit; negative
	// never broadcasts.
	BroadcastLimit int64
	// Run runs each pipeline (nil: beamx.Run).
	Run Runner
	// Progress, when set, is called after every sweep.
	Progress func(completion.EpochRecord)
}

// TrainResult is what Train returns.
type TrainResult struct {
	File         *models.File
	Counts       *Counts
	History      []completion.EpochRecord
	BestEpoch    int
	EarlyStopped bool
	// Settings are the resolved settings used.
	Settings completion.Settings
	// Prepare is the wall time of the two preparing pipelines (scan and
	// index); HalfSweeps the wall time of every half-sweep pipeline, the
	// driver's reading and writing of the factor rows included.
	Prepare    time.Duration
	HalfSweeps []time.Duration
}

// Train fits a user x item CP model with biases by ALS, one pipeline per
// half-sweep: completion's Train with SolverALS on the same log (loaded
// with data.TimeNone), seed and settings gives the same model (see the
// package doc for the order of operations). The driver holds the model
// (it writes dprec's model file) and writes the fixed mode's rows for the
// workers before every half-sweep.
func Train(ctx context.Context, o TrainOptions) (*TrainResult, error) {
	files, err := Expand(ctx, o.Data)
	if err != nil {
		return nil, err
	}
	if o.Rank == 0 {
		o.Rank = 10
	}
	if o.Rank < 0 {
		return nil, fmt.Errorf("rank %d: must be positive", o.Rank)
	}
	if o.Shards <= 0 {
		o.Shards = 4
	}
	s := o.Settings
	s.Solver = completion.SolverALS
	cfg := s.Resolved()
	if o.Out != "" && !o.Force {
		if _, err := os.Stat(o.Out); err == nil {
			return nil, fmt.Errorf("%s exists (use --force to overwrite)", o.Out)
		}
	}
	work := o.Work
	if work == "" {
		if work, err = os.MkdirTemp("", "dprec-beam-train"); err != nil {
			return nil, err
		}
		defer os.RemoveAll(work)
	}
	res := &TrainResult{Settings: cfg}
	t0 := time.Now()
	prep, err := prepare(ctx, files, o.Load, work, o.Shards, o.Run, nil)
	if err != nil {
		return nil, err
	}
	res.Counts = prep.counts
	res.Prepare = time.Since(t0)
	dims := []int{prep.dicts[0].Len(), prep.dicts[1].Len()}
	m, err := decomposition.NewModel(decomposition.CP, dims, []int{o.Rank}, !o.NoBias)
	if err != nil {
		return nil, err
	}
	// The clamp range dprec.Fit gives a non-private model: the training
	// ratings' range (a one-value log clamps to its value).
	m.SetClamp(prep.counts.Min, prep.counts.Max)
	// Train's initialisation: the mean of the training values, then the
	// factors from the seed (completion.InitModel).
	completion.InitModel(m, prep.counts.Sum/float64(prep.counts.Ratings), &cfg, rand.NewPCG(o.Seed, SeedStream))
	var valid *validator
	if o.Validation != "" {
		valid = &validator{data: o.Validation, load: o.Load, work: joinPath(work, "valid"), run: o.Run}
	}
	if err := sweeps(ctx, m, prep, &cfg, o, work, valid, res); err != nil {
		return nil, err
	}
	f := &models.File{Model: m, Dicts: prep.dicts[:], Header: models.Header{
		Created:  time.Now().UTC().Truncate(time.Second),
		Software: "dprec-beam",
		Data: &models.DataInfo{NNZ: int(prep.counts.Ratings), Dims: dims, Mean: prep.counts.Mean,
			Min: prep.counts.Min, Max: prep.counts.Max},
	}}
	if f.Header.Settings, err = dprec.SettingsJSON(cfg); err != nil {
		return nil, err
	}
	if f.Header.History, err = json.Marshal(res.History); err != nil {
		return nil, err
	}
	if o.Seen {
		// The training store in the driver, in storage order: the seen
		// items and the data fingerprint (hash included) dprec train saves.
		st, err := readStore(ctx, prep.ratings, dims)
		if err != nil {
			return nil, err
		}
		if f.Seen, err = models.SeenFromStore(st, dims[0], dims[1]); err != nil {
			return nil, err
		}
		f.Header.Data = models.Fingerprint(st)
	}
	res.File = f
	if o.Out != "" {
		if err := models.Save(o.Out, f, o.Force); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// prepared is what the preparing pipelines leave: the totals, the
// dictionaries (dense indices in order of first appearance, as the
// single-machine loader assigns them) and the glob of the dense ratings.
type prepared struct {
	counts  *Counts
	dicts   [2]*data.Dict
	ratings string
	nnz     int
}

// prepare runs the scan pipeline (totals and every ID's first position),
// builds the dictionaries in the driver and runs the index pipeline
// (ratings with dense indices, "user item value position").
//
// With a catalogue (items non-nil) the item dictionary is the catalogue
// and ratings of other items are dropped from the dense ratings (the
// counts are still the whole log's).
func prepare(ctx context.Context, files []string, spec LoadSpec, work string, shards int, run Runner, items *data.Dict) (*prepared, error) {
	p, s := beam.NewPipelineWithRoot()
	ratings, info := ReadRatings(s, files, spec)
	countsParts(s, ratings, info, joinPath(work, "scan", "stats"))
	firsts := []any{userPos, itemPos}
	if items != nil {
		firsts = firsts[:1]
	}
	for k, fn := range firsts {
		first := beam.CombinePerKey(s, &minIntFn{}, beam.ParDo(s, fn, ratings))
		WriteSharded(s, joinPath(work, "scan", modeName(k)), shards, beam.ParDo(s, formatFirst, first))
	}
	if err := run.run(ctx, p); err != nil {
		return nil, fmt.Errorf("scan: %w", err)
	}
	c, err := readCounts(ctx, joinPath(work, "scan", "stats"))
	if err != nil {
		return nil, err
	}
	if c.Ratings == 0 {
		return nil, data.ErrEmpty
	}
	out := &prepared{counts: c, ratings: joinPath(work, "ratings", "part") + "-*", nnz: int(c.Ratings)}
	out.dicts[1] = items
	for k := range out.dicts {
		if out.dicts[k] == nil {
			if out.dicts[k], err = buildDict(ctx, joinPath(work, "scan", modeName(k))+"-*", k, c.Shards); err != nil {
				return nil, err
			}
		}
		if err := writeDict(ctx, joinPath(work, "dict", modeName(k)+".tsv"), out.dicts[k]); err != nil {
			return nil, err
		}
	}
	p, s = beam.NewPipelineWithRoot()
	ratings, _ = ReadRatings(s, files, spec)
	dict := func(k int) beam.PCollection {
		return beam.ParDo(s, parseDictLine, textio.Read(s, joinPath(work, "dict", modeName(k)+".tsv")))
	}
	byItem := beam.ParDo(s, joinUser, beam.CoGroupByKey(s, beam.ParDo(s, userKeyed, ratings), dict(0)))
	join := joinItem
	if items != nil {
		join = joinCatalogueItem
	}
	dense := beam.ParDo(s, join, beam.CoGroupByKey(s, byItem, dict(1)))
	WriteSharded(s, joinPath(work, "ratings", "part"), shards, dense)
	if err := run.run(ctx, p); err != nil {
		return nil, fmt.Errorf("index: %w", err)
	}
	return out, nil
}

func modeName(k int) string { return [...]string{"users", "items"}[k] }

// buildDict reads the IDs of mode k with their first positions and
// numbers them in order of first appearance: an integer dictionary when
// every file's loader made one, else a string dictionary.
func buildDict(ctx context.Context, glob string, k int, shards []ShardInfo) (*data.Dict, error) {
	type first struct {
		pos int64
		id  string
	}
	var ids []first
	err := ReadLines(ctx, glob, func(line string) error {
		p, q, _ := strings.Cut(line, "\t")
		pos, err := strconv.ParseInt(p, 10, 64)
		if err != nil {
			return err
		}
		id, err := strconv.Unquote(q)
		if err != nil {
			return err
		}
		ids = append(ids, first{pos, id})
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(ids, func(a, b first) int { return cmpInt64(a.pos, b.pos) })
	isString, name := false, ""
	for _, si := range shards {
		if k == 0 {
			isString = isString || si.UserString
			name = cmpOr(name, si.UserName)
		} else {
			isString = isString || si.ItemString
			name = cmpOr(name, si.ItemName)
		}
	}
	if isString {
		d := data.NewStringDict(name)
		for _, f := range ids {
			d.InternString(f.id)
		}
		return d, nil
	}
	d := data.NewIntDict(name)
	for _, f := range ids {
		v, err := strconv.ParseInt(f.id, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s ID %q in an integer dictionary: %w", modeName(k), f.id, err)
		}
		d.InternInt(v)
	}
	return d, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func writeDict(ctx context.Context, name string, d *data.Dict) error {
	return WriteFile(ctx, name, func(w *bufio.Writer) error {
		for i := 0; i < d.Len(); i++ {
			w.WriteString(quoteID(d.String(int32(i))))
			w.WriteByte('\t')
			w.WriteString(strconv.Itoa(i))
			if err := w.WriteByte('\n'); err != nil {
				return err
			}
		}
		return nil
	})
}

// sweeps runs Train's ALS loop: per sweep the users' half-sweep, then the
// items', the training RMSE from the item rows' SSEs (summed in row
// order), validation and early stopping as completion's stopper does.
func sweeps(ctx context.Context, m *decomposition.Model, prep *prepared, cfg *completion.Settings, o TrainOptions, work string, valid *validator, res *TrainResult) error {
	rowSSE := [2][]float64{make([]float64, m.Dims[0]), make([]float64, m.Dims[1])}
	validate := valid != nil && cfg.Patience >= 0
	best, since := math.Inf(1), 0
	good := cloneParams(m)
	for ep := 0; ep < cfg.Epochs; ep++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		t0 := time.Now()
		for mo := range 2 {
			th := time.Now()
			if err := halfSweep(ctx, m, mo, ep, prep, cfg, o, work, rowSSE[mo]); err != nil {
				return err
			}
			res.HalfSweeps = append(res.HalfSweeps, time.Since(th))
		}
		rec := completion.EpochRecord{Epoch: ep + 1, Seconds: time.Since(t0).Seconds()}
		sse := 0.0
		for _, v := range rowSSE[1] {
			sse += v
		}
		rec.TrainRMSE = math.Sqrt(sse / float64(prep.nnz))
		if !paramsFinite(m) {
			return &completion.ErrDiverged{Epoch: ep + 1, Loss: math.NaN()}
		}
		if valid != nil {
			r, err := valid.rmse(ctx, m, prep.dicts, ep)
			if err != nil {
				return err
			}
			rec.ValidRMSE = r
		}
		res.History = append(res.History, rec)
		if o.Progress != nil {
			o.Progress(rec)
		}
		if !validate || rec.ValidRMSE < best {
			best, since = rec.ValidRMSE, 0
			good = cloneParams(m)
			res.BestEpoch = ep + 1
			continue
		}
		if since++; since >= cfg.Patience {
			res.EarlyStopped = true
			break
		}
	}
	good.restore(m)
	return nil
}

// DefaultBroadcastLimit is TrainOptions.BroadcastLimit's default: 512 MiB
// of rows (6.7 million rows of rank 9 with biases).
const DefaultBroadcastLimit = 512 << 20

// broadcast reports whether a half-sweep broadcasts mode mo's rows.
func broadcast(m *decomposition.Model, mo int, limit int64) bool {
	if limit == 0 {
		limit = DefaultBroadcastLimit
	}
	return float64(m.Dims[mo])*float64(m.Ranks[mo]+1)*8 <= float64(limit)
}

// halfSweep solves every row of mode mo with the other mode fixed.
func halfSweep(ctx context.Context, m *decomposition.Model, mo, ep int, prep *prepared, cfg *completion.Settings, o TrainOptions, work string, rowSSE []float64) error {
	other := 1 - mo
	fixed := joinPath(work, "rows", fmt.Sprintf("sweep%03d", ep+1), "fixed-"+modeName(other)+".tsv")
	if err := writeRows(ctx, fixed, m, other); err != nil {
		return err
	}
	solved := joinPath(work, "rows", fmt.Sprintf("sweep%03d", ep+1), "solved-"+modeName(mo))
	p, s := beam.NewPipelineWithRoot()
	s = s.Scope(fmt.Sprintf("Sweep%d%s", ep+1, modeName(mo)))
	lines := textio.Read(s, prep.ratings)
	var out beam.PCollection
	if broadcast(m, other, o.BroadcastLimit) {
		byRow := beam.GroupByKey(s, beam.ParDo(s, &keyByRowFn{Mode: mo}, lines))
		out = beam.ParDo(s, &solveBroadcastFn{Fixed: fixed, FixedRows: m.Dims[other], Rank: m.Ranks[mo], Bias: m.HasBias,
			Mean: m.Mean, Reg: cfg.Reg, RegBias: cfg.RegBias, Mode: mo}, byRow)
	} else {
		ratings := beam.ParDo(s, &parseObsFn{Mode: mo}, lines)
		rows := beam.ParDo(s, parseRow, textio.Read(s, fixed))
		contribs := beam.ParDo(s, joinRow, beam.CoGroupByKey(s, ratings, rows))
		out = beam.ParDo(s, &solveFn{Rank: m.Ranks[mo], Bias: m.HasBias, Mean: m.Mean, Reg: cfg.Reg, RegBias: cfg.RegBias, Mode: mo},
			beam.GroupByKey(s, contribs))
	}
	WriteSharded(s, solved, o.Shards, out)
	if err := o.Run.run(ctx, p); err != nil {
		return fmt.Errorf("sweep %d, %s: %w", ep+1, modeName(mo), err)
	}
	// Rows without a rating (possible only when the dictionaries cover
	// more than the training log) take the kernel's empty-row values.
	rs := completion.NewRowSystem(m.Ranks[mo], m.HasBias)
	for i := 0; i < m.Dims[mo]; i++ {
		b, _, _ := rs.Solve(cfg.Reg, 0, cfg.RegBias, m.Row(mo, i))
		if m.HasBias {
			m.Bias[mo][i] = b
		}
		rowSSE[i] = 0
	}
	return ReadLines(ctx, solved+"-*", func(line string) error {
		f := strings.Split(line, "\t")
		R := m.Ranks[mo]
		if len(f) != 4+R {
			return fmt.Errorf("solved row %q: want %d fields", line, 4+R)
		}
		i, err := strconv.Atoi(f[0])
		if err != nil || i < 0 || i >= m.Dims[mo] {
			return fmt.Errorf("solved row %q: bad index", line)
		}
		sse, err1 := strconv.ParseFloat(f[2], 64)
		bias, err2 := strconv.ParseFloat(f[3], 64)
		if err := errors.Join(err1, err2); err != nil {
			return err
		}
		row := m.Row(mo, i)
		for k := range row {
			if row[k], err = strconv.ParseFloat(f[4+k], 64); err != nil {
				return err
			}
		}
		if m.HasBias {
			m.Bias[mo][i] = bias
		}
		rowSSE[i] = sse
		return nil
	})
}

// writeRows writes mode mo's rows and biases for the workers.
func writeRows(ctx context.Context, name string, m *decomposition.Model, mo int) error {
	return WriteFile(ctx, name, func(w *bufio.Writer) error {
		var b strings.Builder
		for i := 0; i < m.Dims[mo]; i++ {
			b.Reset()
			bias := 0.0
			if m.HasBias {
				bias = m.Bias[mo][i]
			}
			formatRow(&b, i, bias, m.Row(mo, i))
			b.WriteByte('\n')
			if _, err := w.WriteString(b.String()); err != nil {
				return err
			}
		}
		return nil
	})
}

// params is a copy of a model's trained parameters.
type params struct {
	factors [][]float64
	bias    [][]float64
}

func cloneParams(m *decomposition.Model) *params {
	p := &params{}
	for _, f := range m.Factors {
		p.factors = append(p.factors, slices.Clone(f))
	}
	for _, b := range m.Bias {
		p.bias = append(p.bias, slices.Clone(b))
	}
	return p
}

func (p *params) restore(m *decomposition.Model) {
	for k := range p.factors {
		copy(m.Factors[k], p.factors[k])
	}
	for k := range p.bias {
		copy(m.Bias[k], p.bias[k])
	}
}

func paramsFinite(m *decomposition.Model) bool {
	for _, xs := range append(slices.Clone(m.Factors), m.Bias...) {
		for _, v := range xs {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return false
			}
		}
	}
	return true
}

// readStore reads the dense ratings into the driver as a store in
// storage order (sorted by position).
func readStore(ctx context.Context, glob string, dims []int) (*data.Store, error) {
	type rating struct {
		u, i int32
		v    float64
		pos  int64
	}
	var rs []rating
	err := ReadLines(ctx, glob, func(line string) error {
		u, i, v, pos, err := parseDense(line)
		if err != nil {
			return err
		}
		rs = append(rs, rating{u, i, v, pos})
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(rs, func(a, b rating) int { return cmpInt64(a.pos, b.pos) })
	st := &data.Store{Dims: dims, Idx: [][]int32{make([]int32, len(rs)), make([]int32, len(rs))}, Val: make([]float64, len(rs))}
	for e, r := range rs {
		st.Idx[0][e], st.Idx[1][e], st.Val[e] = r.u, r.i, r.v
	}
	return st, nil
}

// validator computes the validation RMSE after a sweep: the model is saved
// to the scratch directory and every validation rating is predicted by
// workers with models.Predictor (dprec predict's rules: clamped, with its
// fallbacks for IDs the training log lacks).
type validator struct {
	data, work string
	load       LoadSpec
	run        Runner
}

func (v *validator) rmse(ctx context.Context, m *decomposition.Model, dicts [2]*data.Dict, ep int) (float64, error) {
	if strings.Contains(v.work, "://") {
		return 0, errors.New("validation needs a local --work directory (the model is saved there between sweeps)")
	}
	if err := os.MkdirAll(v.work, 0o755); err != nil {
		return 0, err
	}
	path := joinPath(v.work, fmt.Sprintf("sweep%03d.arrow", ep+1))
	f := &models.File{Model: m, Dicts: dicts[:], Header: models.Header{Software: "dprec-beam (validation)"}}
	if err := models.Save(path, f, true); err != nil {
		return 0, err
	}
	defer os.Remove(path)
	return PredictRMSE(ctx, path, v.data, v.load, joinPath(v.work, fmt.Sprintf("sweep%03d-se", ep+1)), v.run)
}
