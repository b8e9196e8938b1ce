package models_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/models"
)

// A rank-1 matrix-factorisation model of 2 users x 3 items, saved, loaded
// and queried by external id. Items 10 and 20 tie for bob at 2.5; the
// lower item index ranks first.
func Example() {
	m, _ := decomposition.NewModel(decomposition.CP, []int{2, 3}, []int{1}, true)
	copy(m.Factors[0], []float64{1, -1})      // users
	copy(m.Factors[1], []float64{0.5, 1, -1}) // items
	m.Mean = 3
	copy(m.Bias[1], []float64{0, 0.5, 0})
	m.ClampLo, m.ClampHi = 1, 5
	users, _ := data.DictFromStrings("user", []string{"ann", "bob"})
	items, _ := data.DictFromInts("movieId", []int64{10, 20, 30})

	dir, _ := os.MkdirTemp("", "models-example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "model.arrow")
	if err := models.Save(path, &models.File{Model: m, Dicts: []*data.Dict{users, items}}, false); err != nil {
		fmt.Println(err)
		return
	}
	f, err := models.Load(path)
	if err != nil {
		fmt.Println(err)
		return
	}
	p := models.NewPredictor(f)
	for _, q := range [][2]string{{"ann", "20"}, {"bob", "30"}, {"carl", "20"}, {"ann", "99"}} {
		v, fb := p.Predict(q[0], q[1], nil)
		fmt.Printf("%s %s: %.2f (%s)\n", q[0], q[1], v, fb)
	}
	recs, _ := p.Recommend("bob", nil, 2, nil)
	for _, r := range recs {
		fmt.Printf("bob: item %s score %.2f\n", r.ID, r.Rating)
	}
	fmt.Println("privacy:", f.Privacy.Mode)
	// Output:
	// ann 20: 4.50 (none)
	// bob 30: 4.00 (none)
	// carl 20: 3.50 (unknown-user)
	// ann 99: 3.00 (unknown-item)
	// bob: item 30 score 4.00
	// bob: item 10 score 2.50
	// privacy: none
}
