package cape

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// recorded is one HTTP request as seen on the wire.
type recorded struct {
	path   string
	header http.Header
	body   []byte
}

// recorder is an http.RoundTripper that keeps a copy of every request.
type recorder struct {
	mu   sync.Mutex
	reqs []recorded
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	b, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, err
	}
	req.Body.Close()
	r.mu.Lock()
	r.reqs = append(r.reqs, recorded{path: req.URL.Path, header: req.Header.Clone(), body: b})
	r.mu.Unlock()
	req.Body = io.NopCloser(bytes.NewReader(b))
	return http.DefaultTransport.RoundTrip(req)
}

func (r *recorder) sends() []recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []recorded
	for _, q := range r.reqs {
		if q.path == httpPathSend {
			out = append(out, q)
		}
	}
	return out
}

// rejectLog collects OnReject calls.
type rejectLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *rejectLog) add(role Role, reason string) {
	l.mu.Lock()
	l.lines = append(l.lines, string(role)+": "+reason)
	l.mu.Unlock()
}

func (l *rejectLog) find(role Role, substr string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.lines {
		if strings.HasPrefix(s, string(role)+": ") && strings.Contains(s, substr) {
			return true
		}
	}
	return false
}

// replay posts a recorded request unchanged to base and returns the status.
func replay(t *testing.T, base string, q recorded) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+q.path, bytes.NewReader(q.body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = q.header.Clone()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// secRun is one protocol run over loopback HTTP with the given keyrings:
// only the sites in run take part; before they start, inject (if set) is
// called with the aggregator's base URL, and after the aggregator finished
// (before it drains) after is. rec records the requests of the
// site roles it maps.
func secRun(t *testing.T, keys map[Role]*Keyring, job Job, sites []SiteInput, run []int, opts RunOptions,
	rec map[Role]*recorder, log *rejectLog, inject, after func(aggURL string)) *Outcome {
	t.Helper()
	peers := map[Role]string{}
	lns := map[Role]net.Listener{}
	for _, r := range []Role{RoleAggregator, RoleNoise} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns[r], peers[r] = ln, "http://"+ln.Addr().String()
	}
	mk := func(role Role) *HTTPTransport {
		cfg := HTTPConfig{Role: role, Keys: keys[role], Peers: peers, Listener: lns[role], PollWait: time.Second,
			MaxValues: job.MaxValues(), OnReject: log.add}
		if r := rec[role]; r != nil {
			cfg.Client = &http.Client{Transport: r, Timeout: 10 * time.Second}
		}
		tr, err := NewHTTPTransport(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	aggT, noiseT := mk(RoleAggregator), mk(RoleNoise)
	if inject != nil {
		inject(peers[RoleAggregator])
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := (&NoiseGenerator{T: noiseT, Src: opts.Source(StreamNoise)}).Run(ctx); err != nil {
			t.Errorf("noise: %v", err)
		}
		dctx, c := context.WithTimeout(ctx, 3*time.Second)
		defer c()
		noiseT.Drain(dctx)
	}()
	for _, s := range run {
		site := &Site{ID: s, T: mk(SiteRole(s)), Src: opts.Source(StreamSite(s)), Data: sites[s-1].Data, Epsilon: sites[s-1].Epsilon, Delta: sites[s-1].Delta}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := site.Run(ctx); err != nil {
				t.Errorf("site %d: %v", s, err)
			}
		}()
	}
	agg := &Aggregator{T: aggT, Src: opts.Source(StreamAggregator), Job: job, Sites: len(sites), Timeout: 1500 * time.Millisecond}
	out, err := agg.Run(ctx)
	if err == nil && after != nil {
		after(peers[RoleAggregator])
	}
	dctx, c := context.WithTimeout(ctx, 3*time.Second)
	aggT.Drain(dctx)
	c()
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestHTTPReplayFromEarlierRunRejected (issue 14, item 2): site 1's hello
// and release recorded in run 1 are replayed into run 2, which uses the
// same keyrings and in which site 1 does not run at all. Run 2 refuses them
// with a reason naming the role and the replay, excludes site 1 (it was
// reported as participating before the fix) and its estimate equals that
// of a clean run of sites 2 and 3. A request replayed within a run (same
// sequence number) and a second message of the same kind and stage are
// refused too.
func TestHTTPReplayFromEarlierRunRejected(t *testing.T) {
	if testing.Short() {
		t.Skip("loopback HTTP runs skipped under -short")
	}
	keys, err := NewKeyrings(3)
	if err != nil {
		t.Fatal(err)
	}
	job := Job{Kind: JobMean, D: 4}
	sites := makeSites([]siteCfg{{200, 1, 1e-5, 0}, {300, 1, 1e-5, 0}, {250, 1, 1e-5, 0}}, 4, 17)
	opts := RunOptions{Seeded: true, Seed: 5}

	// Run 1: every site, site 1 recorded.
	rec1 := &recorder{}
	var log1 rejectLog
	var old []recorded
	out1 := secRun(t, keys, job, sites, []int{1, 2, 3}, opts, map[Role]*recorder{SiteRole(1): rec1}, &log1, nil, func(url string) {
		old = rec1.sends()
		if len(old) != 2 { // hello and release
			t.Fatalf("recorded %d sends from site 1, want 2", len(old))
		}
		// Within run 1 the same request again: sequence number reused.
		if code := replay(t, url, old[0]); code != http.StatusUnauthorized {
			t.Errorf("replay within the run: status %d, want 401", code)
		}
	})
	if !out1.Participated(1) {
		t.Fatal("run 1: site 1 did not participate")
	}
	if !log1.find(SiteRole(1), "sequence number") {
		t.Errorf("no rejection naming the reused sequence number: %v", log1.lines)
	}

	// Run 2 without site 1, the recorded messages injected first.
	var log2 rejectLog
	out2 := secRun(t, keys, job, sites, []int{2, 3}, opts, nil, &log2, func(url string) {
		for _, q := range old {
			if code := replay(t, url, q); code != http.StatusUnauthorized {
				t.Errorf("replayed %s: status %d, want 401", q.path, code)
			}
		}
	}, nil)
	if !log2.find(SiteRole(1), "replay") || !log2.find(SiteRole(1), "session") {
		t.Errorf("no rejection naming site/1 and the session replay: %v", log2.lines)
	}
	if out2.Participated(1) || !slices.Equal(out2.Stages[0].Sites, []int{2, 3}) {
		t.Fatalf("run 2 reports sites %v (site 1 never ran)", out2.Stages[0].Sites)
	}
	if len(out2.Excluded) != 1 || out2.Excluded[0].Site != 1 {
		t.Errorf("excluded %+v, want site 1", out2.Excluded)
	}
	// The honest sites' result is that of a clean run without site 1.
	var log3 rejectLog
	out3 := secRun(t, keys, job, sites, []int{2, 3}, opts, nil, &log3, nil, nil)
	if fmt.Sprint(out2.Stages[0].Estimate) != fmt.Sprint(out3.Stages[0].Estimate) {
		t.Errorf("estimate with the replay %v, clean run %v", out2.Stages[0].Estimate, out3.Stages[0].Estimate)
	}
}

// countingListener counts the bytes the server reads from its connections.
type countingListener struct {
	net.Listener
	n atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: c, n: &l.n}, nil
}

type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c *countingConn) Read(p []byte) (int, error) {
	k, err := c.Conn.Read(p)
	c.n.Add(int64(k))
	return k, err
}

// authHeaders returns the headers of a correctly authenticated request of
// role to the aggregator with the given body length.
func authHeaders(t *testing.T, keys map[Role]*Keyring, role Role, path, session string, seq uint64, length int64) http.Header {
	t.Helper()
	mk, err := keys[role].macKey(RoleAggregator)
	if err != nil {
		t.Fatal(err)
	}
	h := &reqHeader{path: path, from: string(role), to: string(RoleAggregator), session: session, seq: seq, time: time.Now().UnixMilli(), length: length}
	hd := http.Header{}
	hd.Set(hdrRole, string(role))
	hd.Set(hdrSession, session)
	hd.Set(hdrSeq, strconv.FormatUint(seq, 10))
	hd.Set(hdrTime, strconv.FormatInt(h.time, 10))
	hd.Set(hdrAuth, h.mac(mk))
	return hd
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// TestHTTPFloodRefusedBeforeBody (issue 14, item 3): a 64 MiB POST that
// names a known role but carries no valid header MAC is refused without
// its body being read (the server read up to 256 MiB per request before
// authenticating); an authenticated request whose declared length exceeds
// the limit sized from the job is refused before its body too, and so is a
// request without Content-Length; an oversized message from a real site is
// refused with 413.
func TestHTTPFloodRefusedBeforeBody(t *testing.T) {
	keys, err := NewKeyrings(2)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := &countingListener{Listener: raw}
	var log rejectLog
	job := Job{Kind: JobMean, D: 10}
	aggT, err := NewHTTPTransport(HTTPConfig{Role: RoleAggregator, Keys: keys[RoleAggregator], Listener: ln, Session: "s1",
		MaxValues: job.MaxValues(), OnReject: log.add})
	if err != nil {
		t.Fatal(err)
	}
	defer aggT.Drain(context.Background())
	url := "http://" + raw.Addr().String() + httpPathSend
	post := func(h http.Header, body io.Reader, n int64) int {
		req, err := http.NewRequest(http.MethodPost, url, body)
		if err != nil {
			t.Fatal(err)
		}
		req.Header = h
		req.ContentLength = n
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return -1 // the server may close before the client finished writing
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	const flood = 64 << 20
	for i, tc := range []struct {
		name   string
		header http.Header
		n      int64
		code   int
		reason string
	}{
		{"no MAC", http.Header{hdrRole: {string(SiteRole(1))}}, flood, http.StatusUnauthorized, "header MAC"},
		{"oversized", authHeaders(t, keys, SiteRole(1), httpPathSend, "s1", 10, flood), flood, http.StatusRequestEntityTooLarge, "exceeds the limit"},
		{"chunked", authHeaders(t, keys, SiteRole(1), httpPathSend, "s1", 11, -1), -1, http.StatusLengthRequired, "Content-Length"},
	} {
		before := ln.n.Load()
		code := post(tc.header, io.LimitReader(zeros{}, flood), tc.n)
		if code != tc.code && code != -1 {
			t.Errorf("%s: status %d, want %d", tc.name, code, tc.code)
		}
		if read := ln.n.Load() - before; read > 1<<20 {
			t.Errorf("%s: the server read %d bytes of a refused %d-byte request", tc.name, read, flood)
		}
		if !log.find(SiteRole(1), tc.reason) {
			t.Errorf("case %d %s: no rejection %q: %v", i, tc.name, tc.reason, log.lines)
		}
	}
	// A real site sending more values than the job's largest message.
	site, err := NewHTTPTransport(HTTPConfig{Role: SiteRole(2), Keys: keys[SiteRole(2)], Peers: map[Role]string{RoleAggregator: "http://" + raw.Addr().String()}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	big := make([]float64, 100000) // 200 KB of JSON, above 64 KiB + 32 B x 10 values
	if err := site.Send(ctx, &Message{To: RoleAggregator, Kind: KindRelease, Values: big}); err == nil || !strings.Contains(err.Error(), "exceeds the limit") {
		t.Errorf("oversized release: %v", err)
	}
	if err := site.Send(ctx, &Message{To: RoleAggregator, Kind: KindRelease, Values: big[:10]}); err != nil {
		t.Errorf("release of the job's size: %v", err)
	}
}

// TestHTTPQueueCapAndTimeouts (issue 14, item 3): an authenticated site
// cannot queue more than MaxQueue undelivered messages; a connection that
// trickles its headers, or an authenticated request that trickles its
// body, is closed by the header and read timeouts; the listener serves at
// most MaxConns connections at once.
func TestHTTPQueueCapAndTimeouts(t *testing.T) {
	keys, err := NewKeyrings(2)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var log rejectLog
	aggT, err := NewHTTPTransport(HTTPConfig{Role: RoleAggregator, Keys: keys[RoleAggregator], Listener: ln, Session: "s2",
		MaxQueue: 2, ReadHeaderTimeout: 300 * time.Millisecond, ReadTimeout: 500 * time.Millisecond, PollWait: 200 * time.Millisecond, OnReject: log.add})
	if err != nil {
		t.Fatal(err)
	}
	defer aggT.Drain(context.Background())
	addr := ln.Addr().String()
	site, err := NewHTTPTransport(HTTPConfig{Role: SiteRole(1), Keys: keys[SiteRole(1)], Peers: map[Role]string{RoleAggregator: "http://" + addr}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for st := 0; st < 3; st++ {
		err := site.Send(ctx, &Message{To: RoleAggregator, Kind: KindRelease, Stage: st, Values: []float64{1}})
		if st < 2 && err != nil {
			t.Fatalf("message %d: %v", st, err)
		}
		if st == 2 && (err == nil || !strings.Contains(err.Error(), "queue full")) {
			t.Errorf("third undelivered message: %v, want queue full", err)
		}
	}
	// The same kind and stage again (fresh sequence number): refused as a
	// duplicate, which the sender takes as already delivered.
	if err := site.Send(ctx, &Message{To: RoleAggregator, Kind: KindRelease, Stage: 0, Values: []float64{2}}); err != nil {
		t.Errorf("duplicate: %v", err)
	}
	if !log.find(SiteRole(1), "duplicate release 0") {
		t.Errorf("no rejection of the duplicate: %v", log.lines)
	}
	if m, err := aggT.Recv(ctx, SiteRole(1), KindRelease, 0); err != nil || m.Values[0] != 1 {
		t.Errorf("first message replaced by the duplicate: %v %v", m, err)
	}

	closedWithin := func(c net.Conn, d time.Duration) bool {
		_ = c.SetReadDeadline(time.Now().Add(d))
		_, err := io.Copy(io.Discard, c)
		return err == nil // EOF: the server closed the connection
	}
	// Slow headers.
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: x\r\n", httpPathSend)
	if !closedWithin(c, 3*time.Second) {
		t.Error("connection trickling its headers was not closed by the header timeout")
	}
	c.Close()
	// Slow body from an authenticated peer.
	c, err = net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(c)
	fmt.Fprintf(w, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n", httpPathSend)
	for k, v := range authHeaders(t, keys, SiteRole(1), httpPathSend, "s2", uint64(time.Now().UnixNano())*2, 1000) {
		fmt.Fprintf(w, "%s: %s\r\n", k, v[0])
	}
	fmt.Fprintf(w, "\r\n0123456789")
	w.Flush()
	if !closedWithin(c, 3*time.Second) {
		t.Error("authenticated request trickling its body was not cut by the read timeout")
	}
	c.Close()

	// The connection cap.
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ll := newLimitListener(inner, 2)
	defer ll.Close()
	var conns []net.Conn
	for i := 0; i < 3; i++ {
		d, err := net.Dial("tcp", inner.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
	}
	for i := 0; i < 2; i++ {
		a, err := ll.Accept()
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, a)
	}
	third := make(chan net.Conn, 1)
	go func() {
		if a, err := ll.Accept(); err == nil {
			third <- a
		}
	}()
	select {
	case <-third:
		t.Fatal("a third connection was accepted with a cap of 2")
	case <-time.After(200 * time.Millisecond):
	}
	conns[0].Close()
	select {
	case a := <-third:
		a.Close()
	case <-time.After(3 * time.Second):
		t.Fatal("no connection accepted after one closed")
	}
	conns[1].Close()
}
