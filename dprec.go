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
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/dprec/dprec/completion"
	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/models"
)

// Options configure Fit. The zero value (or nil) means the defaults of
// "dprec train".
type Options struct {
	// Kind is the model family; "" means CP.
	Kind decomposition.Kind
	// Rank is the rank in every mode; 0 means 10.
	Rank int
	// TimeUnit buckets the time column; "" means day (data.TimeNone gives
	// a user x item model).
	TimeUnit data.TimeUnit
	// Validation is the fraction held out for early stopping before the
	// refit on every rating; 0 means 0.1, negative means none.
	Validation float64
	// Seed seeds the split and training; 0 draws a random seed.
	Seed uint64
	// Settings are the training settings (zero value: the defaults;
	// Settings.Privacy must be nil: Fit trains non-private models only).
	Settings completion.Settings
	// Load configures reading the file (zero value: auto-detection).
	Load data.LoadOptions
}

// Model is a trained or loaded rating model, queried by external IDs.
// It is safe for concurrent use once returned.
type Model struct {
	f *models.File
	p *models.Predictor
}

// File returns the underlying model file (header, model, dictionaries).
func (m *Model) File() *models.File { return m.f }

// Fit loads the rating log at path and trains a model on it. ctx cancels
// training at the next epoch boundary.
func Fit(ctx context.Context, path string, opts *Options) (*Model, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if _, none := o.Settings.Privacy.(completion.NoPrivacy); o.Settings.Privacy != nil && !none {
		return nil, errors.New("dprec: Fit trains non-private models; use package completion with a privacy plug-in")
	}
	if o.Kind == "" {
		o.Kind = decomposition.CP
	}
	if o.Rank == 0 {
		o.Rank = 10
	}
	if o.Rank < 0 {
		return nil, fmt.Errorf("dprec: rank %d must be positive", o.Rank)
	}
	switch {
	case o.Validation == 0:
		o.Validation = 0.1
	case o.Validation < 0:
		o.Validation = 0
	case o.Validation >= 1 || math.IsNaN(o.Validation):
		return nil, fmt.Errorf("dprec: validation fraction %g must be below 1", o.Validation)
	}
	if o.TimeUnit != "" {
		o.Load.Builder.TimeUnit = o.TimeUnit
	}
	seed := o.Seed
	if seed == 0 {
		var b [8]byte
		if _, err := crand.Read(b[:]); err != nil {
			return nil, err
		}
		seed = binary.LittleEndian.Uint64(b[:])
	}
	st, _, err := data.Load(path, o.Load)
	if err != nil {
		return nil, err
	}
	ranks := make([]int, st.Order())
	for i := range ranks {
		ranks[i] = o.Rank
	}
	src := rand.NewPCG(seed, 0x64707265)
	train, valid := split(st, o.Validation, src)
	m, err := decomposition.NewModel(o.Kind, st.Dims, ranks, true)
	if err != nil {
		return nil, err
	}
	info := models.Fingerprint(st)
	if info.NNZ > 0 {
		// A one-point range (one value throughout) clamps to that value.
		m.SetClamp(info.Min, info.Max)
	}
	s := o.Settings
	res, err := completion.TrainContext(ctx, train, valid, m, &s, src, nil)
	if err != nil {
		return nil, err
	}
	if valid != nil {
		// Refit on every rating for the number of epochs early stopping chose.
		s2 := res.Settings
		s2.Epochs, s2.Patience = res.BestEpoch, -1
		m2, err := decomposition.NewModel(o.Kind, st.Dims, ranks, true)
		if err != nil {
			return nil, err
		}
		m2.ClampLo, m2.ClampHi = m.ClampLo, m.ClampHi
		if res, err = completion.TrainContext(ctx, st, nil, m2, &s2, src, nil); err != nil {
			return nil, err
		}
		m = m2
	}
	settings, err := json.Marshal(map[string]any{"solver": res.Settings.Solver.String(), "epochs": res.Settings.Epochs})
	if err != nil {
		return nil, err
	}
	seen, err := models.SeenFromStore(st, st.Dims[0], st.Dims[1])
	if err != nil {
		return nil, err
	}
	dicts := append([]*data.Dict(nil), st.Dicts...)
	for len(dicts) < m.Order() {
		dicts = append(dicts, nil)
	}
	f := &models.File{
		Header: models.Header{Settings: settings, Data: info, Created: time.Now().UTC().Truncate(time.Second), Software: "dprec library"},
		Model:  m, Dicts: dicts[:m.Order()], Time: st.Time, Privacy: res.Privacy, Seen: seen,
	}
	return &Model{f: f, p: models.NewPredictor(f)}, nil
}

// split holds out a random fraction of the ratings (none when frac is 0).
func split(st *data.Store, frac float64, src rand.Source) (train, valid *data.Store) {
	n := st.NNZ()
	nv := int(math.Round(frac * float64(n)))
	if nv == 0 || nv >= n {
		return st, nil
	}
	perm := rand.New(src).Perm(n)
	v, t := slices.Clone(perm[:nv]), slices.Clone(perm[nv:])
	slices.Sort(v)
	slices.Sort(t)
	return st.Subset(t), st.Subset(v)
}

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
