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
	"strconv"
	"time"

	"github.com/dprec/dprec/completion"
	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/itemitem"
	"github.com/dprec/dprec/models"
	"github.com/dprec/dprec/perturb"
)

// Objective is what a model is trained to fit.
type Objective string

const (
	// ObjectiveAuto (the zero value) fits the ratings, or implicit
	// feedback to a log with nothing to fit: no rating column
	// (Options.Load.Columns) or one value throughout. Implicit feedback
	// is the EASE item-item model when the catalogue fits its closed form
	// (EASE.MaxItems, itemitem.DefaultMaxItems by default) and no option of
	// the factor model (Rank, Implicit) is set, else the implicit
	// objective. A log given an option of the rating objective only
	// (Options.RatingOnly, a privacy mode, Tucker) keeps the rating
	// objective.
	ObjectiveAuto Objective = ""
	// ObjectiveRating fits the ratings by squared error (CP or Tucker,
	// Gibbs, ALS or SGD, optionally private).
	ObjectiveRating Objective = models.ObjectiveRating
	// ObjectiveImplicit fits implicit feedback by weighted ALS (Hu, Koren
	// and Volinsky 2008): every event a positive with confidence
	// 1 + alpha f(value), every other (user, item) cell a zero.
	ObjectiveImplicit Objective = models.ObjectiveImplicit
	// ObjectiveEASE fits the EASE item-item model in closed form (Steck
	// 2019; package itemitem): strong on short histories and small
	// catalogues. Time and repeats do not matter: every event is a
	// positive.
	ObjectiveEASE Objective = models.ObjectiveItemItem
)

// PrivacyMode names a private training mode of the rating objective. The
// modes, their mechanisms, sensitivities and what they cover are in
// package completion's documentation and in each run's report.
type PrivacyMode string

const (
	// PrivacyBias releases item biases from noisy sums (completion.NewBiasMode).
	PrivacyBias PrivacyMode = "bias"
	// PrivacyALS is private ALS, joint DP (completion.NewALSMode).
	PrivacyALS PrivacyMode = "als"
	// PrivacyInput trains on noisy ratings (completion.NewInputPerturbation).
	PrivacyInput PrivacyMode = "input"
	// PrivacyGradient is DP-SGD (completion.NewGradientPerturbation).
	PrivacyGradient PrivacyMode = "gradient"
	// PrivacyOutput noises a refit of the last factor (completion.NewOutputPerturbation).
	PrivacyOutput PrivacyMode = "output"
)

// ParsePrivacyMode parses a mode name; "" and "none" give "" (no privacy).
func ParsePrivacyMode(s string) (PrivacyMode, error) {
	switch m := PrivacyMode(s); m {
	case "", "none":
		return "", nil
	case PrivacyBias, PrivacyALS, PrivacyInput, PrivacyGradient, PrivacyOutput:
		return m, nil
	}
	return "", fmt.Errorf("privacy mode %q: want none, bias, als, input, gradient or output", s)
}

// Privacy configures a private run of the rating objective. The embedded
// completion.PrivateOptions carry the budget, the public rating scale, the
// unit and the mechanism settings; the fields below prepare a user-level
// run (completion.UnitUser) before training.
type Privacy struct {
	Mode PrivacyMode
	completion.PrivateOptions
	// Items is the public item catalogue of a user-level run: the model's
	// items are exactly these and ratings of other items are dropped. Nil
	// selects the items privately with SelectionEpsilon of the budget
	// (and half of Delta).
	Items *data.Dict
	// ItemsFile, when Items is nil, is read as the catalogue
	// (data.ReadCatalogue: a CSV with the item id in its first column).
	ItemsFile string
	// TimeFrom and TimeTo (Unix seconds, inclusive) are the public time
	// range of a user-level run on a log with a time mode (required there:
	// the log's own range depends on who is in it).
	TimeFrom, TimeTo *int64
	// SelectionEpsilon is the epsilon of the private item selection,
	// taken from Epsilon; 0 means DefaultSelectionShare of it.
	SelectionEpsilon float64
	// Lists says what ranks the model's top-N lists. The zero value:
	// ListsPositions where the relation makes the positions public (the
	// bias and als modes at the entry unit) and EASE of the positions
	// beats most-popular by PositionListsMargin on a validation part of
	// the positions; ListsRatings otherwise.
	Lists ListSource
}

// ListSource says what ranks a private rating model's top-N lists.
type ListSource string

const (
	// ListsPositions ranks by EASE item-item weights fitted on which
	// items each user rated (every event a positive; itemitem.Train,
	// lambda chosen on a validation part of the positions) and stored in
	// the model file as ranking weights (models.File.RankingWeights); a
	// user's list sums the weights of the items in their own history.
	// The entry unit's relation (one rating value changes, the positions
	// stay) makes the positions public, so the weights cost no budget;
	// under the user unit, which protects whether a user rated an item
	// at all, they are refused. Predictions still come from the private
	// rating model.
	ListsPositions ListSource = "positions"
	// ListsRatings ranks by the private rating model's predictions
	// (by relevance, models.Predictor.WithShrinkage).
	ListsRatings ListSource = "ratings"
)

// PositionListsMargin is how much better than most-popular EASE of the
// positions must rank held-out positions (NDCG@10 on a validation part of
// the positions) for the default lists (an empty ListSource) to rank by
// the positions; below it they rank by the private model's predictions.
// An explicit ListsPositions always ranks by the positions.
const PositionListsMargin = 1.1

// ParseListSource parses a --lists value ("" is the default).
func ParseListSource(s string) (ListSource, error) {
	switch l := ListSource(s); l {
	case "", ListsPositions, ListsRatings:
		return l, nil
	}
	return "", fmt.Errorf("lists %q: want positions or ratings", s)
}

// PositionLists reports whether a private run ranks its lists by the
// positions (ListsPositions), refusing (an *OptionError) an explicit
// choice the mode or unit does not allow.
func (p *Privacy) PositionLists() (bool, error) {
	allowed := (p.Mode == PrivacyBias || p.Mode == PrivacyALS) && p.Unit != completion.UnitUser
	switch p.Lists {
	case "":
		return allowed, nil
	case ListsRatings:
		return false, nil
	case ListsPositions:
		if !allowed {
			return false, optErr("lists ranked by the positions are offered for the bias and als modes at the entry unit only: their relation (one rating value changes) makes which items each user rated public; privacy mode %s at the %s unit does not", p.Mode, unitName(p.Unit))
		}
		return true, nil
	}
	return false, optErr("lists %q: want positions or ratings", p.Lists)
}

func unitName(u completion.Unit) string {
	if u == "" {
		return string(completion.UnitEntry)
	}
	return string(u)
}

// DefaultSelectionShare is the share of the budget's epsilon a user-level
// run without a public catalogue spends on selecting its items privately
// (half of delta goes with it): the selection only needs the popular
// items, the statistics need the rest.
const DefaultSelectionShare = 0.1

// NoUserID is the one placeholder id of a user-level model's user mode:
// the file holds no user dictionary, only this id with an all-zero row
// (models need a non-empty user mode), whoever is in the log.
const NoUserID = "(no user released: user-level privacy)"

// Clamp is the prediction range of a rating model. The zero value is the
// training ratings' minimum and maximum for a non-private model and the
// public rating scale (Privacy.RatingMin, RatingMax) for a private one.
type Clamp struct {
	// None: no clamping.
	None bool
	// Lo and Hi, when Lo < Hi, are an explicit range.
	Lo, Hi float64
}

// Events are the callbacks of a training run; each may be nil. They are
// called from the goroutine that called Fit or Train.
type Events struct {
	// Loaded is called after Fit read its log, with the load report.
	Loaded func(*data.LoadReport)
	// Note is called with what a user should know as it is decided
	// (an objective chosen for them, defaults that apply, ratings dropped
	// by a user-level domain: counts that are for the operator only).
	Note func(string)
	// Start is called before each training loop with its number of
	// epochs (sweeps) and a short description.
	Start func(epochs int, what string)
	// Epoch is called after each epoch of the rating objective.
	Epoch func(completion.EpochRecord)
	// Sweep is called after each sweep of the implicit objective.
	Sweep func(completion.ImplicitRecord)
	// Done is called when a training loop ends, successfully or not.
	Done func()
}

// Plan is what a run is about to train, given to Options.Check before any
// model is allocated.
type Plan struct {
	Objective Objective
	Dims      []int
	NNZ       int
	Ranks     []int
	// Low and High are the smallest and largest training value (the
	// rating objective only; zero otherwise). They are for the caller, to
	// check a declared scale against the data before training, and are
	// released nowhere.
	Low, High float64
}

// Options configure Fit and Train. The zero value (or nil) means the
// defaults of "dprec train".
type Options struct {
	// Objective: rating, implicit, or auto (the zero value).
	Objective Objective
	// RatingOnly names an option the caller set that only the rating
	// objective uses (a flag such as "--epochs"): with ObjectiveAuto it
	// keeps the rating objective on a log without ratings, and the note
	// says why.
	RatingOnly string
	// Kind is the model family of the rating objective; "" means CP.
	Kind decomposition.Kind
	// Rank is the rank in every mode; 0 means 10 (rating objective) or
	// completion.DefaultImplicitRank (implicit; at most the number of
	// users and of items).
	Rank int
	// Ranks are Tucker's ranks, one per mode (overrides Rank).
	Ranks []int
	// NoBias drops the bias terms of the rating objective.
	NoBias bool
	// Validation is the fraction held out for early stopping before the
	// refit on every rating; 0 means 0.1 (none for a private run, whose
	// held-out error would be released without noise), negative none.
	Validation float64
	// NoRefit keeps the model trained on the training part instead of
	// retraining on every rating for the epochs early stopping chose.
	NoRefit bool
	// Clamp is the prediction range (zero value: see Clamp).
	Clamp Clamp
	// Seed seeds the split, initialisation, shuffling and (then NOT
	// private) any privacy noise when Seeded or non-zero; otherwise a
	// seed is drawn from crypto/rand and the noise is secure.
	Seed   uint64
	Seeded bool
	// Settings are the rating objective's training settings (zero value:
	// the defaults; Settings.Privacy is set from Privacy and must be nil).
	Settings completion.Settings
	// Implicit are the implicit objective's settings (zero value: the
	// defaults; Threads defaults to Settings.Threads).
	Implicit completion.ImplicitSettings
	// NoSelect keeps the implicit objective's default rank, reg and alpha.
	// Otherwise, when none of the three is given and the log has at most
	// SelectMaxEvents events, they are chosen by NDCG@10 on a per-user
	// hold-out of the log among SelectGrid (Result.Selection says what was
	// chosen and why), then the model is trained on every event.
	NoSelect bool
	// EASE are the item-item model's settings (zero value: the defaults,
	// lambda chosen on a per-user hold-out; Seed and Threads default to
	// the run's; Note to Events.Note).
	EASE itemitem.Settings
	// Privacy, when non-nil with a Mode, trains privately.
	Privacy *Privacy
	// TimeUnit buckets the time column in Fit; "" means
	// Load.Builder.TimeUnit (day when that is empty too; data.TimeNone
	// gives a user x item model).
	TimeUnit data.TimeUnit
	// Load configures reading the file in Fit, and tells Train whether
	// the log has a rating column (Load.Columns).
	Load data.LoadOptions
	// Check, when set, is called with the plan before training; an error
	// stops the run (a resource guard, for example).
	Check func(Plan) error
	// Events report progress (zero value: none).
	Events Events
	// Software is recorded in the model header; "" means "dprec library".
	Software string

	autoNote string // the note of an objective Fit chose before reloading
	noRating bool   // Fit's load found no rating column
}

// Result is a trained model with the record of what the run chose.
type Result struct {
	*Model
	// Objective is the objective trained; ObjectiveNote says why when it
	// was chosen automatically.
	Objective     Objective
	ObjectiveNote string
	// Seed is the seed used (drawn when none was given) and Seeded
	// whether it was given.
	Seed   uint64
	Seeded bool
	// TrainRatings and ValidRatings count the training and held-out
	// ratings (at user level the training count is exact and for the
	// operator only: the model file holds no count).
	TrainRatings, ValidRatings int
	// TimeCollapsed says an implicit model summed an order-3 log over time.
	TimeCollapsed bool
	// UserLevel says the run was private at user level.
	UserLevel bool
	// Refit says the saved model was retrained on every rating for
	// Rating.BestEpoch epochs after early stopping.
	Refit bool
	// Rating is the rating objective's training result (nil for implicit).
	Rating *completion.Result
	// Implicit is the implicit objective's result (nil for rating).
	Implicit *completion.ImplicitResult
	// Selection is the implicit objective's choice of settings (nil when
	// none ran).
	Selection *Selection
	// EASE is the item-item model's result (lambda, validation grid).
	EASE *itemitem.Result
	// Warnings are what the user should read before using the model.
	Warnings []string
}

// OptionError is an invalid Options value; callers map it to a usage error.
type OptionError struct{ Msg string }

func (e *OptionError) Error() string { return "dprec: " + e.Msg }

func optErr(format string, a ...any) error { return &OptionError{Msg: fmt.Sprintf(format, a...)} }

// Fit loads the rating log at path and trains a model on it (Train).
// When the objective is chosen automatically and turns out implicit, a log
// whose repeated cells were merged with Load.Builder.Duplicates unset is
// read again with repeats added up (data.DupSum), as the implicit
// objective counts them. ctx cancels training at the next epoch boundary.
func Fit(ctx context.Context, path string, opts *Options) (*Result, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.TimeUnit != "" {
		o.Load.Builder.TimeUnit = o.TimeUnit
	}
	if o.Objective == ObjectiveEASE {
		// Every event is a positive: time does not matter.
		o.Load.Builder.TimeUnit = data.TimeNone
	}
	implicitLoad := o.Load
	if implicitLoad.Builder.Duplicates == "" {
		// Repeated events add up as confidence.
		implicitLoad.Builder.Duplicates = data.DupSum
	}
	if o.Objective == ObjectiveImplicit || o.Objective == ObjectiveAuto && o.Load.Columns.NoRating() && o.ratingOnly() == "" {
		o.Load = implicitLoad
	}
	st, rep, err := data.Load(path, o.Load)
	if err != nil {
		return nil, err
	}
	if o.Events.Loaded != nil {
		o.Events.Loaded(rep)
	}
	o.noRating = rep.RatingColumn == ""
	if o.Objective == ObjectiveAuto && o.Load.Builder.Duplicates == "" && rep.Duplicates.Dropped > 0 {
		if obj, note := o.resolveObjective(st, path); obj == ObjectiveImplicit {
			// The decision was taken on the values as merged; the sums
			// differ, so it is kept rather than taken again.
			st = nil
			o.Objective, o.autoNote = obj, note
			o.Load = implicitLoad
			if st, rep, err = data.Load(path, o.Load); err != nil {
				return nil, err
			}
			if o.Events.Loaded != nil {
				o.Events.Loaded(rep)
			}
		}
	}
	return train(ctx, st, path, &o)
}

// Train trains a model on a loaded log; name describes it in notes.
func Train(ctx context.Context, st *data.Store, name string, opts *Options) (*Result, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	return train(ctx, st, name, &o)
}

// ratingOnly returns why the rating objective was asked for, or "".
func (o *Options) ratingOnly() string {
	switch {
	case o.privateImplicit():
		// The implicit objective's private mode.
	case o.Privacy != nil && o.Privacy.Mode != "":
		return "privacy mode " + string(o.Privacy.Mode)
	case o.Kind != "" && o.Kind != decomposition.CP:
		return "model " + string(o.Kind)
	}
	return o.RatingOnly
}

// resolveObjective returns the objective to train and a note when it was
// chosen automatically.
func (o *Options) resolveObjective(st *data.Store, name string) (Objective, string) {
	if o.Objective != ObjectiveAuto {
		return o.Objective, o.autoNote
	}
	why := o.noRatings(st, name)
	if why == "" {
		return ObjectiveRating, ""
	}
	if f := o.ratingOnly(); f != "" {
		return ObjectiveRating, fmt.Sprintf("note: %s, but %s applies to the rating objective only: trained with the rating objective (--objective implicit for the implicit one)", why, f)
	}
	if o.privateImplicit() {
		return ObjectiveImplicit, fmt.Sprintf("note: %s: trained the implicit objective's private mode (weighted ALS at the user unit; every event a positive, users folded in from their own events); --objective rating fits the ratings instead", why)
	}
	maxItems := o.EASE.MaxItems
	if maxItems == 0 {
		maxItems = itemitem.DefaultMaxItems
	}
	factor := o.Rank != 0 || o.Implicit != (completion.ImplicitSettings{})
	if !factor && (maxItems < 0 || st.Order() >= 2 && st.Dims[1] <= maxItems) {
		return ObjectiveEASE, fmt.Sprintf("note: %s: trained the EASE item-item model (every event a positive; its %d items fit the closed form, which leads on short histories and small catalogues); --objective implicit trains the factor model, --objective rating fits the ratings", why, st.Dims[1])
	}
	return ObjectiveImplicit, fmt.Sprintf("note: %s: trained with the implicit objective (every event a positive, every other cell a zero); --objective rating fits the ratings instead", why)
}

// privateImplicit reports whether the options ask for the mode the
// implicit objective has a private version of: als at the user unit.
func (o *Options) privateImplicit() bool {
	return o.Privacy != nil && o.Privacy.Mode == PrivacyALS && o.Privacy.Unit == completion.UnitUser
}

// noRatings says why st carries no ratings (no rating column, or one
// value throughout), or "".
func (o *Options) noRatings(st *data.Store, name string) string {
	if o.Load.Columns.NoRating() || o.noRating {
		return name + " has no rating column"
	}
	if v, ok := oneValue(st); ok {
		return fmt.Sprintf("every rating of %s is %g", name, v)
	}
	return ""
}

// oneValue reports whether every rating of st has the same value.
func oneValue(st *data.Store) (float64, bool) {
	if len(st.Val) == 0 {
		return 0, false
	}
	v := st.Val[0]
	for _, x := range st.Val[1:] {
		if x != v {
			return 0, false
		}
	}
	return v, true
}

func (o *Options) note(s string) {
	if o.Events.Note != nil && s != "" {
		o.Events.Note(s)
	}
}

// ranks resolves Rank and Ranks for a model of the given order.
func (o *Options) ranks(order int, def int) ([]int, error) {
	if len(o.Ranks) > 0 {
		if o.Kind != decomposition.Tucker {
			return nil, optErr("Ranks are for Tucker models; CP takes Rank")
		}
		if len(o.Ranks) != order {
			return nil, optErr("Ranks %v: want %d ranks for an order-%d log", o.Ranks, order, order)
		}
		for _, r := range o.Ranks {
			if r <= 0 {
				return nil, optErr("Ranks %v: every rank must be positive", o.Ranks)
			}
		}
		return slices.Clone(o.Ranks), nil
	}
	r := o.Rank
	if r == 0 {
		r = def
	}
	if r < 0 {
		return nil, optErr("rank %d must be positive", r)
	}
	out := make([]int, order)
	for i := range out {
		out[i] = r
	}
	return out, nil
}

// seed returns the seed of the run.
func (o *Options) seed() (uint64, bool, error) {
	if o.Seeded || o.Seed != 0 {
		return o.Seed, true, nil
	}
	var b [8]byte
	if _, err := crand.Read(b[:]); err != nil {
		return 0, false, err
	}
	return binary.LittleEndian.Uint64(b[:]), false, nil
}

// pcgStream is the second word of the run's PCG source (any fixed
// constant; "dprec train" has always used it, so seeds give the models
// they gave).
const pcgStream = 0x9e3779b97f4a7c15

func train(ctx context.Context, st *data.Store, name string, o *Options) (*Result, error) {
	if st == nil {
		return nil, optErr("nil store")
	}
	if _, none := o.Settings.Privacy.(completion.NoPrivacy); o.Settings.Privacy != nil && !none {
		return nil, optErr("Settings.Privacy must be nil: set Options.Privacy")
	}
	private := o.Privacy != nil && o.Privacy.Mode != ""
	if o.Kind == "" {
		o.Kind = decomposition.CP
	}
	if o.Kind != decomposition.CP && o.Kind != decomposition.Tucker {
		return nil, optErr("model kind %q: want cp or tucker", o.Kind)
	}
	if private && o.Privacy.Unit != completion.UnitUser {
		if why := o.noRatings(st, name); why != "" {
			// A click log's events are its positions: the entry unit's
			// relation (one rating value changes, the positions public)
			// would protect none of it, while the report said private.
			return nil, optErr("%s: the entry unit's relation (one rating value changes; which items each user rated is public) protects nothing of a log whose events carry no rating; train it without --privacy, or at --privacy-unit user (bias or als: whole users are protected)", why)
		}
	}
	obj, note := o.resolveObjective(st, name)
	o.note(note)
	res := &Result{Objective: obj, ObjectiveNote: note}
	var err error
	if res.Seed, res.Seeded, err = o.seed(); err != nil {
		return nil, err
	}
	rng := rand.NewPCG(res.Seed, pcgStream)
	switch obj {
	case ObjectiveImplicit:
		sel, err := selectImplicit(ctx, st, o, res.Seed)
		if err != nil {
			return nil, err
		}
		if sel != nil {
			for k, v := range sel.Chosen {
				if err := applyImplicit(o, k, v); err != nil {
					return nil, err
				}
			}
			res.Selection = sel
			o.note(fmt.Sprintf("note: chose rank %s, reg %s, alpha %s (validation %s %.4f; most popular %.4f); training on every event", sel.Chosen["rank"], sel.Chosen["reg"], sel.Chosen["alpha"], sel.Metric, sel.Points[0].Score, sel.Points[0].Popularity))
		}
		if err := trainImplicit(st, name, o, rng, res); err != nil {
			return nil, err
		}
		return res, nil
	case ObjectiveEASE:
		if err := trainEASE(ctx, st, o, res); err != nil {
			return nil, err
		}
		return res, nil
	case ObjectiveRating:
	default:
		return nil, optErr("objective %q: want rating, implicit or ease", obj)
	}
	ranks, err := o.ranks(st.Order(), 10)
	if err != nil {
		return nil, err
	}
	if err := checkGibbsCore(o.Kind, o.Settings.Solver, ranks); err != nil {
		return nil, err
	}
	if o.Check != nil {
		p := Plan{Objective: obj, Dims: st.Dims, NNZ: st.NNZ(), Ranks: ranks}
		if len(st.Val) > 0 {
			p.Low, p.High = slices.Min(st.Val), slices.Max(st.Val)
		}
		if err := o.Check(p); err != nil {
			return nil, err
		}
	}
	frac := o.Validation
	switch {
	case private && frac > 0:
		return nil, optErr("a private run holds nothing out (Validation %g): held-out ratings would steer early stopping and be reported in the model file without noise", frac)
	case private || frac < 0:
		frac = 0
	case frac == 0:
		frac = 0.1
	case frac >= 1 || math.IsNaN(frac):
		return nil, optErr("validation fraction %g: want a fraction in [0, 1)", frac)
	}
	trainSt, valid := Split(st, frac, rng)
	// Privacy plan, model, settings.
	var ul *userLevel
	var priv completion.Privacy = completion.NoPrivacy{}
	if private {
		po := o.Privacy.PrivateOptions // a copy: the item selection takes its budget from it
		if res.Seeded {
			po.Noise = perturb.SeededNoise(res.Seed)
		}
		if po.Unit == completion.UnitUser {
			if ul, err = prepareUserLevel(trainSt, o, &po); err != nil {
				return nil, err
			}
		}
		if priv, err = newPrivacy(o.Privacy.Mode, &po); err != nil {
			return nil, err
		}
	}
	dims := trainSt.Dims
	if ul != nil {
		trainSt, dims = ul.store, ul.dims()
	}
	m, err := decomposition.NewModel(o.Kind, dims, ranks, !o.NoBias)
	if err != nil {
		return nil, err
	}
	info, seen, err := fingerprintSeen(st, trainSt, m, ul == nil && !private)
	if err != nil {
		return nil, err
	}
	if err := o.clamp(m, info, private); err != nil {
		return nil, err
	}
	s := o.Settings
	s.Privacy = priv
	if w := timeBucketWarning(trainSt); w != "" {
		res.Warnings = append(res.Warnings, w)
	}
	r, err := o.fitRating(ctx, trainSt, valid, m, &s, rng)
	if err != nil {
		return nil, err
	}
	res.TrainRatings = trainSt.NNZ()
	if valid != nil {
		res.ValidRatings = valid.NNZ()
	}
	res.UserLevel = ul != nil
	final := trainSt
	if valid != nil && !o.NoRefit && !private && r.BestEpoch > 0 {
		// Early stopping chose the number of epochs on the held-out part;
		// the final model is trained on every rating for that many.
		s2 := r.Settings
		s2.Epochs, s2.Patience = r.BestEpoch, -1
		m2, err := decomposition.NewModel(m.Kind, st.Dims, m.Ranks, m.HasBias)
		if err != nil {
			return nil, err
		}
		if _, err := completion.TrainContext(ctx, st, nil, m2, &s2, rng, nil); err != nil {
			return nil, fmt.Errorf("refit on all ratings: %w", err)
		}
		info = models.Fingerprint(st)
		if err := o.clamp(m2, info, private); err != nil {
			return nil, err
		}
		m, final, res.Refit = m2, st, true
	}
	res.Rating = r
	f, err := o.ratingFile(final, m, r, info, ul, seen)
	if err != nil {
		return nil, err
	}
	if private {
		if err := o.attachPositionLists(ctx, final, f, res); err != nil {
			return nil, err
		}
	}
	res.Model = newModel(f)
	if w := deltaWarning(r.Privacy, trainSt.NNZ()); w != "" {
		res.Warnings = append(res.Warnings, w)
	}
	return res, nil
}

// fitRating runs the rating objective's training loop with the events.
func (o *Options) fitRating(ctx context.Context, trainSt, valid *data.Store, m *decomposition.Model, s *completion.Settings, rng rand.Source) (*completion.Result, error) {
	if o.Events.Start != nil {
		o.Events.Start(s.Resolved().Epochs, "training")
	}
	if o.Events.Done != nil {
		defer o.Events.Done()
	}
	if b, ok := s.Privacy.(*completion.StatisticsMode); ok {
		return b.Fit(trainSt, m, s)
	}
	return completion.TrainContext(ctx, trainSt, valid, m, s, rng, o.Events.Epoch)
}

// clamp sets the model's prediction range.
func (o *Options) clamp(m *decomposition.Model, info *models.DataInfo, private bool) error {
	switch c := o.Clamp; {
	case c.None:
	case c.Lo < c.Hi:
		if math.IsInf(c.Lo, 0) || math.IsInf(c.Hi, 0) {
			return optErr("clamp range [%g, %g] must be finite", c.Lo, c.Hi)
		}
		m.ClampLo, m.ClampHi = c.Lo, c.Hi
	case c.Lo != 0 || c.Hi != 0:
		return optErr("clamp range [%g, %g]: want Lo < Hi", c.Lo, c.Hi)
	case private:
		// The data's range is not private: the declared public scale.
		lo, hi := o.Privacy.RatingMin, o.Privacy.RatingMax
		if !(lo < hi) {
			return optErr("a private model needs a public rating scale (RatingMin < RatingMax) or an explicit Clamp")
		}
		m.ClampLo, m.ClampHi = lo, hi
	case info.NNZ > 0:
		// One value throughout is a one-point range: every prediction is
		// that value.
		m.SetClamp(info.Min, info.Max)
	}
	return nil
}

// ratingFile assembles the model file of a rating run trained on final.
func (o *Options) ratingFile(final *data.Store, m *decomposition.Model, r *completion.Result, info *models.DataInfo, ul *userLevel, seen *models.Exclusions) (*models.File, error) {
	settingsJSON, err := SettingsJSON(r.Settings)
	if r.Privacy != nil && r.Privacy.Billboard {
		// The billboard modes (bias, als, input's bias-only fallback)
		// train no SGD or ALS loop with these settings: their constants are
		// public and named in the report's notes, so only the thread count
		// is kept (the SGD fields would read as if they had been used).
		settingsJSON, err = json.Marshal(struct{ Threads int }{r.Settings.Threads})
	}
	if err != nil {
		return nil, err
	}
	hist, err := json.Marshal(ReleasedHistory(r.History, r.Privacy))
	if err != nil {
		return nil, err
	}
	dicts := final.Dicts
	if len(dicts) < m.Order() {
		dicts = append(append([]*data.Dict(nil), dicts...), make([]*data.Dict, m.Order()-len(dicts))...)
	}
	switch {
	case ul != nil:
		if dicts, info, err = ul.release(dicts, m, r.Privacy); err != nil {
			return nil, err
		}
		seen = nil
	case r.Privacy != nil && r.Privacy.Private():
		// The hash and statistics are functions of the private ratings.
		info = info.Public()
		seen = nil
	case seen == nil:
		return nil, errors.New("dprec: internal error: a non-private model without its seen items")
	}
	return &models.File{
		Header: models.Header{
			Settings: settingsJSON,
			History:  hist,
			Data:     info,
			Created:  time.Now().UTC().Truncate(time.Second),
			Software: o.software(),
		},
		Model:   m,
		Dicts:   dicts[:m.Order()],
		Time:    final.Time,
		Privacy: r.Privacy,
		Seen:    seen, // every rated item, validation part included (non-private only)
	}, nil
}

func (o *Options) software() string {
	if o.Software != "" {
		return o.Software
	}
	return "dprec library"
}

// SelectMaxEvents is the largest log whose implicit-objective settings
// are chosen on a hold-out by default (each of SelectGrid's points trains
// once on it).
const SelectMaxEvents = 10_000_000

// SelectGrid is the grid the implicit objective's settings are chosen
// from by default: the ranks, ridges and confidence scales that led on the
// logs measured here (ml-latest-small, short- and long-history synthetic
// click logs), around completion's defaults.
const SelectGrid = "rank=16,64 reg=20,100 alpha=0.25,2"

// selectIterations is the number of sweeps of each point during the
// choice (the final model runs the full number).
const selectIterations = 8

// Selection is how the implicit objective's settings were chosen.
type Selection struct {
	// Metric and Threshold score the lists on the hold-out (every
	// held-out event relevant at threshold 0).
	Metric    string  `json:"metric"`
	Threshold float64 `json:"threshold"`
	// Points are the scored points, best first; Chosen the best one.
	Points []TunePoint       `json:"points"`
	Chosen map[string]string `json:"chosen"`
}

// selectImplicit chooses rank, reg and alpha of the implicit objective on
// a per-user hold-out of st, or returns nil when the choice does not apply
// (settings given, NoSelect, a log too large, or no user with two events).
func selectImplicit(ctx context.Context, st *data.Store, o *Options, seed uint64) (*Selection, error) {
	if o.NoSelect || o.Rank != 0 || o.Implicit.Reg != 0 || o.Implicit.Alpha != 0 || st.NNZ() > SelectMaxEvents || o.Privacy != nil && o.Privacy.Mode != "" {
		// A private run never chooses on the private log without budget.
		return nil, nil
	}
	grid, err := ParseGrid(SelectGrid, ObjectiveImplicit)
	if err != nil {
		return nil, err
	}
	// Ranks above a mode's size are the same as the largest allowed one.
	for i, p := range grid {
		if p.Name != "rank" {
			continue
		}
		var vals []string
		for _, v := range p.Values {
			r, _ := strconv.Atoi(v)
			r = max(1, min(r, st.Dims[0], st.Dims[1]))
			if s := strconv.Itoa(r); !slices.Contains(vals, s) {
				vals = append(vals, s)
			}
		}
		grid[i].Values = vals
	}
	base := *o
	base.Objective, base.Seed, base.Seeded, base.NoSelect = ObjectiveImplicit, seed, true, true
	base.Implicit.Iterations = min(selectIterations, max(1, o.Implicit.Iterations))
	if o.Implicit.Iterations == 0 {
		base.Implicit.Iterations = selectIterations
	}
	metric := Metric{Name: "ndcg", K: 10}
	o.note(fmt.Sprintf("note: choosing rank, reg and alpha of the implicit objective by %s on a per-user hold-out of the log (%s, %d sweeps each; give any of them, or --select=false, to skip)", metric, SelectGrid, base.Implicit.Iterations))
	pts, err := TuneRanking(ctx, st, &TuneOptions{Base: base, Grid: grid, Metric: metric})
	if err != nil {
		var oe *OptionError
		if errors.As(err, &oe) {
			return nil, nil // no user with two events: nothing to hold out
		}
		return nil, err
	}
	if len(pts) == 0 || pts[0].Err != "" {
		return nil, nil
	}
	return &Selection{Metric: metric.String(), Points: pts, Chosen: pts[0].Values}, nil
}

// trainImplicit trains the implicit objective. The time mode of an order-3
// log is collapsed: the model is users x items.
func trainImplicit(st *data.Store, name string, o *Options, rng rand.Source, res *Result) error {
	if o.Kind != decomposition.CP {
		return optErr("the implicit objective trains a CP (matrix factorisation) model")
	}
	if o.Privacy != nil && o.Privacy.Mode != "" {
		return trainPrivateImplicit(st, o, res)
	}
	def := completion.DefaultImplicitRank
	if st.Order() >= 2 {
		// The default rank never exceeds a mode's size.
		def = max(1, min(def, st.Dims[0], st.Dims[1]))
	}
	ranks, err := o.ranks(1, def)
	if err != nil {
		return err
	}
	if len(st.Dicts) < 2 || st.Dicts[0] == nil || st.Dicts[1] == nil {
		return fmt.Errorf("%s: the log has no user and item dictionaries", name)
	}
	s := o.Implicit
	if s.Threads == 0 {
		s.Threads = o.Settings.Threads
	}
	dims := st.Dims[:2]
	if o.Check != nil {
		if err := o.Check(Plan{Objective: ObjectiveImplicit, Dims: dims, NNZ: st.NNZ(), Ranks: ranks}); err != nil {
			return err
		}
	}
	m, err := decomposition.NewModel(decomposition.CP, dims, ranks, false)
	if err != nil {
		return err
	}
	if o.Events.Start != nil {
		n := s.Iterations
		if n == 0 {
			n = completion.DefaultImplicitIterations
		}
		o.Events.Start(n, "training (implicit ALS)")
	}
	r, err := completion.TrainImplicit(st, m, &s, rng, o.Events.Sweep)
	if o.Events.Done != nil {
		o.Events.Done()
	}
	if err != nil {
		return err
	}
	seen, err := models.SeenFromStore(st, dims[0], dims[1])
	if err != nil {
		return err
	}
	settings, err := json.Marshal(r.Settings)
	if err != nil {
		return err
	}
	hist, err := json.Marshal(r.History)
	if err != nil {
		return err
	}
	f := &models.File{
		Header: models.Header{
			Objective: models.ObjectiveImplicit,
			Settings:  settings,
			History:   hist,
			Data:      models.Fingerprint(st),
			Created:   time.Now().UTC().Truncate(time.Second),
			Software:  o.software(),
		},
		Model: m,
		Dicts: st.Dicts[:2],
		Seen:  seen,
	}
	res.Model = newModel(f)
	res.Implicit = r
	res.TrainRatings = st.NNZ()
	res.TimeCollapsed = st.Order() == 3
	return nil
}

// trainPrivateImplicit trains the implicit objective's private mode
// (completion.TrainPrivateImplicit): privacy mode als at the user unit,
// on the public item domain (a catalogue, or a private selection), every
// event read and a user with more than k items weighted. The model file
// carries one placeholder user and no seen items.
func trainPrivateImplicit(st *data.Store, o *Options, res *Result) error {
	if o.Privacy.Mode != PrivacyALS {
		return optErr("the implicit objective's private mode is als (weighted ALS under add/remove-one-user privacy), not %s", o.Privacy.Mode)
	}
	if o.Privacy.Unit != completion.UnitUser {
		return optErr("the implicit objective is private at the user unit only (--privacy-unit user --max-ratings-per-user k): its events are its positions, which the entry unit treats as public")
	}
	if len(st.Dicts) < 2 || st.Dicts[0] == nil || st.Dicts[1] == nil {
		return optErr("the log has no user and item dictionaries")
	}
	po := o.Privacy.PrivateOptions
	if res.Seeded {
		po.Noise = perturb.SeededNoise(res.Seed)
	}
	collapsed := st.Order() == 3
	if collapsed {
		// The model is users x items whatever the log's time mode, so no
		// public time range is needed: the time mode is dropped before
		// the bound (which then keeps one event per item).
		st = &data.Store{Dims: st.Dims[:2], Idx: st.Idx[:2], Val: st.Val, Dicts: st.Dicts[:2]}
	}
	ul, err := prepareUserLevel(st, o, &po)
	if err != nil {
		return err
	}
	// The implicit mode reads every event of each user on the domain's
	// items (the log before the bound), users with more than k items
	// weighted (completion.TrainPrivateImplicit). prepareUserLevel keeps
	// that log for privacy mode als, the only one reaching here; the
	// bounded store (every weight 1) is a defensive fallback.
	bst := ul.store
	if po.Unbounded != nil {
		bst = po.Unbounded
	}
	po.Unbounded = nil
	def := max(1, min(completion.DefaultPrivateImplicitRank, bst.Dims[1]))
	ranks, err := o.ranks(1, def)
	if err != nil {
		return err
	}
	s := o.Implicit
	if s.Threads == 0 {
		s.Threads = o.Settings.Threads
	}
	if o.Check != nil {
		if err := o.Check(Plan{Objective: ObjectiveImplicit, Dims: bst.Dims[:2], NNZ: bst.NNZ(), Ranks: ranks}); err != nil {
			return err
		}
	}
	fit, err := decomposition.NewModel(decomposition.CP, bst.Dims[:2], ranks, false)
	if err != nil {
		return err
	}
	if o.Events.Start != nil {
		o.Events.Start(completion.ImplicitPrivateSteps, "training (private implicit ALS)")
	}
	rep, err := completion.TrainPrivateImplicit(bst, fit, &s, &po)
	if o.Events.Done != nil {
		o.Events.Done()
	}
	if err != nil {
		return err
	}
	// The released model: one placeholder user (zero row), the item rows.
	m, err := decomposition.NewModel(decomposition.CP, []int{1, bst.Dims[1]}, ranks, false)
	if err != nil {
		return err
	}
	copy(m.Factors[1], fit.Factors[1])
	cfg := completion.PrivateImplicitSettings(&s)
	settings, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	dicts, info, err := ul.release(bst.Dicts[:2], m, rep)
	if err != nil {
		return err
	}
	f := &models.File{
		Header: models.Header{
			Objective: models.ObjectiveImplicit,
			Settings:  settings,
			History:   json.RawMessage("[]"),
			Data:      info,
			Created:   time.Now().UTC().Truncate(time.Second),
			Software:  o.software(),
		},
		Model:   m,
		Dicts:   dicts,
		Privacy: rep,
	}
	res.Model = newModel(f)
	res.Implicit = &completion.ImplicitResult{Model: m, Settings: cfg, Events: bst.NNZ()}
	res.TrainRatings = bst.NNZ()
	res.UserLevel = true
	res.TimeCollapsed = collapsed
	return nil
}

// fitEASE runs the resource check and itemitem.Train on st with the
// options' EASE settings (seed, threads and notes from the run's when
// unset): the ease objective and the lists by the positions.
func (o *Options) fitEASE(ctx context.Context, st *data.Store, seed uint64) (*itemitem.Result, error) {
	s := o.EASE
	if s.Seed == 0 {
		s.Seed = seed
	}
	if s.Threads == 0 {
		s.Threads = o.Settings.Threads
	}
	if s.Note == nil {
		s.Note = o.Events.Note
	}
	if o.Check != nil {
		if err := o.Check(Plan{Objective: ObjectiveEASE, Dims: st.Dims[:2], NNZ: st.NNZ()}); err != nil {
			return nil, err
		}
	}
	return itemitem.Train(ctx, st, s)
}

// trainEASE trains the item-item model (package itemitem).
func trainEASE(ctx context.Context, st *data.Store, o *Options, res *Result) error {
	if o.Privacy != nil && o.Privacy.Mode != "" {
		return optErr("the ease objective has no private mode")
	}
	r, err := o.fitEASE(ctx, st, res.Seed)
	if err != nil {
		return err
	}
	f, err := r.File(st)
	if err != nil {
		return err
	}
	f.Header.Created = time.Now().UTC().Truncate(time.Second)
	f.Header.Software = o.software()
	res.Model = newModel(f)
	res.EASE = r
	res.TrainRatings = st.NNZ()
	return nil
}

// attachPositionLists fits the ranking weights of a private run whose
// lists rank by the positions (ListsPositions) on the positions of final
// and stores them in f, with a note in its report. A catalogue too large
// for the closed form leaves the lists to the ratings, with a warning.
func (o *Options) attachPositionLists(ctx context.Context, final *data.Store, f *models.File, res *Result) error {
	use, err := o.Privacy.PositionLists()
	if err != nil || !use || f.Privacy == nil || !f.Privacy.Billboard {
		return err
	}
	r, err := o.fitEASE(ctx, final, res.Seed)
	if err == nil && r.Chosen && o.Privacy.Lists == "" {
		// A log whose positions say little of what a user rates (drawn
		// at random, say) is ranked better by the ratings: the choice is
		// made on the validation part of the positions (public).
		best := 0.0
		for _, g := range r.Grid {
			best = max(best, g.NDCG)
		}
		if best < PositionListsMargin*r.PopularityNDCG {
			f.Privacy.Notes = append(f.Privacy.Notes, fmt.Sprintf("lists: ranked by the private model's predictions: EASE of the positions scored NDCG@%d %.4f on a validation part of the positions, under %g times most-popular's %.4f (public: positions only)", itemitem.ValidationK, best, PositionListsMargin, r.PopularityNDCG))
			return nil
		}
	}
	if errors.Is(err, itemitem.ErrTooLarge) {
		res.Warnings = append(res.Warnings, fmt.Sprintf("lists rank by the private rating model's predictions: the item-item weights of the positions do not fit (%v)", err))
		return nil
	}
	if err != nil {
		return fmt.Errorf("lists (item-item weights of the positions): %w", err)
	}
	f.Weights = r.Weights
	rep := f.Privacy
	rep.Covered = append(rep.Covered, "W (ranking weights: item-item, a function of the positions only)")
	rep.Notes = append(rep.Notes, fmt.Sprintf("lists: ranked by EASE item-item weights fitted on which items each user rated (every rating a positive; %d of %d items in the closed form, lambda %.4g chosen on a validation part of the positions), summed over the user's own history; this relation keeps the positions and changes one rating value, so the positions are public and the weights spend no budget; predictions come from the private model; if which items a user rated is itself private, train with the user unit (or --lists ratings to rank by the predictions)", r.Items, r.Catalogue, r.Lambda))
	res.EASE = r
	return nil
}

// Split holds out a random fraction of the ratings of st for validation
// (none when frac is 0 or rounds to none or all). Both parts keep the full
// dictionaries and dimensions.
func Split(st *data.Store, frac float64, src rand.Source) (train, valid *data.Store) {
	n := st.NNZ()
	nv := int(math.Round(frac * float64(n)))
	if frac <= 0 || nv == 0 || nv >= n {
		return st, nil
	}
	perm := rand.New(src).Perm(n)
	v, t := perm[:nv], perm[nv:]
	slices.Sort(v)
	slices.Sort(t)
	return st.Subset(t), st.Subset(v)
}

// fingerprintSeen hashes the data fingerprint of train and, when
// withSeen, gathers the seen items of st (every rating, validation part
// included) for m's modes at the same time: two serial passes over the
// store, on two cores.
func fingerprintSeen(st, train *data.Store, m *decomposition.Model, withSeen bool) (*models.DataInfo, *models.Exclusions, error) {
	var seen *models.Exclusions
	var seenErr error
	seenDone := make(chan struct{})
	go func() {
		defer close(seenDone)
		if withSeen {
			seen, seenErr = models.SeenFromStore(st, m.Dims[0], m.Dims[1])
		}
	}()
	info := models.Fingerprint(train)
	<-seenDone
	return info, seen, seenErr
}

// checkGibbsCore refuses the Gibbs solver for a Tucker core above
// completion.MaxGibbsCore entries (the sampler draws the core jointly; the
// default solver takes ALS for such a core).
func checkGibbsCore(kind decomposition.Kind, solver completion.Solver, ranks []int) error {
	if solver != completion.SolverGibbs || kind != decomposition.Tucker {
		return nil
	}
	size := 1
	for _, r := range ranks {
		size *= r
	}
	if size > completion.MaxGibbsCore {
		return optErr("the Gibbs solver draws a Tucker core of at most %d entries, and ranks %v make %d: lower the ranks, or use the ALS solver",
			completion.MaxGibbsCore, ranks, size)
	}
	return nil
}

// SettingsJSON encodes resolved settings for a model header, without the
// privacy plug-in (described by the privacy report instead).
func SettingsJSON(s completion.Settings) ([]byte, error) {
	s.Privacy = nil
	b, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	delete(m, "Privacy")
	return json.Marshal(m)
}

// ReleasedHistory returns the training history as it may be written into
// the model file. Losses and RMSEs are functions of the training ratings:
// for a private model they are released only when computed from
// already-perturbed values (input perturbation, where they are
// post-processing); for the other private modes only the epoch numbers and
// step sizes are kept. Wall times are dropped from every private model: an
// epoch's time depends on the private data (batch sizes, which rows a
// batch touches, the values), a timing channel no report covers. The full
// history stays in Result.Rating for the data owner.
func ReleasedHistory(h []completion.EpochRecord, r *perturb.Report) []completion.EpochRecord {
	if r == nil || !r.Private() {
		return h
	}
	out := make([]completion.EpochRecord, len(h))
	for i, e := range h {
		if r.Mode == "input" {
			out[i] = e
			out[i].Seconds = 0
			continue
		}
		out[i] = completion.EpochRecord{Epoch: e.Epoch, LearningRate: e.LearningRate}
	}
	return out
}

// deltaWarning warns when an entry-level guarantee's delta is not below
// 1/n for n training ratings: (epsilon, delta)-DP then allows a mechanism
// that publishes a random rating in the clear, so delta should be well
// below 1/n (the advice of Google's DP library and of Dwork and Roth). At
// user level the number of users is not public and nothing is said.
func deltaWarning(r *perturb.Report, n int) string {
	if r == nil || !r.Private() || r.Unit != "entry" || r.Delta == 0 || n == 0 || r.Delta < 1/float64(n) {
		return ""
	}
	return fmt.Sprintf("delta %g is not below 1/n = %.3g (n = %d training ratings): a guarantee this weak allows publishing a rating in the clear with that probability; use a delta well below 1/n (e.g. 1e-6)", r.Delta, 1/float64(n), n)
}

// timeBucketWarning warns when most used time buckets of an order-3 store
// hold fewer than two ratings (the median over non-empty buckets): the time
// rows and user x time biases then have almost nothing to learn from. Empty
// buckets cost nothing and are only counted.
func timeBucketWarning(st *data.Store) string {
	if st.Order() != 3 || st.Time == nil {
		return ""
	}
	counts := make([]int, st.Dims[2])
	for _, k := range st.Idx[2] {
		counts[k]++
	}
	var used []int
	for _, n := range counts {
		if n > 0 {
			used = append(used, n)
		}
	}
	if len(used) == 0 {
		return ""
	}
	slices.Sort(used)
	med := used[len(used)/2]
	if med >= 2 {
		return ""
	}
	return fmt.Sprintf("--time-unit %s: the median non-empty time bucket holds %d rating (%d buckets used of %d, largest %d): a coarser --time-unit or --time-unit none may fit better",
		st.Time.Unit, med, len(used), len(counts), used[len(used)-1])
}

// Plugin builds the completion plug-in of the mode from a copy of the
// options as given (Train also prepares a user-level run and seeds the
// noise of a seeded run before building it).
func (p *Privacy) Plugin() (completion.Privacy, error) {
	po := p.PrivateOptions
	return newPrivacy(p.Mode, &po)
}

// newPrivacy builds the plug-in of mode from the options.
func newPrivacy(mode PrivacyMode, o *completion.PrivateOptions) (completion.Privacy, error) {
	switch mode {
	case PrivacyBias:
		return completion.NewBiasMode(o)
	case PrivacyALS:
		return completion.NewALSMode(o)
	case PrivacyInput:
		return completion.NewInputPerturbation(o)
	case PrivacyGradient:
		return completion.NewGradientPerturbation(o)
	case PrivacyOutput:
		return completion.NewOutputPerturbation(o)
	}
	return nil, optErr("privacy mode %q: want bias, als, input, gradient or output", mode)
}

// userLevel is the preparation of a user-level run.
type userLevel struct {
	// store is the training log on the public domain, bounded to k
	// ratings per user (one per item).
	store *data.Store
	// selection is the private item selection (nil with a catalogue).
	selection *completion.ItemSelection
}

// prepareUserLevel prepares a user-level run before training: the public
// time range, the item domain (the catalogue, or a private selection whose
// budget is taken from po), the drops (a note: they are functions of the
// private log and are never saved) and the contribution bound.
func prepareUserLevel(trainSt *data.Store, o *Options, po *completion.PrivateOptions) (*userLevel, error) {
	pv := *o.Privacy
	p := &pv
	if p.Mode != PrivacyBias && p.Mode != PrivacyALS {
		return nil, optErr("the user unit is offered for the bias and als modes only: privacy mode %s keeps every user's positions, dictionary entry and rows in the model file, so whether a user is in the log would show", p.Mode)
	}
	if po.MaxRatingsPerUser < 1 {
		return nil, optErr("the user unit needs MaxRatingsPerUser k >= 1 (the sensitivities are those of one user with at most k ratings)")
	}
	if p.Items == nil && p.ItemsFile != "" {
		items, err := data.ReadCatalogue(p.ItemsFile, trainSt.Dicts[1])
		if err != nil {
			return nil, optErr("item catalogue: %v", err)
		}
		p.Items = items
	}
	if p.Items != nil && p.SelectionEpsilon != 0 {
		return nil, optErr("SelectionEpsilon selects the items privately: it does not go with a public catalogue (Items)")
	}
	var dom completion.UserDomain
	if trainSt.Order() == 2 {
		if p.TimeFrom != nil || p.TimeTo != nil {
			return nil, optErr("a public time range was given, but the log has no time mode")
		}
	} else {
		if p.TimeFrom == nil || p.TimeTo == nil {
			return nil, optErr("the user unit on a log with a time mode needs the public time range (TimeFrom, TimeTo): the log's own range would depend on who is in it; or drop the time mode")
		}
		tb, err := completion.TimeRange(trainSt.Time.Unit, *p.TimeFrom, *p.TimeTo)
		if err != nil {
			return nil, &OptionError{Msg: err.Error()}
		}
		dom.Time = tb
	}
	ul := &userLevel{}
	if p.Items != nil {
		dom.Items = p.Items
	} else {
		// Time restriction first; items selected below, among the items
		// the bounded store rates only (completion.SelectItems), never
		// this dictionary's (it lists items whose ratings were dropped).
		dom.Items = trainSt.Dicts[1]
	}
	st, drops, err := completion.RestrictToDomain(trainSt, dom)
	if err != nil {
		return nil, err
	}
	full := st
	if st, err = completion.BoundForUnit(st, po); err != nil {
		return nil, err
	}
	if p.Items == nil {
		if st, ul.selection, err = selectItems(st, p.SelectionEpsilon, po); err != nil {
			return nil, err
		}
	}
	if p.Mode == PrivacyALS || p.Mode == PrivacyBias {
		// The weighted item counts and sums, and private ALS's position
		// columns, read every rating of each user
		// (completion.PrivateOptions.Unbounded), on the same items.
		if ul.selection != nil {
			if full, _, err = completion.RestrictToDomain(full, completion.UserDomain{Items: ul.selection.Items, Time: st.Time}); err != nil {
				return nil, err
			}
		}
		po.Unbounded = full
	}
	if drops.Items > 0 || drops.Time > 0 {
		o.note(fmt.Sprintf("note: dropped %d ratings of items not in --items and %d outside the time range (%d users left with none); the counts are for you only: they are not saved in the model file", drops.Items, drops.Time, drops.Users))
	}
	ul.store = st
	return ul, nil
}

// selectItems selects the items privately with its share of the budget,
// taken from o, and restricts st to them.
func selectItems(st *data.Store, eps float64, o *completion.PrivateOptions) (*data.Store, *completion.ItemSelection, error) {
	if eps == 0 {
		eps = DefaultSelectionShare * o.Epsilon
	}
	if !(eps > 0 && eps < o.Epsilon) {
		return nil, nil, optErr("selection epsilon %g: must be in (0, epsilon %g)", eps, o.Epsilon)
	}
	if !(o.Delta > 0) {
		return nil, nil, optErr("the user unit without a public catalogue (Items) selects the items privately and needs delta > 0")
	}
	b := perturb.Budget{Epsilon: eps, Delta: o.Delta / 2}
	sel, err := completion.SelectItems(st, o.MaxRatingsPerUser, b, o.Noise)
	if err != nil {
		return nil, nil, err
	}
	out, _, err := completion.RestrictToDomain(st, completion.UserDomain{Items: sel.Items, Time: st.Time})
	if err != nil {
		return nil, nil, err
	}
	o.Epsilon -= b.Epsilon
	o.Delta -= b.Delta
	o.SelectedItems = true
	// The number of users, the number of ratings and the global mean are
	// released from the bounded log before the selection (all its items),
	// so that they stay accurate when the selection keeps few items.
	o.Scalars = st
	return out, sel, nil
}

// dims are the model's mode sizes: one placeholder user (no user is
// released), then the public item and time domains.
func (ul *userLevel) dims() []int { return append([]int{1}, ul.store.Dims[1:]...) }

// release returns what the model file of a user-level run carries: the
// dictionaries with the user one replaced by the one placeholder id, and
// a data description with the (public) mode sizes only, no count; it adds
// a private item selection to the report.
func (ul *userLevel) release(dicts []*data.Dict, m *decomposition.Model, rep *perturb.Report) ([]*data.Dict, *models.DataInfo, error) {
	users, err := data.DictFromStrings("user", []string{NoUserID})
	if err != nil {
		return nil, nil, err
	}
	out := append([]*data.Dict(nil), dicts...)
	out[0] = users
	if ul.selection != nil {
		ul.selection.Compose(rep)
	}
	return out, &models.DataInfo{Dims: append([]int(nil), m.Dims...)}, nil
}
