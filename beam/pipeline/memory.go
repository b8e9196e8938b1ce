package pipeline

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/dprec/dprec/data"
)

// PrismBytesPerRating is the peak memory per rating of a pipeline on
// Prism in-process, which keeps every PCollection in memory: about 2.3 KB
// was measured on 10^6 ratings (docs/scale-out.md); the check takes 2 KB.
const PrismBytesPerRating = 2 << 10

// fileBytesPerRating is a generous size of one rating in each input
// format, so that the number of ratings is not overestimated (the check
// refuses only logs that surely do not fit).
func fileBytesPerRating(path string) int64 {
	p := strings.ToLower(path)
	switch {
	case strings.HasSuffix(p, ".gz"):
		return 8
	case strings.HasSuffix(p, ".parquet"):
		return 12
	case strings.HasSuffix(p, ".arrow"), strings.HasSuffix(p, ".arrows"), strings.HasSuffix(p, ".feather"):
		return 20
	}
	return 24 // "userId,movieId,rating,timestamp" lines of MovieLens
}

// CheckPrismMemory estimates the memory a pipeline over the logs of globs
// needs on Prism in-process and refuses, giving the figures, when it is
// more than frac of this machine's physical memory (object-store paths
// and machines of unknown memory are not checked).
func CheckPrismMemory(ctx context.Context, globs string, frac float64) error {
	phys := data.PhysicalMemory()
	if phys <= 0 {
		return nil
	}
	files, err := Expand(ctx, globs)
	if err != nil {
		return err
	}
	var size, ratings int64
	for _, f := range files {
		if strings.Contains(f, "://") {
			return nil
		}
		st, err := os.Stat(f)
		if err != nil {
			return err
		}
		size += st.Size()
		ratings += st.Size() / fileBytesPerRating(f)
	}
	need := ratings * PrismBytesPerRating
	if float64(need) > frac*float64(phys) {
		return fmt.Errorf("the input (%s in %d files, at least about %d ratings) needs about %s on Prism in-process (%s per rating measured), more than %.0f%% of this machine's %s: run on a cluster runner (--runner universal --endpoint HOST:PORT for Flink or Spark, --runner dataflow; docs/scale-out.md), or pass --no-memory-check",
			data.FormatBytes(size), len(files), ratings, data.FormatBytes(need), data.FormatBytes(PrismBytesPerRating), 100*frac, data.FormatBytes(phys))
	}
	return nil
}
