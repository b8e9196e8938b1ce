package itemitem

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/models"
	"gonum.org/v1/gonum/mat"
)

// TestClosedForm checks B = I - P diag(1/diag(P)) against a direct solve of
// the constrained least squares: column j of B is the ridge regression of
// X's column j on the other columns (diag(B) = 0), solved with gonum's
// dense solver, on a tiny random binary matrix.
func TestClosedForm(t *testing.T) {
	const U, J, lambda = 40, 7, 2.5
	rng := rand.New(rand.NewPCG(3, 4))
	x := mat.NewDense(U, J, nil)
	h := histories{ptr: make([]int64, U+1)}
	for u := 0; u < U; u++ {
		for j := 0; j < J; j++ {
			if rng.Float64() < 0.35 {
				x.Set(u, j, 1)
				h.items = append(h.items, int32(j))
			}
		}
		h.ptr[u+1] = int64(len(h.items))
	}
	cat := []int32{0, 1, 2, 3, 4, 5, 6}
	b, err := fit(h, J, cat, lambda, 3)
	if err != nil {
		t.Fatal(err)
	}
	for j := 0; j < J; j++ {
		if b[j*J+j] != 0 {
			t.Fatalf("B[%d][%d] = %g, want 0", j, j, b[j*J+j])
		}
		// Regressors: every column but j.
		others := make([]int, 0, J-1)
		for i := 0; i < J; i++ {
			if i != j {
				others = append(others, i)
			}
		}
		a := mat.NewDense(U, J-1, nil)
		for r := 0; r < U; r++ {
			for c, i := range others {
				a.Set(r, c, x.At(r, i))
			}
		}
		var ata mat.Dense
		ata.Mul(a.T(), a)
		for c := 0; c < J-1; c++ {
			ata.Set(c, c, ata.At(c, c)+lambda)
		}
		var aty, sol mat.Dense
		aty.Mul(a.T(), x.ColView(j))
		if err := sol.Solve(&ata, &aty); err != nil {
			t.Fatal(err)
		}
		for c, i := range others {
			if got, want := b[i*J+j], sol.At(c, 0); math.Abs(got-want) > 1e-10*(1+math.Abs(want)) {
				t.Fatalf("B[%d][%d] = %.15g, direct ridge solve %.15g", i, j, got, want)
			}
		}
	}
}

// blockLog plants structure a popularity ranking cannot see: users
// belong to one of 10 blocks of 15 items and take 6 items of their block;
// everyone also takes each of 10 globally popular items with probability
// 1/2. The test part holds one more block item per user.
func blockLog(t testing.TB) (train, test *data.Store) {
	t.Helper()
	const users, blocks, size, popular = 400, 10, 15, 10
	rng := rand.New(rand.NewPCG(11, 12))
	build := func(add func(b *data.Builder)) *data.Store {
		ud, id := data.NewIntDict("user"), data.NewIntDict("item")
		b := data.NewBuilder(ud, id, false, data.BuilderOptions{TimeUnit: data.TimeNone})
		add(b)
		st, _, err := b.Finish()
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	type ev struct{ u, j int }
	var tr, te []ev
	for u := 0; u < users; u++ {
		c := u % blocks
		perm := rng.Perm(size)
		for k := 0; k < 7; k++ {
			e := ev{u, c*size + perm[k]}
			if k == 6 {
				te = append(te, e)
			} else {
				tr = append(tr, e)
			}
		}
		for p := 0; p < popular; p++ {
			if rng.IntN(2) == 0 {
				tr = append(tr, ev{u, blocks*size + p})
			}
		}
	}
	add := func(evs []ev) func(b *data.Builder) {
		return func(b *data.Builder) {
			for _, e := range evs {
				b.Add(b.Users.InternInt(int64(e.u)), b.Items.InternInt(int64(e.j)), 1, 0)
			}
		}
	}
	return build(add(tr)), build(add(te))
}

// TestBeatsPopularity trains EASE (lambda chosen on validation) on the
// planted block log, saves and loads the model, and evaluates it with
// models.Evaluate: its NDCG@10 must be far above most-popular's, so the
// test fails if the ranking degrades to popularity.
func TestBeatsPopularity(t *testing.T) {
	train, test := blockLog(t)
	var notes []string
	res, err := Train(context.Background(), train, Settings{Note: func(s string) { notes = append(notes, s) }})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Chosen || len(res.Grid) != 7 || res.Lambda <= 0 || len(notes) == 0 {
		t.Fatalf("lambda %g chosen %v grid %v notes %q", res.Lambda, res.Chosen, res.Grid, notes)
	}
	best := slices.MaxFunc(res.Grid, func(a, b GridPoint) int { return cmpF(a.NDCG, b.NDCG) })
	if best.Lambda != res.Lambda || !(best.NDCG > 1.1*res.PopularityNDCG) {
		t.Fatalf("validation: best %+v, chosen %g, most-popular %.4f", best, res.Lambda, res.PopularityNDCG)
	}
	f, err := res.File(train)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "ease.arrow")
	if err := models.Save(path, f, false); err != nil {
		t.Fatal(err)
	}
	g, err := models.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if g.Header.Version != models.FormatVersion || g.Header.Objective != models.ObjectiveItemItem || g.Weights.NNZ() != f.Weights.NNZ() {
		t.Fatalf("loaded version %d objective %q nnz %d", g.Header.Version, g.Header.Objective, g.Weights.NNZ())
	}
	p := models.NewPredictor(g)
	ev, err := models.Evaluate(p, test, models.EvalOptions{K: 10, Threshold: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("lambda %.4g: test NDCG@10 %.4f, most-popular %.4f (validation grid %v)", res.Lambda, ev.NDCG, ev.Popularity.NDCG, res.Grid)
	if ev.RankedUsers != 400 || !(ev.NDCG > 0.15) || !(ev.NDCG > 5*ev.Popularity.NDCG) {
		t.Fatalf("EASE NDCG@10 %.4f vs most-popular %.4f on %d users: the ranking degraded toward popularity", ev.NDCG, ev.Popularity.NDCG, ev.RankedUsers)
	}
}

// TestServe checks the loaded model serves like the trained one:
// Recommend equals RecommendAll, leaves out seen items, scores are the
// weights summed over the history, unknown users get popularity, and
// similar items share a block.
func TestServe(t *testing.T) {
	train, _ := blockLog(t)
	res, err := Train(context.Background(), train, Settings{Lambda: 20})
	if err != nil {
		t.Fatal(err)
	}
	if res.Chosen || res.Grid != nil {
		t.Fatal("a given lambda was searched")
	}
	f, err := res.File(train)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "ease.arrow")
	if err := models.Save(path, f, false); err != nil {
		t.Fatal(err)
	}
	g, err := models.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	p := models.NewPredictor(g)
	all := map[int32][]models.Scored{}
	if err := p.RecommendAll(5, nil, 2, g.Seen, func(u int32, recs []models.Scored) error {
		all[u] = recs
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, u := range []int32{0, 7, 399} {
		id := p.UserID(u)
		recs, fb := p.Recommend(id, nil, 5, g.Seen.Items(u))
		if fb != models.FallbackNone || len(recs) != 5 {
			t.Fatalf("user %s: %v %v", id, recs, fb)
		}
		for k := range recs {
			if recs[k].Item != all[u][k].Item || recs[k].Score != all[u][k].Score {
				t.Fatalf("user %s: Recommend %v, RecommendAll %v", id, recs, all[u])
			}
			if _, seen := slices.BinarySearch(g.Seen.Items(u), recs[k].Item); seen {
				t.Fatalf("user %s: seen item %d recommended", id, recs[k].Item)
			}
			want := 0.0
			for _, i := range g.Seen.Items(u) {
				cols, vals := g.Weights.Row(i)
				if c, ok := slices.BinarySearch(cols, recs[k].Item); ok {
					want += vals[c]
				}
			}
			if math.Abs(recs[k].Score-want) > 1e-12 {
				t.Fatalf("score %g, sum of weights %g", recs[k].Score, want)
			}
			if v, _ := p.Predict(id, recs[k].ID, nil); v != recs[k].Score {
				t.Fatalf("Predict %g, Recommend %g", v, recs[k].Score)
			}
		}
	}
	recs, fb := p.Recommend("no such user", nil, 3, nil)
	if fb != models.UnknownUser || len(recs) != 3 || g.Dicts[1].Int(recs[0].Item) < 150 {
		t.Fatalf("unknown user: %v %v", recs, fb)
	}
	nb, err := p.SimilarItems("3", 5) // block 0: items 0..14
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nb {
		j, _ := p.ItemIndex(n.ID)
		if id := g.Dicts[1].Int(j); id >= 15 {
			t.Fatalf("item 3's neighbours %v leave its block", nb)
		}
	}
	if _, err := p.SimilarUsers("0", 3); err != nil {
		t.Fatal(err)
	}
}

// TestTooLarge: a catalogue whose closed form exceeds the memory limit is
// refused with the figure before it is allocated.
func TestTooLarge(t *testing.T) {
	train, _ := blockLog(t)
	_, err := Train(context.Background(), train, Settings{Lambda: 1, MaxMemory: 1 << 10})
	var tl *TooLargeError
	if !errors.As(err, &tl) || !errors.Is(err, ErrTooLarge) || tl.Items != 160 || tl.Need != Estimate(160, 400, train.NNZ()) {
		t.Fatalf("err %v", err)
	}
	// A bounded catalogue fits B over the most popular items only.
	res, err := Train(context.Background(), train, Settings{Lambda: 1, MaxItems: 10})
	if err != nil || res.Items != 10 || res.Catalogue != 160 {
		t.Fatalf("%v %+v", err, res)
	}
	for j := 0; j < 160; j++ {
		c, _ := res.Weights.Row(int32(j))
		if popular := train.Dicts[1].Int(int32(j)) >= 150; popular != (len(c) > 0) {
			t.Fatalf("item %d (popular %v) has %d weights", j, popular, len(c))
		}
	}
}
