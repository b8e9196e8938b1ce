package data

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// splitTestStore builds an order-3 store with raw time stamps: user u has
// u+1 observations (so users 0 and 1 have too few for some splits), item
// e mod 7, time stamp e*1000 (so later rows are later).
func splitTestStore(t *testing.T, users int) *Store {
	t.Helper()
	b := NewBuilder(NewIntDict("user"), NewIntDict("item"), true, BuilderOptions{KeepTimestamps: true, TimeUnit: TimeHour})
	e := 0
	for u := 0; u < users; u++ {
		for j := 0; j <= u; j++ {
			b.Add(b.Users.InternInt(int64(u)), b.Items.InternInt(int64(j)), float64(e%5+1), int64(e)*1000)
			e++
		}
	}
	s, _, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// checkPartition asserts that a split's parts are sorted, disjoint and
// together cover 0..n-1.
func checkPartition(t *testing.T, sp Split, n int) {
	t.Helper()
	if !slices.IsSorted(sp.Train) || !slices.IsSorted(sp.Test) {
		t.Error("parts are not in storage order")
	}
	seen := make([]int, n)
	for _, e := range sp.Train {
		seen[e]++
	}
	for _, e := range sp.Test {
		seen[e]++
	}
	for e, c := range seen {
		if c != 1 {
			t.Fatalf("observation %d is in %d parts", e, c)
		}
	}
}

func TestSplits(t *testing.T) {
	s := splitTestStore(t, 30) // 465 observations
	n := s.NNZ()
	src := func() rand.Source { return rand.NewPCG(7, 8) }
	tests := []struct {
		name     string
		split    func() (Split, error)
		wantTest int // -1: not checked
	}{
		{"random", func() (Split, error) { return RandomSplit(s, 0.2, src()) }, 93},
		// k=2 per user: users 0..2 have < 4 observations and stay in train.
		{"per-user k", func() (Split, error) { return PerUserSplit(s, 2, 0, src()) }, 2 * 27},
		{"per-user fraction", func() (Split, error) { return PerUserSplit(s, 0, 0.25, src()) }, -1},
		{"time fraction", func() (Split, error) { return TimeSplit(s, 0.2) }, -1},
		{"cutoff", func() (Split, error) { return CutoffSplit(s, 400*1000) }, n - 400},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sp, err := tc.split()
			if err != nil {
				t.Fatal(err)
			}
			checkPartition(t, sp, n)
			if tc.wantTest >= 0 && len(sp.Test) != tc.wantTest {
				t.Errorf("test part has %d observations, want %d", len(sp.Test), tc.wantTest)
			}
			again, _ := tc.split()
			if !slices.Equal(sp.Test, again.Test) {
				t.Error("not deterministic")
			}
			train, test := sp.Stores(s)
			if train.NNZ()+test.NNZ() != n || train.Validate() != nil || test.Validate() != nil {
				t.Error("bad stores")
			}
		})
	}
}

// TestPerUserConstraints checks the per-user rules: exactly h held out for
// users with at least 2h observations, none otherwise.
func TestPerUserConstraints(t *testing.T) {
	s := splitTestStore(t, 20)
	sp, err := PerUserSplit(s, 3, 0, rand.NewPCG(1, 1))
	if err != nil {
		t.Fatal(err)
	}
	perUser := make([]int, s.Dims[0])
	for _, e := range sp.Test {
		perUser[s.Idx[0][e]]++
	}
	for u, c := range perUser {
		total := u + 1 // see splitTestStore
		want := 3
		if total < 6 {
			want = 0
		}
		if c != want {
			t.Errorf("user %d with %d observations: %d held out, want %d", u, total, c, want)
		}
	}
	if _, err := PerUserSplit(s, 100, 0, rand.NewPCG(1, 1)); !errors.Is(err, ErrSplit) {
		t.Errorf("k larger than every user: %v, want ErrSplit", err)
	}
}

// TestTimeSplitHoldsOutLatest checks that each user's test observations
// are the user's latest and that users keep a training observation.
func TestTimeSplitHoldsOutLatest(t *testing.T) {
	s := splitTestStore(t, 15)
	for _, st := range []*Store{s, {Dims: s.Dims, Idx: s.Idx, Val: s.Val, Dicts: s.Dicts, Time: s.Time}} {
		sp, err := TimeSplit(st, 0.3)
		if err != nil {
			t.Fatal(err)
		}
		maxTrain := make([]int64, s.Dims[0])
		minTest := make([]int64, s.Dims[0])
		nTest := make([]int, s.Dims[0])
		for u := range minTest {
			maxTrain[u], minTest[u] = -1, 1<<62
		}
		for _, e := range sp.Train {
			u := s.Idx[0][e]
			maxTrain[u] = max(maxTrain[u], s.Timestamps[e])
		}
		for _, e := range sp.Test {
			u := s.Idx[0][e]
			minTest[u] = min(minTest[u], s.Timestamps[e])
			nTest[u]++
		}
		for u := range nTest {
			c := u + 1
			want := min(roundCount(0.3, c), c-1)
			if nTest[u] != want || maxTrain[u] < 0 || nTest[u] > 0 && minTest[u] <= maxTrain[u] {
				t.Errorf("user %d: %d held out (want %d), last train %d, first test %d", u, nTest[u], want, maxTrain[u], minTest[u])
			}
		}
	}
	noTime := &Store{Dims: s.Dims[:2], Idx: s.Idx[:2], Val: s.Val, Dicts: s.Dicts[:2]}
	if _, err := TimeSplit(noTime, 0.2); !errors.Is(err, ErrSplit) {
		t.Errorf("time split without time: %v", err)
	}
	if _, err := CutoffSplit(noTime, 0); !errors.Is(err, ErrSplit) {
		t.Errorf("cutoff split without time: %v", err)
	}
	if _, err := CutoffSplit(s, 1<<40); !errors.Is(err, ErrSplit) {
		t.Errorf("cutoff after the data: %v", err)
	}
}

func TestKFold(t *testing.T) {
	s := splitTestStore(t, 12) // 78 observations
	n := s.NNZ()
	splits, err := KFold(s, 5, rand.NewPCG(3, 4))
	if err != nil {
		t.Fatal(err)
	}
	covered := make([]int, n)
	for _, sp := range splits {
		checkPartition(t, sp, n)
		if l := len(sp.Test); l != n/5 && l != n/5+1 {
			t.Errorf("fold of %d observations, want %d or %d", l, n/5, n/5+1)
		}
		for _, e := range sp.Test {
			covered[e]++
		}
	}
	for e, c := range covered {
		if c != 1 {
			t.Fatalf("observation %d tested %d times", e, c)
		}
	}
	again, _ := KFold(s, 5, rand.NewPCG(3, 4))
	other, _ := KFold(s, 5, rand.NewPCG(3, 5))
	if !slices.Equal(splits[2].Test, again[2].Test) || slices.Equal(splits[2].Test, other[2].Test) {
		t.Error("folds do not follow the seed")
	}
	for _, k := range []int{0, 1, n + 1} {
		if _, err := KFold(s, k, rand.NewPCG(1, 1)); !errors.Is(err, ErrSplit) {
			t.Errorf("k=%d: %v", k, err)
		}
	}
	for _, f := range []float64{0, 1, -0.5, 2} {
		if _, err := RandomSplit(s, f, rand.NewPCG(1, 1)); !errors.Is(err, ErrSplit) {
			t.Errorf("fraction %v: %v", f, err)
		}
	}
}

// TestKFoldMemory: a k whose k training lists (k n positions) exceed the
// physical memory is refused before any is built (issue 24, the size
// guard: data split --k).
func TestKFoldMemory(t *testing.T) {
	phys := float64(PhysicalMemory())
	if phys == 0 {
		t.Skip("physical memory unknown")
	}
	n := int(math.Sqrt(phys/8)) + 2
	s := &Store{Dims: []int{n, 1}, Idx: [][]int32{make([]int32, n), make([]int32, n)}, Val: make([]float64, n)}
	for e := range n {
		s.Idx[0][e] = int32(e)
	}
	if _, err := KFold(s, n, rand.NewPCG(1, 1)); !errors.Is(err, ErrMemoryLimit) {
		t.Errorf("k = n = %d: got %v, want ErrMemoryLimit", n, err)
	}
	if sp, err := KFold(s, 3, rand.NewPCG(1, 1)); err != nil || len(sp) != 3 {
		t.Errorf("k = 3: %d splits, %v", len(sp), err)
	}
}
