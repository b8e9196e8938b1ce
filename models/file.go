package models

import (
	"errors"
	"fmt"
	"math"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
	"github.com/dprec/dprec/perturb"
)

// File is a saved model: the model, the dictionaries that map external ids
// to its rows, the time bucketing of its time mode, the privacy report and
// the header describing how it was trained.
//
// A loaded File is never modified by this package; it is safe for
// concurrent use by any number of Predictors.
type File struct {
	Header Header
	Model  *decomposition.Model
	// Dicts has one dictionary per mode; Dicts[2] (time) is nil.
	Dicts []*data.Dict
	// Time is the time bucketing of mode 2 (nil for order 2).
	Time *data.TimeBucketing
	// Privacy is the privacy report (nil is saved as non-private).
	Privacy *perturb.Report
	// Seen holds every user's training items (sorted, distinct; see
	// SeenFromStore), so recommendations leave them out by default. Only
	// non-private models may store it: the items a user rated are private
	// data. nil: the file has no seen-items part.
	Seen *Exclusions
	// Weights are the item-item weights of an item-item model (EASE; see
	// NewItemItemFile and ObjectiveItemItem); nil for factor models.
	Weights *ItemWeights
	// PrivacyCheck is set by Load: the disagreements perturb.Report.Check
	// finds when it recomputes the report's releases and total from their
	// mechanisms, scales and sensitivities (nil: the report is consistent).
	// Save ignores it.
	PrivacyCheck []string
}

// ErrFormat is wrapped by every error about a file that is not a valid
// model file of a supported version.
var ErrFormat = errors.New("invalid model file")

// ErrChecksum is wrapped when the payload checksum does not match.
var ErrChecksum = errors.New("model file checksum mismatch (the file is corrupt)")

// ErrVersion is wrapped when the file has an unsupported format version.
var ErrVersion = errors.New("unsupported model format version")

var modeNames = []string{"user", "item", "time"}

// check validates a File before saving: shapes agree, values are finite,
// dictionaries and time bucketing match the dimensions.
func (f *File) check() error {
	m := f.Model
	if m == nil {
		return errors.New("models: no model to save")
	}
	n := m.Order()
	if n < 2 || n > 3 || len(m.Ranks) != n || len(m.Factors) != n {
		return fmt.Errorf("models: model of order %d with %d ranks and %d factors", n, len(m.Ranks), len(m.Factors))
	}
	if m.Kind != decomposition.CP && m.Kind != decomposition.Tucker {
		return fmt.Errorf("models: unknown model kind %q", m.Kind)
	}
	if err := checkParams(m); err != nil {
		return err
	}
	for _, v := range []float64{m.Mean, m.ClampLo, m.ClampHi} {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("models: global mean or clamp range is not finite (%v)", v)
		}
	}
	if err := f.checkSeen(); err != nil {
		return err
	}
	if err := f.checkWeights(); err != nil {
		return err
	}
	return f.checkDicts()
}

// checkParams checks the shapes and values of the factors, biases, pair
// biases and core of a model of order 2 or 3.
func checkParams(m *decomposition.Model) error {
	n := m.Order()
	for mo := 0; mo < n; mo++ {
		if m.Dims[mo] <= 0 || m.Ranks[mo] <= 0 {
			return fmt.Errorf("models: mode %d has size %d and rank %d", mo, m.Dims[mo], m.Ranks[mo])
		}
		if len(m.Factors[mo]) != m.Dims[mo]*m.Ranks[mo] {
			return fmt.Errorf("models: factor %d has %d values, want %d x %d", mo, len(m.Factors[mo]), m.Dims[mo], m.Ranks[mo])
		}
		if err := finite(m.Factors[mo], fmt.Sprintf("factor %d", mo)); err != nil {
			return err
		}
		if m.HasBias {
			if len(m.Bias) != n || len(m.Bias[mo]) != m.Dims[mo] {
				return fmt.Errorf("models: bias of mode %d has the wrong length", mo)
			}
			if err := finite(m.Bias[mo], fmt.Sprintf("bias %d", mo)); err != nil {
				return err
			}
		}
	}
	for i := range m.Pairs {
		p := &m.Pairs[i]
		if err := p.Validate(m.Dims); err != nil {
			return fmt.Errorf("models: pair bias %d: %v", i, err)
		}
		if err := finite(p.Vals, fmt.Sprintf("pair bias %d", i)); err != nil {
			return err
		}
	}
	for i, p := range m.Pairs {
		if p.B != 2 || (p.A != 0 && p.A != 1) {
			return fmt.Errorf("models: pair bias %d on modes (%d, %d): only user x time and item x time are stored", i, p.A, p.B)
		}
	}
	if len(m.Pairs) > 0 && !m.HasBias {
		return errors.New("models: pair biases on a model without biases")
	}
	if m.Kind == decomposition.Tucker {
		size := 1
		for _, r := range m.Ranks {
			size *= r
		}
		if len(m.Core) != size {
			return fmt.Errorf("models: Tucker core has %d values, want %d", len(m.Core), size)
		}
		if err := finite(m.Core, "core"); err != nil {
			return err
		}
	} else {
		if len(m.Core) != 0 {
			return errors.New("models: CP model with a core")
		}
		for _, r := range m.Ranks {
			if r != m.Ranks[0] {
				return fmt.Errorf("models: CP model with unequal ranks %v", m.Ranks)
			}
		}
	}
	return nil
}

// checkSeen checks the stored training items: none for a private model,
// one sorted distinct segment per user, items inside the model.
func (f *File) checkSeen() error {
	m := f.Model
	if f.Seen == nil {
		return nil
	}
	if f.Privacy.Private() {
		return errors.New("models: a private model cannot store its users' training items (they are the private data); save it without Seen")
	}
	if f.Seen.Users() != m.Dims[0] {
		return fmt.Errorf("models: seen items for %d users, the model has %d", f.Seen.Users(), m.Dims[0])
	}
	for _, j := range f.Seen.items {
		if j < 0 || int(j) >= m.Dims[1] {
			return fmt.Errorf("models: seen item %d outside the model's %d items", j, m.Dims[1])
		}
	}
	for u := 0; u < m.Dims[0]; u++ {
		seg := f.Seen.Items(int32(u))
		for k := 1; k < len(seg); k++ {
			if seg[k] <= seg[k-1] {
				return fmt.Errorf("models: seen items of user %d are not sorted and distinct", u)
			}
		}
	}
	return nil
}

// checkDicts checks the dictionaries and the time bucketing against the
// model's modes.
func (f *File) checkDicts() error {
	m, n := f.Model, f.Model.Order()
	if len(f.Dicts) != n {
		return fmt.Errorf("models: %d dictionaries for %d modes", len(f.Dicts), n)
	}
	for mo := 0; mo < 2; mo++ {
		if f.Dicts[mo] == nil || f.Dicts[mo].Len() != m.Dims[mo] {
			return fmt.Errorf("models: dictionary of mode %d does not match its size %d", mo, m.Dims[mo])
		}
	}
	if n == 3 {
		if f.Dicts[2] != nil {
			return errors.New("models: the time mode has a dictionary")
		}
		if f.Time == nil || f.Time.Count != m.Dims[2] {
			return fmt.Errorf("models: time bucketing does not match the time mode of size %d", m.Dims[2])
		}
		if _, err := data.ParseTimeUnit(string(f.Time.Unit)); err != nil || f.Time.Unit == data.TimeNone {
			return fmt.Errorf("models: bad time unit %q", f.Time.Unit)
		}
	} else if f.Time != nil {
		return errors.New("models: order-2 model with a time bucketing")
	}
	return nil
}

func finite(v []float64, what string) error {
	for i, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("models: %s has a non-finite value %v at %d (refusing to save a diverged model)", what, x, i)
		}
	}
	return nil
}

// version returns the format version f is written in: FormatVersion (3)
// with item-item weights, 2 with seen items, else version 1.
func (f *File) version() int {
	if f.Weights != nil {
		return FormatVersion
	}
	if f.Seen != nil {
		return formatVersionSeenRows
	}
	return formatVersionNoSeenRows
}

// Billboard reports whether the model releases no user rows and biases
// (the private bias and als modes, and input perturbation's bias-only
// fallback: the billboard model of joint differential privacy, marked by
// the report's Billboard field; files written before that field are
// recognised by their mode): a user's predictions come from folding that
// user in from their own ratings (decomposition.FoldInUser), never from
// the model's zero user terms.
func (f *File) Billboard() bool { return IsBillboard(f.Privacy) }

// IsBillboard reports whether a model with privacy report r is a
// billboard model (File.Billboard).
func IsBillboard(r *perturb.Report) bool {
	return r != nil && (r.Billboard || r.Mode == "bias" || r.Mode == "als")
}

// header returns the header to store: the caller's header with the fields
// that describe the model filled from the model itself.
func (f *File) header() Header {
	h := f.Header
	m := f.Model
	n := m.Order()
	h.Format, h.Version = FormatName, f.version()
	h.Kind = m.Kind
	h.Modes = append([]string(nil), modeNames[:n]...)
	h.Dims = append([]int(nil), m.Dims...)
	h.Ranks = append([]int(nil), m.Ranks...)
	h.IDTypes = make([]string, n)
	h.IDNames = make([]string, n)
	for mo := 0; mo < n; mo++ {
		switch d := f.Dicts[mo]; {
		case d == nil:
			h.IDTypes[mo] = "time"
		case d.IsString:
			h.IDTypes[mo], h.IDNames[mo] = "string", d.Name
		default:
			h.IDTypes[mo], h.IDNames[mo] = "int64", d.Name
		}
	}
	h.Bias = m.HasBias
	h.Mean = m.Mean
	h.ClampLo, h.ClampHi = m.ClampLo, m.ClampHi
	h.Pairs = nil
	for _, p := range m.Pairs {
		h.Pairs = append(h.Pairs, PairSpec{A: p.A, B: p.B, Div: p.Div, Count: len(p.Keys)})
	}
	h.Time = nil
	if f.Time != nil {
		t := *f.Time
		h.Time = &t
	}
	h.Seen = nil
	if f.Seen != nil {
		h.Seen = &SeenInfo{Users: f.Seen.Users(), Pairs: f.Seen.Pairs(), Encoding: SeenEncoding}
	}
	h.Weights = nil
	if f.Weights != nil {
		h.Weights = &WeightsInfo{Items: f.Weights.Items(), NNZ: f.Weights.NNZ(), Encoding: WeightsEncoding}
	}
	h.Privacy = f.Privacy
	if h.Privacy == nil {
		h.Privacy = perturb.NonPrivate()
	}
	return h
}
