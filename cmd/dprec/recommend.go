package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/models"
	"github.com/urfave/cli/v2"
)

// recommendCmd builds the "dprec recommend" command (listed in commands.go).
func recommendCmd() *cli.Command {
	flags := []cli.Flag{
		&cli.StringFlag{Name: "model", Aliases: []string{"m"}, Required: true, Usage: "model file"},
		&cli.StringFlag{Name: "user", Usage: "user id"},
		&cli.StringFlag{Name: "time", Usage: "time of the recommendation (Unix seconds, RFC 3339 or YYYY-MM-DD); default: averaged over the trained period"},
		&cli.IntFlag{Name: "top", Aliases: []string{"n"}, Value: 10, Usage: "number of items per user"},
		&cli.StringFlag{Name: "exclude-rated", Usage: "rating log whose (user, item) pairs are also left out of the lists (read with the input flags; the model's own training items are left out already)"},
		&cli.BoolFlag{Name: "include-seen", Usage: "do not leave out the items each user has in the model's training log"},
		&cli.StringFlag{Name: "items", Usage: "candidate filter: a file of item ids, one per line (optional header line); only these items are recommended"},
		&cli.StringFlag{Name: "ratings", Usage: "a new user's own ratings (CSV item,rating[,time]) to fold in; those items are excluded"},
		&cli.Float64Flag{Name: "fold-lambda", Usage: "ridge penalty of the fold-in (default: the model's factor penalty times the number of ratings)"},
		&cli.BoolFlag{Name: "all-users", Usage: "stream the top-N lists of every user of the model"},
		&cli.StringFlag{Name: "out", Aliases: []string{"o"}, Usage: "output file for --all-users: .csv or .parquet (default: CSV on stdout)"},
		forceFlag("overwrite --out", ""),
	}
	flags = append(append(flags, rankingFlags()...), jsonFlags("the lists (one record per user)")...)
	return &cli.Command{
		Name:  "recommend",
		Usage: "top-N items for a user, a folded-in new user, or every user (streamed)",
		Description: `Output columns: user,rank,item,score, where score is the predicted rating
clamped to the rating scale (with --ranking credibility the credibility-weighted
one), or for an --objective implicit model the preference score (about 0 to
1). The rank follows --ranking: by default relevance, the chance that the user
rates the item and likes it, so a popular item predicted 4.0 can rank above a
rarely rated one predicted 4.7 (docs/top-n.md, Rankings of rating models).
Items a user has in the model's training log (stored in the model file) are
left out unless --include-seen; private models do not store them, so pass
--exclude-rated TRAIN for those. A user who has seen every candidate gets an
empty list. --all-users uses a size-N heap per user and never holds the users
x items score matrix, and reports users/s on stderr. --threads sets the
scoring workers.`,
		Flags:  append(flags, dataLoadFlags()...),
		Action: runWithOptions(recommendOptionsOf, recommendRun),
	}
}

// recommendOptions are the flags of dprec recommend.
type recommendOptions struct {
	globalOptions
	Model        string           // --model
	User         string           // --user ("": none)
	Time         *int64           // --time (nil: averaged over the trained period)
	Top          int              // --top: items per list
	ExcludeRated string           // --exclude-rated: a rating log whose pairs are left out ("": none)
	Rank         rankingOptions   // --ranking, --shrinkage
	IncludeSeen  bool             // --include-seen
	Items        string           // --items: the candidate filter ("": every item)
	Ratings      string           // --ratings: a new user's ratings to fold in ("": none)
	FoldLambda   float64          // --fold-lambda (0: the default penalty)
	AllUsers     bool             // --all-users
	Out          string           // --out, for --all-users ("" or "-": the output stream)
	Force        bool             // --force
	JSON, JSONL  bool             // --json, --jsonl
	Threads      int              // --threads: scoring workers
	Load         data.LoadOptions // the input flags, for --exclude-rated
}

// recommendOptionsOf reads recommend's flags.
func recommendOptionsOf(c *cli.Context) (*recommendOptions, error) {
	o := &recommendOptions{
		globalOptions: globalOptionsOf(c),
		Model:         c.String("model"),
		User:          c.String("user"),
		Top:           c.Int("top"),
		ExcludeRated:  c.String("exclude-rated"),
		IncludeSeen:   c.Bool("include-seen"),
		Items:         c.String("items"),
		Ratings:       c.String("ratings"),
		FoldLambda:    c.Float64("fold-lambda"),
		AllUsers:      c.Bool("all-users"),
		Out:           c.String("out"),
		Force:         c.Bool("force"),
		JSON:          c.Bool("json"),
		JSONL:         c.Bool("jsonl"),
		Threads:       c.Int("threads"),
	}
	var err error
	if o.Rank, err = rankingOptionsOf(c); err != nil {
		return nil, err
	}
	if o.Time, err = predictParseTime(c.String("time")); err != nil {
		return nil, fmt.Errorf("--time: %w", err)
	}
	if o.Load, err = dataLoadOptions(c); err != nil {
		return nil, err
	}
	return o, nil
}

// recommendRun writes the top-N lists o asks for on s.Out (or --out).
func recommendRun(o *recommendOptions, s *iostreams) error {
	if o.Top <= 0 {
		return cli.Exit(fmt.Sprintf("--top %d: must be positive", o.Top), exitUsage)
	}
	p, err := loadPredictor(s, o.globalOptions, o.Model)
	if err != nil {
		return err
	}
	if err := checkModelTime(p, o.Model, o.Time); err != nil {
		return err
	}
	p = o.Rank.apply(p)
	n, t := o.Top, o.Time
	excl, err := recommendExclusions(o, s, p)
	if err != nil {
		return err
	}
	if o.AllUsers {
		if o.User != "" || o.Ratings != "" {
			return cli.Exit("recommend --all-users takes no --user or --ratings", exitUsage)
		}
		if (o.JSON || o.JSONL) && o.Out != "" && o.Out != "-" {
			return usagef("recommend --all-users --out writes CSV or Parquet (by the file name); --json and --jsonl print on standard output")
		}
		return recommendAll(o, s, p, excl)
	}
	var recs []models.Scored
	var fb models.Fallback
	user := o.User
	switch {
	case o.Ratings != "":
		row, note, err := predictFoldIn(p, o.Ratings, o.FoldLambda)
		if err != nil {
			return err
		}
		if !o.Quiet {
			fmt.Fprintln(s.Err, "dprec:", note)
		}
		ex, err := recommendRatedItems(p, o.Ratings)
		if err != nil {
			return err
		}
		u := int32(-1)
		if user == "" {
			user = "(folded-in)"
		} else if k, ok := p.UserIndex(user); ok {
			u = k
		}
		recs, fb = p.RecommendRow(row, t, n, excl.For(u, p.NumItems(), ex))
	case user != "":
		u, ok := p.UserIndex(user)
		if !ok {
			u = -1
		}
		recs, fb = p.Recommend(user, t, n, excl.For(u, p.NumItems(), nil))
		if fb&models.UnknownUser != 0 && !o.Quiet {
			fmt.Fprintf(s.Err, "dprec: unknown user %q: items ranked without a user term (by item bias)\n", user)
		}
	default:
		return cli.Exit("recommend: give --user, --ratings or --all-users", exitUsage)
	}
	w := s.Out
	if o.JSON || o.JSONL {
		rec := recommendRecord(user, recs)
		rec.Fallback = fb.String()
		return json.NewEncoder(w).Encode(rec)
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

// recommendExclusions builds what every list leaves out: the model's seen
// items (unless --include-seen), the pairs of --exclude-rated, and the
// candidate filter of --items. Notes go to s.Err unless --quiet.
func recommendExclusions(o *recommendOptions, s *iostreams, p *models.Predictor) (*models.Exclusions, error) {
	note := func(format string, a ...any) {
		if !o.Quiet {
			fmt.Fprintf(s.Err, "dprec: "+format+"\n", a...)
		}
	}
	var excl *models.Exclusions
	f := p.File()
	switch {
	case o.IncludeSeen:
	case f.Seen != nil:
		excl = f.Seen
	case o.ExcludeRated == "":
		note("%s stores no training items (a private or older model): items users already rated may be recommended; pass --exclude-rated TRAIN to leave them out", o.Model)
	}
	if path := o.ExcludeRated; path != "" {
		st, _, err := loadLog(s, o.globalOptions, path, o.Load)
		if err != nil {
			return nil, err
		}
		ex, err := p.NewExclusions(st)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if ex.Unmatched > 0 {
			note("%s: %d ratings of users or items the model does not know were ignored", path, ex.Unmatched)
		}
		excl = excl.Union(ex)
	}
	if path := o.Items; path != "" {
		allowed, known, unknown, err := recommendCandidates(p, path)
		if err != nil {
			return nil, err
		}
		if unknown > 0 {
			note("%s: %d of %d candidate items are unknown to the model and were ignored", path, unknown, known+unknown)
		}
		if known == 0 {
			return nil, fmt.Errorf("%s: none of the %d candidate items is known to the model", path, unknown)
		}
		// A shallow copy: the model's seen items are shared, not modified.
		e := models.Exclusions{}
		if excl != nil {
			e = *excl
		}
		e.Allowed = allowed
		excl = &e
	}
	return excl, nil
}

// recommendCandidates reads an item list (one id per line, first field of
// a CSV line, blank lines skipped, an optional header line) into a mask over
// the model's items, counting known and unknown distinct ids.
func recommendCandidates(p *models.Predictor, path string) (allowed []bool, known, unknown int, err error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, 0, 0, err
	}
	defer fh.Close()
	allowed = make([]bool, p.NumItems())
	seenUnknown := map[string]bool{}
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		if i := strings.IndexByte(s, ','); i >= 0 {
			s = strings.TrimSpace(s[:i])
		}
		s = strings.Trim(s, `"`)
		if s == "" {
			continue
		}
		j, ok := p.ItemIndex(s)
		switch {
		case ok && !allowed[j]:
			allowed[j] = true
			known++
		case ok:
		case line == 1 && known == 0:
			// A header line (e.g. "item" or "movieId").
		case !seenUnknown[s]:
			seenUnknown[s] = true
			unknown++
		}
	}
	if err := sc.Err(); err != nil {
		return nil, 0, 0, fmt.Errorf("%s: line %d: %w", path, line+1, err)
	}
	return allowed, known, unknown, nil
}

// recommendList is one user's list in JSON output.
type recommendList struct {
	User     string          `json:"user"`
	Fallback string          `json:"fallback,omitempty"`
	Items    []recommendItem `json:"items"`
}

// recommendItem is one recommended item: the columns of the CSV output.
type recommendItem struct {
	Rank  int     `json:"rank"`
	Item  string  `json:"item"`
	Score float64 `json:"score"`
}

func recommendRecord(user string, recs []models.Scored) recommendList {
	out := recommendList{User: user, Items: make([]recommendItem, len(recs))}
	for i, r := range recs {
		out.Items[i] = recommendItem{Rank: i + 1, Item: r.ID, Score: r.Rating}
	}
	return out
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
// the output stream.
func recommendAll(o *recommendOptions, s *iostreams, p *models.Predictor, excl *models.Exclusions) error {
	n, t, threads, out := o.Top, o.Time, o.Threads, o.Out
	bar := s.bar(o.globalOptions, int64(p.NumUsers()), "recommending")
	defer bar.Finish()
	t0 := time.Now()
	defer func() {
		if sec := time.Since(t0).Seconds(); !o.Quiet && sec > 0 {
			fmt.Fprintf(s.Err, "dprec: %d users in %.3gs (%.0f users/s)\n", p.NumUsers(), sec, float64(p.NumUsers())/sec)
		}
	}()
	if (out == "" || out == "-") && (o.JSON || o.JSONL) {
		rw := newRecordWriter(s.Out, o.JSONL)
		err := p.RecommendAll(n, t, threads, excl, func(u int32, recs []models.Scored) error {
			bar.Add(1)
			return rw.Write(recommendRecord(p.UserID(u), recs))
		})
		if err != nil {
			return err
		}
		return rw.Close()
	}
	if out == "" || out == "-" {
		bw := bufio.NewWriterSize(s.Out, 1<<16)
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
		return s.writeFile(out, o.Force, func(w io.Writer) error {
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
		return s.writeFile(out, o.Force, func(w io.Writer) error {
			return recommendParquet(struct{ io.Writer }{w}, p, n, t, threads, excl, func() { bar.Add(1) })
		})
	}
	return fmt.Errorf("--out %s: want a .csv or .parquet file name", out)
}

// recommendParquet writes user, rank, item, score rows as Parquet
// (models.ListWriter): user and item columns are int64 when the model's
// ids are integers, else strings.
func recommendParquet(w io.Writer, p *models.Predictor, n int, t *int64, threads int, excl *models.Exclusions, tick func()) error {
	lw, err := models.NewListWriter(w, &p.File().Header)
	if err != nil {
		return err
	}
	err = p.RecommendAll(n, t, threads, excl, func(u int32, recs []models.Scored) error {
		tick()
		return lw.Add(p.UserID(u), recs)
	})
	if err != nil {
		lw.Abort()
		return err
	}
	return lw.Close()
}
