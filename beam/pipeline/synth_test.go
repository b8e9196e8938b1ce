package pipeline

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dprec/dprec/completion"
	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/models"
)

// writeSynth writes a small rating log as two TSV shards (string user
// IDs, integer item IDs, ratings on a half-star grid, one cell repeated
// across the shards) and as one file holding both, the log a single
// machine reads. Ratings follow a rank-2 model plus noise, so ALS has
// something to fit.
func writeSynth(t testing.TB, dir string) (shards, whole string) {
	t.Helper()
	r := rand.New(rand.NewPCG(11, 12))
	const users, items = 60, 40
	uf := make([][2]float64, users)
	for u := range uf {
		uf[u] = [2]float64{r.NormFloat64(), r.NormFloat64()}
	}
	var lines []string
	for u := 0; u < users; u++ {
		for j := 0; j < items; j++ {
			if r.Float64() > 0.3 {
				continue
			}
			v := 3 + uf[u][0]*float64(j%3-1) + 0.5*uf[u][1]*float64(j%2) + 0.5*r.NormFloat64()
			v = min(5, max(0.5, float64(int(v*2+0.5))/2))
			lines = append(lines, fmt.Sprintf("u%d\t%d\t%g", (u*37)%users, 1000+(j*13)%items, v))
		}
	}
	r.Shuffle(len(lines), func(a, b int) { lines[a], lines[b] = lines[b], lines[a] })
	half := len(lines) / 2
	// A cell of the first shard again in the second, with another value:
	// the last occurrence's value wins (data.DupLast).
	f := strings.Split(lines[3], "\t")
	lines = append(lines, f[0]+"\t"+f[1]+"\t0.5")
	write := func(name string, ls []string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(strings.Join(ls, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("part-a.tsv", lines[:half])
	write("part-b.tsv", lines[half:])
	whole = filepath.Join(t.TempDir(), "whole.tsv")
	if err := os.WriteFile(whole, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "part-*.tsv"), whole
}

// TestTrainEqualsSingleMachineSynthetic: two shards through the pipelines
// give completion's ALS model on the concatenated log, bit for bit.
func TestTrainEqualsSingleMachineSynthetic(t *testing.T) {
	shards, whole := writeSynth(t, t.TempDir())
	const rank, seed, sweeps = 3, 5, 2
	want := singleMachine(t, whole, rank, seed, completion.Settings{Epochs: sweeps})
	// The broadcast half-sweeps (default), then the shuffle joins.
	for _, limit := range []int64{0, -1} {
		t.Run(map[int64]string{0: "broadcast", -1: "shuffle"}[limit], func(t *testing.T) {
			checkSynth(t, shards, whole, want, TrainOptions{Data: shards, Rank: rank, Seed: seed, Seen: true, BroadcastLimit: limit,
				Settings: completion.Settings{Epochs: sweeps}, Work: t.TempDir(), Out: filepath.Join(t.TempDir(), "m.arrow")})
		})
	}
}

func checkSynth(t *testing.T, shards, whole string, want *decomposition.Model, o TrainOptions) {
	res, err := Train(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	got := res.File
	if !got.Dicts[0].IsString || got.Dicts[1].IsString {
		t.Errorf("dictionaries: user string %v, item string %v; want string users, integer items", got.Dicts[0].IsString, got.Dicts[1].IsString)
	}
	wst := loadTSV(t, whole)
	for k := range 2 {
		if got.Dicts[k].Len() != wst.Dicts[k].Len() {
			t.Fatalf("mode %d: %d IDs, single machine %d", k, got.Dicts[k].Len(), wst.Dicts[k].Len())
		}
		for i := 0; i < got.Dicts[k].Len(); i++ {
			if a, b := got.Dicts[k].String(int32(i)), wst.Dicts[k].String(int32(i)); a != b {
				t.Fatalf("mode %d index %d: ID %q, single machine %q", k, i, a, b)
			}
		}
	}
	if int(res.Counts.Ratings) != wst.NNZ() {
		t.Fatalf("%d ratings, single machine %d (cross-shard duplicate not merged?)", res.Counts.Ratings, wst.NNZ())
	}
	if d := maxRelDiff(got.Model, want); d != 0 {
		t.Fatalf("max relative difference %.3g, want 0 (bit for bit)", d)
	}
	if got.Seen == nil || got.Seen.Pairs() != wst.NNZ() {
		t.Fatalf("seen items: %v", got.Seen)
	}
	if fp := models.Fingerprint(wst); got.Header.Data == nil || got.Header.Data.SHA256 != fp.SHA256 {
		t.Fatalf("data fingerprint %+v, single machine %+v", got.Header.Data, fp)
	}
}
