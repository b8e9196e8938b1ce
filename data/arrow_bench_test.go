package data

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// arrowBenchFiles caches the generated benchmark inputs per format and size
// for the whole test process.
var arrowBenchFiles sync.Map

type arrowBenchFile struct {
	path string
	size int64
	err  error
}

// arrowBenchInput writes a synthetic log of the given rows (MovieLens-20M
// shape: 160,000 users, 60,000 items, ten years of days, popularity skew
// 0.5, half stars; int64 IDs, float64 rating, int64 time) in format ext.
// The file is removed when parent (the top-level benchmark) ends.
func arrowBenchInput(b, parent *testing.B, ext string, rows int) arrowBenchFile {
	key := ext + arrowItoa(int64(rows))
	if v, ok := arrowBenchFiles.Load(key); ok {
		return v.(arrowBenchFile)
	}
	dir, err := os.MkdirTemp("", "dprec-arrow-bench")
	if err != nil {
		b.Fatal(err)
	}
	parent.Cleanup(func() {
		os.RemoveAll(dir)
		arrowBenchFiles.Delete(key)
	})
	s, _, err := Synth(SynthOptions{Users: 160_000, Items: 60_000, Times: 3650, Ratings: rows,
		Bias: true, Noise: 0.5, Scale: "0.5-5", Skew: 0.5}, rand.NewPCG(1, 1))
	if err != nil {
		b.Fatal(err)
	}
	p := filepath.Join(dir, key+ext)
	f := arrowBenchFile{path: p}
	if f.err = Save(p, s, WriteOptions{Force: true}); f.err == nil {
		st, err := os.Stat(p)
		f.size, f.err = st.Size(), err
	}
	arrowBenchFiles.Store(key, f)
	return f
}

func benchmarkLoadArrowFamily(b, parent *testing.B, ext string, rows int) {
	in := arrowBenchInput(b, parent, ext, rows)
	if in.err != nil {
		b.Fatal(in.err)
	}
	b.SetBytes(in.size)
	var ru0, ru1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	var read time.Duration // wall time until all rows are read and interned
	var start time.Time
	arrowBeforeFinish = func() { read += time.Since(start) }
	defer func() { arrowBeforeFinish = nil }()
	b.ResetTimer()
	var s *Store
	for range b.N {
		var err error
		start = time.Now()
		s, _, err = Load(in.path, LoadOptions{})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	// The share of the load before Builder.Finish (bucketing, duplicates).
	b.ReportMetric(float64(read.Nanoseconds())/float64(b.N)/float64(rows), "read-ns/row")
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	// CPU time (user + system, all threads) per row: unlike wall time it
	// does not grow when other processes share the cores.
	cpu := time.Duration(ru1.Utime.Nano() - ru0.Utime.Nano() + ru1.Stime.Nano() - ru0.Stime.Nano())
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/float64(rows), "cpu-ns/row")
	sec := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(float64(rows)/sec, "rows/s")
	b.ReportMetric(float64(in.size)/1e6/sec, "MB/s")
	bytes := 8 * cap(s.Val)
	for _, idx := range s.Idx {
		bytes += 4 * cap(idx)
	}
	b.ReportMetric(float64(bytes)/float64(s.NNZ()), "B/obs")
}

func BenchmarkLoadParquet(parent *testing.B) {
	parent.Run("rows=1M", func(b *testing.B) { benchmarkLoadArrowFamily(b, parent, ".parquet", 1_000_000) })
	parent.Run("rows=10M", func(b *testing.B) { benchmarkLoadArrowFamily(b, parent, ".parquet", 10_000_000) })
}

func BenchmarkLoadArrow(parent *testing.B) {
	parent.Run("rows=1M", func(b *testing.B) { benchmarkLoadArrowFamily(b, parent, ".arrow", 1_000_000) })
	parent.Run("rows=10M", func(b *testing.B) { benchmarkLoadArrowFamily(b, parent, ".arrow", 10_000_000) })
}

func BenchmarkLoadArrowStream(parent *testing.B) {
	parent.Run("rows=1M", func(b *testing.B) { benchmarkLoadArrowFamily(b, parent, ".arrows", 1_000_000) })
}

func BenchmarkSynth(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		b.Run("ratings="+arrowItoa(int64(n)), func(b *testing.B) {
			for range b.N {
				if _, _, err := Synth(SynthOptions{Users: 160_000, Items: 60_000, Times: 3650, Ratings: n, Bias: true, Noise: 0.5, Skew: 0.5}, rand.NewPCG(1, 1)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "ratings/s")
		})
	}
}
