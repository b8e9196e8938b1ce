package pipeline

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/dprec/dprec/data"
)

// TestStatsParquet: stats over a Parquet log (read by package data's
// loader on the worker) gives the loader's counts and every item's count
// and mean.
func TestStatsParquet(t *testing.T) {
	_, whole := writeSynth(t, t.TempDir())
	st := loadTSV(t, whole)
	pq := filepath.Join(t.TempDir(), "ratings.parquet")
	if err := data.Save(pq, st, data.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	ctx := context.Background()
	c, err := Stats(ctx, StatsOptions{Data: pq, Out: out, Shards: 2})
	if err != nil {
		t.Fatal(err)
	}
	if int(c.Ratings) != st.NNZ() || int(c.Users) != st.Dims[0] || int(c.Items) != st.Dims[1] || c.Files != 1 {
		t.Fatalf("counts %+v, loader: %d ratings, dims %v", c, st.NNZ(), st.Dims)
	}
	n := make([]int, st.Dims[1])
	sum := make([]float64, st.Dims[1])
	for e, v := range st.Val {
		n[st.Idx[1][e]]++
		sum[st.Idx[1][e]] += v
	}
	seen := 0
	err = ReadLines(ctx, filepath.Join(out, "items")+"-*", func(line string) error {
		f := strings.Split(line, "\t")
		id, _ := strconv.Unquote(f[0])
		j, ok := st.Dicts[1].LookupString(id)
		if !ok {
			t.Fatalf("item %q not in the log", id)
		}
		cnt, _ := strconv.Atoi(f[1])
		mean, _ := strconv.ParseFloat(f[2], 64)
		if cnt != n[j] || !relClose(mean, sum[j]/float64(n[j])) {
			t.Fatalf("item %s: count %d mean %v, want %d %v", id, cnt, mean, n[j], sum[j]/float64(n[j]))
		}
		seen++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen != st.Dims[1] {
		t.Fatalf("%d items in the output, %d in the log", seen, st.Dims[1])
	}
}
