package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/apache/arrow/go/v15/parquet"
	"github.com/apache/arrow/go/v15/parquet/compress"
	"github.com/apache/arrow/go/v15/parquet/pqarrow"
	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/models"
	"github.com/urfave/cli/v2"
)

func init() {
	flags := []cli.Flag{
		&cli.StringFlag{Name: "model", Aliases: []string{"m"}, Required: true, Usage: "model file"},
		&cli.StringFlag{Name: "user", Usage: "user id"},
		&cli.StringFlag{Name: "time", Usage: "time of the recommendation (Unix seconds, RFC 3339 or YYYY-MM-DD); default: averaged over the trained period"},
		&cli.IntFlag{Name: "top", Aliases: []string{"n"}, Value: 10, Usage: "number of items per user"},
		&cli.StringFlag{Name: "exclude-rated", Usage: "rating log whose (user, item) pairs are left out of the lists (usually the training log; read with the input flags)"},
		&cli.StringFlag{Name: "ratings", Usage: "a new user's own ratings (CSV item,rating[,time]) to fold in; those items are excluded"},
		&cli.Float64Flag{Name: "fold-lambda", Usage: "ridge penalty of the fold-in (default: the model's factor penalty times the number of ratings)"},
		&cli.BoolFlag{Name: "all-users", Usage: "stream the top-N lists of every user of the model"},
		&cli.StringFlag{Name: "out", Aliases: []string{"o"}, Usage: "output file for --all-users: .csv or .parquet (default: CSV on stdout)"},
		&cli.BoolFlag{Name: "force", Usage: "overwrite --out"},
		&cli.BoolFlag{Name: "json", Usage: "JSON output (single user)"},
	}
	register(&cli.Command{
		Name:  "recommend",
		Usage: "top-N items for a user, a folded-in new user, or every user (streamed)",
		Description: `Output columns: user,rank,item,score, where score is the predicted rating
(clamped to the rating scale; the ranking uses the unclamped value).
--all-users uses a size-N heap per user and never holds the users x items
score matrix. --threads sets the scoring workers.`,
		Flags:  append(flags, dataLoadFlags()...),
		Action: recommendRun,
	})
}

func recommendRun(c *cli.Context) error {
	if err := checkOutputs([]string{c.String("model"), c.String("exclude-rated"), c.String("ratings")}, c.String("out")); err != nil {
		return err
	}
	p, err := predictLoad(c, c.String("model"))
	if err != nil {
		return err
	}
	n := c.Int("top")
	if n <= 0 {
		return cli.Exit(fmt.Sprintf("--top %d: must be positive", n), exitUsage)
	}
	t, err := predictParseTime(c.String("time"))
	if err != nil {
		return fmt.Errorf("--time: %w", err)
	}
	var excl *models.Exclusions
	if path := c.String("exclude-rated"); path != "" {
		s, _, err := dataLoad(c, path)
		if err != nil {
			return err
		}
		if excl, err = p.NewExclusions(s); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if excl.Unmatched > 0 && !quiet(c) {
			fmt.Fprintf(c.App.ErrWriter, "dprec: %s: %d ratings of users or items the model does not know were ignored\n", path, excl.Unmatched)
		}
	}
	if c.Bool("all-users") {
		if c.IsSet("user") || c.IsSet("ratings") {
			return cli.Exit("recommend --all-users takes no --user or --ratings", exitUsage)
		}
		return recommendAll(c, p, n, t, excl)
	}
	var recs []models.Scored
	var fb models.Fallback
	user := c.String("user")
	switch {
	case c.IsSet("ratings"):
		row, note, err := predictFoldIn(c, p, c.String("ratings"))
		if err != nil {
			return err
		}
		if !quiet(c) {
			fmt.Fprintln(c.App.ErrWriter, "dprec:", note)
		}
		ex, err := recommendRatedItems(p, c.String("ratings"))
		if err != nil {
			return err
		}
		if user == "" {
			user = "(folded-in)"
		} else if u, ok := p.UserIndex(user); ok {
			ex = recommendMerge(ex, excl.Items(u))
		}
		recs, fb = p.RecommendRow(row, t, n, ex)
	case user != "":
		var ex []int32
		if u, ok := p.UserIndex(user); ok {
			ex = excl.Items(u)
		}
		recs, fb = p.Recommend(user, t, n, ex)
		if fb&models.UnknownUser != 0 && !quiet(c) {
			fmt.Fprintf(c.App.ErrWriter, "dprec: unknown user %q: items ranked without a user term (by item bias)\n", user)
		}
	default:
		return cli.Exit("recommend: give --user, --ratings or --all-users", exitUsage)
	}
	w := c.App.Writer
	if c.Bool("json") {
		return json.NewEncoder(w).Encode(struct {
			User     string          `json:"user"`
			Fallback string          `json:"fallback"`
			Items    []models.Scored `json:"items"`
		}{user, fb.String(), recs})
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, "user,rank,item,score")
	recommendCSV(bw, user, recs)
	return bw.Flush()
}

// recommendRatedItems returns the sorted model indices of the items in a
// fold-in ratings file (they are excluded from the new user's list).
func recommendRatedItems(p *models.Predictor, path string) ([]int32, error) {
	var out []int32
	err := predictReadPairs(path, func(item string) {
		if j, ok := p.ItemIndex(item); ok {
			out = append(out, j)
		}
	})
	slices.Sort(out)
	return slices.Compact(out), err
}

func recommendMerge(a, b []int32) []int32 {
	out := slices.Concat(a, b)
	slices.Sort(out)
	return slices.Compact(out)
}

func recommendCSV(w io.Writer, user string, recs []models.Scored) {
	u := recommendQuote(user)
	for i, r := range recs {
		fmt.Fprintf(w, "%s,%d,%s,%s\n", u, i+1, recommendQuote(r.ID), strconv.FormatFloat(r.Rating, 'g', 8, 64))
	}
}

// recommendQuote quotes a CSV field when needed.
func recommendQuote(s string) string {
	if strings.ContainsAny(s, ",\"\r\n") {
		return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
	}
	return s
}

// recommendAll streams every user's list to --out (CSV or Parquet) or to
// standard output.
func recommendAll(c *cli.Context, p *models.Predictor, n int, t *int64, excl *models.Exclusions) error {
	threads := c.Int("threads")
	out := c.String("out")
	bar := newBar(c, int64(p.NumUsers()), "recommending")
	defer bar.Finish()
	if out == "" || out == "-" {
		bw := bufio.NewWriterSize(c.App.Writer, 1<<16)
		fmt.Fprintln(bw, "user,rank,item,score")
		err := p.RecommendAll(n, t, threads, excl, func(u int32, recs []models.Scored) error {
			recommendCSV(bw, p.UserID(u), recs)
			bar.Add(1)
			return nil
		})
		if err != nil {
			return err
		}
		return bw.Flush()
	}
	switch data.DetectFormat(out) {
	case data.FormatCSV:
		return data.WriteFileAtomic(out, c.Bool("force"), func(w io.Writer) error {
			bw := bufio.NewWriterSize(w, 1<<16)
			fmt.Fprintln(bw, "user,rank,item,score")
			err := p.RecommendAll(n, t, threads, excl, func(u int32, recs []models.Scored) error {
				recommendCSV(bw, p.UserID(u), recs)
				bar.Add(1)
				return nil
			})
			if err != nil {
				return err
			}
			return bw.Flush()
		})
	case data.FormatParquet:
		return data.WriteFileAtomic(out, c.Bool("force"), func(w io.Writer) error {
			return recommendParquet(struct{ io.Writer }{w}, p, n, t, threads, excl, func() { bar.Add(1) })
		})
	}
	return fmt.Errorf("--out %s: want a .csv or .parquet file name", out)
}

// recommendParquetBatch is the number of rows per Parquet write (one row
// group each): bounded memory whatever the number of users.
const recommendParquetBatch = 1 << 17

// recommendParquet writes user, rank, item, score rows as Parquet; user and
// item columns are int64 when the model's ids are integers, else strings.
func recommendParquet(w io.Writer, p *models.Predictor, n int, t *int64, threads int, excl *models.Exclusions, tick func()) error {
	h := p.File().Header
	idType := func(mo int) arrow.DataType {
		if h.IDTypes[mo] == "int64" {
			return arrow.PrimitiveTypes.Int64
		}
		return arrow.BinaryTypes.String
	}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "user", Type: idType(0)},
		{Name: "rank", Type: arrow.PrimitiveTypes.Int32},
		{Name: "item", Type: idType(1)},
		{Name: "score", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Snappy))
	fw, err := pqarrow.NewFileWriter(schema, w, props, pqarrow.DefaultWriterProps())
	if err != nil {
		return err
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	appendID := func(fb array.Builder, mo int, s string) {
		if ib, ok := fb.(*array.Int64Builder); ok {
			v, _ := strconv.ParseInt(s, 10, 64)
			ib.Append(v)
			return
		}
		fb.(*array.StringBuilder).Append(s)
	}
	flush := func() error {
		rec := b.NewRecord()
		defer rec.Release()
		if rec.NumRows() == 0 {
			return nil
		}
		return fw.Write(rec)
	}
	rows := 0
	err = p.RecommendAll(n, t, threads, excl, func(u int32, recs []models.Scored) error {
		uid := p.UserID(u)
		for i, r := range recs {
			appendID(b.Field(0), 0, uid)
			b.Field(1).(*array.Int32Builder).Append(int32(i + 1))
			appendID(b.Field(2), 1, r.ID)
			b.Field(3).(*array.Float64Builder).Append(r.Rating)
			rows++
		}
		tick()
		if rows >= recommendParquetBatch {
			rows = 0
			return flush()
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := flush(); err != nil {
		return err
	}
	return fw.Close()
}
