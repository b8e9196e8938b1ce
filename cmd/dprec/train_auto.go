package main

import (
	"github.com/dprec/dprec/decomposition"
	"github.com/urfave/cli/v2"
)

// trainRatingOnlyFlags are the flags of the rating objective that
// --objective implicit does not use (trainImplicitSettings refuses them).
var trainRatingOnlyFlags = []string{"ranks", "solver", "lr", "decay", "reg-core", "reg-bias", "reg-time", "time-biases", "item-periods", "reg-pair", "refit", "patience", "epochs", "validation", "clamp"}

// trainRatingOnlyFlag returns a flag given to train that only the rating
// objective uses ("--privacy", "--model tucker" or one of
// trainRatingOnlyFlags), or "".
func trainRatingOnlyFlag(c *cli.Context) string {
	if p := c.String("privacy"); p != "" && p != "none" && !(p == "als" && c.String("privacy-unit") == "user") {
		// als at the user unit is the implicit objective's private mode
		// too.
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
