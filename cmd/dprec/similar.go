package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/dprec/dprec/models"
	"github.com/urfave/cli/v2"
)

// similarCmd builds the "dprec similar" command (listed in commands.go).
func similarCmd() *cli.Command {
	return &cli.Command{
		Name:  "similar",
		Usage: "items (or users) most similar to one item (user): cosine of their factor embeddings",
		Description: `Ranks every other item (with --item) or user (with --user) by the cosine
similarity of their embeddings: the factor rows, multiplied elementwise by the
time-averaged time row for an order-3 CP model (the vector recommend's
time-averaged score is linear in). Output columns: id,rank,similar,cosine.
An unknown id is an error (exit 1).`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "model", Aliases: []string{"m"}, Required: true, Usage: "model file"},
			&cli.StringFlag{Name: "item", Usage: "item id"},
			&cli.StringFlag{Name: "user", Usage: "user id"},
			&cli.IntFlag{Name: "top", Aliases: []string{"n"}, Value: 10, Usage: "number of neighbours"},
			&cli.BoolFlag{Name: "json", Usage: "JSON output"},
		},
		Action: runWithOptions(similarOptionsOf, similarRun),
	}
}

// similarOptions are the flags of dprec similar.
type similarOptions struct {
	globalOptions
	Model      string // --model
	Item, User string // --item or --user: whose neighbours (exactly one)
	Top        int    // --top
	JSON       bool   // --json
}

// similarOptionsOf reads similar's flags.
func similarOptionsOf(c *cli.Context) (*similarOptions, error) {
	o := &similarOptions{globalOptions: globalOptionsOf(c), Model: c.String("model"),
		Item: c.String("item"), User: c.String("user"), Top: c.Int("top"), JSON: c.Bool("json")}
	if (o.Item == "") == (o.User == "") {
		return nil, cli.Exit("similar: give exactly one of --item or --user", exitUsage)
	}
	if o.Top <= 0 {
		return nil, cli.Exit(fmt.Sprintf("--top %d: must be positive", o.Top), exitUsage)
	}
	return o, nil
}

// similarRun prints the o.Top nearest items (users) of o.Item (o.User) on
// s.Out.
func similarRun(o *similarOptions, s *iostreams) error {
	item, user, n := o.Item, o.User, o.Top
	p, err := loadPredictor(s, o.globalOptions, o.Model)
	if err != nil {
		return err
	}
	var out []models.Neighbor
	id, kind := item, "item"
	if item != "" {
		out, err = p.SimilarItems(item, n)
	} else {
		id, kind = user, "user"
		out, err = p.SimilarUsers(user, n)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", o.Model, err)
	}
	w := s.Out
	if o.JSON {
		return json.NewEncoder(w).Encode(struct {
			Kind    string            `json:"kind"`
			ID      string            `json:"id"`
			Similar []models.Neighbor `json:"similar"`
		}{kind, id, out})
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, "id,rank,similar,cosine")
	q := recommendQuote(id)
	for i, nb := range out {
		fmt.Fprintf(bw, "%s,%d,%s,%s\n", q, i+1, recommendQuote(nb.ID), strconv.FormatFloat(nb.Cosine, 'g', 6, 64))
	}
	return bw.Flush()
}
