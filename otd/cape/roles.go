package cape

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/dprec/dprec/internal/packed"
	"github.com/dprec/dprec/otd"
	"github.com/dprec/dprec/perturb"
	"gonum.org/v1/gonum/mat"
)

// RoundPlan is the body of a KindPlan message: the job, the stage, the
// sites taking part (1-based ids, in plan order) and the variances.
type RoundPlan struct {
	Job   Job        `json:"job"`
	Stage int        `json:"stage"`
	Sites []int      `json:"sites"`
	Specs []SiteSpec `json:"specs"`
	Plan  *Plan      `json:"plan"`
	// Last is set on the plan of the final stage.
	Last bool `json:"last"`
	// Excluded lists the sites left out so far and why; the stage-0 plan
	// also goes to the sites excluded at their hello, so they stop with
	// the reason instead of waiting.
	Excluded []Exclusion `json:"excluded,omitempty"`
}

func (rp *RoundPlan) index(site int) int {
	for i, s := range rp.Sites {
		if s == site {
			return i
		}
	}
	return -1
}

func sendJSON(ctx context.Context, t Transport, to Role, kind MsgKind, stage int, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return t.Send(ctx, &Message{To: to, Kind: kind, Stage: stage, Body: b})
}

func recvJSON(ctx context.Context, t Transport, from Role, kind MsgKind, stage int, v any) error {
	m, err := t.Recv(ctx, from, kind, stage)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(m.Body, v); err != nil {
		return fmt.Errorf("cape: bad %s message from %s: %w", kind, from, err)
	}
	return nil
}

// NoiseGenerator is the trusted noise generator: for each stage it reads
// the plan from the aggregator and sends each participating site its
// correlated noise e_s (ZeroSumNoise). It never sees data or releases.
type NoiseGenerator struct {
	T   Transport
	Src rand.Source
}

// Run serves stages until the plan marked Last has been served.
func (g *NoiseGenerator) Run(ctx context.Context) error {
	r := rand.New(g.Src)
	for stage := 0; ; stage++ {
		var rp RoundPlan
		if err := recvJSON(ctx, g.T, RoleAggregator, KindPlan, stage, &rp); err != nil {
			return fmt.Errorf("noise generator: %w", err)
		}
		e, err := ZeroSumNoise(rp.Plan.Mu, rp.Plan.ZeroSumSigma2, rp.Job.Length(stage), r)
		if err != nil {
			return fmt.Errorf("noise generator: %w", err)
		}
		for i, s := range rp.Sites {
			err := g.T.Send(ctx, &Message{To: SiteRole(s), Kind: KindE, Stage: stage, Values: e[i], Shape: rp.Job.shape(stage)})
			if err != nil && !errors.Is(err, ErrDropped) {
				return fmt.Errorf("noise generator: %w", err)
			}
		}
		if rp.Last {
			return nil
		}
	}
}

// shape returns the dense shape of a stage's noise/statistic.
func (j *Job) shape(stage int) []int {
	switch {
	case j.Kind == JobMean:
		return []int{j.D}
	case stage == 0:
		return []int{j.D, j.D}
	default:
		return []int{j.D, j.D, j.D}
	}
}

// Site is one data holder. It announces its spec, and in each stage adds
// e_s (from the generator), f_s (from the aggregator) and its own g_s to
// its statistic and releases the sum (projected on W in capeAGN's stage 1).
type Site struct {
	ID      int // 1-based
	T       Transport
	Src     rand.Source
	Data    *SiteData
	Epsilon float64
	Delta   float64
	// DropStage, when positive, makes the site leave in stage DropStage-1
	// after receiving its noise and before releasing (drop-out simulation).
	DropStage int
	// Closer is called when the site leaves (drop-out or end); the local
	// transport's Close makes peers see the drop-out at once.
	Closer func()
}

// Run executes the site's part of the protocol.
func (s *Site) Run(ctx context.Context) (err error) {
	defer func() {
		if s.Closer != nil {
			s.Closer()
		}
		if err != nil {
			err = fmt.Errorf("site %d: %w", s.ID, err)
		}
	}()
	r := rand.New(s.Src)
	spec := SiteSpec{N: s.Data.N(), Epsilon: s.Epsilon, Delta: s.Delta}
	if err := sendJSON(ctx, s.T, RoleAggregator, KindHello, 0, spec); err != nil {
		return err
	}
	var W *mat.Dense
	for stage := 0; ; stage++ {
		var rp RoundPlan
		if err := recvJSON(ctx, s.T, RoleAggregator, KindPlan, stage, &rp); err != nil {
			return err
		}
		idx := rp.index(s.ID)
		if idx < 0 {
			for _, e := range rp.Excluded {
				if e.Site == s.ID {
					return fmt.Errorf("excluded by the aggregator in stage %d: %s", e.Stage, e.Reason)
				}
			}
			return fmt.Errorf("not in the plan of stage %d", stage)
		}
		if err := rp.Job.Validate(); err != nil {
			return err
		}
		// Guard against an under-calibrated plan: recompute tau_s.
		own, err := rp.Job.Tau2(stage, spec)
		if err != nil {
			return err
		}
		if rp.Plan.Tau2[idx] < own*(1-1e-12) {
			return fmt.Errorf("plan gives tau_s^2 = %g below this site's %g", rp.Plan.Tau2[idx], own)
		}
		if err := rp.Plan.Check(); err != nil {
			return err
		}
		if rp.Job.Kind == JobAGN && stage == 1 {
			m, err := s.T.Recv(ctx, RoleAggregator, KindW, stage)
			if err != nil {
				return err
			}
			if len(m.Values) != rp.Job.D*rp.Job.K {
				return fmt.Errorf("whitening matrix has %d values, want %d", len(m.Values), rp.Job.D*rp.Job.K)
			}
			W = mat.NewDense(rp.Job.D, rp.Job.K, m.Values)
		}
		stat, err := rp.Job.Statistic(stage, s.Data)
		if err != nil {
			return err
		}
		em, err := s.T.Recv(ctx, RoleNoise, KindE, stage)
		if err != nil {
			return err
		}
		fm, err := s.T.Recv(ctx, RoleAggregator, KindF, stage)
		if err != nil {
			return err
		}
		L := len(stat)
		if len(em.Values) != L || len(fm.Values) != L {
			return fmt.Errorf("stage %d: noise lengths e %d, f %d, want %d", stage, len(em.Values), len(fm.Values), L)
		}
		if s.DropStage == stage+1 {
			return nil // drop out after the noise was distributed
		}
		g, err := gaussianVector(rp.Plan.TauG2[idx], L, r)
		if err != nil {
			return err
		}
		snapTo(stat, rp.Plan.Tau2[idx])
		out := make([]float64, L)
		for i := range out {
			out[i] = stat[i] + em.Values[i] + fm.Values[i] + g[i]
		}
		shape := rp.Job.shape(stage)
		if W != nil {
			if out, err = projectPacked(rp.Job.D, out, W); err != nil {
				return err
			}
			shape = []int{rp.Job.K, rp.Job.K, rp.Job.K}
		}
		if err := s.T.Send(ctx, &Message{To: RoleAggregator, Kind: KindRelease, Stage: stage, Values: out, Shape: shape}); err != nil {
			return err
		}
		if rp.Last {
			return nil
		}
	}
}

// Aggregator is the untrusted aggregator: it collects the sites' specs,
// computes the plan of each stage, sends f_s, receives the releases,
// subtracts f_s and combines them with the weights mu_s, detecting
// drop-outs.
type Aggregator struct {
	T     Transport
	Src   rand.Source
	Job   Job
	Sites int // S
	// Timeout bounds the wait for each site's message in a stage (0: the
	// context's deadline only). A site that misses it counts as dropped.
	Timeout time.Duration
	// MaxRows is the public upper bound on a site's declared record count
	// N_s (0: DefaultMaxRows). N_s is self-declared and sets the site's
	// weight mu_s = N_s/N: the bound caps the weight a lying site can
	// claim. A site declaring more is excluded (doc.go, "Threat model").
	MaxRows int
	// MinSites is the number of valid sites the run needs (0: 2, the
	// least CAPE works with). Misbehaving sites are excluded and reported
	// in Outcome.Excluded; the run goes on while at least MinSites remain.
	MinSites int
}

// DefaultMaxRows is the default public bound on a site's declared N_s.
const DefaultMaxRows = 1_000_000_000

// maxTau2 bounds a site's tau_s^2: sums of up to MaxSites products of
// weights and variances stay far from overflow, and no meaningful
// calibration comes near it (it takes epsilon below about 1e-70).
const maxTau2 = 1e150

// Exclusion records a site left out of the run and why.
type Exclusion struct {
	Site int `json:"site"`
	// Stage is the stage in which the site was excluded (its hello counts
	// as stage 0).
	Stage  int    `json:"stage"`
	Reason string `json:"reason"`
}

// CheckSpec checks a site's hello against the job and the public bounds:
// 1 <= N_s <= maxRows, epsilon_s positive and finite, delta_s in (0, 1),
// and tau_s^2 positive, finite and below maxTau2 in every stage. It
// returns an error naming the first violation.
func (j *Job) CheckSpec(sp SiteSpec, maxRows int) error {
	if maxRows <= 0 {
		maxRows = DefaultMaxRows
	}
	if sp.N < 1 || sp.N > maxRows {
		return fmt.Errorf("declares n = %d records, outside the public bounds [1, %d] (--max-rows)", sp.N, maxRows)
	}
	if !(sp.Epsilon > 0) || math.IsInf(sp.Epsilon, 0) {
		return fmt.Errorf("declares epsilon = %v, must be positive and finite", sp.Epsilon)
	}
	if !(sp.Delta > 0 && sp.Delta < 1) {
		return fmt.Errorf("declares delta = %v, must be in (0, 1)", sp.Delta)
	}
	for st := 0; st < j.Stages(); st++ {
		t, err := j.Tau2(st, sp)
		if err != nil {
			return fmt.Errorf("declares (epsilon, delta) = (%v, %v) with no valid calibration: %w", sp.Epsilon, sp.Delta, err)
		}
		if !(t > 0) || !(t <= maxTau2) {
			return fmt.Errorf("declares (epsilon, delta) = (%v, %v), which needs noise variance %v in stage %d (outside (0, %g])", sp.Epsilon, sp.Delta, t, st, maxTau2)
		}
	}
	return nil
}

// StageResult is the aggregator's outcome of one stage.
type StageResult struct {
	Stage int `json:"stage"`
	// Estimate is the combined packed statistic (capeAGN stage 1: the
	// packed K x K x K tensor M3~(W,W,W)).
	Estimate []float64 `json:"-"`
	Plan     *Plan     `json:"plan"`
	Sites    []int     `json:"sites"`
	// Dropped lists sites that left after the noise was distributed; their
	// e_s do not cancel, so the estimate's variance is Variance (between
	// tau_c^2 and the conventional scheme's) instead of tau_c^2.
	Dropped []int `json:"dropped,omitempty"`
	// Variance is the per-entry noise variance of Estimate before any
	// projection (Plan.AggregateVar); TargetVariance is tau_c^2 and
	// ConvVariance the conventional scheme's over the same sites.
	Variance       float64 `json:"variance"`
	TargetVariance float64 `json:"target_variance"`
	ConvVariance   float64 `json:"conv_variance"`
}

// Outcome is everything the aggregator computed.
type Outcome struct {
	Job    Job           `json:"job"`
	Specs  []SiteSpec    `json:"specs"`
	Stages []StageResult `json:"stages"`
	// W is capeAGN's whitening matrix (D x K).
	W *mat.Dense `json:"-"`
	// Excluded lists the sites left out and why: no hello, an unparsable
	// or out-of-bounds hello, or a malformed release. Specs of sites
	// excluded at the hello are zero.
	Excluded []Exclusion `json:"excluded,omitempty"`
}

// Participated reports whether site s (1-based) released in at least one
// stage.
func (o *Outcome) Participated(s int) bool {
	for _, st := range o.Stages {
		if contains(st.Sites, s) && !contains(st.Dropped, s) {
			return true
		}
	}
	return false
}

// Run executes the aggregator's part and returns the stage results.
func (a *Aggregator) Run(ctx context.Context) (*Outcome, error) {
	if err := a.Job.Validate(); err != nil {
		return nil, err
	}
	if a.Sites < 2 || a.Sites > MaxSites {
		return nil, fmt.Errorf("aggregator: %d sites, want 2..%d", a.Sites, MaxSites)
	}
	minSites := a.MinSites
	if minSites < 2 {
		minSites = 2
	}
	r := rand.New(a.Src)
	out := &Outcome{Job: a.Job, Specs: make([]SiteSpec, a.Sites)}
	present := make([]int, 0, a.Sites)
	for s := 1; s <= a.Sites; s++ {
		m, err := a.recv(ctx, SiteRole(s), KindHello, 0)
		if err != nil {
			if errors.Is(err, ErrDropped) {
				out.Excluded = append(out.Excluded, Exclusion{Site: s, Reason: "no hello (not running, unreachable or too late)"})
				continue
			}
			return nil, fmt.Errorf("aggregator: %w", err)
		}
		var sp SiteSpec
		if err := json.Unmarshal(m.Body, &sp); err != nil {
			out.Excluded = append(out.Excluded, Exclusion{Site: s, Reason: fmt.Sprintf("unparsable hello: %v", err)})
			continue
		}
		if err := a.Job.CheckSpec(sp, a.MaxRows); err != nil {
			out.Excluded = append(out.Excluded, Exclusion{Site: s, Reason: "hello " + err.Error()})
			continue
		}
		out.Specs[s-1] = sp
		present = append(present, s)
	}
	stages := a.Job.Stages()
	for stage := 0; stage < stages; stage++ {
		if len(present) < minSites {
			return out, fmt.Errorf("aggregator: stage %d: only %d valid site(s) left (%v), the run needs %d%s", stage, len(present), present, minSites, exclusionText(out.Excluded))
		}
		res, err := a.stage(ctx, stage, present, out, r, stage == stages-1)
		if err != nil {
			return out, fmt.Errorf("aggregator: stage %d: %w", stage, err)
		}
		out.Stages = append(out.Stages, *res)
		// Sites that dropped take no part in later stages.
		var keep []int
		for _, s := range present {
			if !contains(res.Dropped, s) {
				keep = append(keep, s)
			}
		}
		present = keep
		if a.Job.Kind == JobAGN && stage == 0 {
			M2 := unpackSym(a.Job.D, res.Estimate)
			W, err := otd.WhitenSVD(M2, a.Job.K)
			if err != nil {
				return out, fmt.Errorf("aggregator: %w", err)
			}
			out.W = W
		}
	}
	return out, nil
}

func contains(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

func (a *Aggregator) recv(ctx context.Context, from Role, kind MsgKind, stage int) (*Message, error) {
	if a.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, a.Timeout)
		defer cancel()
	}
	return a.T.Recv(ctx, from, kind, stage)
}

// stage runs one stage of a job over the present sites: it plans the
// noise, sends the plan, the site noise (and for the AGN projection W),
// then combines the sites' releases.
func (a *Aggregator) stage(ctx context.Context, stage int, present []int, out *Outcome, r *rand.Rand, last bool) (*StageResult, error) {
	job := a.Job
	S := len(present)
	specs, tau2, mu, err := a.weights(stage, present, out)
	if err != nil {
		return nil, err
	}
	plan, err := NewPlan(tau2, mu)
	if err != nil {
		return nil, err
	}
	rp := RoundPlan{Job: job, Stage: stage, Sites: present, Specs: specs, Plan: plan, Last: last, Excluded: out.Excluded}
	if err := sendJSON(ctx, a.T, RoleNoise, KindPlan, stage, rp); err != nil {
		return nil, err
	}
	if stage == 0 {
		for _, e := range out.Excluded {
			if strings.HasPrefix(e.Reason, "hello ") || strings.HasPrefix(e.Reason, "unparsable hello") {
				// The site is running (it said hello): tell it why it is out.
				if err := sendJSON(ctx, a.T, SiteRole(e.Site), KindPlan, stage, rp); err != nil && !errors.Is(err, ErrDropped) {
					return nil, err
				}
			}
		}
	}
	fs, err := a.sendNoise(ctx, stage, present, rp, out, r)
	if err != nil {
		return nil, err
	}
	project := job.Kind == JobAGN && stage == 1
	outLen := job.Length(stage)
	if project {
		outLen = packed.Len(job.K)
	}
	res := &StageResult{Stage: stage, Plan: plan, Sites: present}
	est, mask, msum, err := a.combine(ctx, stage, present, fs, mu, outLen, out, res)
	if err != nil {
		return nil, err
	}
	if len(res.Dropped) == S {
		return nil, fmt.Errorf("every site dropped out (%v) after the plan was sent: check that the noise generator is running and reachable by the sites (their own errors say more)", res.Dropped)
	}
	if len(res.Dropped) > 0 {
		for k := range est {
			est[k] /= msum
		}
	}
	res.Estimate = est
	res.Variance = plan.AggregateVar(mask)
	res.TargetVariance = plan.TauC2
	res.ConvVariance = plan.ConvVar(mask)
	return res, nil
}

// weights returns the specs of the present sites, their noise targets
// tau2 for this stage and their weights mu (equal, or by site size).
func (a *Aggregator) weights(stage int, present []int, out *Outcome) (specs []SiteSpec, tau2, mu []float64, err error) {
	job := a.Job
	S := len(present)
	tau2 = make([]float64, S)
	mu = make([]float64, S)
	specs = make([]SiteSpec, S)
	var total float64
	for i, s := range present {
		sp := out.Specs[s-1]
		specs[i] = sp
		t, err := job.Tau2(stage, sp)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("site %d: %w", s, err)
		}
		tau2[i] = t
		total += float64(sp.N)
	}
	for i := range mu {
		if job.EqualWeights {
			mu[i] = 1 / float64(S)
		} else {
			mu[i] = float64(specs[i].N) / total
		}
	}
	return specs, tau2, mu, nil
}

// sendNoise sends the round plan to the sites, draws each site's noise
// f_s from r and sends it (with W first, for the AGN projection stage).
// It returns the noise vectors.
func (a *Aggregator) sendNoise(ctx context.Context, stage int, present []int, rp RoundPlan, out *Outcome, r *rand.Rand) ([][]float64, error) {
	job, plan := a.Job, rp.Plan
	L := job.Length(stage)
	fs := make([][]float64, len(present))
	var err error
	for i, s := range present {
		if err := sendJSON(ctx, a.T, SiteRole(s), KindPlan, stage, rp); err != nil && !errors.Is(err, ErrDropped) {
			return nil, err
		}
		if fs[i], err = gaussianVector(plan.TauF2[i], L, r); err != nil {
			return nil, err
		}
	}
	project := job.Kind == JobAGN && stage == 1
	if project {
		wv := out.W.RawMatrix().Data
		for _, s := range present {
			if err := a.T.Send(ctx, &Message{To: SiteRole(s), Kind: KindW, Stage: stage, Values: append([]float64(nil), wv...), Shape: []int{job.D, job.K}}); err != nil && !errors.Is(err, ErrDropped) {
				return nil, err
			}
		}
	}
	for i, s := range present {
		if err := a.T.Send(ctx, &Message{To: SiteRole(s), Kind: KindF, Stage: stage, Values: fs[i], Shape: job.shape(stage)}); err != nil && !errors.Is(err, ErrDropped) {
			return nil, err
		}
	}
	return fs, nil
}

// combine receives the sites' releases and sums mu_s (release_s - f_s)
// into the estimate; dropped and malformed releases are recorded in res
// (and out.Excluded). It returns the estimate, which sites counted and the
// sum of their weights.
func (a *Aggregator) combine(ctx context.Context, stage int, present []int, fs [][]float64, mu []float64, outLen int, out *Outcome, res *StageResult) (est []float64, mask []bool, msum float64, err error) {
	job := a.Job
	project := job.Kind == JobAGN && stage == 1
	est = make([]float64, outLen)
	mask = make([]bool, len(present))
	for i, s := range present {
		m, err := a.recv(ctx, SiteRole(s), KindRelease, stage)
		if err != nil {
			if errors.Is(err, ErrDropped) {
				res.Dropped = append(res.Dropped, s)
				continue
			}
			return nil, nil, 0, err
		}
		if reason := checkRelease(m.Values, outLen); reason != "" {
			// A malformed release is dropped like a drop-out (its e_s no
			// longer cancels) and reported.
			res.Dropped = append(res.Dropped, s)
			out.Excluded = append(out.Excluded, Exclusion{Site: s, Stage: stage, Reason: reason})
			continue
		}
		f := fs[i]
		if project {
			if f, err = projectPacked(job.D, f, out.W); err != nil {
				return nil, nil, 0, err
			}
		}
		for k, v := range m.Values {
			est[k] += mu[i] * (v - f[k])
		}
		mask[i] = true
		msum += mu[i]
	}
	return est, mask, msum, nil
}

// checkRelease returns why a release of want values is malformed, or "".
func checkRelease(v []float64, want int) string {
	if len(v) != want {
		return fmt.Sprintf("released %d values, want %d", len(v), want)
	}
	for i, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Sprintf("released a non-finite value (%v at entry %d)", x, i+1)
		}
	}
	return ""
}

// exclusionText lists exclusions for an error message.
func exclusionText(ex []Exclusion) string {
	if len(ex) == 0 {
		return ""
	}
	var b []byte
	b = append(b, "; excluded: "...)
	for i, e := range ex {
		if i > 0 {
			b = append(b, "; "...)
		}
		b = append(b, fmt.Sprintf("site %d (%s)", e.Site, e.Reason)...)
	}
	return string(b)
}

// snapTo rounds the statistic to the power-of-two grid of
// perturb.Granularity(sqrt(tau2)) (doc.go, "Floating point"): afterwards
// its low-order bits carry no information below the noise grid.
func snapTo(v []float64, tau2 float64) {
	g := perturb.Granularity(math.Sqrt(tau2))
	for i, x := range v {
		v[i] = perturb.Snap(x, g)
	}
}
