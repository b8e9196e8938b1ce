package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/dprec/dprec/data"
)

// Rating is one observation of a rating log, by external IDs. Pos orders
// the ratings as a single-machine load of the files in glob order would
// store them: the file's index in the high bits, the position in that
// file's store (order of first appearance) in the low PosBits.
type Rating struct {
	User, Item string
	Value      float64
	Pos        int64
}

// PosBits is the number of low bits of Rating.Pos holding the position in
// a file (files of up to 2^40 ratings, 2^23 files).
const PosBits = 40

// Shard names one input file.
type Shard struct {
	File int
	Path string
}

// ShardInfo is what loading one shard found (written as JSON).
type ShardInfo struct {
	File       int    `json:"file"`
	Path       string `json:"path"`
	Rows       int    `json:"rows"`
	Ratings    int    `json:"ratings"`
	Skipped    int    `json:"skipped"`
	UserName   string `json:"user_name"`
	ItemName   string `json:"item_name"`
	UserString bool   `json:"user_string"`
	ItemString bool   `json:"item_string"`
}

// LoadSpec is the part of data.LoadOptions a pipeline passes to its
// workers (a DoFn's exported, serialised configuration). The time column
// is ignored (data.TimeNone): the pipelines train user x item models.
type LoadSpec struct {
	Format      string
	Delimiter   string
	Header      string
	User, Item  string
	Rating      string
	SkipInvalid bool
	Duplicates  string
}

func (l LoadSpec) options() (data.LoadOptions, error) {
	f, err := data.ParseFormat(l.Format)
	if err != nil {
		return data.LoadOptions{}, err
	}
	dup, err := data.ParseDuplicatePolicy(l.Duplicates)
	if err != nil {
		return data.LoadOptions{}, err
	}
	return data.LoadOptions{Format: f, Delimiter: l.Delimiter, Header: l.Header,
		Columns:     data.Columns{User: l.User, Item: l.Item, Rating: l.Rating},
		SkipInvalid: l.SkipInvalid, Threads: 1, MaxMemory: -1,
		Builder: data.BuilderOptions{TimeUnit: data.TimeNone, Duplicates: dup}}, nil
}

func init() {
	beam.RegisterType(reflect.TypeOf((*Rating)(nil)).Elem())
	beam.RegisterType(reflect.TypeOf((*Shard)(nil)).Elem())
	beam.RegisterType(reflect.TypeOf((*cellAcc)(nil)).Elem())
	register.DoFn4x1[context.Context, Shard, func(Rating), func(string), error](&loadShardFn{})
	register.Emitter1[Rating]()
	register.Emitter1[string]()
	register.Function2x0(cellKey)
	register.Emitter2[string, Rating]()
	register.Combiner3[cellAcc, Rating, Rating](&cellMergeFn{})
}

// Expand lists the files matching each comma-separated glob, in sorted
// order per glob (the order that defines Rating.Pos). Local paths and any
// path a registered Beam filesystem serves (gs://, s3://) are accepted.
func Expand(ctx context.Context, globs string) ([]string, error) {
	var out []string
	for _, g := range strings.Split(globs, ",") {
		g = strings.TrimSpace(g)
		if g == "" {
			continue
		}
		var files []string
		if !strings.Contains(g, "://") {
			m, err := filepath.Glob(g)
			if err != nil {
				return nil, err
			}
			for _, f := range m {
				if st, err := os.Stat(f); err == nil && !st.IsDir() {
					abs, err := filepath.Abs(f)
					if err != nil {
						return nil, err
					}
					files = append(files, abs)
				}
			}
		} else {
			fs, err := filesystem.New(ctx, g)
			if err != nil {
				return nil, err
			}
			files, err = fs.List(ctx, g)
			fs.Close()
			if err != nil {
				return nil, err
			}
		}
		slices.Sort(files)
		if len(files) == 0 {
			return nil, fmt.Errorf("no file matches %q", g)
		}
		out = append(out, files...)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no input files (give --data GLOB)")
	}
	if len(out) >= 1<<(63-PosBits) {
		return nil, fmt.Errorf("%d input files, at most %d", len(out), 1<<(63-PosBits)-1)
	}
	return out, nil
}

// ReadRatings reads the rating logs files (Expand's order) with package
// data's loader, one file per element: each worker loads a whole file, so
// a file must fit a worker's memory (shard large logs). Repeated cells are
// merged within a file by the loader and across files here, keeping the
// first position and the value of the last occurrence (data.DupLast); the
// second output holds one ShardInfo JSON line per file.
func ReadRatings(s beam.Scope, files []string, spec LoadSpec) (ratings, info beam.PCollection) {
	s = s.Scope("ReadRatings")
	shards := make([]Shard, len(files))
	for i, f := range files {
		shards[i] = Shard{File: i, Path: f}
	}
	col := beam.Reshuffle(s, beam.CreateList(s, shards))
	ratings, info = beam.ParDo2(s, &loadShardFn{Spec: spec}, col)
	if len(files) > 1 {
		// A cell may repeat across files; within a file the loader merged it.
		keyed := beam.ParDo(s, cellKey, ratings)
		ratings = beam.DropKey(s, beam.CombinePerKey(s, &cellMergeFn{}, keyed))
	}
	return ratings, info
}

type loadShardFn struct {
	Spec LoadSpec
}

func (f *loadShardFn) ProcessElement(ctx context.Context, sh Shard, emit func(Rating), info func(string)) error {
	opts, err := f.Spec.options()
	if err != nil {
		return err
	}
	path := sh.Path
	if strings.Contains(path, "://") {
		local, cleanup, err := localCopy(ctx, path)
		if err != nil {
			return err
		}
		defer cleanup()
		path = local
	}
	st, rep, err := data.Load(path, opts)
	if err != nil {
		return fmt.Errorf("%s: %w", sh.Path, err)
	}
	if uint64(st.NNZ()) >= 1<<PosBits {
		return fmt.Errorf("%s: %d ratings, more than a shard may hold (split it)", sh.Path, st.NNZ())
	}
	base := int64(sh.File) << PosBits
	ud, id := st.Dicts[0], st.Dicts[1]
	for e, v := range st.Val {
		emit(Rating{User: ud.String(st.Idx[0][e]), Item: id.String(st.Idx[1][e]), Value: v, Pos: base | int64(e)})
	}
	b, err := json.Marshal(ShardInfo{File: sh.File, Path: sh.Path, Rows: rep.Rows, Ratings: st.NNZ(), Skipped: rep.Skipped,
		UserName: ud.Name, ItemName: id.Name, UserString: ud.IsString, ItemString: id.IsString})
	if err != nil {
		return err
	}
	info(string(b))
	return nil
}

// localCopy copies a file from a Beam filesystem to a local temporary file
// (the loader reads local files), keeping its base name for format detection.
func localCopy(ctx context.Context, path string) (string, func(), error) {
	fs, err := filesystem.New(ctx, path)
	if err != nil {
		return "", nil, err
	}
	defer fs.Close()
	r, err := fs.OpenRead(ctx, path)
	if err != nil {
		return "", nil, err
	}
	defer r.Close()
	dir, err := os.MkdirTemp("", "dprec-beam-shard")
	if err != nil {
		return "", nil, err
	}
	cleanup := func() { os.RemoveAll(dir) }
	local := filepath.Join(dir, filepath.Base(path))
	w, err := os.Create(local)
	if err == nil {
		_, err = io.Copy(w, r)
		if cerr := w.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		cleanup()
		return "", nil, err
	}
	return local, cleanup, nil
}

func cellKey(r Rating, emit func(string, Rating)) { emit(r.User+"\x00"+r.Item, r) }

// cellAcc merges the occurrences of one cell: the first position, and the
// value at the last one.
type cellAcc struct {
	R    Rating
	Last int64
	Set  bool
}

type cellMergeFn struct{}

func (cellMergeFn) CreateAccumulator() cellAcc { return cellAcc{} }

func (cellMergeFn) AddInput(a cellAcc, r Rating) cellAcc {
	return cellMergeFn{}.MergeAccumulators(a, cellAcc{R: r, Last: r.Pos, Set: true})
}

func (cellMergeFn) MergeAccumulators(a, b cellAcc) cellAcc {
	switch {
	case !a.Set:
		return b
	case !b.Set:
		return a
	}
	out := a
	if b.R.Pos < a.R.Pos {
		out.R.Pos = b.R.Pos
	}
	if b.Last > a.Last {
		out.Last, out.R.Value = b.Last, b.R.Value
	}
	return out
}

func (cellMergeFn) ExtractOutput(a cellAcc) Rating { return a.R }
