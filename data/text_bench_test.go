package data

import (
	"bufio"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// textBenchFiles caches the generated inputs of BenchmarkLoadCSV per size,
// so that a benchmark run writes each file once.
var textBenchFiles sync.Map

// textWriteMovieLensCSV writes a MovieLens-20M-style ratings.csv of n rows:
// 160,000 users and 60,000 items drawn with a skew towards small IDs (like
// real logs), half-star ratings and increasing Unix time stamps.
func textWriteMovieLensCSV(tb testing.TB, path string, n int) int64 {
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	rng := rand.New(rand.NewPCG(1, 2))
	w.WriteString("userId,movieId,rating,timestamp\n")
	buf := make([]byte, 0, 64)
	ts := int64(1_000_000_000)
	for e := 0; e < n; e++ {
		u := 1 + int64(rng.Float64()*rng.Float64()*160000)
		i := 1 + int64(rng.Float64()*rng.Float64()*60000)
		r := float64(1+rng.IntN(10)) / 2
		ts += int64(rng.IntN(30))
		buf = strconv.AppendInt(buf[:0], u, 10)
		buf = append(buf, ',')
		buf = strconv.AppendInt(buf, i, 10)
		buf = append(buf, ',')
		buf = strconv.AppendFloat(buf, r, 'f', 1, 64)
		buf = append(buf, ',')
		buf = strconv.AppendInt(buf, ts, 10)
		buf = append(buf, '\n')
		w.Write(buf)
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	st, err := f.Stat()
	if err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
	return st.Size()
}

type textBenchFile struct {
	path string
	size int64
}

func benchmarkLoadCSV(b, parent *testing.B, rows int) {
	v, ok := textBenchFiles.Load(rows)
	if !ok {
		dir, err := os.MkdirTemp("", "dprec-bench")
		if err != nil {
			b.Fatal(err)
		}
		p := filepath.Join(dir, "ratings.csv")
		v = textBenchFile{p, textWriteMovieLensCSV(b, p, rows)}
		textBenchFiles.Store(rows, v)
		parent.Cleanup(func() { os.RemoveAll(dir) })
	}
	in := v.(textBenchFile)
	b.SetBytes(in.size)
	cpu0 := textCPUSeconds()
	b.ResetTimer()
	for range b.N {
		s, _, err := Load(in.path, LoadOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if s.NNZ() == 0 {
			b.Fatal("empty store")
		}
	}
	b.StopTimer()
	cpu := (textCPUSeconds() - cpu0) / float64(b.N)
	// CPU seconds (user+system, all threads) per load: the wall-clock
	// figures depend on how busy the shared machine is, this one hardly.
	b.ReportMetric(cpu, "cpu-s/op")
	sec := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(float64(in.size)/1e6/sec, "MB/s")
	b.ReportMetric(float64(rows)/sec, "rows/s")
}

// textCPUSeconds returns the user+system CPU time of the process.
func textCPUSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

func BenchmarkLoadCSV(parent *testing.B) {
	b := parent
	for _, rows := range []int{100_000, 1_000_000, 10_000_000} {
		b.Run(strconv.Itoa(rows), func(b *testing.B) { benchmarkLoadCSV(b, parent, rows) })
	}
}

// BenchmarkLoadFile loads the delimited log named by DPREC_BENCH_LOAD
// (skipped when unset), with the column order of DPREC_BENCH_LOAD_COLUMNS
// (comma-separated roles, e.g. user,item,time,rating; empty: detected) and
// day buckets, as `dprec train --data FILE` does. Profile it with
// -cpuprofile; cpu-s/op is the user+system CPU time per load.
func BenchmarkLoadFile(b *testing.B) {
	path := os.Getenv("DPREC_BENCH_LOAD")
	if path == "" {
		b.Skip("set DPREC_BENCH_LOAD to a delimited rating log")
	}
	var opts LoadOptions
	if c := os.Getenv("DPREC_BENCH_LOAD_COLUMNS"); c != "" {
		opts.Columns.Order = strings.Split(c, ",")
	}
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(st.Size())
	cpu0 := textCPUSeconds()
	b.ResetTimer()
	for range b.N {
		s, _, err := Load(path, opts)
		if err != nil {
			b.Fatal(err)
		}
		if s.NNZ() == 0 {
			b.Fatal("empty store")
		}
	}
	b.StopTimer()
	b.ReportMetric((textCPUSeconds()-cpu0)/float64(b.N), "cpu-s/op")
}
