package data

import (
	"bytes"
	"strings"
	"testing"
)

func TestComputeStats(t *testing.T) {
	// users: 0 has 3 observations, 1 has 1; items: 0 has 2, 1 has 1, 2 has 1.
	p := textWriteTemp(t, "r.csv", "userId,movieId,rating,timestamp\n1,10,4.5,0\n1,20,3,86400\n2,10,4.5,172800\n1,30,1,172800\n")
	s, _, err := Load(p, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st := ComputeStats(s)
	if st.NNZ != 4 || st.Order != 3 || st.Dims[0] != 2 || st.Dims[1] != 3 || st.Dims[2] != 3 {
		t.Fatalf("stats %+v", st)
	}
	if want := 4.0 / 18; st.Density != want {
		t.Errorf("density %v, want %v", st.Density, want)
	}
	if m := st.Modes[0]; m.Min != 1 || m.Max != 3 || m.Median != 2 || m.Empty != 0 {
		t.Errorf("user mode %+v", m)
	}
	if m := st.Modes[1]; m.Min != 1 || m.Max != 2 || m.Median != 1 {
		t.Errorf("item mode %+v", m)
	}
	if st.ValueMin != 1 || st.ValueMax != 4.5 || st.ValueMean != 13.0/4 {
		t.Errorf("values %v %v %v", st.ValueMin, st.ValueMax, st.ValueMean)
	}
	want := []HistBin{{1, 1, 1}, {3, 3, 1}, {4.5, 4.5, 2}}
	if len(st.Histogram) != len(want) {
		t.Fatalf("histogram %+v", st.Histogram)
	}
	for i, h := range want {
		if st.Histogram[i] != h {
			t.Errorf("bin %d = %+v, want %+v", i, st.Histogram[i], h)
		}
	}
	var buf bytes.Buffer
	if err := st.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"observations  4", "dims          2 x 3 x 3", "4.5", "####"} {
		if !strings.Contains(buf.String(), s) {
			t.Errorf("text lacks %q:\n%s", s, buf.String())
		}
	}
}

// TestComputeStatsBins checks the equal-width histogram for continuous
// values: 0..99 in 10 bins of 10.
func TestComputeStatsBins(t *testing.T) {
	b := NewBuilder(NewIntDict("u"), NewIntDict("i"), false, BuilderOptions{})
	for v := 0; v < 100; v++ {
		b.Add(b.Users.InternInt(int64(v%7)), b.Items.InternInt(int64(v)), float64(v), 0)
	}
	s, _, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	st := ComputeStats(s)
	if len(st.Histogram) != 10 {
		t.Fatalf("%d bins", len(st.Histogram))
	}
	for i, h := range st.Histogram {
		if h.Count != 10 {
			t.Errorf("bin %d [%v,%v) has %d values, want 10", i, h.Lo, h.Hi, h.Count)
		}
	}
	if m := st.Modes[0]; m.Min != 14 || m.Max != 15 {
		t.Errorf("user counts %+v, want 14..15", m)
	}
}
