package cape

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"
)

// runWithRogue runs honest sites 1..len(honest) and a rogue site
// len(honest)+1 (behaviour given by rogue) over a LocalNetwork and returns
// the aggregator's outcome.
func runWithRogue(t *testing.T, job Job, honest []SiteInput, opts RunOptions, maxRows int, rogue func(ctx context.Context, ep *LocalEndpoint)) (*Outcome, error) {
	t.Helper()
	S := len(honest) + 1
	roles := []Role{RoleAggregator, RoleNoise}
	for s := 1; s <= S; s++ {
		roles = append(roles, SiteRole(s))
	}
	net := NewLocalNetwork(roles...)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	siteErrs := make([]error, S)
	noiseEP := net.Endpoint(RoleNoise)
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer noiseEP.Close()
		_ = (&NoiseGenerator{T: noiseEP, Src: opts.Source(StreamNoise)}).Run(ctx)
	}()
	for s := 1; s < S; s++ {
		ep := net.Endpoint(SiteRole(s))
		site := &Site{ID: s, T: ep, Src: opts.Source(StreamSite(s)), Data: honest[s-1].Data,
			Epsilon: honest[s-1].Epsilon, Delta: honest[s-1].Delta, Closer: ep.Close}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			siteErrs[i] = site.Run(ctx)
		}(s)
	}
	rep := net.Endpoint(SiteRole(S))
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer rep.Close()
		rogue(ctx, rep)
	}()
	agg := &Aggregator{T: net.Endpoint(RoleAggregator), Src: opts.Source(StreamAggregator), Job: job, Sites: S,
		Timeout: 5 * time.Second, MaxRows: maxRows}
	out, err := agg.Run(ctx)
	net.Endpoint(RoleAggregator).Close()
	if err != nil {
		cancel()
	}
	wg.Wait()
	if err == nil {
		for _, e := range siteErrs {
			if e != nil {
				t.Errorf("honest site: %v", e)
			}
		}
	}
	return out, err
}

// TestBadSiteExcluded (issue 14, items 8 and 9): a site whose hello is
// unparsable, declares a row count above the public bound (n = 1e18 took
// almost all the weight), an epsilon of 1e-300 or a delta of 1.5, or whose
// release is malformed, is excluded and reported; the run goes on with the
// honest sites, whose result equals the run without the rogue site.
func TestBadSiteExcluded(t *testing.T) {
	job := Job{Kind: JobMean, D: 4}
	honest := makeSites([]siteCfg{{200, 1, 1e-5, 0}, {300, 1, 1e-5, 0}, {250, 1, 1e-5, 0}}, 4, 9)
	opts := RunOptions{Seeded: true, Seed: 3}
	ref, err := RunLocal(context.Background(), job, honest, opts)
	if err != nil {
		t.Fatal(err)
	}
	hello := func(body string) func(context.Context, *LocalEndpoint) {
		return func(ctx context.Context, ep *LocalEndpoint) {
			_ = ep.Send(ctx, &Message{To: RoleAggregator, Kind: KindHello, Body: json.RawMessage(body)})
		}
	}
	for _, tc := range []struct {
		name, want string
		rogue      func(context.Context, *LocalEndpoint)
	}{
		{"unparsable hello", "unparsable hello", hello(`{"n": "many"}`)},
		{"forged row count", "outside the public bounds", hello(`{"n": 1000000000000000000, "epsilon": 1, "delta": 1e-5}`)},
		{"zero rows", "outside the public bounds", hello(`{"n": 0, "epsilon": 1, "delta": 1e-5}`)},
		{"tiny epsilon", "epsilon", hello(`{"n": 100, "epsilon": 1e-300, "delta": 1e-5}`)},
		{"delta above 1", "delta = 1.5", hello(`{"n": 100, "epsilon": 1, "delta": 1.5}`)},
		{"silent", "no hello", func(context.Context, *LocalEndpoint) {}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := runWithRogue(t, job, honest, opts, 1_000_000, tc.rogue)
			if err != nil {
				t.Fatalf("run aborted: %v", err)
			}
			if len(out.Excluded) != 1 || out.Excluded[0].Site != 4 || !strings.Contains(out.Excluded[0].Reason, tc.want) {
				t.Fatalf("excluded %+v, want site 4 with %q", out.Excluded, tc.want)
			}
			if out.Participated(4) {
				t.Errorf("site 4 reported as participating: %+v", out.Stages[0].Sites)
			}
			got, want := out.Stages[0].Estimate, ref.Outcome.Stages[0].Estimate
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("entry %d: %v with the rogue site excluded, %v without it", i, got[i], want[i])
				}
			}
		})
	}
	// A malformed release after the noise was distributed: dropped like a
	// drop-out and reported; the estimate comes from the honest sites.
	t.Run("malformed release", func(t *testing.T) {
		out, err := runWithRogue(t, job, honest, opts, 0, func(ctx context.Context, ep *LocalEndpoint) {
			_ = sendJSON(ctx, ep, RoleAggregator, KindHello, 0, SiteSpec{N: 100, Epsilon: 1, Delta: 1e-5})
			if _, err := ep.Recv(ctx, RoleAggregator, KindPlan, 0); err != nil {
				return
			}
			_ = ep.Send(ctx, &Message{To: RoleAggregator, Kind: KindRelease, Values: []float64{1e300}})
		})
		if err != nil {
			t.Fatalf("run aborted: %v", err)
		}
		st := out.Stages[0]
		if len(st.Dropped) != 1 || st.Dropped[0] != 4 || len(out.Excluded) != 1 || !strings.Contains(out.Excluded[0].Reason, "released 1 values") {
			t.Fatalf("dropped %v, excluded %+v", st.Dropped, out.Excluded)
		}
		if out.Participated(4) {
			t.Error("site 4 reported as participating")
		}
	})
	// Too few valid sites left: a clear error naming the exclusions.
	t.Run("too few", func(t *testing.T) {
		_, err := runWithRogue(t, job, honest[:1], opts, 0, hello(`{"n": 5, "epsilon": 1, "delta": 2}`))
		if err == nil || !strings.Contains(err.Error(), "site 2 (hello declares delta = 2") {
			t.Fatalf("err = %v", err)
		}
	})
}
