package pipeline

import (
	"bufio"
	"context"
	"os"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/x/beamx"
)

// Runner runs one pipeline; nil means beamx.Run (the runner named by the
// --runner flag, Prism in-process by default).
type Runner func(ctx context.Context, p *beam.Pipeline) error

func (r Runner) run(ctx context.Context, p *beam.Pipeline) error {
	if r == nil {
		return beamx.Run(ctx, p)
	}
	return r(ctx, p)
}

func writeBytes(ctx context.Context, name string, b []byte) error {
	return WriteFile(ctx, name, func(w *bufio.Writer) error {
		_, err := w.Write(b)
		return err
	})
}

// removeAll removes a local scratch directory (object-store scratch is
// left to the bucket's lifecycle rules).
func removeAll(_ context.Context, dir string) error {
	if strings.Contains(dir, "://") {
		return nil
	}
	return os.RemoveAll(dir)
}
