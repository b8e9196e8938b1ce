package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/otd"
	"github.com/dprec/dprec/otd/cape"
	"github.com/dprec/dprec/perturb"
	"github.com/urfave/cli/v2"
	"gonum.org/v1/gonum/mat"
)

// capeCmd builds the "dprec cape" command (listed in commands.go).
func capeCmd() *cli.Command {
	return &cli.Command{
		Name:  "cape",
		Usage: "run the CAPE roles (Imtiaz and Sarwate 2018, distributed) as separate processes over authenticated HTTP",
		Description: `Start "dprec cape keys" once to create one keyring per role (pairwise
AES-256-GCM keys: every request and response is sealed, so roles authenticate
each other and a site can only fetch its own noise; keyrings are written 0600).
Then start the aggregator ("aggregate"), the trusted noise generator ("noise")
and one "site" process per data holder, in any order; each waits for the others
up to --deadline. Every message is bound to the run by the aggregator's session
ID and a sequence number: messages replayed from another run or within the run
are refused and logged. A site whose hello or release is invalid (row count
above --max-rows, bad epsilon or delta, malformed values) is excluded and
reported; the run goes on while --min-sites remain. Threat model: otd/cape.
With the same --seed the result equals the in-process run (dprec pca).`,
		Subcommands: []*cli.Command{capeKeysCmd(), capeAggregateCmd(), capeNoiseCmd(), capeSiteCmd()},
	}
}

func capeCommonFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "keys", Required: true, Usage: "this role's keyring file (from dprec cape keys)"},
		&cli.DurationFlag{Name: "deadline", Value: 10 * time.Minute, Usage: "give up when the protocol has not finished after this long"},
		&cli.Uint64Flag{Name: "seed", Usage: "seed this role's randomness (reproducible, NOT private; use the same seed for every role)"},
	}
}

func capeKeysCmd() *cli.Command {
	return &cli.Command{
		Name:  "keys",
		Usage: "create keyrings for an aggregator, a noise generator and S sites",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "sites", Required: true, Usage: "number of sites S"},
			&cli.StringFlag{Name: "dir", Required: true, Usage: "directory for aggregator.json, noise.json, site-1.json, ..."},
			forceFlag("overwrite existing keyrings", ""),
		},
		Action: runWithOptions(capeKeysOptionsOf, capeKeysRun),
	}
}

// capeKeysOptions are the flags of dprec cape keys.
type capeKeysOptions struct {
	globalOptions
	Sites int    // --sites
	Dir   string // --dir
	Force bool   // --force
}

func capeKeysOptionsOf(c *cli.Context) (*capeKeysOptions, error) {
	return &capeKeysOptions{globalOptions: globalOptionsOf(c), Sites: c.Int("sites"), Dir: c.String("dir"), Force: c.Bool("force")}, nil
}

// capeKeysRun writes one keyring per role into o.Dir.
func capeKeysRun(o *capeKeysOptions, ios *iostreams) error {
	rings, err := cape.NewKeyrings(o.Sites)
	if err != nil {
		return cli.Exit(err.Error(), exitUsage)
	}
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return err
	}
	for role, k := range rings {
		p := filepath.Join(o.Dir, strings.ReplaceAll(string(role), "/", "-")+".json")
		// Mode 0600 from creation (never renamed in wider).
		if err := cape.SaveKeyring(p, k, o.Force); err != nil {
			return err
		}
	}
	if !o.Quiet {
		fmt.Fprintf(ios.Err, "wrote %d keyrings to %s (give each process only its own file)\n", len(rings), o.Dir)
	}
	return nil
}

// capeMaxRejectLines caps the refused requests a server logs (a flood of
// forged requests must not flood stderr); the count goes on.
const capeMaxRejectLines = 100

// capeRejectLogger returns an HTTPConfig.OnReject that logs each refused
// request on w (the error stream) with the role it claimed and the reason.
func capeRejectLogger(w io.Writer, server cape.Role) func(role cape.Role, reason string) {
	var mu sync.Mutex
	n := 0
	return func(role cape.Role, reason string) {
		mu.Lock()
		defer mu.Unlock()
		n++
		switch {
		case n <= capeMaxRejectLines:
			fmt.Fprintf(w, "%s: rejected request claiming role %q: %s\n", server, role, reason)
		case n == capeMaxRejectLines+1:
			fmt.Fprintf(w, "%s: more than %d requests rejected; no longer logging them\n", server, capeMaxRejectLines)
		}
	}
}

// capeListen opens the listener on addr (--listen) and announces its
// address on s.Err.
func capeListen(s *iostreams, addr string, role cape.Role) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s: listen on %s: %w", role, addr, err)
	}
	fmt.Fprintf(s.Err, "%s listening on http://%s\n", role, ln.Addr())
	return ln, nil
}

// capeRoleOptions are the flags every role has (capeCommonFlags).
type capeRoleOptions struct {
	globalOptions
	Keys     string          // --keys: this role's keyring
	Deadline time.Duration   // --deadline
	Run      cape.RunOptions // --seed
}

func capeRoleOptionsOf(c *cli.Context) capeRoleOptions {
	seed, ok := seedOf(c)
	return capeRoleOptions{globalOptions: globalOptionsOf(c), Keys: c.String("keys"), Deadline: c.Duration("deadline"),
		Run: cape.RunOptions{Seeded: ok, Seed: seed}}
}

// capeLoadKeys loads the keyring at path (--keys) and checks it is role's.
func capeLoadKeys(path string, role cape.Role) (*cape.Keyring, error) {
	k, err := cape.LoadKeyring(path)
	if err != nil {
		return nil, err
	}
	if k.Role != role {
		return nil, cli.Exit(fmt.Sprintf("--keys %s is the keyring of %s, not of %s", path, k.Role, role), exitUsage)
	}
	return k, nil
}

func capeAggregateCmd() *cli.Command {
	return &cli.Command{
		Name:  "aggregate",
		Usage: "run the untrusted aggregator: plans the rounds, sends f_s, combines the releases",
		Flags: append(capeCommonFlags(),
			&cli.StringFlag{Name: "listen", Value: "127.0.0.1:7400", Usage: "address to serve on"},
			&cli.IntFlag{Name: "sites", Required: true, Usage: "number of sites S"},
			&cli.StringFlag{Name: "job", Value: "pca", Usage: "mean, pca or agn"},
			&cli.IntFlag{Name: "dim", Required: true, Usage: "feature dimension D of the sites' rows"},
			&cli.IntFlag{Name: "k", Usage: "components K (pca, agn)"},
			&cli.StringFlag{Name: "model", Value: string(cape.ModelMOG), Usage: "agn: mog (spherical Gaussian mixture; sites give --data rows) or stm (single-topic model; sites give --corpus, --dim is the vocabulary size)"},
			&cli.Float64Flag{Name: "sigma2", Usage: "agn: the mixture's noise variance sigma^2 (in the units of the scaled rows)"},
			&cli.Float64Flag{Name: "split", Usage: "agn: fraction of each site's budget for M2 (default 0.5)"},
			&cli.StringFlag{Name: "calibration", Value: "analytic", Usage: "Gaussian calibration: analytic, classic or tight"},
			&cli.BoolFlag{Name: "equal-weights", Usage: "mu_s = 1/S instead of N_s/N"},
			&cli.DurationFlag{Name: "timeout", Value: time.Minute, Usage: "wait at most this long for each site's message; a late site counts as dropped"},
			&cli.IntFlag{Name: "max-rows", Value: cape.DefaultMaxRows, Usage: "public upper bound on a site's declared record count N_s (it sets the site's weight); a site declaring more is excluded"},
			&cli.IntFlag{Name: "min-sites", Value: 2, Usage: "run only if at least this many sites remain after excluding misbehaving ones"},
			&cli.StringFlag{Name: "out", Usage: "write V_K (pca) or the components (agn, D rows x K columns) as CSV"},
			forceFlag("overwrite --out", ""),
			&cli.BoolFlag{Name: "json", Usage: "print the result as JSON"},
		),
		Action: runWithOptions(capeAggregateOptionsOf, capeAggregateRun),
	}
}

type capeAggResult struct {
	Job         cape.Job           `json:"job"`
	Stages      []cape.StageResult `json:"stages"`
	Excluded    []cape.Exclusion   `json:"excluded,omitempty"`
	Estimate    []float64          `json:"estimate,omitempty"`
	Eigenvalues []float64          `json:"eigenvalues,omitempty"`
	Weights     []float64          `json:"weights,omitempty"`
	// RawWeights are the AGN weights as estimated, before Weights were
	// normalised to sum 1; Warnings say when they show the result is
	// mostly noise (otd.WeightNoiseWarning).
	RawWeights []float64       `json:"raw_weights,omitempty"`
	Warnings   []string        `json:"warnings,omitempty"`
	Privacy    *perturb.Report `json:"privacy"`
	// Guarantees: per site, epsilon against the aggregator's joint view
	// and against a coalition of the other sites (otd/cape doc.go).
	Guarantees []cape.SiteGuarantee `json:"guarantees"`
}

// capeAggregateOptions are the flags of dprec cape aggregate.
type capeAggregateOptions struct {
	capeRoleOptions
	Listen   string        // --listen
	Sites    int           // --sites
	Job      cape.Job      // --job, --dim, --k, --model, --sigma2, --split, --calibration, --equal-weights (validated)
	Timeout  time.Duration // --timeout per site message
	MaxRows  int           // --max-rows
	MinSites int           // --min-sites
	Out      string        // --out ("": none; "-": the output stream)
	Force    bool          // --force
	JSON     bool          // --json
}

// capeAggregateOptionsOf reads the aggregator's flags; an invalid job,
// --max-rows or --min-sites is a usage error.
func capeAggregateOptionsOf(c *cli.Context) (*capeAggregateOptions, error) {
	job, err := capeAggJob(c)
	if err != nil {
		return nil, err
	}
	o := &capeAggregateOptions{capeRoleOptions: capeRoleOptionsOf(c), Listen: c.String("listen"), Sites: c.Int("sites"), Job: job, Timeout: c.Duration("timeout"),
		MaxRows: c.Int("max-rows"), MinSites: c.Int("min-sites"), Out: c.String("out"), Force: c.Bool("force"), JSON: c.Bool("json")}
	if o.MaxRows < 1 {
		return nil, cli.Exit(fmt.Sprintf("--max-rows %d must be positive", o.MaxRows), exitUsage)
	}
	if m := o.MinSites; m < 2 || m > o.Sites {
		return nil, cli.Exit(fmt.Sprintf("--min-sites %d must be in [2, --sites %d]", m, o.Sites), exitUsage)
	}
	return o, nil
}

// capeAggregateRun serves the aggregator role until the run ends, then
// prints the result on ios.Out (notes on ios.Err).
func capeAggregateRun(o *capeAggregateOptions, ios *iostreams) error {
	keys, err := capeLoadKeys(o.Keys, cape.RoleAggregator)
	if err != nil {
		return err
	}
	job := o.Job
	ln, err := capeListen(ios, o.Listen, cape.RoleAggregator)
	if err != nil {
		return err
	}
	// Bodies are bounded by the job's largest message; each site holds at
	// most a couple of connections, the noise generator too.
	tr, err := cape.NewHTTPTransport(cape.HTTPConfig{Role: cape.RoleAggregator, Keys: keys, Listener: ln,
		MaxValues: job.MaxValues(), MaxConns: 2*o.Sites + 8, OnReject: capeRejectLogger(ios.Err, cape.RoleAggregator)})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.Deadline)
	defer cancel()
	opts := o.Run
	agg := &cape.Aggregator{T: tr, Src: opts.Source(cape.StreamAggregator), Job: job, Sites: o.Sites, Timeout: o.Timeout,
		MaxRows: o.MaxRows, MinSites: o.MinSites}
	out, runErr := agg.Run(ctx)
	dctx, dcancel := context.WithTimeout(ctx, 10*time.Second)
	left := tr.Drain(dctx)
	dcancel()
	if n := tr.Rejections(); n > 0 {
		fmt.Fprintf(ios.Err, "aggregator: %d request(s) rejected in this run (see above)\n", n)
	}
	if runErr != nil {
		return capeAggRunError(o.Timeout, out, runErr)
	}
	for _, e := range out.Excluded {
		fmt.Fprintf(ios.Err, "aggregator: excluded %s in stage %d: %s\n", cape.SiteRole(e.Site), e.Stage, e.Reason)
	}
	if len(left) > 0 {
		fmt.Fprintf(ios.Err, "note: messages to %v were never fetched\n", left)
	}
	res, matrix, err := capeAggResults(job, out, opts)
	if err != nil {
		return err
	}
	if p := o.Out; p != "" && matrix != nil {
		if err := ios.writeFile(p, o.Force, func(w io.Writer) error { return pcaWriteCSV(w, matrix) }); err != nil {
			return err
		}
	}
	if o.JSON {
		enc := json.NewEncoder(ios.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	capeAggPrint(ios.Out, res, out)
	return nil
}

// capeAggJob builds the job from the flags and validates it.
func capeAggJob(c *cli.Context) (cape.Job, error) {
	cal, err := parseCalibration(c.String("calibration"))
	if err != nil {
		return cape.Job{}, err
	}
	kind, err := cape.ParseJobKind(c.String("job"))
	if err != nil {
		return cape.Job{}, cli.Exit(err.Error(), exitUsage)
	}
	job := cape.Job{Kind: kind, D: c.Int("dim"), K: c.Int("k"), Sigma2: c.Float64("sigma2"),
		Split: c.Float64("split"), Calibration: cal, EqualWeights: c.Bool("equal-weights")}
	if job.Kind == cape.JobAGN {
		m, err := cape.ParseModel(c.String("model"))
		if err != nil {
			return job, cli.Exit(fmt.Sprintf("--model %q: want mog or stm", c.String("model")), exitUsage)
		}
		job.Model = m
	}
	if err := job.Validate(); err != nil {
		return job, cli.Exit(err.Error(), exitUsage)
	}
	return job, nil
}

// capeAggRunError adds to a failed run's error the sites that never said
// hello, when that is why nothing ran; timeout is --timeout.
func capeAggRunError(timeout time.Duration, out *cape.Outcome, runErr error) error {
	if out != nil && len(out.Stages) == 0 {
		missing := []string{}
		for _, e := range out.Excluded {
			if strings.HasPrefix(e.Reason, "no hello") {
				missing = append(missing, string(cape.SiteRole(e.Site)))
			}
		}
		if len(missing) > 0 {
			return fmt.Errorf("%w (no hello from %s within --timeout %s: are those site processes running with the right --aggregator address?)", runErr, strings.Join(missing, ", "), timeout)
		}
	}
	return runErr
}

// capeAggResults turns the run's outcome into the job's result (mean
// estimate, PCA eigenpairs or AGN components) with its privacy report;
// matrix is the PCA subspace or the AGN components, nil for a mean.
func capeAggResults(job cape.Job, out *cape.Outcome, opts cape.RunOptions) (capeAggResult, *mat.Dense, error) {
	run := &cape.Run{Outcome: out, Randomness: perturb.RandomnessLabel(opts.Seeded)}
	res := capeAggResult{Job: job, Stages: out.Stages, Excluded: out.Excluded, Privacy: run.Report(), Guarantees: run.Guarantees()}
	var matrix *mat.Dense
	switch job.Kind {
	case cape.JobMean:
		res.Estimate = out.Stages[0].Estimate
	case cape.JobPCA:
		pr, err := cape.PCAFromOutcome(out)
		if err != nil {
			return res, nil, err
		}
		res.Eigenvalues, matrix = pr.Values, pr.V
	case cape.JobAGN:
		var src rand.Source = perturb.SecureSource()
		if opts.Seeded {
			src = perturb.StreamSource(opts.Seed, 3)
		}
		ar, err := cape.AGNFromOutcome(out, otd.TPMOptions{}, src)
		if err != nil {
			return res, nil, err
		}
		res.Weights, res.RawWeights, matrix = ar.Weights, ar.RawWeights, ar.A
		if w := otd.WeightNoiseWarning(ar.RawWeights); w != "" && res.Privacy.Private() {
			res.Warnings = append(res.Warnings, w)
		}
	}
	return res, matrix, nil
}

// capeAggPrint prints the aggregator's result for people.
func capeAggPrint(w io.Writer, res capeAggResult, out *cape.Outcome) {
	fmt.Fprintf(w, "CAPE %s: %d stage(s)\n", res.Job.Kind, len(out.Stages))
	for _, st := range out.Stages {
		fmt.Fprintf(w, "stage %d: sites %v, noise variance %.4g (target %.4g, conventional %.4g)\n", st.Stage, st.Sites, st.Variance, st.TargetVariance, st.ConvVariance)
		if len(st.Dropped) > 0 {
			fmt.Fprintf(w, "DROP-OUT: sites %v left or were dropped after the noise was distributed\n", st.Dropped)
		}
	}
	for _, e := range out.Excluded {
		fmt.Fprintf(w, "EXCLUDED: site %d (stage %d): %s\n", e.Site, e.Stage, e.Reason)
	}
	if res.Estimate != nil {
		fmt.Fprintf(w, "estimate: %v\n", res.Estimate)
	}
	if res.Eigenvalues != nil {
		fmt.Fprintf(w, "eigenvalues: %v\n", res.Eigenvalues)
	}
	if res.Weights != nil {
		fmt.Fprintf(w, "component weights: %v (normalised; estimated %v)\n", res.Weights, res.RawWeights)
	}
	for _, x := range res.Warnings {
		fmt.Fprintln(w, "WARNING:", x)
	}
	capePrintReport(w, res.Privacy)
}

func capeNoiseCmd() *cli.Command {
	return &cli.Command{
		Name:  "noise",
		Usage: "run the trusted noise generator: serves each site its correlated noise e_s",
		Flags: append(capeCommonFlags(),
			&cli.StringFlag{Name: "listen", Value: "127.0.0.1:7401", Usage: "address to serve on"},
			&cli.StringFlag{Name: "aggregator", Value: "http://127.0.0.1:7400", Usage: "aggregator URL"},
		),
		Action: runWithOptions(capeNoiseOptionsOf, capeNoiseRun),
	}
}

// capeNoiseOptions are the flags of dprec cape noise.
type capeNoiseOptions struct {
	capeRoleOptions
	Listen     string // --listen
	Aggregator string // --aggregator URL
}

func capeNoiseOptionsOf(c *cli.Context) (*capeNoiseOptions, error) {
	return &capeNoiseOptions{capeRoleOptions: capeRoleOptionsOf(c), Listen: c.String("listen"), Aggregator: c.String("aggregator")}, nil
}

// capeNoiseRun serves the trusted noise generator role until every site
// fetched its noise (or the deadline).
func capeNoiseRun(o *capeNoiseOptions, ios *iostreams) error {
	keys, err := capeLoadKeys(o.Keys, cape.RoleNoise)
	if err != nil {
		return err
	}
	ln, err := capeListen(ios, o.Listen, cape.RoleNoise)
	if err != nil {
		return err
	}
	// Nobody sends values to the noise generator (sites only fetch
	// their e_s): the smallest body limit.
	tr, err := cape.NewHTTPTransport(cape.HTTPConfig{Role: cape.RoleNoise, Keys: keys, Listener: ln, MaxValues: 1,
		Peers: map[cape.Role]string{cape.RoleAggregator: o.Aggregator}, OnReject: capeRejectLogger(ios.Err, cape.RoleNoise)})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.Deadline)
	defer cancel()
	runErr := (&cape.NoiseGenerator{T: tr, Src: o.Run.Source(cape.StreamNoise)}).Run(ctx)
	// Keep serving until every site fetched its noise (drop-outs
	// may never do so: bounded wait).
	dctx, dcancel := context.WithTimeout(ctx, time.Minute)
	left := tr.Drain(dctx)
	dcancel()
	if runErr != nil {
		return runErr
	}
	if len(left) > 0 {
		fmt.Fprintf(ios.Err, "noise generator: %v never fetched their noise (dropped out?)\n", left)
	}
	return nil
}

func capeSiteCmd() *cli.Command {
	return &cli.Command{
		Name:  "site",
		Usage: "run one site: loads its own rows or documents, adds e_s + f_s + g_s to its statistic and releases it",
		Flags: append(capeCommonFlags(),
			&cli.IntFlag{Name: "id", Required: true, Usage: "this site's number s (1..S)"},
			&cli.StringFlag{Name: "aggregator", Value: "http://127.0.0.1:7400", Usage: "aggregator URL"},
			&cli.StringFlag{Name: "noise", Value: "http://127.0.0.1:7401", Usage: "noise generator URL"},
			&cli.StringSliceFlag{Name: "data", Usage: "CSV of this site's numeric rows (norm <= 1 after --row-scale); pca, mean and agn --model mog"},
			&cli.StringFlag{Name: "corpus", Usage: "this site's documents as a UCI docword file (agn --model stm); the vocabulary must be the consortium's shared one"},
			&cli.StringFlag{Name: "vocab", Usage: "the shared vocabulary file of --corpus (UCI vocab.txt)"},
			&cli.Float64Flag{Name: "row-scale", Value: 1, Usage: "public constant every row is divided by"},
			&cli.BoolFlag{Name: "clip", Usage: "clip rows of norm > 1 to norm 1"},
			&cli.Float64Flag{Name: "epsilon", Required: true, Usage: "this site's epsilon"},
			&cli.Float64Flag{Name: "delta", Value: 1e-5, Usage: "this site's delta"},
			&cli.IntFlag{Name: "drop-in-stage", Usage: "simulate a drop-out in this stage (1-based) after receiving the noise"},
		),
		Action: runWithOptions(capeSiteOptionsOf, capeSiteRun),
	}
}

// capeSiteOptions are the flags of dprec cape site.
type capeSiteOptions struct {
	capeRoleOptions
	ID          int      // --id
	Aggregator  string   // --aggregator URL
	Noise       string   // --noise URL
	Data        []string // --data: the site's rows (exactly one file), or
	Corpus      string   // --corpus: its documents, with Vocab
	Vocab       string   // --vocab
	RowScale    float64  // --row-scale
	Clip        bool     // --clip
	Epsilon     float64  // --epsilon
	Delta       float64  // --delta
	DropInStage int      // --drop-in-stage (0: none)
}

// capeSiteOptionsOf reads a site's flags; --data and --corpus together, or
// neither, or several --data files are usage errors.
func capeSiteOptionsOf(c *cli.Context) (*capeSiteOptions, error) {
	o := &capeSiteOptions{capeRoleOptions: capeRoleOptionsOf(c), ID: c.Int("id"), Aggregator: c.String("aggregator"),
		Noise: c.String("noise"), Data: c.StringSlice("data"), Corpus: c.String("corpus"), Vocab: c.String("vocab"),
		RowScale: c.Float64("row-scale"), Clip: c.Bool("clip"), Epsilon: c.Float64("epsilon"), Delta: c.Float64("delta"),
		DropInStage: c.Int("drop-in-stage")}
	switch {
	case o.Corpus != "" && len(o.Data) > 0:
		return nil, cli.Exit("give a site either --data (rows) or --corpus (documents), not both", exitUsage)
	case o.Corpus == "" && len(o.Data) != 1:
		return nil, cli.Exit("a site takes exactly one --data file (rows) or one --corpus file (documents)", exitUsage)
	}
	return o, nil
}

// capeSiteRun loads the site's data and runs the site role.
func capeSiteRun(o *capeSiteOptions, ios *iostreams) error {
	role := cape.SiteRole(o.ID)
	keys, err := capeLoadKeys(o.Keys, role)
	if err != nil {
		return err
	}
	var sd *cape.SiteData
	if o.Corpus != "" {
		// Documents shorter than 3 words carry no word triple and are
		// skipped (counted), as in dprec spectral.
		corpus, err := data.ReadUCIBagOfWords(o.Corpus, o.Vocab, data.CorpusOptions{MinDocLen: 3})
		if err != nil {
			return err
		}
		sd = &cape.SiteData{Corpus: corpus}
	} else {
		mats, err := pcaReadRows(o.Data, o.RowScale, o.Clip)
		if err != nil {
			return err
		}
		sd = &cape.SiteData{Rows: mats[0]}
	}
	tr, err := cape.NewHTTPTransport(cape.HTTPConfig{Role: role, Keys: keys,
		Peers: map[cape.Role]string{cape.RoleAggregator: o.Aggregator, cape.RoleNoise: o.Noise}})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.Deadline)
	defer cancel()
	site := &cape.Site{ID: o.ID, T: tr, Src: o.Run.Source(cape.StreamSite(o.ID)), Data: sd,
		Epsilon: o.Epsilon, Delta: o.Delta, DropStage: o.DropInStage}
	if err := site.Run(ctx); err != nil {
		return err
	}
	if !o.Quiet {
		fmt.Fprintf(ios.Err, "%s: done\n", role)
	}
	return nil
}
