package perturb

// Report is the privacy report every result of dprec carries: what was
// protected, how, and at what cost. It is written into model files and
// printed by the CLI. A non-private result has Mode "none".
type Report struct {
	// Mode names the private algorithm ("none", "input", "gradient",
	// "output", "agn", "avn", ...).
	Mode string `json:"mode"`
	// Relation states the neighbouring relation, e.g. "rating logs with the
	// same observed positions differing in one rating value".
	Relation string `json:"relation,omitempty"`
	// RelationKind is the relation in machine-readable form, one of
	// RelationValueChange, RelationZeroOut and RelationAddRemove (empty in
	// a non-private report, and in reports written before the field
	// existed). The same epsilon means different things under each: a
	// value change is two zero-out steps.
	RelationKind string `json:"relation_kind,omitempty"`
	// ValueChangeEpsilon, when the relation is not value-change, is the
	// epsilon at Delta for a change of one record's value (0: not
	// computed); minibatch DP-SGD (zero-out) sets it (its bias-only
	// fallback is value-change: none).
	ValueChangeEpsilon float64 `json:"value_change_epsilon,omitempty"`
	// Unit is the privacy unit ("entry", "user", "document", "record").
	Unit string `json:"unit,omitempty"`
	// Epsilon and Delta are the total guarantee after composition.
	Epsilon float64 `json:"epsilon"`
	Delta   float64 `json:"delta"`
	// Composition names the accounting that produced Epsilon and Delta
	// ("basic", "advanced", "rdp", "single release", ...).
	Composition string `json:"composition,omitempty"`
	// Releases lists every noisy release, in order.
	Releases []Release `json:"releases,omitempty"`
	// Covered lists the released parameters the guarantee covers;
	// NotCovered those it does not (they are released without protection).
	Covered    []string `json:"covered,omitempty"`
	NotCovered []string `json:"not_covered,omitempty"`
	// Randomness says where the noise came from: "secure (crypto/rand)" or
	// "seeded (reproducible, NOT private)".
	Randomness string `json:"randomness,omitempty"`
	// Notes carry derivation references and caveats.
	Notes []string `json:"notes,omitempty"`
	// Billboard says that no user rows or user biases were released (they
	// are zero in the model): each user's terms are solved at prediction
	// time from the released item side and that user's own ratings (the
	// billboard model of joint differential privacy). Readers of a model
	// must fold users in instead of using its zero user terms.
	Billboard bool `json:"billboard,omitempty"`
	// FoldPerRating is the per-rating ridge a billboard model's users fold
	// in with, beyond the mode's fixed penalty: the per-observation ridge
	// of the training's private user solve (private ALS), so that users
	// are solved at prediction time as the item rows expected. 0: none.
	FoldPerRating float64 `json:"fold_per_rating,omitempty"`
	// FoldRow is the fixed ridge on a billboard model's user row and bias
	// at fold-in, when the mode sets its own (private ALS's positions
	// stage and its user unit's fallback). 0: the mode's default
	// (completion.BillboardFoldFor).
	FoldRow float64 `json:"fold_row,omitempty"`
	// ItemCounts are per-item rating counts a billboard model carries as
	// popularity evidence for its rankings (models.Predictor.WithShrinkage):
	// public under a value-change relation (entry level: positions are
	// public), the released noisy counts under add-remove (user level,
	// negative values set to 0; there each user's ratings are weighted so
	// that a user adds at most k in l2: completion.UserContributionWeight).
	// Empty: none.
	ItemCounts []float64 `json:"item_counts,omitempty"`
	// ItemCountsSD is the standard deviation of the noise in ItemCounts
	// (before negative values were set to 0): 0 when they are exact.
	// Rankings that use the counts as evidence discount them by it.
	ItemCountsSD float64 `json:"item_counts_sd,omitempty"`
}

// Relation kinds (Report.RelationKind).
const (
	// RelationValueChange: neighbours hold the same records (positions,
	// counts and their number are public) and differ in the value of one
	// record (one rating's value, one document or row replaced by
	// another; under the SGD modes' user unit, the values of one user's
	// ratings). Also called replace-one or substitution.
	RelationValueChange = "value-change"
	// RelationZeroOut: neighbours hold the same records and one record of
	// one of them is replaced by a null that contributes nothing
	// (Kairouz et al. 2021); counts stay public. A value change is two
	// zero-out steps.
	RelationZeroOut = "zero-out"
	// RelationAddRemove: neighbours differ by adding or removing one
	// record (or one user with all of that user's records); counts are
	// private.
	RelationAddRemove = "add-remove"
)

// Release describes one application of a mechanism.
type Release struct {
	// What was released ("observed ratings", "gradient of C", "M2", ...).
	What string `json:"what"`
	// Mechanism: "laplace", "gaussian", "l2" (K-norm), ...
	Mechanism string `json:"mechanism"`
	// Norm of the sensitivity ("l1" or "l2") and its value.
	SensitivityNorm string  `json:"sensitivity_norm,omitempty"`
	Sensitivity     float64 `json:"sensitivity"`
	// Derivation cites where the sensitivity comes from.
	Derivation string `json:"derivation,omitempty"`
	// Scale is the noise scale (Laplace b, Gaussian sigma, l2 radius scale).
	Scale   float64 `json:"scale"`
	Epsilon float64 `json:"epsilon"`
	Delta   float64 `json:"delta"`
	// Count is how many times this release was repeated (epochs, steps).
	Count int `json:"count,omitempty"`
	// Calibration names how a Gaussian sigma was set ("analytic",
	// "classic", "tight", or "sigma" for an RDP-calibrated step).
	Calibration string `json:"calibration,omitempty"`
	// SampleRate, when in (0, 1), says each step ran on a Poisson
	// subsample of the records (each kept with this probability) and is
	// accounted by the RDP of the sampled Gaussian mechanism
	// (SampledGaussianRDP, add/remove or zero-out neighbours); 0 means no
	// subsampling.
	SampleRate float64 `json:"sample_rate,omitempty"`
}

// Private reports whether r describes a differentially private result.
func (r *Report) Private() bool { return r != nil && r.Mode != "" && r.Mode != "none" }

// FullyCovered reports whether every released parameter is covered.
func (r *Report) FullyCovered() bool { return r.Private() && len(r.NotCovered) == 0 }

// NonPrivate returns the report of a result trained without privacy.
func NonPrivate() *Report {
	return &Report{Mode: "none", Notes: []string{"trained without differential privacy: the released parameters may reveal individual records"}}
}
