package data

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestRadixSortCells compares the radix sort with a stable comparison sort
// on keys with many repeats and several digit widths.
func TestRadixSortCells(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, width := range []int{0, 3, 11, 12, 40, 64} {
		for _, n := range []int{0, 1, 2, 1000, radixParallelMin + 7} {
			keys := make([]uint64, n)
			for e := range keys {
				if width > 0 {
					keys[e] = rng.Uint64() >> uint(64-width)
					if e > 0 && rng.IntN(3) == 0 {
						keys[e] = keys[rng.IntN(e)]
					}
				}
			}
			want := make([]int32, n)
			for e := range want {
				want[e] = int32(e)
			}
			orig := slices.Clone(keys)
			slices.SortStableFunc(want, func(a, b int32) int {
				switch {
				case orig[a] < orig[b]:
					return -1
				case orig[a] > orig[b]:
					return 1
				}
				return 0
			})
			sorted, pos := radixSortCells(keys, width)
			if !slices.Equal(pos, want) {
				t.Fatalf("width %d n %d: positions differ", width, n)
			}
			for j, e := range pos {
				if sorted[j] != orig[e] {
					t.Fatalf("width %d n %d: sorted key %d wrong", width, n, j)
				}
			}
		}
	}
}

// TestDedupePolicies checks last/mean on a store with repeated cells.
func TestDedupePolicies(t *testing.T) {
	for _, tc := range []struct {
		policy DuplicatePolicy
		want   []float64
	}{{DupLast, []float64{3, 5}}, {DupMean, []float64{2, 5}}} {
		b := NewBuilder(NewIntDict("u"), NewIntDict("i"), true, BuilderOptions{Duplicates: tc.policy, KeepTimestamps: true})
		b.Add(0, 0, 1, 10)
		b.Add(1, 0, 5, 10)
		b.Add(0, 0, 3, 20) // same day as the first row
		b.Users.InternInt(7)
		b.Users.InternInt(8)
		b.Items.InternInt(9)
		s, ds, err := b.Finish()
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(s.Val, tc.want) || ds.Cells != 1 || ds.Dropped != 1 {
			t.Errorf("%s: values %v stats %+v, want %v", tc.policy, s.Val, ds, tc.want)
		}
		if tc.policy == DupLast && s.Timestamps[0] != 20 {
			t.Errorf("last: time stamp %d, want 20", s.Timestamps[0])
		}
	}
}

// BenchmarkSortCells10M sorts the cells of 10M random observations of the
// shape of the SPLATT comparison tensor (200,000 users, 50,000 items, 500
// days: 43-bit keys), the sort of every load's duplicate merge.
func BenchmarkSortCells10M(b *testing.B) {
	const n = 10_000_000
	dims := []int{200_000, 50_000, 500}
	rng := rand.New(rand.NewPCG(1, 2))
	s := &Store{Dims: dims, Val: make([]float64, n)}
	for _, d := range dims {
		idx := make([]int32, n)
		for e := range idx {
			idx[e] = int32(rng.IntN(d))
		}
		s.Idx = append(s.Idx, idx)
	}
	cpu0 := textCPUSeconds()
	b.ResetTimer()
	for range b.N {
		keys, width, ok := cellKeys(s)
		sortCells(s, keys, width, ok)
	}
	b.StopTimer()
	b.ReportMetric((textCPUSeconds()-cpu0)/float64(b.N), "cpu-s/op")
}

// BenchmarkCellsDistinct10M checks 10M distinct cells of the same shape
// (the check that spares a log without repeated cells the sort).
func BenchmarkCellsDistinct10M(b *testing.B) {
	const n = 10_000_000
	rng := rand.New(rand.NewPCG(1, 2))
	s := &Store{Dims: []int{200_000, 50_000, 500}, Val: make([]float64, n)}
	u, i, k := make([]int32, n), make([]int32, n), make([]int32, n)
	for e := range n {
		u[e], i[e], k[e] = int32(e%200_000), int32(rng.IntN(50_000)), int32(e/200_000)
	}
	s.Idx = [][]int32{u, i, k}
	cpu0 := textCPUSeconds()
	b.ResetTimer()
	for range b.N {
		keys, width, _ := cellKeys(s)
		if !cellsDistinct(keys, width) {
			b.Fatal("repeat found among distinct cells")
		}
	}
	b.StopTimer()
	b.ReportMetric((textCPUSeconds()-cpu0)/float64(b.N), "cpu-s/op")
}

// TestCellsDistinct compares cellsDistinct with a map on keys with and
// without repeats (in the first keys, or only far after the sample),
// around the sample size and the parallel threshold.
func TestCellsDistinct(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, width := range []int{1, 3, 20, 40, 63} {
		for _, n := range []int{0, 1, 2, 1000, distinctSample, distinctSample + 1, radixParallelMin + 7, 300_000} {
			for _, repeat := range []int{-1, 0, n / 2, n - 1} {
				keys := make([]uint64, n)
				for e := range keys {
					keys[e] = rng.Uint64() >> uint(64-width)
				}
				if repeat >= 1 && repeat < n {
					keys[repeat] = keys[rng.IntN(repeat)]
				}
				if repeat == -1 && width >= 40 {
					// Distinct by construction.
					for e := range keys {
						keys[e] = keys[e]&^(1<<20-1) | uint64(e)
					}
				}
				seen := make(map[uint64]bool, n)
				want := true
				for _, k := range keys {
					if seen[k] {
						want = false
					}
					seen[k] = true
				}
				orig := slices.Clone(keys)
				if got := cellsDistinct(keys, width); got != want {
					t.Fatalf("width %d n %d repeat at %d: distinct %v, want %v", width, n, repeat, got, want)
				}
				if !slices.Equal(keys, orig) {
					t.Fatalf("width %d n %d: keys modified", width, n)
				}
			}
		}
	}
	if cellsDistinct([]uint64{1, 2}, 64) {
		t.Fatal("64-bit keys: want false (the sort decides)")
	}
}
