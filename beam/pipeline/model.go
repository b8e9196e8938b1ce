package pipeline

import (
	"context"
	"strings"
	"sync"

	"github.com/dprec/dprec/models"
)

// loaded caches the model files workers load (one per path and process:
// every DoFn instance of a worker shares it; a File is safe for concurrent
// use, a Predictor is not, so each DoFn instance makes its own).
var loaded struct {
	sync.Mutex
	m map[string]*models.File
}

// loadPredictor returns a predictor (ranking as Predictor.WithShrinkage
// says for the given kappa, as dprec eval and recommend do at their
// default --ranking) of a model file (any Beam filesystem path) loaded once per worker process. The whole model is held by every
// worker, as by dprec predict: its memory is the model file's size.
func loadPredictor(ctx context.Context, path string, shrinkage float64) (*models.Predictor, error) {
	loaded.Lock()
	defer loaded.Unlock()
	if f := loaded.m[path]; f != nil {
		return models.NewPredictor(f).WithShrinkage(shrinkage), nil
	}
	local := path
	if strings.Contains(path, "://") {
		l, cleanup, err := localCopy(ctx, path)
		if err != nil {
			return nil, err
		}
		defer cleanup()
		local = l
	}
	f, err := models.Load(local)
	if err != nil {
		return nil, err
	}
	if loaded.m == nil {
		loaded.m = map[string]*models.File{}
	}
	loaded.m[path] = f
	return models.NewPredictor(f).WithShrinkage(shrinkage), nil
}
