package completion

// Resource limits and estimates (issue 24 items 6 and 7).
//
// Settings that size work or memory are checked before anything is
// allocated, so that a bad figure is an error and never a panic
// ("makeslice: len out of range" from the SGD layout at 5,000 threads) or
// the out-of-memory killer (rank 100,000 under Gibbs or ALS, 256 SGD
// threads on an order-3 log): validate refuses Threads above MaxThreads
// and Epochs above MaxEpochs (a *SettingsError), and Train, TrainContext,
// TrainImplicit and StatisticsMode.Fit refuse a run whose memory estimate
// (EstimateTrain, EstimateImplicit) exceeds the machine's physical memory
// (a *ResourceError wrapping ErrTooLarge). dprec's command line checks the
// same estimates against --max-memory before it reads any data
// (cmd/dprec/sizeguard.go).
//
// The estimates count the model, its copies (the best-epoch snapshot, the
// Gibbs averages) and each solver's working space, from the allocations
// of this package: they are upper bounds to within small constants, not
// measurements. Flops is the run's floating-point work to within a small
// factor, for messages ("hours", "weeks"), never for a decision finer
// than that.

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/dprec/dprec/data"
	"github.com/dprec/dprec/decomposition"
)

// MaxThreads is the largest Settings.Threads (and ImplicitSettings.Threads).
// Every worker holds its own working space (SGD: its rows of the p^order
// stratification blocks, which alone need 16 p^(order+1) bytes; minibatch
// DP-SGD: a copy of the gradient; ALS and Gibbs: dense rank x rank
// systems), and no machine this package targets runs more workers than
// this at once.
const MaxThreads = 1024

// MaxEpochs is the largest Settings.Epochs (and ImplicitSettings.Iterations):
// every epoch adds a record to Result.History, and a million epochs is
// beyond any run the defaults (60 SGD epochs, 200 Gibbs sweeps) suggest.
const MaxEpochs = 1_000_000

// ErrTooLarge is wrapped by *ResourceError.
var ErrTooLarge = errors.New("completion: run too large for this machine")

// ResourceError reports a run whose memory estimate exceeds the limit.
type ResourceError struct {
	// Need is the estimate and Limit the limit, in bytes.
	Need, Limit float64
	// What names the largest part of the estimate.
	What string
}

func (e *ResourceError) Error() string {
	return fmt.Sprintf("completion: the run needs about %s of memory (mostly %s), more than the %s of this machine",
		formatBytes(e.Need), e.What, formatBytes(e.Limit))
}

// Unwrap returns ErrTooLarge.
func (e *ResourceError) Unwrap() error { return ErrTooLarge }

// formatBytes writes a byte count that may exceed int64 (data.FormatBytes
// below 2^62 bytes).
func formatBytes(b float64) string {
	if b >= 1<<62 {
		return fmt.Sprintf("%.3g EiB", b/(1<<60))
	}
	return data.FormatBytes(int64(b))
}

// Workload describes a training run for EstimateTrain without its data.
type Workload struct {
	// Kind, Dims (one size per mode), Ranks and Bias are the model's shape.
	Kind  decomposition.Kind
	Dims  []int
	Ranks []int
	Bias  bool
	// NNZ is the number of training ratings.
	NNZ int
	// Settings are the training settings (defaults filled in as Train
	// fills them; Settings.Privacy is not read: see Mode).
	Settings Settings
	// Mode is the privacy mode as the command line names it: "" or "none",
	// "bias", "als" (the statistics modes, which run no SGD), "input" (by
	// default the non-private default solver), "gradient", "output" (SGD
	// plug-ins). MinibatchDPSGD says the gradient
	// mode runs minibatch DP-SGD (--protect all --dp-sgd minibatch, the
	// default), whose loop holds a gradient copy per worker instead of the
	// SGD layout.
	Mode           string
	MinibatchDPSGD bool
}

// Estimate is the estimated cost of a run.
type Estimate struct {
	// Bytes is the peak memory: the model, its copies and the solver's
	// working space (not the rating stores, which the caller holds).
	Bytes float64
	// What names the largest part of Bytes.
	What string
	// Flops is the floating-point work of the whole run (rough).
	Flops float64

	largest float64 // the bytes of What
}

func (e *Estimate) add(bytes float64, what string) {
	if what != "" && (e.What == "" || bytes > e.largest) {
		e.What, e.largest = what, bytes
	}
	e.Bytes += bytes
}

// EstimateTrain estimates the memory and work of training w (Train, or
// StatisticsMode.Fit for the bias and als modes).
func EstimateTrain(w Workload) Estimate {
	var e Estimate
	order := len(w.Dims)
	if order == 0 || len(w.Ranks) == 0 {
		return e
	}
	ranks := w.Ranks
	if len(ranks) == 1 && order > 1 {
		ranks = slices.Repeat(ranks, order)
	}
	s := w.Settings
	s.Privacy = nil
	if w.Mode != "" && w.Mode != "none" && w.Mode != "input" && s.Solver == SolverDefault {
		s.Solver = SolverSGD // input trains by the non-private default
	}
	core := 0.0
	if w.Kind == decomposition.Tucker {
		core = 1
		for _, r := range ranks {
			core *= float64(r)
		}
		if s.Solver == SolverDefault && core > MaxGibbsCore {
			s.Solver = SolverALS
		}
	}
	r := s.resolvedFor(w.Kind)
	p := float64(max(1, r.Threads))
	n := float64(w.NNZ)
	rows, model, rmax := 0.0, core, 0.0
	for mo, d := range w.Dims {
		rk := float64(ranks[min(mo, len(ranks)-1)])
		rows += float64(d)
		model += float64(d) * rk
		rmax = max(rmax, rk)
	}
	if w.Bias {
		model += rows
	}
	e.add(8*model, "the model")
	epochs := float64(r.Epochs)
	switch {
	case w.Mode == "bias":
		e.add(24*n, "")
		e.Flops = 20 * n
	case w.Mode == "als":
		// Private ALS: every item's Gram and right-hand side (R(R+1)/2 + R
		// entries), the residuals and the users' rating lists.
		items := float64(w.Dims[min(1, order-1)])
		e.add(8*items*(rmax*(rmax+1)/2+rmax)+16*rmax*rmax, fmt.Sprintf("the per-item rank-%d statistics of private ALS", int(rmax)))
		e.add(24*n, "")
		e.Flops = ALSPrivateSteps * (n*rmax*rmax + items*rmax*rmax*rmax/3)
		if rmax > ALSFreeColumns && items <= ALSUserPositionsMaxItems {
			// The user unit's co-occurrence matrix, packed, and its
			// eigenvectors (userPositionColumns), when its fallback runs;
			// it reads the log before the contribution bound (a restricted
			// copy of it after a private item selection), at most
			// ALSUserPositionsMaxPerUser items a user: sum_u n_u^2/2 <=
			// n ALSUserPositionsMaxPerUser/2 additions.
			e.add(8*items*(items+1)/2+8*3*items*(rmax+1)+16*n, "the user unit's item co-occurrence matrix")
			e.Flops += (alsUserPositionsIters+1)*items*items*(rmax+1) + n*ALSUserPositionsMaxPerUser/2
		}
		// The entry unit's residual route (private_als_input.go): the
		// noisy residuals and ALS on them as a user x item matrix
		// (DefaultALSSweeps sweeps, SolverALS's working space).
		users := float64(w.Dims[0])
		e.add(8*n+2*n*(4*2+8+8)+8*n, "")
		d := rmax + 1
		e.Flops += DefaultALSSweeps * (2*n*d*d + (users+items)*d*d*d/3)
	case r.Solver == SolverSGD && w.Mode == "gradient" && w.MinibatchDPSGD:
		// Minibatch DP-SGD: a gradient buffer per worker (at most the
		// model) and a Tucker work core each, the batch and the values.
		e.add(8*p*model, fmt.Sprintf("a gradient copy for each of %d threads", int(p)))
		e.add(16*p*core, coreText(core, "2 per thread"))
		e.add(16*n, "")
		// The selection of the released model (private_dpsgd_select.go):
		// the scored-rating mask, the users' rating lists and two
		// candidate copies of the model.
		e.add(9*n+16*model, "")
		// Per step (1/q a epoch at the default rate): the batch's
		// gradients, the noise and the workers' buffers added up.
		e.Flops = epochs * (n*sgdEntryFlops(w.Kind, order, rmax, core) + (p+1)*model/DefaultDPSGDRate)
	case r.Solver == SolverSGD:
		lb, blocks := layoutBytes(order, w.NNZ, int(p))
		e.add(lb, fmt.Sprintf("the SGD stratification of %d threads (%d^%d = %.3g blocks)", int(p), int(p), order, blocks))
		e.add(16*p*core, coreText(core, "2 per thread"))
		e.add(32*p*rmax*float64(order), "")
		e.add(8*model, "") // the best-epoch snapshot
		e.Flops = epochs * (n*sgdEntryFlops(w.Kind, order, rmax, core) + 50*blocks)
	default: // ALS and Gibbs
		e.add(8*p*(2*(rmax+1)*(rmax+1)+20*(rmax+1)), fmt.Sprintf("the rank-%d normal equations of each of %d threads", int(rmax), int(p)))
		e.add(float64(order)*n*(4*float64(order)+8+8)+8*n, "")
		e.add(8*model, "") // the best-sweep snapshot (ALS) or the averages (Gibbs)
		sweep := 0.0
		for mo, d := range w.Dims {
			rk := float64(ranks[min(mo, len(ranks)-1)]) + 1
			sweep += n*rk*rk + float64(d)*rk*rk*rk/3
		}
		if core > 0 {
			sweep += 2 * n * core
			e.add(8*core*(5+3*p), coreText(core, "3 per thread and 5 for the core step"))
		}
		if r.Solver == SolverGibbs {
			d := rmax + 1
			e.add(8*6*d*d, "")
			if core > 0 {
				// The core sampler: a dense core x core system per worker.
				H := core / float64(slices.Min(ranks))
				e.add(8*p*(core*core+8*H*H+17*H), fmt.Sprintf("the Gibbs core systems (%.0f x %.0f) of each of %d threads", core, core, int(p)))
				sweep += n*H*H/2 + core*core*core/3
			}
		}
		e.Flops = epochs * sweep
	}
	return e
}

// coreText names the Tucker core's copies in an estimate ("" without a
// core).
func coreText(core float64, copies string) string {
	if core == 0 {
		return ""
	}
	return fmt.Sprintf("the Tucker core of %.3g entries and its copies (%s)", core, copies)
}

// sgdEntryFlops is the work of one SGD or DP-SGD entry update.
func sgdEntryFlops(kind decomposition.Kind, order int, r, core float64) float64 {
	if kind == decomposition.Tucker {
		return 4 * core * float64(order)
	}
	return 4 * r * float64(order)
}

// layoutBytes estimates the SGD trainer's working space for n
// observations of an order-`order` store on p workers, from newLayout and
// newTrainer: the packed coordinates and values (16 bytes each, plus the
// values' copy), per worker a count and a next position for each of the
// keys = p^order S sub-buckets, the key starts, the sub-bucket and block
// seeds, the block starts and the strata. It also returns the number of
// blocks p^order, which every epoch visits.
func layoutBytes(order, n, p int) (bytes, blocks float64) {
	P := float64(p)
	nb := math.Pow(P, float64(order))
	S := math.Max(1, math.Floor(float64(n)/(nb*float64(subBucketLen))))
	keys := nb * S
	return 24*float64(n) + 8*keys*(2*P+1) + 16*keys + 8*nb + 16*nb + 8*nb + 24*nb/P, nb
}

// EstimateImplicit estimates TrainImplicit's memory on a users x items
// log of nnz events with rank r and s.
func EstimateImplicit(users, items, nnz, r int, s *ImplicitSettings) Estimate {
	var e Estimate
	rs := s.resolved()
	R, p := float64(r), float64(max(1, rs.Threads))
	e.add(8*R*float64(users+items), "the model")
	e.add(8*p*(3*R*R+64*R), fmt.Sprintf("the rank-%d normal equations of each of %d threads", r, int(p)))
	e.add(8*R*R*2+24*float64(nnz), "")
	e.Flops = float64(rs.Iterations) * (float64(nnz)*R*R + float64(users+items)*(R*R*R/3+R*R))
	return e
}

// memoryLimit is the memory a run may use: the machine's physical memory,
// or 2^46 bytes where it cannot be read (a ceiling against sizes no
// allocation can satisfy).
func memoryLimit() float64 {
	if m := data.PhysicalMemory(); m > 0 {
		return float64(m)
	}
	return 1 << 46
}

// checkEstimate refuses e when it exceeds the machine's memory.
func checkEstimate(e Estimate) error {
	if lim := memoryLimit(); e.Bytes > lim {
		return &ResourceError{Need: e.Bytes, Limit: lim, What: e.What}
	}
	return nil
}

// workloadOf describes the run of Train (resolved settings cfg) on train
// for m.
func workloadOf(train *data.Store, m *decomposition.Model, cfg *Settings) Workload {
	w := Workload{Kind: m.Kind, Dims: m.Dims, Ranks: m.Ranks, Bias: m.HasBias, NNZ: train.NNZ(), Settings: *cfg}
	switch p := cfg.Privacy.(type) {
	case *StatisticsMode:
		w.Mode = p.mode
	case *GradientPerturbation:
		w.Mode = "gradient"
		w.MinibatchDPSGD = p.o.Protect != ProtectC && p.o.DPSGD == DPSGDMinibatch
	case NoPrivacy, nil:
	default:
		w.Mode = "sgd"
	}
	return w
}
