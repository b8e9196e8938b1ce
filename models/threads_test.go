package models

import (
	"reflect"
	"testing"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
)

// TestRecommendAllManyThreads: workers beyond the number of user blocks
// are not started (each allocated its 64 heaps before finding no work:
// --threads 100000 on recommend --all-users held 100,000 sets of heaps),
// and the lists are those of one worker (issue 24 item 6).
func TestRecommendAllManyThreads(t *testing.T) {
	f := testFile(t, decomposition.CP, []int{5, 9}, []int{2}, true, 3)
	p := NewPredictor(f)
	all := func(threads int) [][]Scored {
		var out [][]Scored
		if err := p.RecommendAll(4, nil, threads, nil, func(_ int32, recs []Scored) error {
			out = append(out, recs)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	want := all(1)
	if got := all(4096); !reflect.DeepEqual(got, want) {
		t.Errorf("4096 threads: %v, 1 thread: %v", got, want)
	}
	if a := testing.AllocsPerRun(1, func() { all(4096) }); a > 5000 {
		t.Errorf("4096 threads on 5 users: %.0f allocations (a worker per thread)", a)
	}
}

// TestEvaluateManyThreads: Evaluate starts no more ranking workers than
// users (each allocated a top-k heap before finding no work), with the
// same result.
func TestEvaluateManyThreads(t *testing.T) {
	f := testFile(t, decomposition.CP, []int{3, 5}, []int{2}, true, 17)
	p := NewPredictor(f)
	ud, _ := data.DictFromInts("u", []int64{106, 100})
	id, _ := data.DictFromStrings("i", []string{"i3", "i1", "i0"})
	test := &data.Store{Dims: []int{2, 3}, Idx: [][]int32{{0, 0, 1, 1}, {0, 2, 1, 2}}, Val: []float64{5, 4, 2, 4.5}, Dicts: []*data.Dict{ud, id}}
	eval := func(threads int) *EvalResult {
		res, err := Evaluate(p, test, EvalOptions{K: 2, Threshold: 4, Threads: threads})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	want := eval(1)
	if got := eval(4096); !reflect.DeepEqual(got, want) {
		t.Errorf("4096 threads: %+v, 1 thread: %+v", got, want)
	}
	if a := testing.AllocsPerRun(1, func() { eval(4096) }); a > 5000 {
		t.Errorf("4096 threads on 2 users: %.0f allocations (a worker per thread)", a)
	}
}
