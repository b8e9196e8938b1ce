package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/otd/cape"
	"github.com/dprec/dprec/perturb"
	"github.com/urfave/cli/v2"
	"gonum.org/v1/gonum/mat"
)

func pcaCmd() *cli.Command {
	const in, priv, out = "Input", "Privacy", "Output"
	return &cli.Command{
		Name:  "pca",
		Usage: "distributed differentially private PCA (capePCA, Imtiaz and Sarwate 2018, Algorithm 2) with the roles run in process",
		Description: `Each site holds numeric rows (CSV, one observation per line, l2 norm <= 1).
Give one file per site (--data a.csv --data b.csv ...), or one file and --sites S
to split its rows into S equal contiguous blocks. The sites, the untrusted
aggregator and the trusted noise generator run as goroutines exchanging
messages over the in-process transport; the result is the top-K subspace of
the CAPE second moment. --baselines also runs conv, local and non-private PCA
and prints each method's captured energy q_CE = tr(V^T A V) on the pooled data
(an evaluation only possible here because all data are in one process).`,
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "data", Category: in, Required: true, Usage: "CSV of numeric rows; repeat for one file per site"},
			&cli.IntFlag{Name: "sites", Category: in, Usage: "split a single --data file into S sites (default: one site per file)"},
			&cli.Float64Flag{Name: "row-scale", Category: in, Value: 1, Usage: "public constant every row is divided by before the norm check"},
			&cli.BoolFlag{Name: "clip", Category: in, Usage: "clip rows of norm > 1 to norm 1 (otherwise such a row is an error)"},
			&cli.IntFlag{Name: "k", Category: in, Required: true, Usage: "number of principal components K"},
			&cli.Float64Flag{Name: "epsilon", Category: priv, Required: true, Usage: "per-site epsilon"},
			&cli.Float64Flag{Name: "delta", Category: priv, Value: 1e-5, Usage: "per-site delta"},
			&cli.StringFlag{Name: "calibration", Category: priv, Value: "analytic", Usage: "Gaussian calibration: analytic, classic (epsilon <= 1) or tight"},
			&cli.BoolFlag{Name: "equal-weights", Category: priv, Usage: "aggregate with mu_s = 1/S instead of N_s/N"},
			&cli.IntFlag{Name: "drop", Category: priv, Usage: "simulate the drop-out of this site (1-based) after the noise was distributed"},
			&cli.BoolFlag{Name: "baselines", Category: out, Usage: "also run conv, local (site 1) and non-private pooled PCA and print q_CE for each"},
			&cli.StringFlag{Name: "out", Category: out, Usage: "write V_K (D rows x K columns) as CSV to FILE"},
			forceFlag("overwrite --out", out),
			&cli.BoolFlag{Name: "json", Category: out, Usage: "print the result as JSON on stdout"},
			&cli.Uint64Flag{Name: "seed", Usage: "seed all randomness (reproducible, NOT private)"},
		},
		Action: runWithOptions(pcaOptionsOf, pcaRun),
	}
}

// pcaLoadSites reads the --data files into sites.
func pcaLoadSites(o *pcaOptions) ([]*mat.Dense, error) {
	mats, err := pcaReadRows(o.Files, o.RowScale, o.Clip)
	if err != nil {
		return nil, err
	}
	files := o.Files
	S := o.Sites
	_, d := mats[0].Dims()
	switch {
	case S == 0:
		// One site per --data file.
	case len(mats) == 1 && S > 1:
		x := mats[0]
		n, _ := x.Dims()
		if n < S {
			return nil, fmt.Errorf("%s: %d rows cannot be split into %d sites", files[0], n, S)
		}
		mats = mats[:0]
		for s := 0; s < S; s++ {
			mats = append(mats, mat.DenseCopyOf(x.Slice(s*n/S, (s+1)*n/S, 0, d)))
		}
	case S != len(mats):
		return nil, cli.Exit(fmt.Sprintf("--sites %d but %d --data files", S, len(mats)), exitUsage)
	}
	if len(mats) < 2 {
		return nil, cli.Exit("capePCA needs at least 2 sites: give several --data files or --sites S", exitUsage)
	}
	return mats, nil
}

// pcaReadRows reads every file as rows, divided by the public scale
// (--row-scale), with the norm rule: a row of norm > 1 is an error, or with
// clip is clipped to norm 1.
func pcaReadRows(files []string, scale float64, clip bool) ([]*mat.Dense, error) {
	if !(scale > 0) || math.IsInf(scale, 0) {
		return nil, cli.Exit(fmt.Sprintf("--row-scale %v: must be positive and finite", scale), exitUsage)
	}
	var mats []*mat.Dense
	d := -1
	for _, f := range files {
		rows, err := data.ReadRows(f, data.RowsOptions{Rescale: true})
		if err != nil {
			return nil, err
		}
		if d >= 0 && rows.D != d {
			return nil, fmt.Errorf("%s: %d columns, %s has %d", f, rows.D, files[0], d)
		}
		d = rows.D
		x := mat.NewDense(rows.N, rows.D, rows.Data)
		// Undo ReadRows's data-dependent rescaling (it would leak the
		// largest norm); apply the public --row-scale and the norm rule.
		x.Scale(rows.Scale/scale, x)
		for i := 0; i < rows.N; i++ {
			r := x.RawRowView(i)
			n := math.Sqrt(mat.Dot(mat.NewVecDense(len(r), r), mat.NewVecDense(len(r), r)))
			if n > 1+1e-9 {
				if !clip {
					return nil, fmt.Errorf("%s: data row %d has norm %.4g > 1 after --row-scale %g (use a larger --row-scale or --clip)", f, i+1, n, scale)
				}
				for j := range r {
					r[j] /= n
				}
			}
		}
		mats = append(mats, x)
	}
	return mats, nil
}

type pcaMethod struct {
	Method string  `json:"method"`
	QCE    float64 `json:"q_ce"`
}

type pcaResult struct {
	Sites       int                        `json:"sites"`
	SiteRows    []int                      `json:"site_rows"`
	D           int                        `json:"d"`
	K           int                        `json:"k"`
	Eigenvalues []float64                  `json:"eigenvalues"`
	QCE         float64                    `json:"q_ce"`
	Baselines   []pcaMethod                `json:"baselines,omitempty"`
	Stage       cape.StageResult           `json:"aggregate"`
	Traffic     map[cape.Role]cape.Traffic `json:"traffic"`
	Seconds     float64                    `json:"seconds"`
	Privacy     *perturb.Report            `json:"privacy"`
	V           [][]float64                `json:"v,omitempty"`
}

// pcaOptions are the flags of dprec pca.
type pcaOptions struct {
	globalOptions
	Files        []string            // --data: one file per site, or one file split by Sites
	Sites        int                 // --sites (0: one site per file)
	RowScale     float64             // --row-scale
	Clip         bool                // --clip
	K            int                 // --k
	Epsilon      float64             // --epsilon, per site
	Delta        float64             // --delta, per site
	Calibration  perturb.Calibration // --calibration
	EqualWeights bool                // --equal-weights
	Drop         int                 // --drop: the 1-based site that drops out (0: none)
	Baselines    bool                // --baselines
	Out          string              // --out: V_K as CSV ("": not written; "-": the output stream)
	Force        bool                // --force
	JSON         bool                // --json
	Seed         uint64              // --seed, when Seeded
	Seeded       bool
}

// pcaOptionsOf reads pca's flags.
func pcaOptionsOf(c *cli.Context) (*pcaOptions, error) {
	cal, err := parseCalibration(c.String("calibration"))
	if err != nil {
		return nil, err
	}
	o := &pcaOptions{
		globalOptions: globalOptionsOf(c),
		Files:         c.StringSlice("data"),
		Sites:         c.Int("sites"),
		RowScale:      c.Float64("row-scale"),
		Clip:          c.Bool("clip"),
		K:             c.Int("k"),
		Epsilon:       c.Float64("epsilon"),
		Delta:         c.Float64("delta"),
		Calibration:   cal,
		EqualWeights:  c.Bool("equal-weights"),
		Drop:          c.Int("drop"),
		Baselines:     c.Bool("baselines"),
		Out:           c.String("out"),
		Force:         c.Bool("force"),
		JSON:          c.Bool("json"),
	}
	o.Seed, o.Seeded = seedOf(c)
	return o, nil
}

// pcaRun runs capePCA with every role in process and prints the result on
// s.Out.
func pcaRun(o *pcaOptions, s *iostreams) error {
	start := time.Now()
	cal := o.Calibration
	mats, err := pcaLoadSites(o)
	if err != nil {
		return err
	}
	k := o.K
	_, d := mats[0].Dims()
	if k < 1 || k > d {
		return cli.Exit(fmt.Sprintf("--k %d: must be in [1, %d]", k, d), exitUsage)
	}
	sites := make([]cape.SiteInput, len(mats))
	res := pcaResult{Sites: len(mats), D: d, K: k}
	for i, x := range mats {
		sites[i] = cape.SiteInput{Data: &cape.SiteData{Rows: x}, Epsilon: o.Epsilon, Delta: o.Delta}
		n, _ := x.Dims()
		res.SiteRows = append(res.SiteRows, n)
	}
	if dr := o.Drop; dr != 0 {
		if dr < 1 || dr > len(sites) {
			return cli.Exit(fmt.Sprintf("--drop %d: no such site (1..%d)", dr, len(sites)), exitUsage)
		}
		sites[dr-1].DropStage = 1
	}
	seed, seeded := o.Seed, o.Seeded
	opts := cape.RunOptions{Seeded: seeded, Seed: seed}
	job := cape.Job{Kind: cape.JobPCA, D: d, K: k, Calibration: cal, EqualWeights: o.EqualWeights}
	run, err := cape.RunLocal(context.Background(), job, sites, opts)
	if err != nil {
		return err
	}
	pr, err := cape.PCAFromOutcome(run.Outcome)
	if err != nil {
		return err
	}
	A := cape.SecondMoment(mats...)
	res.Eigenvalues = pr.Values
	res.QCE = cape.CapturedEnergy(pr.V, A)
	res.Stage = run.Outcome.Stages[0]
	res.Traffic = run.Traffic
	res.Privacy = run.Report()
	if o.Baselines {
		var src rand.Source = perturb.SecureSource()
		if seeded {
			src = perturb.StreamSource(seed, 1000)
		}
		r := rand.New(src)
		cv, err := cape.ConvPCA(k, sites, cal, job.EqualWeights, r)
		if err != nil {
			return err
		}
		lc, err := cape.LocalPCA(k, sites[0], cal, r)
		if err != nil {
			return err
		}
		np, err := cape.NonPrivatePCA(k, sites)
		if err != nil {
			return err
		}
		res.Baselines = []pcaMethod{{"conv", cape.CapturedEnergy(cv.V, A)}, {"local (site 1)", cape.CapturedEnergy(lc.V, A)}, {"non-private pooled", cape.CapturedEnergy(np.V, A)}}
	}
	if p := o.Out; p != "" {
		if err := s.writeFile(p, o.Force, func(w io.Writer) error { return pcaWriteCSV(w, pr.V) }); err != nil {
			return err
		}
	}
	res.Seconds = time.Since(start).Seconds()
	if o.JSON {
		enc := json.NewEncoder(s.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	pcaPrint(s.Out, &res)
	return nil
}

func pcaWriteCSV(w io.Writer, V *mat.Dense) error {
	d, k := V.Dims()
	for i := 0; i < d; i++ {
		parts := make([]string, k)
		for j := 0; j < k; j++ {
			parts[j] = fmt.Sprintf("%.17g", V.At(i, j))
		}
		if _, err := fmt.Fprintln(w, strings.Join(parts, ",")); err != nil {
			return err
		}
	}
	return nil
}

func pcaPrint(w io.Writer, r *pcaResult) {
	fmt.Fprintf(w, "capePCA: S=%d sites (rows %v), D=%d, K=%d, %.2fs\n", r.Sites, r.SiteRows, r.D, r.K, r.Seconds)
	fmt.Fprintf(w, "captured energy q_CE = tr(V^T A V) = %.6g\n", r.QCE)
	for _, b := range r.Baselines {
		fmt.Fprintf(w, "  %-20s q_CE = %.6g\n", b.Method, b.QCE)
	}
	st := r.Stage
	fmt.Fprintf(w, "aggregate noise variance per entry %.4g (pooled target tau_c^2 %.4g, conventional %.4g, gain %.3g)\n", st.Variance, st.TargetVariance, st.ConvVariance, st.Plan.Gain())
	if len(st.Dropped) > 0 {
		fmt.Fprintf(w, "DROP-OUT: sites %v left after the noise was distributed; accuracy fell back towards the conventional scheme\n", st.Dropped)
	}
	fmt.Fprintf(w, "eigenvalues:")
	for _, v := range r.Eigenvalues {
		fmt.Fprintf(w, " %.4g", v)
	}
	fmt.Fprintln(w)
	capePrintTraffic(w, r.Traffic)
	capePrintReport(w, r.Privacy)
}
