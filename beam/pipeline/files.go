package pipeline

import (
	"bufio"
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"slices"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
)

func init() {
	register.DoFn2x0[string, func(int, string)](&shardKeyFn{})
	register.Emitter2[int, string]()
	register.DoFn3x1[context.Context, int, func(*string) bool, error](&writeShardFn{})
	register.Iter1[string]()
}

// WriteSharded writes the lines of col to shards files prefix-SSSSS-of-NNNNN
// (lines spread by hash, unordered within a file), each written by one
// worker: unlike textio.Write, a large output does not funnel through one
// worker. prefix may be any path a Beam filesystem serves.
func WriteSharded(s beam.Scope, prefix string, shards int, col beam.PCollection) {
	s = s.Scope("WriteSharded")
	keyed := beam.ParDo(s, &shardKeyFn{Shards: shards}, col)
	beam.ParDo0(s, &writeShardFn{Prefix: prefix, Shards: shards}, beam.GroupByKey(s, keyed))
}

type shardKeyFn struct{ Shards int }

func (f *shardKeyFn) ProcessElement(line string, emit func(int, string)) {
	h := fnv.New32a()
	h.Write([]byte(line))
	emit(int(h.Sum32()%uint32(f.Shards)), line)
}

type writeShardFn struct {
	Prefix string
	Shards int
}

func (f *writeShardFn) ProcessElement(ctx context.Context, shard int, lines func(*string) bool) error {
	name := ShardName(f.Prefix, shard, f.Shards)
	fs, err := filesystem.New(ctx, name)
	if err != nil {
		return err
	}
	defer fs.Close()
	w, err := fs.OpenWrite(ctx, name)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	var line string
	for lines(&line) {
		bw.WriteString(line)
		bw.WriteByte('\n')
	}
	if err := bw.Flush(); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}

// ShardName is the name of shard i of n of a sharded output.
func ShardName(prefix string, i, n int) string {
	return fmt.Sprintf("%s-%05d-of-%05d", prefix, i, n)
}

// ReadLines calls fn for every line of the files matching glob (in sorted
// file order), from the driver.
func ReadLines(ctx context.Context, glob string, fn func(line string) error) error {
	fs, err := filesystem.New(ctx, glob)
	if err != nil {
		return err
	}
	defer fs.Close()
	files, err := fs.List(ctx, glob)
	if err != nil {
		return err
	}
	for _, name := range sortedCopy(files) {
		r, err := fs.OpenRead(ctx, name)
		if err != nil {
			return err
		}
		err = scanLines(r, fn)
		r.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

func scanLines(r io.Reader, fn func(string) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<30)
	for sc.Scan() {
		if err := fn(sc.Text()); err != nil {
			return err
		}
	}
	return sc.Err()
}

// WriteFile writes a whole file from the driver.
func WriteFile(ctx context.Context, name string, write func(w *bufio.Writer) error) error {
	fs, err := filesystem.New(ctx, name)
	if err != nil {
		return err
	}
	defer fs.Close()
	w, err := fs.OpenWrite(ctx, name)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	if err := write(bw); err != nil {
		w.Close()
		return err
	}
	if err := bw.Flush(); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}

func sortedCopy(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}
