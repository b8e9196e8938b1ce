package completion

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/perturb"
)

// kernelUserSource is UserBiasSource written from the exported kernels
// only (BiasCentred, BiasResidual, UserContributionWeight), as a
// distributed source computes the statistics: the scalars over the bounded
// store st, the weighted item counts and sums over un (every rating of
// each user, the first of each item; st when nil).
type kernelUserSource struct{ st, un *data.Store }

// weights returns every rating's weight in un: the user's
// UserContributionWeight for the first rating of each item, 0 after.
func (s kernelUserSource) weights(o *PrivateOptions) (*data.Store, []float64) {
	un := s.un
	if un == nil {
		un = s.st
	}
	type key struct{ u, i int32 }
	first := map[key]bool{}
	m := map[int32]int{}
	w := make([]float64, un.NNZ())
	for e := range un.Val {
		k := key{un.Idx[0][e], un.Idx[1][e]}
		if !first[k] {
			first[k] = true
			m[k.u]++
			w[e] = 1
		}
	}
	for e := range w {
		w[e] *= UserContributionWeight(o.Mechanism, o.MaxRatingsPerUser, m[un.Idx[0][e]])
	}
	return un, w
}

func (s kernelUserSource) UserTotals(o *PrivateOptions) (int, int, float64, []float64, error) {
	seen := map[int32]bool{}
	total := 0.0
	for e, v := range s.st.Val {
		seen[s.st.Idx[0][e]] = true
		total += BiasCentred(v, o.RatingMin, o.RatingMax)
	}
	un, w := s.weights(o)
	counts := make([]float64, s.st.Dims[1])
	for e, i := range un.Idx[1] {
		counts[i] += w[e]
	}
	return len(seen), s.st.NNZ(), total, counts, nil
}

func (s kernelUserSource) ResidualSums(o *PrivateOptions, mu float64) ([]float64, error) {
	un, w := s.weights(o)
	sums := make([]float64, s.st.Dims[1])
	for e, v := range un.Val {
		if w[e] != 0 {
			sums[un.Idx[1][e]] += w[e] * BiasResidual(v, mu, o.RatingMin, o.RatingMax)
		}
	}
	return sums, nil
}

// TestPrivateBiasUserFromSource: TrainPrivateBiasUserFrom over a source
// written from the exported kernels is TrainPrivateBias at the user unit
// on the same bounded store, bit for bit (model and report), for both
// mechanisms, with the weighted counts and sums read from the bounded
// store and from the log before the bound (PrivateOptions.Unbounded,
// with repeated cells); the entry-level entry and options it does not
// take are refused.
func TestPrivateBiasUserFromSource(t *testing.T) {
	t.Parallel()
	for _, mech := range []string{perturb.MechGaussian, perturb.MechLaplace} {
		o := userOpts(5)
		o.Mechanism = mech
		raw := withRepeats(userStore([]int{80, 50}, 1500, 3))
		st, err := BoundForUnit(raw, &o)
		if err != nil {
			t.Fatal(err)
		}
		for _, un := range []*data.Store{nil, raw} {
			o.Unbounded = un
			want := privModel(t, decomposition.CP, []int{1, st.Dims[1]}, 1, true, 1, 1)
			wrep, err := TrainPrivateBias(st, want, &o)
			if err != nil {
				t.Fatal(err)
			}
			got := privModel(t, decomposition.CP, []int{1, st.Dims[1]}, 1, true, 2, 1)
			grep, err := TrainPrivateBiasUserFrom(kernelUserSource{st, un}, got, &o)
			if err != nil {
				t.Fatal(err)
			}
			a, _ := json.Marshal(wrep)
			b, _ := json.Marshal(grep)
			if string(a) != string(b) {
				t.Fatalf("%s (unbounded %v): reports differ:\n%s\n%s", mech, un != nil, a, b)
			}
			if got.Mean != want.Mean || !slices.Equal(got.Bias[1], want.Bias[1]) || !slices.Equal(got.Bias[0], want.Bias[0]) || !slices.Equal(got.Factors[1], want.Factors[1]) {
				t.Fatalf("%s (unbounded %v): models differ: mean %v vs %v", mech, un != nil, got.Mean, want.Mean)
			}
		}
	}
	m := privModel(t, decomposition.CP, []int{1, 10}, 1, true, 1, 1)
	entry := baseOpts()
	if _, err := TrainPrivateBiasUserFrom(kernelUserSource{}, m, &entry); err == nil {
		t.Fatal("entry unit: no error")
	}
	sel := userOpts(3)
	sel.SelectedItems = true
	if _, err := TrainPrivateBiasUserFrom(kernelUserSource{}, m, &sel); !errors.Is(err, ErrDomain) {
		t.Fatalf("private item selection from a source: %v, want ErrDomain", err)
	}
	user := userOpts(3)
	if _, err := TrainPrivateBiasFrom(storeBiasSource{}, m, &user); err == nil {
		t.Fatal("TrainPrivateBiasFrom at the user unit: no error")
	}
}

// TestChooseUserRatings: at most k rows, one per item, all of the user's
// distinct items when they are at most k, and a function of the rows'
// order and the stream only.
func TestChooseUserRatings(t *testing.T) {
	t.Parallel()
	items := []int32{3, 1, 3, 7, 2, 9, 1, 4}
	item := func(e int) int32 { return items[e] }
	for k := 1; k <= 8; k++ {
		rows := []int{0, 1, 2, 3, 4, 5, 6, 7}
		kept := ChooseUserRatings(nil, rows, item, k, rand.New(rand.NewPCG(1, 2)))
		seen := map[int32]bool{}
		for _, e := range kept {
			if seen[items[e]] {
				t.Fatalf("k %d: item %d kept twice", k, items[e])
			}
			seen[items[e]] = true
		}
		if want := min(k, 6); len(kept) != want {
			t.Fatalf("k %d: kept %d rows, want %d", k, len(kept), want)
		}
		again := ChooseUserRatings(nil, []int{0, 1, 2, 3, 4, 5, 6, 7}, item, k, rand.New(rand.NewPCG(1, 2)))
		if !slices.Equal(kept, again) {
			t.Fatalf("k %d: %v then %v from the same stream", k, kept, again)
		}
	}
}
