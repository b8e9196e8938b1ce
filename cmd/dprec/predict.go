package main

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dprec/dprec/completion"
	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/models"
	"github.com/urfave/cli/v2"
)

// predictCmd builds the "dprec predict" command (listed in commands.go).
func predictCmd() *cli.Command {
	cmd := &cli.Command{
		Name:  "predict",
		Usage: "predict ratings from a saved model (one pair, a CSV of pairs, or a new user's fold-in)",
		Description: `Unknown users, items and times never fail: the prediction falls back
(biases, then the global mean) and the fallback column says which was used
(unknown-user, unknown-item, time-clamped, time-averaged). --strict fails
instead. Times are Unix seconds, RFC 3339 or YYYY-MM-DD (UTC).`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "model", Aliases: []string{"m"}, Required: true, Usage: "model file"},
			&cli.StringFlag{Name: "user", Usage: "user id"},
			&cli.StringFlag{Name: "item", Usage: "item id"},
			&cli.StringFlag{Name: "time", Usage: "time of the prediction (Unix seconds, RFC 3339 or YYYY-MM-DD); default: averaged over the trained period"},
			&cli.StringFlag{Name: "input", Usage: "CSV of user,item[,time] pairs (optional header row; - reads stdin), or a rating log in any input format (read with the input flags; the output adds its ratings)"},
			&cli.StringFlag{Name: "ratings", Usage: "a new user's own ratings (CSV item,rating[,time]) to fold in against the frozen model"},
			&cli.StringFlag{Name: "user-log", Usage: "with --user and --item: fold the user in from that user's rows of this rating log (read with the input flags; no other user's row is used), e.g. the training log of a billboard model (--privacy bias or als), whose file holds no user rows"},
			&cli.Float64Flag{Name: "fold-lambda", Usage: "ridge penalty of the fold-in (default: the model's factor penalty times the number of ratings)"},
			&cli.BoolFlag{Name: "strict", Usage: "fail on an unknown user or item instead of falling back"},
			&cli.StringFlag{Name: "out", Aliases: []string{"o"}, Usage: "write the predictions to FILE: .csv, .json (one document), .jsonl or .parquet (default: standard output)"},
			forceFlag("overwrite --out", ""),
		},
		Action: runWithOptions(predictOptionsOf, predictRun),
	}
	cmd.Flags = append(cmd.Flags, jsonFlags("the predictions")...)
	cmd.Flags = append(cmd.Flags, dataLoadFlags()...)
	return cmd
}

// predictParseTime parses a time flag or column: Unix seconds, RFC 3339 or
// YYYY-MM-DD (UTC). The empty string means no time (nil).
func predictParseTime(s string) (*int64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	if v, err := strconv.ParseInt(s, 10, 64); err == nil {
		return &v, nil
	}
	for _, layout := range []string{time.RFC3339, "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			v := t.Unix()
			return &v, nil
		}
	}
	return nil, fmt.Errorf("time %q: want Unix seconds, RFC 3339 or YYYY-MM-DD", s)
}

// loadPredictor loads a model and prints the caveats of its privacy
// guarantee (uncovered parameters, seeded noise) on s.Err unless --quiet.
// A non-private model makes no guarantee to qualify: train and inspect say
// it is not private, and predict, recommend, eval and similar do not
// repeat it on every run.
func loadPredictor(s *iostreams, g globalOptions, path string) (*models.Predictor, error) {
	f, err := models.Load(path)
	if err != nil {
		return nil, err
	}
	if !g.Quiet && f.Privacy.Private() {
		for _, w := range inspectPrivacyWarnings(f.Privacy) {
			fmt.Fprintf(s.Err, "dprec: %s: WARNING: %s\n", path, w)
		}
	}
	return models.NewPredictor(f), nil
}

// checkModelTime refuses --time (t) for the model at path when it has no
// time mode, which would ignore the time (the output used to echo it as if
// it had been used).
func checkModelTime(p *models.Predictor, path string, t *int64) error {
	f := p.File()
	if t == nil || f.Model.Order() >= 3 {
		return nil
	}
	why := "trained with --time-unit none or on a log without times"
	if f.Header.Objective == models.ObjectiveImplicit {
		why = "an --objective implicit model"
	}
	if f.ItemItem() {
		why = "an --objective ease item-item model"
	}
	return cli.Exit(fmt.Sprintf("--time: %s has no time mode (%s) and would ignore it; drop --time", path, why), exitUsage)
}

// predictResult is one prediction in the JSON output.
type predictResult struct {
	User       string   `json:"user"`
	Item       string   `json:"item"`
	Time       *int64   `json:"time,omitempty"`
	Rating     *float64 `json:"rating,omitempty"` // the observed rating (--input rating logs)
	Prediction float64  `json:"prediction"`
	Fallback   string   `json:"fallback"`
}

// predictOptions are the flags of dprec predict.
type predictOptions struct {
	globalOptions
	Model      string // --model
	User, Item string // --user, --item
	Time       *int64 // --time (nil: averaged over the trained period)
	Input      string // --input: pairs or a rating log ("-": the input stream; "": none)
	Ratings    string // --ratings: a new user's ratings to fold in ("": none)
	UserLog    string // --user-log: a rating log holding --user's rows to fold in ("": none)
	FoldLambda float64
	Strict     bool
	Out        string // --out ("" or "-": the output stream)
	Force      bool
	Format     string // csv, json, jsonl or parquet (predictFormat)
	// LogFlags says the loader's --columns, --format or --delimiter was
	// given, which makes --input a rating log (predictIsLog).
	LogFlags bool
	Load     data.LoadOptions // the input flags, for rating logs
}

// predictOptionsOf reads predict's flags.
func predictOptionsOf(c *cli.Context) (*predictOptions, error) {
	o := &predictOptions{
		globalOptions: globalOptionsOf(c),
		Model:         c.String("model"),
		User:          c.String("user"),
		Item:          c.String("item"),
		Input:         c.String("input"),
		Ratings:       c.String("ratings"),
		UserLog:       c.String("user-log"),
		FoldLambda:    c.Float64("fold-lambda"),
		Strict:        c.Bool("strict"),
		Out:           c.String("out"),
		Force:         c.Bool("force"),
		LogFlags:      c.IsSet("columns") || c.IsSet("format") || c.IsSet("delimiter"),
	}
	var err error
	if o.Time, err = predictParseTime(c.String("time")); err != nil {
		return nil, fmt.Errorf("--time: %w", err)
	}
	if o.Format, err = predictFormat(c.Bool("json"), c.Bool("jsonl"), c.String("out")); err != nil {
		return nil, err
	}
	if o.Load, err = dataLoadOptions(c); err != nil {
		return nil, err
	}
	return o, nil
}

// predictRun writes the predictions o asks for on s.Out (or --out).
func predictRun(o *predictOptions, s *iostreams) error {
	p, err := loadPredictor(s, o.globalOptions, o.Model)
	if err != nil {
		return err
	}
	if err := checkModelTime(p, o.Model, o.Time); err != nil {
		return err
	}
	if o.Out == "" || o.Out == "-" {
		return predictTo(o, s, p, s.Out)
	}
	return s.writeFile(o.Out, o.Force, func(w io.Writer) error { return predictTo(o, s, p, w) })
}

// predictTo runs predict with its output on w.
func predictTo(o *predictOptions, s *iostreams, p *models.Predictor, w io.Writer) error {
	t := o.Time
	if o.Ratings != "" {
		if o.Input != "" || o.Item == "" {
			return cli.Exit("predict --ratings: give the item to predict with --item", exitUsage)
		}
		row, note, err := predictFoldIn(p, o.Ratings, o.FoldLambda)
		if err != nil {
			return err
		}
		if !o.Quiet {
			fmt.Fprintln(s.Err, "dprec:", note)
		}
		v, fb := p.PredictRow(row, o.Item, t)
		if o.Strict && fb&models.UnknownItem != 0 {
			return fmt.Errorf("unknown item %q", o.Item)
		}
		return predictEmit(o, w, []predictResult{{User: "(folded-in)", Item: o.Item, Time: t, Prediction: v, Fallback: fb.String()}})
	}
	if o.UserLog != "" {
		row, note, err := predictUserLog(o, s, p)
		if err != nil {
			return err
		}
		if !o.Quiet {
			fmt.Fprintln(s.Err, "dprec:", note)
		}
		v, fb := p.PredictRow(row, o.Item, t)
		if o.Strict && fb&models.UnknownItem != 0 {
			return fmt.Errorf("unknown item %q", o.Item)
		}
		return predictEmit(o, w, []predictResult{{User: o.User, Item: o.Item, Time: t, Prediction: v, Fallback: fb.String()}})
	}
	if in := o.Input; in != "" {
		if predictIsLog(o, in) {
			return predictLog(o, s, p, w)
		}
		return predictMany(o, s, p, w)
	}
	if o.User == "" || o.Item == "" {
		return cli.Exit("predict: give --user and --item, or --input pairs.csv", exitUsage)
	}
	v, fb := p.Predict(o.User, o.Item, t)
	if err := predictStrict(o.Strict, fb, o.User, o.Item); err != nil {
		return err
	}
	return predictEmit(o, w, []predictResult{{User: o.User, Item: o.Item, Time: t, Prediction: v, Fallback: fb.String()}})
}

// predictStrict is the --strict check of one prediction.
func predictStrict(strict bool, fb models.Fallback, user, item string) error {
	if !strict {
		return nil
	}
	if fb&models.UnknownUser != 0 {
		return fmt.Errorf("unknown user %q (--strict)", user)
	}
	if fb&models.UnknownItem != 0 {
		return fmt.Errorf("unknown item %q (--strict)", item)
	}
	return nil
}

// predictEmit writes a few predictions in o's format; one prediction with
// --json on the output stream is one JSON object.
func predictEmit(o *predictOptions, w io.Writer, rs []predictResult) error {
	if o.Format == "json" && len(rs) == 1 && o.Out == "" {
		return json.NewEncoder(w).Encode(rs[0])
	}
	sink, err := newPredictSink(o.Format, w, false)
	if err != nil {
		return err
	}
	for _, r := range rs {
		if err := sink.Write(r); err != nil {
			return err
		}
	}
	return sink.Close()
}

// predictMany predicts every user,item[,time] row of the CSV file o.Input.
func predictMany(o *predictOptions, s *iostreams, p *models.Predictor, w io.Writer) error {
	path := o.Input
	var r io.Reader
	if path == "-" {
		r = s.In
	} else {
		fh, err := os.Open(path)
		if err != nil {
			return err
		}
		defer fh.Close()
		r = fh
	}
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	cr.TrimLeadingSpace = true
	sink, err := newPredictSink(o.Format, w, false)
	if err != nil {
		return err
	}
	timeless, noted := p.File().Model.Order() < 3, false
	for line := 1; ; line++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if line == 1 && len(rec) > 0 && predictIsHeader(rec[0]) {
			continue
		}
		if len(rec) < 2 || len(rec) > 3 {
			return fmt.Errorf("%s:%d: want user,item[,time], got %d fields (a rating log is read with --columns)", path, line, len(rec))
		}
		for i, what := range []string{"user", "item"} {
			if strings.TrimSpace(rec[i]) == "" {
				return fmt.Errorf("%s:%d: empty %s id", path, line, what)
			}
		}
		var t *int64
		if len(rec) == 3 {
			if t, err = predictParseTime(rec[2]); err != nil {
				return fmt.Errorf("%s:%d: %w", path, line, err)
			}
			if timeless && t != nil {
				// Not echoed as if it had been used.
				if !o.Quiet && !noted {
					fmt.Fprintf(s.Err, "dprec: %s: the model has no time mode: its time column is ignored\n", path)
				}
				t, noted = nil, true
			}
		}
		v, fb := p.Predict(rec[0], rec[1], t)
		if err := predictStrict(o.Strict, fb, rec[0], rec[1]); err != nil {
			return fmt.Errorf("%s:%d: %w", path, line, err)
		}
		if err := sink.Write(predictResult{User: rec[0], Item: rec[1], Time: t, Prediction: v, Fallback: fb.String()}); err != nil {
			return err
		}
	}
	return sink.Close()
}

// predictReadPairs calls fn with the first field (the item) of every data
// row of a fold-in ratings CSV.
func predictReadPairs(path string, fn func(item string)) error {
	fh, err := os.Open(path)
	if err != nil {
		return err
	}
	defer fh.Close()
	cr := csv.NewReader(fh)
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	for line := 1; ; line++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if (line == 1 && predictIsHeader(rec[0])) || len(rec) < 2 {
			continue
		}
		fn(strings.TrimSpace(rec[0]))
	}
}

// predictIsHeader recognises a header row by its first field's name.
func predictIsHeader(s string) bool {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "user", "userid", "user_id", "item", "itemid", "item_id", "movieid":
		return true
	}
	return false
}

// predictFoldIn reads a new user's ratings (CSV item,rating[,time], with an
// optional header) and solves the user's factor row (and bias) against the
// frozen model by regularised least squares (decomposition.FoldIn). It
// returns the row and a note saying what was used. lambda is --fold-lambda
// (0: the default penalty).
func predictFoldIn(p *models.Predictor, path string, lambda float64) (models.Row, string, error) {
	f := p.File()
	m := f.Model
	fh, err := os.Open(path)
	if err != nil {
		return models.Row{}, "", err
	}
	defer fh.Close()
	cr := csv.NewReader(fh)
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	var items, times []int32
	var ratings []float64
	unknown, noTime := 0, 0
	for line := 1; ; line++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return models.Row{}, "", fmt.Errorf("%s: %w", path, err)
		}
		if line == 1 && len(rec) > 0 && predictIsHeader(rec[0]) {
			continue
		}
		if len(rec) < 2 || len(rec) > 3 {
			return models.Row{}, "", fmt.Errorf("%s:%d: want item,rating[,time], got %d fields", path, line, len(rec))
		}
		r, err := strconv.ParseFloat(strings.TrimSpace(rec[1]), 64)
		if err != nil || r != r || r > 1e300 || r < -1e300 {
			return models.Row{}, "", fmt.Errorf("%s:%d: rating %q is not a finite number", path, line, rec[1])
		}
		j, ok := p.ItemIndex(strings.TrimSpace(rec[0]))
		if !ok {
			unknown++
			continue
		}
		if m.Order() == 3 {
			var t *int64
			if len(rec) == 3 {
				if t, err = predictParseTime(rec[2]); err != nil {
					return models.Row{}, "", fmt.Errorf("%s:%d: %w", path, line, err)
				}
			}
			k := int32(f.Time.Count - 1)
			if t != nil {
				k, _ = f.Time.Bucket(*t)
			} else {
				noTime++
			}
			times = append(times, k)
		}
		items = append(items, j)
		ratings = append(ratings, r)
	}
	return predictSolve(p, path, lambda, items, times, ratings, unknown, noTime)
}

// predictSolve solves a user's row from their ratings of known items (the
// fold-in), for predictFoldIn and predictUserLog, with ridge penalty lambda
// (0: the default).
func predictSolve(p *models.Predictor, path string, lambda float64, items, times []int32, ratings []float64, unknown, noTime int) (models.Row, string, error) {
	f := p.File()
	m := f.Model
	if len(ratings) == 0 {
		return models.Row{}, "", fmt.Errorf("%s: no rating of an item the model knows (%d unknown items)", path, unknown)
	}
	if f.Header.Objective == models.ObjectiveImplicit {
		return implicitFoldIn(f, path, items, ratings, unknown)
	}
	if f.ItemItem() {
		return itemItemHistory(path, items, unknown)
	}
	// Ratings outside the model's prediction range (a private model's
	// public scale) are clamped to it, as training clamped its own, and
	// counted in the note.
	clamped := 0
	if m.Clamps() {
		for i, r := range ratings {
			if c := m.Clamp(r); c != r {
				ratings[i] = c
				clamped++
			}
		}
	}
	pen := decomposition.FoldPenalties{Row: lambda}
	if f.Billboard() {
		// The billboard modes fold in with their public penalties, with the
		// user's own time-bucket biases (completion.BillboardFoldFor:
		// private ALS adds its training's per-rating ridge).
		pen = completion.BillboardFoldFor(f.Privacy)
		if lambda != 0 {
			pen.Row, pen.PerRating = lambda, 0
		}
		if noTime > 0 {
			// An undated rating has no day of its own: no bucket biases
			// (else the last bucket's would stand for "undated").
			pen.Bucket = 0
		}
	} else if lambda == 0 {
		reg := completion.DefaultReg
		var s struct{ Reg float64 }
		if json.Unmarshal(f.Header.Settings, &s) == nil && s.Reg > 0 {
			reg = s.Reg
		}
		pen.Row = reg * float64(len(ratings))
	}
	lambda = pen.Row + pen.PerRating*float64(len(ratings))
	fu, err := decomposition.FoldInUser(m, items, times, ratings, pen)
	if err != nil {
		return models.Row{}, "", fmt.Errorf("%s: fold-in: %w", path, err)
	}
	x := fu.Row
	R := m.Ranks[0]
	row := models.Row{Factor: x[:R], Buckets: fu.Buckets, BucketBias: fu.BucketBias}
	if len(x) > R {
		row.Bias = x[R]
	}
	if f.RankingWeights() {
		// Lists rank by the ranking weights over the user's history.
		row.Items = slices.Compact(slices.Sorted(slices.Values(items)))
	}
	note := fmt.Sprintf("folded in %d ratings from %s (lambda %g)", len(ratings), path, lambda)
	if pen.PerRating > 0 {
		note = fmt.Sprintf("folded in %d ratings from %s (lambda %g = %g + %g per rating, the training's user solve)", len(ratings), path, lambda, pen.Row, pen.PerRating)
	}
	if len(fu.Buckets) > 0 {
		note += fmt.Sprintf(", with the user's biases on %d time buckets (lambda_t %g)", len(fu.Buckets), pen.Bucket)
	}
	if unknown > 0 {
		note += fmt.Sprintf("; %d ratings of unknown items ignored", unknown)
	}
	if noTime > 0 {
		note += fmt.Sprintf("; %d ratings without time placed in the last trained bucket", noTime)
	}
	if clamped > 0 {
		note += fmt.Sprintf("; %d ratings outside the model's range [%g, %g] clamped to it", clamped, m.ClampLo+0, m.ClampHi) // +0: [-0, 0] prints as [0, 0]
	}
	return row, note, nil
}

// predictUserLog folds o.User in from that user's rows of the rating log
// o.UserLog: the billboard model's prediction for a user from their own
// ratings only.
func predictUserLog(o *predictOptions, s *iostreams, p *models.Predictor) (models.Row, string, error) {
	path, user := o.UserLog, o.User
	st, _, err := loadLog(s, o.globalOptions, path, o.Load)
	if err != nil {
		return models.Row{}, "", err
	}
	users := st.Dicts[0]
	var u int32
	ok := false
	if users.IsString {
		u, ok = users.LookupString(user)
	} else if id, err := strconv.ParseInt(user, 10, 64); err == nil {
		u, ok = users.LookupInt(id)
	}
	if !ok {
		return models.Row{}, "", fmt.Errorf("%s: user %q has no rating in the log", path, user)
	}
	f := p.File()
	var items, times []int32
	var ratings []float64
	unknown := 0
	for e, v := range st.Idx[0] {
		if v != u {
			continue
		}
		j, ok := p.ItemIndex(st.Dicts[1].String(st.Idx[1][e]))
		if !ok {
			unknown++
			continue
		}
		if f.Model.Order() == 3 {
			k := int32(f.Time.Count - 1)
			if st.Order() == 3 {
				k, _ = f.Time.Bucket(st.Time.Start(st.Idx[2][e]))
			}
			times = append(times, k)
		}
		items = append(items, j)
		ratings = append(ratings, st.Val[e])
	}
	return predictSolve(p, path+" (user "+user+")", o.FoldLambda, items, times, ratings, unknown, 0)
}
