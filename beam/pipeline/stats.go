package pipeline

import (
	"context"
	"encoding/json"
	"math"
	"reflect"
	"strconv"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/textio"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
)

// Summary aggregates rating values: count, sum, min and max.
type Summary struct {
	N        int64
	Sum      float64
	Min, Max float64
}

// Mean is Sum/N (NaN when N is 0).
func (s Summary) Mean() float64 { return s.Sum / float64(s.N) }

func init() {
	beam.RegisterType(reflect.TypeOf((*Summary)(nil)).Elem())
	register.Combiner3[Summary, float64, Summary](&summaryFn{})
	register.Combiner3[int64, int64, int64](&sumIntFn{})
	register.Function2x0(ratingValue)
	register.Emitter1[float64]()
	register.Function2x0(itemValue)
	register.Emitter2[string, float64]()
	register.Function2x0(userOne)
	register.Emitter2[string, int64]()
	register.Function2x1(formatItemStat)
	register.Function2x1(oneSummary)
	register.Function2x1(oneInt)
	register.DoFn2x0[int64, func(string)](&labelFn{})
	register.Function2x0(summaryLines)
}

type summaryFn struct{}

func (summaryFn) CreateAccumulator() Summary {
	return Summary{Min: math.Inf(1), Max: math.Inf(-1)}
}

func (summaryFn) AddInput(a Summary, v float64) Summary {
	a.N++
	a.Sum += v
	a.Min = min(a.Min, v)
	a.Max = max(a.Max, v)
	return a
}

func (summaryFn) MergeAccumulators(a, b Summary) Summary {
	return Summary{N: a.N + b.N, Sum: a.Sum + b.Sum, Min: min(a.Min, b.Min), Max: max(a.Max, b.Max)}
}

func (summaryFn) ExtractOutput(a Summary) Summary { return a }

type sumIntFn struct{}

func (sumIntFn) CreateAccumulator() int64           { return 0 }
func (sumIntFn) AddInput(a, v int64) int64          { return a + v }
func (sumIntFn) MergeAccumulators(a, b int64) int64 { return a + b }
func (sumIntFn) ExtractOutput(a int64) int64        { return a }

func ratingValue(r Rating, emit func(float64))       { emit(r.Value) }
func itemValue(r Rating, emit func(string, float64)) { emit(r.Item, r.Value) }
func userOne(r Rating, emit func(string, int64))     { emit(r.User, 1) }
func oneSummary(string, Summary) int64               { return 1 }
func oneInt(string, int64) int64                     { return 1 }

func formatItemStat(item string, s Summary) string {
	return quoteID(item) + "\t" + strconv.FormatInt(s.N, 10) + "\t" + fmtFloat(s.Mean())
}

type labelFn struct{ Label string }

func (f *labelFn) ProcessElement(v int64, emit func(string)) {
	emit(f.Label + "\t" + strconv.FormatInt(v, 10))
}

func summaryLines(s Summary, emit func(string)) {
	emit("ratings\t" + strconv.FormatInt(s.N, 10))
	emit("sum\t" + fmtFloat(s.Sum))
	emit("min\t" + fmtFloat(s.Min))
	emit("max\t" + fmtFloat(s.Max))
}

// quoteID writes an external ID so that any byte survives a TSV line.
func quoteID(id string) string { return strconv.Quote(id) }

func fmtFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// Counts are a log's totals after merging repeated cells.
type Counts struct {
	Files   int     `json:"files"`
	Rows    int     `json:"rows"`
	Skipped int     `json:"skipped"`
	Ratings int64   `json:"ratings"`
	Users   int64   `json:"users"`
	Items   int64   `json:"items"`
	Sum     float64 `json:"sum"`
	Mean    float64 `json:"mean"`
	Min     float64 `json:"min"`
	Max     float64 `json:"max"`
	// Shards describes every input file.
	Shards []ShardInfo `json:"shards"`
}

// countsParts adds the transforms writing the totals of ratings (and the
// shard infos) as "key<TAB>value" lines to prefix.counts and prefix.shards.
func countsParts(s beam.Scope, ratings, info beam.PCollection, prefix string) {
	s = s.Scope("Counts")
	sum := beam.Combine(s, &summaryFn{}, beam.ParDo(s, ratingValue, ratings))
	users := beam.CombinePerKey(s, &sumIntFn{}, beam.ParDo(s, userOne, ratings))
	nUsers := beam.Combine(s, &sumIntFn{}, beam.ParDo(s, oneInt, users))
	items := beam.CombinePerKey(s, &summaryFn{}, beam.ParDo(s, itemValue, ratings))
	nItems := beam.Combine(s, &sumIntFn{}, beam.ParDo(s, oneSummary, items))
	lines := beam.Flatten(s, beam.ParDo(s, summaryLines, sum),
		beam.ParDo(s, &labelFn{Label: "users"}, nUsers), beam.ParDo(s, &labelFn{Label: "items"}, nItems))
	textio.Write(s, prefix+".counts", lines)
	textio.Write(s, prefix+".shards", info)
}

// readCounts reads what countsParts wrote.
func readCounts(ctx context.Context, prefix string) (*Counts, error) {
	c := &Counts{}
	err := ReadLines(ctx, prefix+".counts", func(line string) error {
		k, v, _ := strings.Cut(line, "\t")
		var err error
		switch k {
		case "ratings":
			c.Ratings, err = strconv.ParseInt(v, 10, 64)
		case "users":
			c.Users, err = strconv.ParseInt(v, 10, 64)
		case "items":
			c.Items, err = strconv.ParseInt(v, 10, 64)
		case "sum":
			c.Sum, err = strconv.ParseFloat(v, 64)
		case "min":
			c.Min, err = strconv.ParseFloat(v, 64)
		case "max":
			c.Max, err = strconv.ParseFloat(v, 64)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	err = ReadLines(ctx, prefix+".shards", func(line string) error {
		var si ShardInfo
		if err := json.Unmarshal([]byte(line), &si); err != nil {
			return err
		}
		c.Shards = append(c.Shards, si)
		return nil
	})
	if err != nil {
		return nil, err
	}
	sortShards(c.Shards)
	c.Files = len(c.Shards)
	for _, si := range c.Shards {
		c.Rows += si.Rows
		c.Skipped += si.Skipped
	}
	if c.Ratings > 0 {
		c.Mean = c.Sum / float64(c.Ratings)
	}
	return c, nil
}

func sortShards(s []ShardInfo) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j-1].File > s[j].File; j-- {
			s[j-1], s[j] = s[j], s[j-1]
		}
	}
}

// StatsOptions configure Stats.
type StatsOptions struct {
	// Data is the comma-separated list of input globs.
	Data string
	// Out is the output directory: summary.json and the per-item
	// statistics items-SSSSS-of-NNNNN (TSV: quoted item ID, count, mean).
	Out string
	// Shards is the number of per-item files (zero: 4).
	Shards int
	Load   LoadSpec
	// Run runs a pipeline (beamx.Run by default).
	Run Runner
}

// Stats computes a log's users, items, ratings, mean and range, and each
// item's count and mean, in one pipeline.
func Stats(ctx context.Context, o StatsOptions) (*Counts, error) {
	files, err := Expand(ctx, o.Data)
	if err != nil {
		return nil, err
	}
	shards := o.Shards
	if shards <= 0 {
		shards = 4
	}
	p, s := beam.NewPipelineWithRoot()
	ratings, info := ReadRatings(s, files, o.Load)
	parts := joinPath(o.Out, "_parts", "stats")
	countsParts(s, ratings, info, parts)
	items := beam.CombinePerKey(s, &summaryFn{}, beam.ParDo(s, itemValue, ratings))
	WriteSharded(s, joinPath(o.Out, "items"), shards, beam.ParDo(s, formatItemStat, items))
	if err := o.Run.run(ctx, p); err != nil {
		return nil, err
	}
	c, err := readCounts(ctx, parts)
	if err != nil {
		return nil, err
	}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := writeBytes(ctx, joinPath(o.Out, "summary.json"), append(b, '\n')); err != nil {
		return nil, err
	}
	return c, removeAll(ctx, joinPath(o.Out, "_parts"))
}

// joinPath joins path elements with "/" (object-store paths included).
func joinPath(dir string, elem ...string) string {
	return strings.TrimSuffix(dir, "/") + "/" + strings.Join(elem, "/")
}
