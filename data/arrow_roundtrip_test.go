package data

import (
	"os"
	"path/filepath"
	"testing"
)

// arrowChain loads src, then writes and reloads it through each extension
// in turn, checking that every store equals the first.
func arrowChain(t *testing.T, src string, exts ...string) {
	t.Helper()
	opts := LoadOptions{Builder: BuilderOptions{KeepTimestamps: true}}
	first, _, err := Load(src, opts)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cur := first
	for i, ext := range exts {
		p := filepath.Join(dir, "step"+arrowItoa(int64(i))+ext)
		if err := Save(p, cur, WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		next, _, err := Load(p, opts)
		if err != nil {
			t.Fatal(err)
		}
		arrowStoresEqual(t, src+" -> "+p, first, next)
		cur = next
	}
}

// TestCSVParquetArrowCSV is the round trip: CSV -> Parquet ->
// Arrow -> CSV keeps entries, dictionaries and raw time stamps.
func TestCSVParquetArrowCSV(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "ratings.csv")
	csv := "userId,movieId,rating,timestamp\n" +
		"7,31,2.5,1260759144\n" +
		"7,1029,3.0,1260759179\n" +
		"1,31,4.5,964982703\n" +
		"100000,1029,5.0,1700000000\n" +
		"1,2,0.5,964981247\n"
	if err := os.WriteFile(src, []byte(csv), 0o644); err != nil {
		t.Fatal(err)
	}
	arrowChain(t, src, ".parquet", ".arrow", ".csv")
	arrowChain(t, src, ".arrows", ".parquet", ".tsv")
}

// TestCSVParquetArrowCSVMovieLens runs the same chain on the real
// MovieLens latest-small log when it is present.
func TestCSVParquetArrowCSVMovieLens(t *testing.T) {
	src := "../../shared/data/ml-latest-small/ratings.csv"
	if _, err := os.Stat(src); err != nil {
		t.Skipf("MovieLens latest-small not found at %s: %v", src, err)
	}
	arrowChain(t, src, ".parquet", ".arrow", ".csv")
}
