package dprec_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"github.com/dprec/dprec"
	"github.com/dprec/dprec/completion"
	"github.com/dprec/dprec/data"
)

// Train the default model: CP rank 10 with biases, by the Gibbs sampler,
// 10% held out to choose the number of sweeps, then a refit on every
// rating. The result records what the run chose.
func ExampleFit_defaults() {
	dir, _ := os.MkdirTemp("", "dprec-example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "ratings.csv")
	if err := writeLog(path); err != nil {
		fmt.Println(err)
		return
	}
	res, err := dprec.Fit(context.Background(), path, &dprec.Options{Seed: 1, Settings: completion.Settings{Threads: 1, Epochs: 20}})
	if err != nil {
		fmt.Println(err)
		return
	}
	m := res.File().Model
	fmt.Println("objective:", res.Objective, "kind:", m.Kind, "ranks:", m.Ranks)
	fmt.Println("solver:", res.Rating.Settings.Solver, "refit on all ratings:", res.Refit)
	fmt.Println("held out:", res.ValidRatings > 0, "private:", res.Rating.Privacy.Private())
	// Output:
	// objective: rating kind: cp ranks: [10 10 10]
	// solver: gibbs refit on all ratings: true
	// held out: true private: false
}

// A click log has no rating column: the automatic objective trains the
// implicit one (weighted ALS, repeated clicks adding up; Rank asks for
// this factor model, without it the EASE item-item model is chosen for a
// catalogue this small) and says why.
func ExampleFit_implicit() {
	dir, _ := os.MkdirTemp("", "dprec-example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "clicks.csv")
	r := rand.New(rand.NewPCG(3, 4))
	var b strings.Builder
	b.WriteString("user,item\n")
	for u := 1; u <= 50; u++ {
		for range 8 {
			// Users click the items of their own group of thirty.
			fmt.Fprintf(&b, "%d,%d\n", u, (u%3)*30+1+r.IntN(30))
		}
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		fmt.Println(err)
		return
	}
	res, err := dprec.Fit(context.Background(), path, &dprec.Options{Seed: 1, Rank: 4,
		Load: data.LoadOptions{Columns: data.Columns{Order: []string{"user", "item"}}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("objective:", res.Objective)
	fmt.Println(strings.Contains(res.ObjectiveNote, "has no rating column"))
	recs, _, _ := res.Recommend("3", 3) // user 3 is in group 0: items 1-30
	inGroup := 0
	for _, s := range recs {
		var id int
		fmt.Sscan(s.ID, &id)
		if id >= 1 && id <= 30 {
			inGroup++
		}
	}
	fmt.Println("top 3 in the user's group:", inGroup)
	// Output:
	// objective: implicit
	// true
	// top 3 in the user's group: 3
}

// Train privately at user level: private ALS releases the item side
// under (epsilon, delta)-DP for adding or removing one user with all their
// ratings (at most MaxRatingsPerUser kept), on a public item catalogue.
// The model file holds no user: a user's row is solved at prediction time
// from their own ratings. Seeded here to give the same output every run,
// which makes it NOT private; leave Seed unset for a release.
func ExampleFit_privateUserLevel() {
	dir, _ := os.MkdirTemp("", "dprec-example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "ratings.csv")
	if err := writeLog(path); err != nil {
		fmt.Println(err)
		return
	}
	var ids []string
	for j := 1; j <= 40; j++ {
		ids = append(ids, fmt.Sprint(j))
	}
	items, err := data.DictFromStrings("item", ids)
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := dprec.Fit(context.Background(), path, &dprec.Options{Rank: 2, TimeUnit: data.TimeNone, Seed: 1,
		Privacy: &dprec.Privacy{Mode: dprec.PrivacyALS, Items: items, PrivateOptions: completion.PrivateOptions{
			Epsilon: 3, Delta: 1e-6, RatingMin: 1, RatingMax: 5,
			Unit: completion.UnitUser, MaxRatingsPerUser: 20}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	rep := res.File().Privacy
	fmt.Printf("mode %s, unit %s, epsilon %.4g, delta %.3g\n", rep.Mode, rep.Unit, rep.Epsilon, rep.Delta)
	fmt.Println("users in the file:", res.File().Model.Dims[0], "items:", res.File().Model.Dims[1])
	fmt.Println("randomness:", rep.Randomness)
	// Output:
	// mode als, unit user, epsilon 3, delta 1e-06
	// users in the file: 1 items: 40
	// randomness: seeded (reproducible, NOT private)
}
