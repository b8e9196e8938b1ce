// Package dprec is the one-call library entry point to dprec's rating
// models: Fit a rating log (any format package data reads), then Predict,
// Recommend and Save by external IDs, or Load a saved model file.
//
//	m, err := dprec.Fit(ctx, "ratings.csv", nil) // defaults: CP rank 10, day buckets, Gibbs
//	r, _ := m.Predict("1", "31", time.Time{})   // zero time: averaged over time
//	recs, _ := m.Recommend("1", 10)             // the user's training items left out
//	err = m.Save("model.arrow", false)
//
// Fit does what "dprec train" does: it holds out a validation part for
// early stopping, retrains on every rating for the chosen number of
// epochs, and records the time bucketing, dictionaries and each user's
// training items in the model so later predictions use the same buckets
// and recommendations skip seen items. The packages below it (data,
// completion, models, decomposition, perturb, otd) give full control,
// including the private training modes, which Fit does not offer.
package dprec

import (
	"fmt"
	"time"

	"github.com/dprec/dprec/models"
)

// Model is a trained or loaded rating model, queried by external IDs.
// It is safe for concurrent use once returned.
type Model struct {
	f *models.File
	p *models.Predictor
}

// File returns the underlying model file (header, model, dictionaries).
func (m *Model) File() *models.File { return m.f }

// Load reads and verifies a model file written by Save or "dprec train".
func Load(path string) (*Model, error) {
	f, err := models.Load(path)
	if err != nil {
		return nil, err
	}
	return &Model{f: f, p: models.NewPredictor(f)}, nil
}

// Save writes the model atomically; it refuses to replace a file unless
// force is set.
func (m *Model) Save(path string, force bool) error { return models.Save(path, m.f, force) }

func unixPtr(t time.Time) *int64 {
	if t.IsZero() {
		return nil
	}
	u := t.Unix()
	return &u
}

// Predict returns the predicted rating of item by user at time t (the zero
// time averages over the trained time buckets) and how it fell back for
// unknown IDs or out-of-range times (models.Fallback; never an error).
func (m *Model) Predict(user, item string, t time.Time) (float64, models.Fallback) {
	return m.p.Predict(user, item, unixPtr(t))
}

// Recommend returns the user's top n items, best first, leaving out the
// items the user rated in training. An unknown user gets the items with the
// best non-personal score and the models.UnknownUser fallback.
func (m *Model) Recommend(user string, n int) ([]models.Scored, models.Fallback, error) {
	if n <= 0 {
		return nil, 0, fmt.Errorf("dprec: top-N size %d must be positive", n)
	}
	var excl []int32
	if u, ok := m.p.UserIndex(user); ok && m.f.Seen != nil {
		excl = m.f.Seen.For(u, m.p.NumItems(), nil)
	}
	recs, fb := m.p.Recommend(user, nil, n, excl)
	return recs, fb, nil
}
