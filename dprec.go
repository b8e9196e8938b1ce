// Package dprec is the one training entry of dprec's rating models, used
// by "dprec train", "dprec tune", the examples and the Beam pipelines
// alike: Fit a rating log (any format package data reads) or Train a
// loaded one, then Predict, Recommend and Save by external IDs, or Load a
// saved model file.
//
//	res, err := dprec.Fit(ctx, "ratings.csv", nil) // defaults: CP rank 10, day buckets, Gibbs
//	r, _ := res.Predict("1", "31", time.Time{})   // zero time: averaged over time
//	recs, _, _ := res.Recommend("1", 10)          // the user's training items left out
//	err = res.Save("model.arrow", false)
//
// Fit makes every decision "dprec train" makes, in one place:
//   - the objective: the ratings, or implicit feedback (weighted ALS) for a
//     log with no rating column or one value throughout, unless an option
//     of the rating objective only is set (Objective, RatingOnly);
//   - the hold-out: a validation part (Validation, 0.1 by default) steers
//     early stopping, then the model is retrained on every rating for the
//     chosen number of epochs (NoRefit keeps the first model); a private
//     run holds nothing out, as the held-out error would be released
//     without noise;
//   - the clamp range: the training ratings' range, or for a private run
//     the declared public scale (Privacy.RatingMin, RatingMax);
//   - the privacy plan (Privacy): the mode (bias, als, input, gradient,
//     output) and unit; at user level the public domain (an item catalogue
//     or a private item selection paid from the budget, a public time
//     range) and the per-user contribution bound come before training;
//   - the model file: dictionaries, time bucketing, each user's seen items
//     (non-private models only), the released training history and the
//     privacy report. At user level the file holds no user dictionary,
//     user rows or exact counts.
//
// Result records what was chosen (objective and why, seed, refit, counts,
// warnings). Randomness comes from one PCG source seeded by Options.Seed,
// or from crypto/rand; a seeded private run draws seeded noise and its
// report says it is NOT private. The packages below (data, completion,
// models, decomposition, perturb, otd) give full control of each step.
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
	return newModel(f), nil
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
// items the user rated in training, ranked as dprec recommend ranks them
// by default (a rating model by relevance: models.RankRelevance). An
// unknown user gets the items with the best non-personal score and the
// models.UnknownUser fallback.
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

// newModel wraps f; its lists rank as dprec recommend and eval rank them
// at their defaults (defaultPredictor).
func newModel(f *models.File) *Model { return &Model{f: f, p: defaultPredictor(f)} }

// defaultPredictor is f's predictor ranking as dprec eval and recommend
// do by default (models.Predictor.WithShrinkage with
// models.DefaultShrinkage: relevance for a rating model; implicit and
// item-item models rank by their own scores either way): the lists of
// Model.Recommend and those a ranking tune scores.
func defaultPredictor(f *models.File) *models.Predictor {
	return models.NewPredictor(f).WithShrinkage(models.DefaultShrinkage)
}
