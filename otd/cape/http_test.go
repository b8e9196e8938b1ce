package cape

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"gonum.org/v1/gonum/mat"
)

type httpRig struct {
	keys  map[Role]*Keyring
	peers map[Role]string
	lns   map[Role]net.Listener
}

func newHTTPRig(t *testing.T, S int) *httpRig {
	t.Helper()
	keys, err := NewKeyrings(S)
	if err != nil {
		t.Fatal(err)
	}
	rig := &httpRig{keys: keys, peers: map[Role]string{}, lns: map[Role]net.Listener{}}
	for _, r := range []Role{RoleAggregator, RoleNoise} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		rig.lns[r] = ln
		rig.peers[r] = "http://" + ln.Addr().String()
	}
	return rig
}

func (rig *httpRig) transport(t *testing.T, role Role) *HTTPTransport {
	t.Helper()
	tr, err := NewHTTPTransport(HTTPConfig{Role: role, Keys: rig.keys[role], Peers: rig.peers, Listener: rig.lns[role], PollWait: time.Second,
		OnReject: func(r Role, reason string) { t.Logf("%s rejected %s: %s", role, r, reason) }})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// runHTTP runs every role over HTTP on loopback listeners, each role with
// its own transport, as separate processes would.
func runHTTP(t *testing.T, job Job, sites []SiteInput, opts RunOptions, timeout time.Duration) (*Outcome, error) {
	S := len(sites)
	rig := newHTTPRig(t, S)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	aggT := rig.transport(t, RoleAggregator)
	noiseT := rig.transport(t, RoleNoise)
	var wg sync.WaitGroup
	errs := make([]error, S+1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		errs[0] = (&NoiseGenerator{T: noiseT, Src: opts.Source(StreamNoise)}).Run(ctx)
		dctx, c := context.WithTimeout(ctx, 3*time.Second)
		defer c()
		noiseT.Drain(dctx)
	}()
	for s := 1; s <= S; s++ {
		tr := rig.transport(t, SiteRole(s))
		site := &Site{ID: s, T: tr, Src: opts.Source(StreamSite(s)), Data: sites[s-1].Data, Epsilon: sites[s-1].Epsilon, Delta: sites[s-1].Delta, DropStage: sites[s-1].DropStage}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			errs[i] = site.Run(ctx)
		}(s)
	}
	agg := &Aggregator{T: aggT, Src: opts.Source(StreamAggregator), Job: job, Sites: S, Timeout: timeout}
	out, err := agg.Run(ctx)
	dctx, c := context.WithTimeout(ctx, 3*time.Second)
	aggT.Drain(dctx)
	c()
	wg.Wait()
	if err != nil {
		return nil, err
	}
	return out, errors.Join(errs...)
}

func TestHTTPMatchesInProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("loopback HTTP run skipped under -short")
	}
	sites, _, s2 := mogSites(t, 3, 400, 6, 2, 1, 1e-2, 21)
	for _, job := range []Job{
		{Kind: JobPCA, D: 6, K: 2},
		{Kind: JobAGN, D: 6, K: 2, Model: ModelMOG, Sigma2: s2},
	} {
		opts := RunOptions{Seeded: true, Seed: 77}
		local, err := RunLocal(context.Background(), job, sites, opts)
		if err != nil {
			t.Fatal(err)
		}
		remote, err := runHTTP(t, job, sites, opts, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		for st := range local.Outcome.Stages {
			a, b := local.Outcome.Stages[st].Estimate, remote.Stages[st].Estimate
			for i := range a {
				if a[i] != b[i] {
					t.Fatalf("%s stage %d entry %d: in-process %v, HTTP %v", job.Kind, st, i, a[i], b[i])
				}
			}
		}
		if job.Kind == JobAGN && !mat.Equal(local.Outcome.W, remote.W) {
			t.Errorf("whitening matrices differ")
		}
	}
}

func TestHTTPDropOut(t *testing.T) {
	if testing.Short() {
		t.Skip("loopback HTTP run skipped under -short")
	}
	sites := makeSites([]siteCfg{{100, 1, 1e-3, 0}, {100, 1, 1e-3, 1}, {100, 1, 1e-3, 0}}, 5, 3)
	out, err := runHTTP(t, Job{Kind: JobMean, D: 5}, sites, RunOptions{Seeded: true, Seed: 1}, 1500*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if d := out.Stages[0].Dropped; len(d) != 1 || d[0] != 2 {
		t.Fatalf("dropped %v, want [2]", d)
	}
}

// TestHTTPAuthentication: a site presenting another site's role with its
// own key is refused, so it cannot fetch that site's noise; an unknown
// role is refused too.
func TestHTTPAuthentication(t *testing.T) {
	rig := newHTTPRig(t, 2)
	aggT := rig.transport(t, RoleAggregator)
	defer aggT.Drain(context.Background())
	noiseT := rig.transport(t, RoleNoise)
	defer func() {
		dctx, c := context.WithTimeout(context.Background(), time.Second)
		defer c()
		noiseT.Drain(dctx)
	}()
	ctx := context.Background()
	if _, err := noiseT.ensureSession(ctx); err != nil {
		t.Fatal(err)
	}
	_ = noiseT.Send(ctx, &Message{To: SiteRole(1), Kind: KindE, Values: []float64{42}})
	// Site 2 claims to be site 1 but only holds site 2's keys.
	forged := &Keyring{Role: SiteRole(1), Keys: rig.keys[SiteRole(2)].Keys}
	ft, err := NewHTTPTransport(HTTPConfig{Role: SiteRole(1), Keys: forged, Peers: rig.peers})
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if _, err := ft.Recv(cctx, RoleNoise, KindE, 0); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("forged role: err = %v, want refusal", err)
	}
	// Site 2 under its own name gets nothing addressed to site 1.
	own := rig.transport(t, SiteRole(2))
	sctx, c2 := context.WithTimeout(ctx, 1500*time.Millisecond)
	defer c2()
	if m, err := own.Recv(sctx, RoleNoise, KindE, 0); err == nil {
		t.Fatalf("site 2 received %v", m.Values)
	}
	// The rightful owner gets it.
	s1 := rig.transport(t, SiteRole(1))
	m, err := s1.Recv(cctx, RoleNoise, KindE, 0)
	if err != nil || len(m.Values) != 1 || m.Values[0] != 42 {
		t.Fatalf("site 1: %v %v", m, err)
	}
}
