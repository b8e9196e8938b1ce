package cape

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/otd"
	"github.com/dprec/dprec/perturb"
	"gonum.org/v1/gonum/mat"
)

func equalSites(rows []*mat.Dense, eps, delta float64) []SiteInput {
	out := make([]SiteInput, len(rows))
	for i, x := range rows {
		out[i] = SiteInput{Data: &SiteData{Rows: x}, Epsilon: eps, Delta: delta}
	}
	return out
}

// TestCapePCAOrdering checks, averaged over seeds, q_CE(non-private) >=
// q_CE(capePCA) > q_CE(conv) > q_CE(local) in a noise-dominated setting,
// and that capePCA with a huge epsilon matches the non-private subspace.
func TestCapePCAOrdering(t *testing.T) {
	const S, N, D, K = 8, 100, 20, 4
	rows, err := SyntheticPCA(S, N, D, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	A := SecondMoment(rows...)
	sites := equalSites(rows, 0.5, 1e-3)
	np, _ := NonPrivatePCA(K, sites)
	qnp := CapturedEnergy(np.V, A)
	var qc, qv, ql float64
	const reps = 8
	for rep := 0; rep < reps; rep++ {
		res, _, err := CapePCA(context.Background(), K, sites, "", RunOptions{Seeded: true, Seed: uint64(rep)})
		if err != nil {
			t.Fatal(err)
		}
		qc += CapturedEnergy(res.V, A) / reps
		r := rand.New(perturb.StreamSource(uint64(rep), 77))
		cv, err := ConvPCA(K, sites, "", false, r)
		if err != nil {
			t.Fatal(err)
		}
		qv += CapturedEnergy(cv.V, A) / reps
		lc, err := LocalPCA(K, sites[0], "", r)
		if err != nil {
			t.Fatal(err)
		}
		ql += CapturedEnergy(lc.V, A) / reps
	}
	t.Logf("q_CE: non-private %.4f cape %.4f conv %.4f local %.4f", qnp, qc, qv, ql)
	if !(qnp >= qc && qc > qv && qv > ql) {
		t.Errorf("q_CE order violated: non-private %.4f cape %.4f conv %.4f local %.4f", qnp, qc, qv, ql)
	}
	big := equalSites(rows, 500, 1e-3)
	res, _, err := CapePCA(context.Background(), K, big, "", RunOptions{Seeded: true, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	if q := CapturedEnergy(res.V, A); math.Abs(q-qnp) > 1e-3*qnp {
		t.Errorf("epsilon = 500: q_CE %.6f, non-private %.6f", q, qnp)
	}
}

func mogSites(t *testing.T, S, N, D, K int, eps, delta float64, seed uint64) ([]SiteInput, *mat.Dense, float64) {
	t.Helper()
	syn, scale, err := otd.SyntheticMoG(D, K, S*N, 0.05, 1, rand.NewPCG(seed, 3))
	if err != nil {
		t.Fatal(err)
	}
	X := syn.Input.Rows
	rows := make([]*mat.Dense, S)
	for s := 0; s < S; s++ {
		rows[s] = mat.DenseCopyOf(X.Slice(s*N, (s+1)*N, 0, D))
	}
	return equalSites(rows, eps, delta), syn.A, 0.05 / (scale * scale)
}

func TestCapeAGNRecoversAndCountsTraffic(t *testing.T) {
	const S, N, D, K = 3, 2000, 8, 3
	sites, Atrue, s2 := mogSites(t, S, N, D, K, 400, 1e-3, 11)
	job := Job{Kind: JobAGN, D: D, K: K, Model: ModelMOG, Sigma2: s2}
	res, run, err := CapeAGN(context.Background(), job, sites, RunOptions{Seeded: true, Seed: 3}, otd.TPMOptions{}, rand.NewPCG(1, 1))
	if err != nil {
		t.Fatal(err)
	}
	np, err := NonPrivateAGN(job, sites, otd.TPMOptions{}, rand.NewPCG(1, 1))
	if err != nil {
		t.Fatal(err)
	}
	ec, en := otd.ECompRaw(Atrue, res.A), otd.ECompRaw(Atrue, np.A)
	t.Logf("e_comp cape %.4f non-private %.4f", ec, en)
	if ec > en+0.02 {
		t.Errorf("capeAGN at epsilon = 400: e_comp %.4f, non-private %.4f", ec, en)
	}
	// Communication: the dense-object count equals Imtiaz and Sarwate 2018b's formula, and
	// each role's share is as derived there.
	var total int64
	for _, tr := range run.Traffic {
		total += tr.SentDense
	}
	if want := PaperVolume(S, D, K); total != want {
		t.Errorf("dense traffic %d, paper's 3SD^2+2SD^3+SDK+SK^3 = %d", total, want)
	}
	tr := run.Traffic
	if got, want := tr[RoleNoise].SentDense, int64(S*(D*D+D*D*D)); got != want {
		t.Errorf("noise generator sent %d, want %d", got, want)
	}
	if got, want := tr[SiteRole(1)].SentDense, int64(D*D+K*K*K); got != want {
		t.Errorf("site 1 sent %d, want %d", got, want)
	}
	// Actual values travel packed: D(D+1)/2 per matrix, C(D+2,3) per tensor.
	if got, want := tr[RoleNoise].SentValues, int64(S*(D*(D+1)/2+perturb.SymPackedSize(D))); got != want {
		t.Errorf("noise generator sent %d values, want %d", got, want)
	}
}

func TestCapeAGNSeededReproducible(t *testing.T) {
	sites, _, s2 := mogSites(t, 3, 300, 6, 2, 1, 1e-2, 4)
	job := Job{Kind: JobAGN, D: 6, K: 2, Model: ModelMOG, Sigma2: s2}
	a, _, err := CapeAGN(context.Background(), job, sites, RunOptions{Seeded: true, Seed: 9}, otd.TPMOptions{}, rand.NewPCG(1, 1))
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := CapeAGN(context.Background(), job, sites, RunOptions{Seeded: true, Seed: 9}, otd.TPMOptions{}, rand.NewPCG(1, 1))
	if err != nil {
		t.Fatal(err)
	}
	if !mat.Equal(a.A, b.A) {
		t.Error("same seed gave different components")
	}
}

func TestRowNormRejected(t *testing.T) {
	x := mat.NewDense(3, 2, []float64{0.1, 0.1, 2, 0, 0, 0.5})
	sites := []SiteInput{{Data: &SiteData{Rows: x}, Epsilon: 1, Delta: 1e-3}, {Data: &SiteData{Rows: x}, Epsilon: 1, Delta: 1e-3}}
	_, _, err := CapePCA(context.Background(), 1, sites, "", RunOptions{Seeded: true})
	if err == nil {
		t.Fatal("row of norm 2 accepted")
	}
}

// TestCapeAGNSingleTopic runs capeAGN on single-topic corpora held by
// three sites: with a large epsilon it matches the non-private pooled
// recovery, and with a small one it is worse (noise matters).
func TestCapeAGNSingleTopic(t *testing.T) {
	const S, N, D, K = 3, 1500, 8, 3
	syn, err := otd.SyntheticSTM(D, K, S*N, 5, 1, nil, rand.NewPCG(8, 9))
	if err != nil {
		t.Fatal(err)
	}
	all := syn.Input.Corpus
	sites := make([]SiteInput, S)
	for s := range sites {
		docs := make([][]int32, N)
		for n := range docs {
			docs[n] = make([]int32, D)
			w, c := all.Doc(s*N + n)
			for i, word := range w {
				docs[n][word] += c[i]
			}
		}
		c, err := data.CorpusFromCounts(all.Vocab, docs, 3)
		if err != nil {
			t.Fatal(err)
		}
		sites[s] = SiteInput{Data: &SiteData{Corpus: c}, Epsilon: 400, Delta: 1e-3}
	}
	job := Job{Kind: JobAGN, D: D, K: K, Model: ModelSTM}
	np, err := NonPrivateAGN(job, sites, otd.TPMOptions{}, rand.NewPCG(1, 1))
	if err != nil {
		t.Fatal(err)
	}
	res, _, err := CapeAGN(context.Background(), job, sites, RunOptions{Seeded: true, Seed: 2}, otd.TPMOptions{}, rand.NewPCG(1, 1))
	if err != nil {
		t.Fatal(err)
	}
	en, ec := otd.EComp(syn.A, np.A), otd.EComp(syn.A, res.A)
	for s := range sites {
		sites[s].Epsilon = 0.05
	}
	lo, _, err := CapeAGN(context.Background(), job, sites, RunOptions{Seeded: true, Seed: 2}, otd.TPMOptions{}, rand.NewPCG(1, 1))
	if err != nil {
		t.Fatal(err)
	}
	el := otd.EComp(syn.A, lo.A)
	t.Logf("e_comp: non-private %.4f, cape eps=400 %.4f, cape eps=0.05 %.4f", en, ec, el)
	if ec > en+0.02 || el < ec {
		t.Errorf("e_comp: non-private %.4f, cape eps=400 %.4f, cape eps=0.05 %.4f", en, ec, el)
	}
}
