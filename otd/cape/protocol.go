package cape

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/dprec/dprec/perturb"
)

// SiteInput is one site of an in-process run.
type SiteInput struct {
	Data           *SiteData
	Epsilon, Delta float64
	// DropStage > 0 makes the site drop out in stage DropStage-1 after it
	// received its noise (drop-out simulation); 0 never.
	DropStage int
}

// RunOptions configures a run.
type RunOptions struct {
	// Seeded makes every role draw from perturb.StreamSource(Seed, stream)
	// (stream 1: noise generator, 2: aggregator, 100+s: site s): the run
	// is reproducible and NOT private. Otherwise every role uses
	// perturb.SecureSource().
	Seeded bool
	Seed   uint64
	// Timeout bounds each wait of the aggregator for a site (0: none
	// beyond the context).
	Timeout time.Duration
}

// Stream ids of the roles' seeded sources; the multi-process mode uses the
// same ids, so equal seeds give equal results.
const (
	StreamNoise      = 1
	StreamAggregator = 2
	streamSiteBase   = 100
)

// StreamSite returns the stream id of site s (1-based).
func StreamSite(s int) uint64 { return streamSiteBase + uint64(s) }

// Source returns the rand.Source of the role with the given stream id.
func (o RunOptions) Source(stream uint64) rand.Source {
	if o.Seeded {
		return perturb.StreamSource(o.Seed, stream)
	}
	return perturb.SecureSource()
}

// Run is the result of an in-process protocol run.
type Run struct {
	Outcome *Outcome
	// Traffic per role ("aggregator", "noise", "site/1", ...).
	Traffic map[Role]Traffic
	// Randomness is perturb.RandomnessLabel of the run.
	Randomness string
}

// RunLocal runs the protocol for job with the roles as goroutines over a
// LocalNetwork and returns the aggregator's outcome and the traffic. It
// returns the joined errors of every role that failed (a simulated
// drop-out is not a failure).
func RunLocal(ctx context.Context, job Job, sites []SiteInput, opts RunOptions) (*Run, error) {
	return runLocal(ctx, job, sites, opts, nil)
}

func runLocal(ctx context.Context, job Job, sites []SiteInput, opts RunOptions, tap func(*Message)) (*Run, error) {
	if err := job.Validate(); err != nil {
		return nil, err
	}
	S := len(sites)
	if S < 2 || S > MaxSites {
		return nil, fmt.Errorf("cape: %d sites, want 2..%d", S, MaxSites)
	}
	roles := []Role{RoleAggregator, RoleNoise}
	for s := 1; s <= S; s++ {
		roles = append(roles, SiteRole(s))
	}
	net := NewLocalNetwork(roles...)
	net.tap = tap
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	var wg sync.WaitGroup
	errs := make([]error, S+2)
	noiseEP := net.Endpoint(RoleNoise)
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer noiseEP.Close()
		errs[0] = (&NoiseGenerator{T: noiseEP, Src: opts.Source(StreamNoise)}).Run(ctx)
	}()
	for s := 1; s <= S; s++ {
		ep := net.Endpoint(SiteRole(s))
		in := sites[s-1]
		site := &Site{ID: s, T: ep, Src: opts.Source(StreamSite(s)), Data: in.Data,
			Epsilon: in.Epsilon, Delta: in.Delta, DropStage: in.DropStage, Closer: ep.Close}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			errs[i] = site.Run(ctx)
		}(s + 1)
	}
	aggEP := net.Endpoint(RoleAggregator)
	agg := &Aggregator{T: aggEP, Src: opts.Source(StreamAggregator), Job: job, Sites: S, Timeout: opts.Timeout}
	out, aerr := agg.Run(ctx)
	aggEP.Close()
	if aerr != nil {
		cancel() // release roles still waiting
	}
	wg.Wait()
	var all []error
	if aerr != nil {
		all = append(all, aerr)
	}
	for _, e := range errs {
		if e != nil && !(aerr != nil && errors.Is(e, context.Canceled)) {
			all = append(all, e)
		}
	}
	if err := errors.Join(all...); err != nil {
		return nil, err
	}
	return &Run{Outcome: out, Traffic: net.Traffic(), Randomness: perturb.RandomnessLabel(opts.Seeded)}, nil
}
