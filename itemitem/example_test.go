package itemitem_test

import (
	"context"
	"fmt"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/itemitem"
	"github.com/dprec/dprec/models"
)

// Train EASE on a tiny click log and recommend: user 4 watched "alien";
// the users who watched "alien" also watched "aliens" more than anything
// else.
func ExampleTrain() {
	users, items := data.NewStringDict("user"), data.NewStringDict("item")
	b := data.NewBuilder(users, items, false, data.BuilderOptions{TimeUnit: data.TimeNone})
	for _, e := range [][2]string{
		{"u1", "alien"}, {"u1", "aliens"}, {"u1", "heat"},
		{"u2", "alien"}, {"u2", "aliens"},
		{"u3", "alien"}, {"u3", "aliens"}, {"u3", "up"},
		{"u4", "alien"},
		{"u5", "up"}, {"u5", "heat"}, {"u6", "up"}, {"u6", "heat"},
	} {
		b.Add(users.InternString(e[0]), items.InternString(e[1]), 1, 0)
	}
	st, _, err := b.Finish()
	if err != nil {
		panic(err)
	}
	res, err := itemitem.Train(context.Background(), st, itemitem.Settings{Lambda: 1})
	if err != nil {
		panic(err)
	}
	f, err := res.File(st)
	if err != nil {
		panic(err)
	}
	p := models.NewPredictor(f)
	u, _ := p.UserIndex("u4")
	recs, _ := p.Recommend("u4", nil, 1, f.Seen.Items(u))
	fmt.Printf("%s %.3f\n", recs[0].ID, recs[0].Score)
	// Output: aliens 0.571
}
