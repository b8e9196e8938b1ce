package data

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
)

// Stats summarises a store: sizes, density, how observations spread over
// each mode, and the distribution of the values.
type Stats struct {
	NNZ     int     `json:"nnz"`
	Dims    []int   `json:"dims"`
	Order   int     `json:"order"`
	Density float64 `json:"density"` // NNZ / product of Dims
	// Modes describes each mode's observation counts.
	Modes []ModeStats `json:"modes"`
	// Value statistics.
	ValueMin  float64 `json:"value_min"`
	ValueMax  float64 `json:"value_max"`
	ValueMean float64 `json:"value_mean"`
	// Histogram of the values.
	Histogram []HistBin `json:"histogram"`
	// Time is the time bucketing (nil for an order-2 store).
	Time *TimeBucketing `json:"time,omitempty"`
}

// ModeStats describes how many observations fall on each index of a mode.
// Min, Median and Max are over all Size indices (an index with no
// observation counts 0); Empty counts those indices.
type ModeStats struct {
	Name   string  `json:"name"`
	Size   int     `json:"size"`
	Min    int     `json:"min"`
	Median float64 `json:"median"`
	Max    int     `json:"max"`
	Empty  int     `json:"empty"`
}

// HistBin is one histogram bin: the values v with Lo <= v < Hi (the last
// bin includes Hi). For a histogram of distinct values Lo == Hi.
type HistBin struct {
	Lo    float64 `json:"lo"`
	Hi    float64 `json:"hi"`
	Count int     `json:"count"`
}

// statsMaxDistinct is the most distinct values that get a bin each (half-
// star 0.5..5 scales have 10, 1..10 scales 10); more distinct values get
// statsBins equal-width bins.
const (
	statsMaxDistinct = 20
	statsBins        = 10
)

// ComputeStats computes the statistics of s. It is O(NNZ + sum of Dims).
func ComputeStats(s *Store) *Stats {
	st := &Stats{NNZ: s.NNZ(), Dims: slices.Clone(s.Dims), Order: s.Order(), Time: s.Time}
	cells := 1.0
	for _, d := range s.Dims {
		cells *= float64(d)
	}
	if cells > 0 {
		st.Density = float64(st.NNZ) / cells
	}
	names := []string{"user", "item", "time"}
	for m, idx := range s.Idx {
		ms := ModeStats{Size: s.Dims[m], Name: fmt.Sprintf("mode%d", m)}
		if m < len(names) {
			ms.Name = names[m]
		}
		counts := make([]int, s.Dims[m])
		for _, v := range idx {
			counts[v]++
		}
		if len(counts) > 0 {
			slices.Sort(counts)
			ms.Min, ms.Max = counts[0], counts[len(counts)-1]
			h := len(counts) / 2
			if len(counts)%2 == 1 {
				ms.Median = float64(counts[h])
			} else {
				ms.Median = float64(counts[h-1]+counts[h]) / 2
			}
			for _, c := range counts {
				if c > 0 {
					break
				}
				ms.Empty++
			}
		}
		st.Modes = append(st.Modes, ms)
	}
	if st.NNZ == 0 {
		return st
	}
	st.ValueMin, st.ValueMax = math.Inf(1), math.Inf(-1)
	var sum float64
	distinct := map[float64]int{}
	for _, v := range s.Val {
		st.ValueMin = min(st.ValueMin, v)
		st.ValueMax = max(st.ValueMax, v)
		sum += v
		if len(distinct) <= statsMaxDistinct {
			distinct[v]++
		}
	}
	st.ValueMean = sum / float64(st.NNZ)
	if len(distinct) <= statsMaxDistinct {
		for v, c := range distinct {
			st.Histogram = append(st.Histogram, HistBin{Lo: v, Hi: v, Count: c})
		}
		slices.SortFunc(st.Histogram, func(a, b HistBin) int {
			if a.Lo < b.Lo {
				return -1
			}
			return 1
		})
		return st
	}
	width := (st.ValueMax - st.ValueMin) / statsBins
	st.Histogram = make([]HistBin, statsBins)
	for b := range st.Histogram {
		st.Histogram[b].Lo = st.ValueMin + float64(b)*width
		st.Histogram[b].Hi = st.ValueMin + float64(b+1)*width
	}
	st.Histogram[statsBins-1].Hi = st.ValueMax
	for _, v := range s.Val {
		b := int((v - st.ValueMin) / width)
		b = min(max(b, 0), statsBins-1)
		st.Histogram[b].Count++
	}
	return st
}

// WriteText writes the statistics as aligned text.
func (st *Stats) WriteText(w io.Writer) error {
	var b strings.Builder
	dims := make([]string, len(st.Dims))
	for m, d := range st.Dims {
		dims[m] = fmt.Sprint(d)
	}
	fmt.Fprintf(&b, "observations  %d\n", st.NNZ)
	fmt.Fprintf(&b, "order         %d\n", st.Order)
	fmt.Fprintf(&b, "dims          %s\n", strings.Join(dims, " x "))
	fmt.Fprintf(&b, "density       %.6g\n", st.Density)
	if st.Time != nil {
		fmt.Fprintf(&b, "time buckets  %d %s buckets from Unix time %d\n", st.Time.Count, st.Time.Unit, st.Time.Unit.Start(st.Time.First))
	}
	fmt.Fprintf(&b, "\nobservations per index:\n%-6s %9s %7s %9s %9s %7s\n", "mode", "size", "min", "median", "max", "empty")
	for _, m := range st.Modes {
		fmt.Fprintf(&b, "%-6s %9d %7d %9.1f %9d %7d\n", m.Name, m.Size, m.Min, m.Median, m.Max, m.Empty)
	}
	fmt.Fprintf(&b, "\nvalues: min %g  max %g  mean %.4f\n", st.ValueMin, st.ValueMax, st.ValueMean)
	maxCount := 0
	for _, h := range st.Histogram {
		maxCount = max(maxCount, h.Count)
	}
	for _, h := range st.Histogram {
		label := fmt.Sprintf("%g", h.Lo)
		if h.Hi != h.Lo {
			label = fmt.Sprintf("[%.4g, %.4g)", h.Lo, h.Hi)
		}
		bar := 0
		if maxCount > 0 {
			bar = int(math.Round(40 * float64(h.Count) / float64(maxCount)))
		}
		fmt.Fprintf(&b, "  %-18s %10d  %s\n", label, h.Count, strings.Repeat("#", bar))
	}
	_, err := io.WriteString(w, b.String())
	return err
}
