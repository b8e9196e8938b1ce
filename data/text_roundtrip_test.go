package data

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// textStoresEqual reports the first difference between two stores: entries,
// dictionaries, time bucketing and raw time stamps.
func textStoresEqual(a, b *Store) error {
	switch {
	case !slices.Equal(a.Dims, b.Dims):
		return fmt.Errorf("dims %v vs %v", a.Dims, b.Dims)
	case !slices.Equal(a.Val, b.Val):
		return errors.New("values differ")
	case !slices.Equal(a.Timestamps, b.Timestamps):
		return errors.New("time stamps differ")
	case (a.Time == nil) != (b.Time == nil) || a.Time != nil && *a.Time != *b.Time:
		return fmt.Errorf("time bucketing %+v vs %+v", a.Time, b.Time)
	}
	for m := range a.Idx {
		if !slices.Equal(a.Idx[m], b.Idx[m]) {
			return fmt.Errorf("mode %d indices differ", m)
		}
		if !a.Dicts[m].Equal(b.Dicts[m]) {
			return fmt.Errorf("mode %d dictionaries differ", m)
		}
	}
	return nil
}

// TestDelimitedRoundTrip checks CSV -> Store -> CSV/TSV/dat(.gz) -> Store
// gives identical entries, dictionaries and time stamps, and that writing
// the reloaded store again gives the same bytes.
func TestDelimitedRoundTrip(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src.csv")
	textWriteMovieLensCSV(t, src, 5000)
	// Add string IDs, awkward values and a duplicate to a second source.
	src2 := textWriteTemp(t, "src2.csv", "user,item,rating,ts\n\"a,b\",x,0.1,1\n\" sp \",\"q\"\"\",1e-7,2\nc,x,3.25,86401\nc,x,4,86402\n")
	for _, in := range []string{src, src2} {
		opts := LoadOptions{Builder: BuilderOptions{KeepTimestamps: true}}
		s1, _, err := Load(in, opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"out.csv", "out.tsv", "out.dat", "out.csv.gz"} {
			p := filepath.Join(dir, filepath.Base(in)+name)
			if err := Save(p, s1, WriteOptions{}); err != nil {
				t.Fatal(err)
			}
			s2, _, err := Load(p, opts)
			if err != nil {
				t.Fatal(err)
			}
			if err := textStoresEqual(s1, s2); err != nil {
				t.Errorf("%s -> %s: %v", in, name, err)
			}
			p2 := p + ".again" + filepath.Ext(name)
			if name == "out.csv.gz" {
				continue
			}
			if err := Save(p2, s2, WriteOptions{Format: DetectFormat(p)}); err != nil {
				t.Fatal(err)
			}
			b1, _ := os.ReadFile(p)
			b2, _ := os.ReadFile(p2)
			if string(b1) != string(b2) {
				t.Errorf("%s: second write differs", name)
			}
		}
	}
	// Without raw time stamps the bucket starts are written, and they load
	// back into the same buckets.
	s1, _, err := Load(src, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "buckets.csv")
	if err := Save(p, s1, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	s2, _, err := Load(p, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := textStoresEqual(s1, s2); err != nil {
		t.Errorf("bucket round trip: %v", err)
	}
	if err := Save(p, s1, WriteOptions{}); !errors.Is(err, ErrExists) {
		t.Errorf("overwrite without Force: %v", err)
	}
}

// TestReadDelimitedThreadsDeterministic loads a file of many small chunks
// (lines cut at chunk ends, a line longer than a chunk, a string ID far
// into the file) with several thread counts and checks the stores are
// identical.
func TestReadDelimitedThreadsDeterministic(t *testing.T) {
	defer func(n int) { textChunkSize = n }(textChunkSize)
	textChunkSize = 4096
	dir := t.TempDir()
	p := filepath.Join(dir, "big.csv")
	textWriteMovieLensCSV(t, p, 20_000)
	f, _ := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	tail := "u-last,1,5,2000000000\n" + strings.Repeat("x", 3*4096) + ",2,3,2000000001\n"
	f.WriteString(tail)
	f.Close()
	st, _ := os.Stat(p)
	var ref *Store
	for _, th := range []int{1, 2, 5} {
		var calls int
		var last int64
		s, rep, err := Load(p, LoadOptions{Threads: th, Progress: func(done, total int64) { calls++; last = done }})
		if err != nil {
			t.Fatal(err)
		}
		if !s.Dicts[0].IsString || s.Dicts[1].IsString || s.Dicts[0].Len() < 1000 {
			t.Fatalf("threads %d: user strings %v item strings %v, want true false (%v)", th, s.Dicts[0].IsString, s.Dicts[1].IsString, rep.Detected)
		}
		if rep.Rows != 20_002 {
			t.Errorf("threads %d: %d rows, want 20002", th, rep.Rows)
		}
		if calls < 100 || last != st.Size() {
			t.Errorf("threads %d: %d progress calls ending at %d of %d", th, calls, last, st.Size())
		}
		if ref == nil {
			ref = s
			continue
		}
		if err := textStoresEqual(ref, s); err != nil {
			t.Errorf("threads %d: %v", th, err)
		}
	}
}

// TestStoreBytesPerObservation measures the order-3 store's slices (by
// capacity, so slack counts) after a load: at most 24 bytes per
// observation, dictionaries aside.
func TestStoreBytesPerObservation(t *testing.T) {
	p := filepath.Join(t.TempDir(), "r.csv")
	textWriteMovieLensCSV(t, p, 100_000)
	s, _, err := Load(p, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Order() != 3 {
		t.Fatalf("order %d", s.Order())
	}
	bytes := 8 * cap(s.Val)
	for _, idx := range s.Idx {
		bytes += 4 * cap(idx)
	}
	per := float64(bytes) / float64(s.NNZ())
	t.Logf("store: %.2f bytes per observation (%d observations)", per, s.NNZ())
	if per > 24 {
		t.Errorf("%.2f bytes per observation, want <= 24", per)
	}
}
