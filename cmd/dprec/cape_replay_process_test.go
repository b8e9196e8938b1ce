package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestCapeProcessesReplayAndBadSite (issue 14, items 2, 7, 8/9) with real
// processes on 127.0.0.1, three runs of capePCA over three sites with the
// same keyrings and seed:
//
//  1. every site, site 1's requests recorded by a proxy;
//  2. site 1 not running, its recorded hello and release from run 1
//     replayed to the aggregator before the other sites start;
//  3. site 1 running but declaring delta = 1.5.
//
// Run 2 must reject the replays with a log line naming site/1 and the
// reason, and must not report site 1 as participating (before the fix it
// printed "sites [1 2 3]"); run 3 must exclude site 1 instead of aborting.
// Both runs then combine sites 2 and 3 alone, so their results must be
// equal. The keyrings must have mode 0600.
func TestCapeProcessesReplayAndBadSite(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and starts processes; skipped under -short")
	}
	dir, run := capeProcessEnv(t, 3)
	for _, r := range []string{"aggregator", "noise", "site-1", "site-2", "site-3"} {
		st, err := os.Stat(filepath.Join(dir, "keys", r+".json"))
		if err != nil {
			t.Fatal(err)
		}
		if m := st.Mode().Perm(); m != 0o600 {
			t.Errorf("keyring %s has mode %04o, want 0600", r, m)
		}
	}
	for s := 1; s <= 3; s++ {
		var b strings.Builder
		b.WriteString("x,y,z\n")
		for i := 0; i < 40; i++ {
			fmt.Fprintf(&b, "%g,%g,%g\n", 0.3*float64((i*s)%7)/7, 0.5*float64((i+s)%5)/5, 0.1*float64(s))
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("s%d.csv", s)), []byte(b.String()), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	type result struct {
		Stages []struct {
			Sites []int
		}
		Excluded []struct {
			Site   int
			Reason string
		}
		Eigenvalues []float64
	}
	// oneRun starts the aggregator and the noise generator, calls inject
	// with the aggregator's address, then starts the given sites (site 1
	// through proxy if set) and returns the aggregator's result and stderr.
	oneRun := func(sites []int, site1Args []string, proxy func(target string) string, inject func(agg string)) (result, string) {
		agg, noise := capeFreePort(t), capeFreePort(t)
		var aout, aerr bytes.Buffer
		a := run("--seed", "3", "cape", "aggregate", "--keys", "keys/aggregator.json", "--listen", agg, "--sites", "3",
			"--dim", "3", "--k", "2", "--timeout", "12s", "--deadline", "60s", "--json") // 12 s: a loaded CI machine starts processes slowly
		a.Stdout, a.Stderr = &aout, &aerr
		if err := a.Start(); err != nil {
			t.Fatal(err)
		}
		if inject != nil {
			inject(agg)
		}
		procs := []*exec.Cmd{run("--seed", "3", "cape", "noise", "--keys", "keys/noise.json", "--listen", noise, "--aggregator", "http://"+agg, "--deadline", "30s")}
		for _, s := range sites {
			aggURL := "http://" + agg
			args := []string{"--epsilon", "1", "--delta", "1e-5"}
			if s == 1 {
				if proxy != nil {
					aggURL = proxy(aggURL)
				}
				if site1Args != nil {
					args = site1Args
				}
			}
			procs = append(procs, run(append([]string{"--seed", "3", "cape", "site", "--id", fmt.Sprint(s), "--keys", fmt.Sprintf("keys/site-%d.json", s),
				"--aggregator", aggURL, "--noise", "http://" + noise, "--data", fmt.Sprintf("s%d.csv", s), "--deadline", "30s"}, args...)...))
		}
		for _, c := range procs {
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
		}
		if err := a.Wait(); err != nil {
			t.Fatalf("aggregator: %v\n%s", err, aerr.String())
		}
		for _, c := range procs {
			done := make(chan struct{})
			go func() {
				_ = c.Wait()
				close(done)
			}()
			select {
			case <-done:
			case <-time.After(45 * time.Second):
				_ = c.Process.Kill()
				<-done
			}
		}
		var res result
		if err := json.Unmarshal(aout.Bytes(), &res); err != nil {
			t.Fatalf("aggregator output: %v\n%s", err, aout.String())
		}
		return res, aerr.String()
	}

	// Run 1, site 1 behind a recording proxy.
	type rec struct {
		header http.Header
		body   []byte
	}
	var mu sync.Mutex
	var sends []rec
	var proxySrv *http.Server
	proxy := func(target string) string {
		u, err := url.Parse(target)
		if err != nil {
			t.Fatal(err)
		}
		rp := httputil.NewSingleHostReverseProxy(u)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		proxySrv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// While the aggregator is not listening yet, look as
			// unreachable as it does (a dropped connection, which the
			// site retries), not like a server answering 502, which it
			// does not; and record nothing.
			up, err := net.DialTimeout("tcp", u.Host, time.Second)
			if err != nil {
				if hj, ok := w.(http.Hijacker); ok {
					if conn, _, err := hj.Hijack(); err == nil {
						conn.Close()
						return
					}
				}
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			up.Close()
			b, _ := io.ReadAll(r.Body)
			if r.URL.Path == "/cape/v1/send" {
				mu.Lock()
				sends = append(sends, rec{r.Header.Clone(), b})
				mu.Unlock()
			}
			r.Body = io.NopCloser(bytes.NewReader(b))
			rp.ServeHTTP(w, r)
		}), ReadHeaderTimeout: 5 * time.Second}
		go proxySrv.Serve(ln)
		return "http://" + ln.Addr().String()
	}
	res1, _ := oneRun([]int{1, 2, 3}, nil, proxy, nil)
	proxySrv.Close()
	if len(res1.Stages) != 1 || !slices.Equal(res1.Stages[0].Sites, []int{1, 2, 3}) {
		t.Fatalf("run 1 sites: %+v", res1.Stages)
	}
	if len(sends) != 2 {
		t.Fatalf("recorded %d sends of site 1, want hello and release", len(sends))
	}

	// Run 2: site 1 absent, its run-1 messages replayed first.
	res2, stderr2 := oneRun([]int{2, 3}, nil, nil, func(agg string) {
		for _, q := range sends {
			deadline := time.Now().Add(10 * time.Second)
			for {
				req, _ := http.NewRequest(http.MethodPost, "http://"+agg+"/cape/v1/send", bytes.NewReader(q.body))
				req.Header = q.header.Clone()
				resp, err := http.DefaultClient.Do(req)
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusUnauthorized {
						t.Errorf("replayed request: status %d, want 401", resp.StatusCode)
					}
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("aggregator not reachable: %v", err)
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
	})
	if !strings.Contains(stderr2, `rejected request claiming role "site/1": replay`) || !strings.Contains(stderr2, "session") {
		t.Errorf("run 2: no log line naming site/1 and the replay:\n%s", stderr2)
	}
	if len(res2.Stages) != 1 || !slices.Equal(res2.Stages[0].Sites, []int{2, 3}) {
		t.Fatalf("run 2 reports sites %+v; site 1 never ran", res2.Stages)
	}
	if len(res2.Excluded) != 1 || res2.Excluded[0].Site != 1 || !strings.Contains(res2.Excluded[0].Reason, "no hello") {
		t.Errorf("run 2 excluded %+v", res2.Excluded)
	}

	// Run 3: site 1 declares epsilon = 1e-300, which its own flag checks
	// accept (positive) but no calibration can serve (a site declaring
	// delta = 1.5 is refused by its own command line before it says hello).
	res3, stderr3 := oneRun([]int{1, 2, 3}, []string{"--epsilon", "1e-300", "--delta", "1e-5"}, nil, nil)
	if len(res3.Excluded) != 1 || res3.Excluded[0].Site != 1 || !strings.Contains(res3.Excluded[0].Reason, "1e-300") {
		t.Errorf("run 3 excluded %+v\n%s", res3.Excluded, stderr3)
	}
	if !strings.Contains(stderr3, "excluded site/1") {
		t.Errorf("run 3: exclusion not reported on stderr:\n%s", stderr3)
	}
	if fmt.Sprint(res2.Eigenvalues) != fmt.Sprint(res3.Eigenvalues) || len(res2.Eigenvalues) == 0 {
		t.Errorf("honest sites' result changed: run 2 %v, run 3 %v", res2.Eigenvalues, res3.Eigenvalues)
	}
}
