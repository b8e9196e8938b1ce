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

// loadPredictor returns a predictor of a model file (any Beam filesystem
// path) loaded once per worker process, ranking as rankWith says. The
// whole model is held by every worker, as by dprec predict: its memory is
// the model file's size.
func loadPredictor(ctx context.Context, path string, ranking models.Ranking, shrinkage float64) (*models.Predictor, error) {
	loaded.Lock()
	defer loaded.Unlock()
	if f := loaded.m[path]; f != nil {
		return rankWith(models.NewPredictor(f), ranking, shrinkage), nil
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
	return rankWith(models.NewPredictor(f), ranking, shrinkage), nil
}

// rankWith ranks as dprec eval and recommend do with --ranking r and
// --shrinkage kappa: r "" is the default, relevance for kappa > 0 and the
// prediction for kappa 0 (Predictor.WithShrinkage).
func rankWith(p *models.Predictor, r models.Ranking, kappa float64) *models.Predictor {
	if r == "" {
		return p.WithShrinkage(kappa)
	}
	return p.WithRanking(r, kappa)
}
