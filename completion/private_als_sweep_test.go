package completion

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/perturb"
)

// TestPrivateALSSweep prints the validation figures behind private ALS's
// public constants (completion doc, "Private ALS: public constants"; the
// private-ALS table of docs/privacy.md): for each log, non-private ALS of the same
// rank (its own user rows), the bias mode and private ALS (both scored by
// fold-in, BillboardFoldFor) at each epsilon, entry level and, with
// DPREC_ALS_USERK=k, user level with k ratings a user (the weighted item
// counts and sums and the co-occurrence from the unbounded log, as dprec
// train hands it over; from the bounded one with DPREC_ALS_BOUNDEDPOS=1),
// with wall times
// measured in the same run. Every score is on a validation part: a random
// tenth of the training part (90% of the log, seed 42), never a test
// part. It takes about a minute, so it runs only with DPREC_ALS_SWEEP=1:
//
//	DPREC_ALS_SWEEP=1 go test -run TestPrivateALSSweep -v ./completion/
//	DPREC_ALS_SWEEP=1 DPREC_ALS_USERK=100 DPREC_ALS_SETS=joke go test -run TestPrivateALSSweep -v ./completion/
//
// The logs: "joke", a joke-shaped data.Synth log (5,000 users, 100 items,
// 250,000 ratings, rank 5, noise 1.5, continuous values clamped to the
// public range [0.1, 6.9]); "ml", ml-latest-small as user x movie (skipped
// without the file); "synth", a MovieLens-shaped data.Synth log (1,000
// users, 1,700 items, 100,000 half-star ratings). DPREC_ALS_EPS sets the
// epsilons (default 1,3,10,30,100).
func TestPrivateALSSweep(t *testing.T) {
	if os.Getenv("DPREC_ALS_SWEEP") == "" {
		t.Skip("set DPREC_ALS_SWEEP=1 to run (about a minute)")
	}
	sets := strings.Split(envOr("DPREC_ALS_SETS", "joke,ml,synth"), ",")
	var eps []float64
	for _, f := range strings.Split(envOr("DPREC_ALS_EPS", "1,3,10,30,100"), ",") {
		x, err := strconv.ParseFloat(f, 64)
		if err != nil {
			t.Fatal(err)
		}
		eps = append(eps, x)
	}
	userK, _ := strconv.Atoi(os.Getenv("DPREC_ALS_USERK"))
	if x, err := strconv.ParseFloat(os.Getenv("DPREC_ALS_SPREADMARGIN"), 64); err == nil {
		alsSpreadMarginHook = x
		defer func() { alsSpreadMarginHook = 0 }()
	}
	R := 10
	if r, err := strconv.Atoi(os.Getenv("DPREC_ALS_RANK")); err == nil {
		R = r
	}
	for _, name := range sets {
		tr, va, lo, hi := sweepData(t, name)
		if tr == nil {
			continue
		}
		np, err := decomposition.NewModel(decomposition.CP, tr.Dims, []int{R}, true)
		if err != nil {
			t.Fatal(err)
		}
		np.ClampLo, np.ClampHi = lo, hi
		start := time.Now()
		if _, err := Train(tr, nil, np, &Settings{Threads: 2, Solver: SolverALS}, rand.NewPCG(1, 1), nil); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d training ratings, %v; non-private ALS rank %d: %.4f (%.2f s)", name, tr.NNZ(), tr.Dims, R, RMSE(np, va, 2), time.Since(start).Seconds())
		cp := planCovariance(tr, alsUsers(tr))
		t.Logf("%s: covariance gate: %.1f users a pair of %d items, mean weight %.4g", name, cp.pairs, cp.m, cp.wbar)
		if userK > 0 {
			// The same non-private ALS on the k-bounded log: the part of
			// the gap that is the bound's, not the noise's.
			bounded, _, err := BoundUserContributions(tr, userK, rand.NewPCG(1, 77))
			if err != nil {
				t.Fatal(err)
			}
			nb, err := decomposition.NewModel(decomposition.CP, tr.Dims, []int{R}, true)
			if err != nil {
				t.Fatal(err)
			}
			nb.ClampLo, nb.ClampHi = lo, hi
			if _, err := Train(bounded, nil, nb, &Settings{Threads: 2, Solver: SolverALS}, rand.NewPCG(1, 1), nil); err != nil {
				t.Fatal(err)
			}
			got, err := FoldInRMSE(nb, tr, va, decomposition.FoldPenalties{PerRating: 0.15})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: non-private ALS rank %d on the log bounded to k = %d (%d ratings), users folded in from all their ratings: %.4f", name, R, userK, bounded.NNZ(), got)
		}
		for _, e := range eps {
			for _, mode := range []string{"bias", "als"} {
				o := &PrivateOptions{Epsilon: e, Delta: 1e-5, RatingMin: lo, RatingMax: hi, Noise: perturb.SeededNoise(sweepSeed())}
				fit, dims := tr, tr.Dims
				if userK > 0 {
					o.Unit, o.MaxRatingsPerUser = UnitUser, userK
					if fit, _, err = BoundUserContributions(tr, userK, rand.NewPCG(1, 77)); err != nil {
						t.Fatal(err)
					}
					dims = append([]int{1}, tr.Dims[1:]...)
				}
				rank := 1
				if mode == "als" {
					rank = R
				}
				m, err := decomposition.NewModel(decomposition.CP, dims, []int{rank}, true)
				if err != nil {
					t.Fatal(err)
				}
				start := time.Now()
				var rep *perturb.Report
				if userK > 0 && os.Getenv("DPREC_ALS_BOUNDEDPOS") == "" {
					o.Unbounded = tr // as dprec train passes it
				}
				if mode == "als" {
					rep, err = trainPrivateALS(fit, m, o, sweepTweak(o))
				} else {
					rep, err = TrainPrivateBias(fit, m, o)
				}
				if err != nil {
					t.Fatal(err)
				}
				secs := time.Since(start).Seconds()
				pen := BillboardFoldFor(rep)
				if os.Getenv("DPREC_ALS_FOLDROW") != "" && mode == "als" && rep.FoldPerRating == 0 {
					pen.Row, _ = strconv.ParseFloat(os.Getenv("DPREC_ALS_FOLDROW"), 64)
					pen.PerRating, _ = strconv.ParseFloat(os.Getenv("DPREC_ALS_FOLDPER"), 64)
				}
				got, err := FoldInRMSE(m, tr, va, pen)
				if err != nil {
					t.Fatal(err)
				}
				unit := "entry"
				if userK > 0 {
					unit = fmt.Sprintf("user, k = %d", userK)
				}
				t.Logf("%s %s epsilon %g (%s level): %.4f (%.2f s)", name, mode, e, unit, got, secs)
				if os.Getenv("DPREC_ALS_NOTES") != "" {
					for _, n := range rep.Notes {
						if os.Getenv("DPREC_ALS_NOTES") == "all" || strings.HasPrefix(n, "learnability") || strings.HasPrefix(n, "positions") || strings.HasPrefix(n, "position columns") || strings.HasPrefix(n, "item ridge") {
							t.Logf("  %s", n)
						}
					}
				}
			}
		}
	}
}

// sweepTweak reads measurement overrides of private ALS's rules from the
// environment (DPREC_ALS_NOPOS=1, DPREC_ALS_POSREG=x, DPREC_ALS_POSBIAS=f).
func sweepTweak(o *PrivateOptions) func(*alsPrivateParams) {
	return func(p *alsPrivateParams) {
		p.noPositions = os.Getenv("DPREC_ALS_NOPOS") != ""
		p.noiseOff = os.Getenv("DPREC_ALS_NOISEOFF") != ""
		p.posNoScale = os.Getenv("DPREC_ALS_POSNOSCALE") != ""
		p.posNoFree = os.Getenv("DPREC_ALS_POSNOFREE") != ""
		p.inputNoFree = os.Getenv("DPREC_ALS_INPUTNOFREE") != ""
		p.stepsNoFree = os.Getenv("DPREC_ALS_STEPSNOFREE") != ""
		p.userPosOff = os.Getenv("DPREC_ALS_USERPOSOFF") != ""
		p.ridgeOff = os.Getenv("DPREC_ALS_RIDGEOFF") != ""
		p.posReg, _ = strconv.ParseFloat(os.Getenv("DPREC_ALS_POSREG"), 64)
		p.posFloor, _ = strconv.ParseFloat(os.Getenv("DPREC_ALS_POSFLOOR"), 64)
		p.posBias, _ = strconv.ParseFloat(os.Getenv("DPREC_ALS_POSBIAS"), 64)
		p.exactGram = os.Getenv("DPREC_ALS_EXACTGRAM") != ""
		if os.Getenv("DPREC_ALS_STATS") != "" {
			p.input = false // the item-statistics route at the entry unit
		}
		if x, err := strconv.ParseFloat(os.Getenv("DPREC_ALS_USERPOSEDGE"), 64); err == nil {
			p.userPosEdge = x
		}
		if x, err := strconv.ParseFloat(os.Getenv("DPREC_ALS_USERPOSGATE"), 64); err == nil {
			p.userPosGate = x
		}
		if x, err := strconv.ParseFloat(os.Getenv("DPREC_ALS_USERPOSSCALE"), 64); err == nil {
			p.userPosScale = x
		}
		if x, err := strconv.ParseFloat(os.Getenv("DPREC_ALS_USERPOSSHARE"), 64); err == nil {
			p.userPosShare = x
		}
		if x, err := strconv.ParseFloat(os.Getenv("DPREC_ALS_USERGATE"), 64); err == nil {
			p.userGateShare = x
		}
		if x, err := strconv.ParseFloat(os.Getenv("DPREC_ALS_NOISERIDGE"), 64); err == nil {
			p.noiseRidge = x
		}
		if n, err := strconv.Atoi(os.Getenv("DPREC_ALS_STEPS")); err == nil {
			p.steps = n
		}
		if x, err := strconv.ParseFloat(os.Getenv("DPREC_ALS_LAMBDA"), 64); err == nil {
			p.lambda = x
		}
		if x, err := strconv.ParseFloat(os.Getenv("DPREC_ALS_FINALITEMREG"), 64); err == nil {
			p.finalItemLambda = x
		}
		if x, err := strconv.ParseFloat(os.Getenv("DPREC_ALS_ITEMREG"), 64); err == nil {
			p.itemLambda = x
		}
		if x, err := strconv.ParseFloat(os.Getenv("DPREC_ALS_GU"), 64); err == nil {
			p.gu, p.gv = x, p.c/x
		}
		if x, err := strconv.ParseFloat(os.Getenv("DPREC_ALS_BIASFRAC"), 64); err == nil {
			p.biasFrac = x
		}
		if g, err := strconv.ParseFloat(os.Getenv("DPREC_ALS_FALLBACK"), 64); err == nil {
			p.inputFallback = g
		}
		if x, err := strconv.ParseFloat(os.Getenv("DPREC_ALS_ICLIPFLOOR"), 64); err == nil && p.input {
			p.inputClip = alsInputClipAt(o, x)
		}
		if x, err := strconv.ParseFloat(os.Getenv("DPREC_ALS_ICLIPMUL"), 64); err == nil {
			p.inputClip *= x
		}
		p.noCov = os.Getenv("DPREC_ALS_NOCOV") != ""
		p.covNoFree = os.Getenv("DPREC_ALS_COVNOFREE") != ""
		p.covNoCut = os.Getenv("DPREC_ALS_COVNOCUT") != ""
		p.covTau, _ = strconv.ParseFloat(os.Getenv("DPREC_ALS_COVTAU"), 64)
		p.covNoiseGate, _ = strconv.ParseFloat(os.Getenv("DPREC_ALS_COVNOISEGATE"), 64)
		p.covGate, _ = strconv.ParseFloat(os.Getenv("DPREC_ALS_COVGATE"), 64)
		p.covBias, _ = strconv.ParseFloat(os.Getenv("DPREC_ALS_COVBIAS"), 64)
		p.covFold, _ = strconv.ParseFloat(os.Getenv("DPREC_ALS_COVFOLD"), 64)
		p.covEdgeMul, _ = strconv.ParseFloat(os.Getenv("DPREC_ALS_COVEDGEMUL"), 64)
		p.quietRatio, _ = strconv.ParseFloat(os.Getenv("DPREC_ALS_QUIETRATIO"), 64)
		p.quietNoise, _ = strconv.ParseFloat(os.Getenv("DPREC_ALS_QUIETNOISE"), 64)
		if x, err := strconv.ParseFloat(os.Getenv("DPREC_ALS_INPUTBIAS"), 64); err == nil {
			p.inputBiasFrac = x
		}
		if g, err := strconv.ParseFloat(os.Getenv("DPREC_ALS_GATE"), 64); err == nil {
			p.inputGate = g
		}
	}
}

func envOr(k, d string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return d
}

// sweepData returns the training and validation parts of one of
// TestPrivateALSSweep's logs and its public rating range (nil without the
// file).
func sweepData(t *testing.T, name string) (tr, va *data.Store, lo, hi float64) {
	t.Helper()
	var st *data.Store
	var err error
	switch name {
	case "ml":
		if _, err := os.Stat(mlPath); err != nil {
			t.Logf("ml: skipped (no %s)", mlPath)
			return nil, nil, 0, 0
		}
		st, _, err = data.Load(mlPath, data.LoadOptions{Builder: data.BuilderOptions{TimeUnit: data.TimeNone}})
		lo, hi = 0.5, 5
	case "ml100k", "jester":
		// Logs fetched outside the repository: MovieLens-100K's u.data,
		// and recommenderlab's Jester5k (a real joke log: 5,000 users,
		// 100 jokes, [-10, 10]) as user,item,rating CSV.
		env, what := "DPREC_ML100K", "MovieLens-100K's u.data"
		lo, hi = 1, 5
		if name == "jester" {
			env, what = "DPREC_JESTER", "a Jester5k CSV"
			lo, hi = -10, 10
		}
		path := os.Getenv(env)
		if path == "" {
			t.Logf("%s: skipped (set %s to %s)", name, env, what)
			return nil, nil, 0, 0
		}
		st, _, err = data.Load(path, data.LoadOptions{Builder: data.BuilderOptions{TimeUnit: data.TimeNone}})
	case "file":
		// Any log (DPREC_SWEEP_FILE) on a declared range (DPREC_SWEEP_RANGE
		// "lo,hi").
		path := os.Getenv("DPREC_SWEEP_FILE")
		r := strings.Split(os.Getenv("DPREC_SWEEP_RANGE"), ",")
		if path == "" || len(r) != 2 {
			t.Logf("file: skipped (set DPREC_SWEEP_FILE and DPREC_SWEEP_RANGE=lo,hi)")
			return nil, nil, 0, 0
		}
		var e1, e2 error
		lo, e1 = strconv.ParseFloat(r[0], 64)
		hi, e2 = strconv.ParseFloat(r[1], 64)
		if e1 != nil || e2 != nil || !(lo < hi) {
			t.Fatalf("DPREC_SWEEP_RANGE %q: want lo,hi with lo < hi", os.Getenv("DPREC_SWEEP_RANGE"))
		}
		st, _, err = data.Load(path, data.LoadOptions{Builder: data.BuilderOptions{TimeUnit: data.TimeNone}})
	case "joke", "jokewide":
		st, _, err = data.Synth(data.SynthOptions{Users: 5000, Items: 100, Ratings: 250000, Rank: 5, Bias: true, Mean: 3.5, Noise: 1.5, Skew: 0.3}, rand.NewPCG(7, 7))
		lo, hi = 0.1, 6.9
		if name == "jokewide" {
			// The same log declared on a range wider than its spread
			// (private_als_spread.go).
			lo, hi = -5, 12
		}
		if err == nil {
			for i, v := range st.Val {
				st.Val[i] = math.Max(lo, math.Min(hi, v))
			}
		}
	case "jokeexp":
		st = jokeExposureLog(rand.New(rand.NewPCG(11, 11)), 1.6)
		lo, hi = -10, 10
	case "jokeexp3":
		st = jokeExposureLog(rand.New(rand.NewPCG(11, 11)), 3)
		lo, hi = -10, 10
	case "clickshort", "clicklong":
		// Click logs whose positions follow a planted taste (data.Synth's
		// Choice): short histories (5,000 users, 10 events each) or long
		// ones (1,000 users, 100 each). Every event has value 1.
		o := data.SynthOptions{Users: 5000, Items: 2000, Ratings: 50000, Rank: 5, Bias: true, Noise: 0.5, Scale: "0.5-5", Skew: 0.5, Choice: 1.5}
		if name == "clicklong" {
			o.Users, o.Items, o.Ratings = 1000, 1700, 100000
		}
		st, _, err = data.Synth(o, rand.NewPCG(9, 9))
		lo, hi = 0, 1
	case "synth":
		st, _, err = data.Synth(data.SynthOptions{Users: 1000, Items: 1700, Ratings: 100000, Rank: 5, Bias: true, Noise: 0.5, Scale: "0.5-5", Skew: 0.5}, rand.NewPCG(8, 8))
		lo, hi = 0.5, 5
	case "wide":
		// Many users with long, skewed histories: the shape where the user
		// unit's k bound drops most ratings.
		st, _, err = data.Synth(data.SynthOptions{Users: 20000, Items: 1000, Ratings: 1000000, Rank: 5, Bias: true, Noise: 0.5, Scale: "0.5-5", Skew: 0.5}, rand.NewPCG(10, 10))
		lo, hi = 0.5, 5
	case "heavy":
		// Heavy-tailed user activity (Skew 1): many users above k, some
		// with most of the catalogue; the shape where the weighted counts
		// exceed the bounded log's most.
		st, _, err = data.Synth(data.SynthOptions{Users: 4000, Items: 2000, Ratings: 1000000, Rank: 5, Bias: true, Noise: 0.5, Scale: "0.5-5", Skew: 1}, rand.NewPCG(12, 12))
		lo, hi = 0.5, 5
	default:
		t.Fatalf("unknown log %q (file, jester, joke, jokeexp, jokeexp3, clickshort, clicklong, heavy, ml, ml100k, synth, wide)", name)
	}
	if err != nil {
		t.Fatal(err)
	}
	perm := rand.New(rand.NewPCG(42, 0)).Perm(st.NNZ())
	rest := perm[st.NNZ()/10:]
	nVa := len(rest) / 10
	return st.Subset(rest[nVa:]), st.Subset(rest[:nVa]), lo, hi
}

// jokeExposureLog is a joke-shaped log whose positions carry taste, as
// a recommender's exposure leaves them (Jester's Eigentaste): 5,000 users,
// 100 items, ratings on [-10, 10] = 0.5 + b_u (sd 2) + b_i (sd 1.5) +
// u.v (rank 5, sd about sd: 1.6 for "jokeexp", 3 for "jokeexp3") + noise
// (sd 4), clamped. Every user rates
// the 10 gauge items, then the items their cluster (the signs of their
// first two factors) rates best, with noise, n_u - 10 of them, n_u
// uniform on [36, 100].
func jokeExposureLog(rng *rand.Rand, sd float64) *data.Store {
	const n, m, R = 5000, 100, 5
	sc := math.Sqrt(sd / math.Sqrt(R))
	U := make([]float64, n*R)
	V := make([]float64, m*R)
	for i := range U {
		U[i] = sc * rng.NormFloat64()
	}
	for i := range V {
		V[i] = sc * rng.NormFloat64()
	}
	bu := make([]float64, n)
	bi := make([]float64, m)
	for u := range bu {
		bu[u] = 2 * rng.NormFloat64()
	}
	for i := range bi {
		bi[i] = 1.5 * rng.NormFloat64()
	}
	cluster := func(u int) int {
		c := 0
		if U[u*R] > 0 {
			c++
		}
		if U[u*R+1] > 0 {
			c += 2
		}
		return c
	}
	score := make([][]float64, 4)
	cnt := make([]float64, 4)
	for c := range score {
		score[c] = make([]float64, m)
	}
	for u := 0; u < n; u++ {
		c := cluster(u)
		cnt[c]++
		for i := 0; i < m; i++ {
			score[c][i] += bi[i] + dot(U[u*R:u*R+R], V[i*R:i*R+R])
		}
	}
	st := &data.Store{Dims: []int{n, m}, Idx: make([][]int32, 2)}
	order := make([]int, m-10)
	key := make([]float64, m)
	for u := 0; u < n; u++ {
		c := cluster(u)
		for i := 10; i < m; i++ {
			order[i-10] = i
			key[i] = score[c][i]/cnt[c] + 0.7*rng.NormFloat64()
		}
		slices.SortFunc(order, func(a, b int) int { return cmp.Compare(key[b], key[a]) })
		nu := 36 + rng.IntN(65)
		items := append([]int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, order[:nu-10]...)
		for _, i := range items {
			v := 0.5 + bu[u] + bi[i] + dot(U[u*R:u*R+R], V[i*R:i*R+R]) + 4*rng.NormFloat64()
			st.Idx[0] = append(st.Idx[0], int32(u))
			st.Idx[1] = append(st.Idx[1], int32(i))
			st.Val = append(st.Val, math.Max(-10, math.Min(10, v)))
		}
	}
	return st
}

// sweepSeed is the sweep's noise seed (DPREC_ALS_SEED, default 1).
func sweepSeed() uint64 {
	if s, err := strconv.ParseUint(os.Getenv("DPREC_ALS_SEED"), 10, 64); err == nil {
		return s
	}
	return 1
}
