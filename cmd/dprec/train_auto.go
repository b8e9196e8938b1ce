package main

import (
	"fmt"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/models"
	"github.com/urfave/cli/v2"
)

// trainRatingOnlyFlags are the flags of the rating objective that
// --objective implicit does not use (trainImplicitSettings refuses them).
var trainRatingOnlyFlags = []string{"ranks", "solver", "lr", "decay", "reg-core", "reg-bias", "reg-time", "time-biases", "item-periods", "reg-pair", "refit", "patience", "epochs", "validation", "clamp"}

// trainRatingOnlyFlag returns a flag given to train that only the rating
// objective uses ("--privacy", "--model tucker" or one of
// trainRatingOnlyFlags), or "".
func trainRatingOnlyFlag(c *cli.Context) string {
	if p := c.String("privacy"); p != "" && p != "none" {
		return "--privacy " + p
	}
	if c.String("model") != string(decomposition.CP) {
		return "--model " + c.String("model")
	}
	for _, f := range trainRatingOnlyFlags {
		if c.IsSet(f) {
			return "--" + f
		}
	}
	return ""
}

// trainNoRatingColumn reports whether --columns says the --data log has
// no rating column (every row counts 1).
func trainNoRatingColumn(c *cli.Context) bool {
	if c.String("data") == "" {
		return false
	}
	cols, err := dataParseColumns(c.String("columns"))
	return err == nil && cols.NoRating()
}

// trainOneValue reports whether every rating of st has the same value,
// and that value.
func trainOneValue(st *data.Store) (float64, bool) {
	if len(st.Val) == 0 {
		return 0, false
	}
	v := st.Val[0]
	for _, x := range st.Val[1:] {
		if x != v {
			return 0, false
		}
	}
	return v, true
}

// trainAutoImplicit: without --objective, a log with no rating column or
// whose ratings all have one value is implicit feedback (issue 23): there
// is no rating to fit, only which (user, item) cells occur. It returns the
// objective to train with and a note saying why ("" when --objective was
// given or the log has ratings to fit). A run given a flag of the rating
// objective only (--privacy, --solver, --epochs, ...) keeps that objective,
// and the note says so.
func trainAutoImplicit(c *cli.Context, st *data.Store, src string) (obj, note string) {
	obj = c.String("objective")
	if c.IsSet("objective") {
		return obj, ""
	}
	var why string
	if trainNoRatingColumn(c) {
		why = src + " has no rating column"
	} else if v, ok := trainOneValue(st); ok {
		why = fmt.Sprintf("every rating of %s is %g", src, v)
	} else {
		return obj, ""
	}
	if f := trainRatingOnlyFlag(c); f != "" {
		return models.ObjectiveRating, fmt.Sprintf("note: %s, but %s applies to the rating objective only: trained with the rating objective (--objective implicit for the implicit one)", why, f)
	}
	return models.ObjectiveImplicit, fmt.Sprintf("note: %s: trained with the implicit objective (every event a positive, every other cell a zero); --objective rating fits the ratings instead", why)
}
