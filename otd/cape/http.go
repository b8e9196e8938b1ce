package cape

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
)

// Multi-process transport. The aggregator and the noise generator run
// HTTP servers; sites are clients. A role with a server keeps the messages
// it sends in an outbox from which each recipient pulls its own (POST
// /cape/v1/recv, long-polled); a site pushes its messages to the
// recipient's inbox (POST /cape/v1/send). Every request and response body
// is sealed with AES-256-GCM under the pairwise key of the two roles
// (Keyring), so both ends authenticate each other, payloads (noise!) are
// confidential on the wire, and a response is bound to its request's
// nonce. The server only hands out messages addressed to the
// authenticated requester: a site cannot fetch another site's e_s or f_s.
// Requests carry a timestamp; the server refuses those more than
// maxClockSkew away from its clock (replay window).

const (
	httpPathSend = "/cape/v1/send"
	httpPathRecv = "/cape/v1/recv"
	// maxClockSkew bounds the age of an accepted request (replay window).
	maxClockSkew = 5 * time.Minute
	// maxBody caps a request or response body (a D = 200 tensor stage is
	// about 1.4 M values, 30 MB of JSON): 256 MiB.
	maxBody = 256 << 20
)

// isServerRole reports whether role runs an HTTP server.
func isServerRole(role string) bool { return role == RoleAggregator || role == RoleNoise }

// Keyring holds one role's pairwise keys: Keys[peer] is the 32-byte key
// this role shares with peer.
type Keyring struct {
	Role string            `json:"role"`
	Keys map[string]string `json:"keys"` // hex
}

// NewKeyrings derives pairwise keys for an aggregator, a noise generator
// and S sites from a fresh 32-byte master secret (crypto/rand): the key of
// roles a < b is HMAC-SHA256(master, a "|" b). Each returned keyring holds
// only the keys of its own pairs (sites: aggregator and noise; noise:
// aggregator and every site; aggregator: noise and every site).
func NewKeyrings(sites int) (map[string]*Keyring, error) {
	if sites < 2 || sites > MaxSites {
		return nil, fmt.Errorf("cape: %d sites, want 2..%d", sites, MaxSites)
	}
	master := make([]byte, 32)
	if _, err := rand.Read(master); err != nil {
		return nil, err
	}
	roles := []string{RoleAggregator, RoleNoise}
	for s := 1; s <= sites; s++ {
		roles = append(roles, SiteRole(s))
	}
	out := map[string]*Keyring{}
	for _, r := range roles {
		out[r] = &Keyring{Role: r, Keys: map[string]string{}}
	}
	for _, a := range roles {
		for _, b := range roles {
			if a >= b || (!isServerRole(a) && !isServerRole(b)) {
				continue // sites never talk to each other
			}
			m := hmac.New(sha256.New, master)
			m.Write([]byte(a + "|" + b))
			k := hex.EncodeToString(m.Sum(nil))
			out[a].Keys[b] = k
			out[b].Keys[a] = k
		}
	}
	return out, nil
}

// LoadKeyring reads a keyring file written by SaveKeyring. It refuses a
// file that group or others may access (mode wider than 0600).
func LoadKeyring(path string) (*Keyring, error) {
	if err := checkKeyringMode(path); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var k Keyring
	if err := json.Unmarshal(b, &k); err != nil {
		return nil, fmt.Errorf("%s: not a cape keyring: %w", path, err)
	}
	if k.Role == "" || len(k.Keys) == 0 {
		return nil, fmt.Errorf("%s: keyring has no role or no keys", path)
	}
	for peer, h := range k.Keys {
		if b, err := hex.DecodeString(h); err != nil || len(b) != 32 {
			return nil, fmt.Errorf("%s: key for %s is not 32 hex-encoded bytes", path, peer)
		}
	}
	return &k, nil
}

func (k *Keyring) aead(peer string) (cipher.AEAD, error) {
	h, ok := k.Keys[peer]
	if !ok {
		return nil, fmt.Errorf("cape: %s has no key for %s", k.Role, peer)
	}
	key, err := hex.DecodeString(h)
	if err != nil || len(key) != 32 {
		return nil, fmt.Errorf("cape: bad key for %s", peer)
	}
	blk, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(blk)
}

func seal(a cipher.AEAD, plain, aad []byte) []byte {
	nonce := make([]byte, a.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		panic("cape: crypto/rand failed: " + err.Error())
	}
	return a.Seal(nonce, nonce, plain, aad)
}

func open(a cipher.AEAD, box, aad []byte) ([]byte, error) {
	n := a.NonceSize()
	if len(box) < n {
		return nil, errors.New("sealed body too short")
	}
	return a.Open(nil, box[:n], box[n:], aad)
}

func reqAAD(path, from, to string) []byte {
	return []byte("cape/v1 req|" + path + "|" + from + "|" + to)
}
func respAAD(path, from, to string, reqNonce []byte) []byte {
	return append([]byte("cape/v1 resp|"+path+"|"+from+"|"+to+"|"), reqNonce...)
}

// envelope is the sealed plaintext of a request.
type envelope struct {
	Time  int64    `json:"time"` // unix milliseconds
	Msg   *Message `json:"msg,omitempty"`
	Kind  string   `json:"kind,omitempty"`
	Stage int      `json:"stage,omitempty"`
}

// HTTPConfig configures an HTTPTransport.
type HTTPConfig struct {
	Role string
	Keys *Keyring
	// Peers maps the server roles this role contacts to base URLs
	// ("http://127.0.0.1:7000").
	Peers map[string]string
	// Listener is the server's socket (aggregator and noise generator);
	// nil for sites.
	Listener net.Listener
	// PollWait is how long a server holds a recv request open (default 5 s).
	PollWait time.Duration
	// Client is the HTTP client (default: 30 s timeout).
	Client *http.Client
}

// HTTPTransport is a Transport over HTTP between processes.
type HTTPTransport struct {
	cfg    HTTPConfig
	srv    *http.Server
	mu     sync.Mutex
	inbox  []*Message
	outbox []*Message
	wake   chan struct{}
	errs   chan error
}

// NewHTTPTransport returns the transport of cfg.Role and, for server
// roles, starts serving on cfg.Listener.
func NewHTTPTransport(cfg HTTPConfig) (*HTTPTransport, error) {
	if cfg.Keys == nil || cfg.Keys.Role != cfg.Role {
		return nil, fmt.Errorf("cape: keyring is not for role %s", cfg.Role)
	}
	if cfg.PollWait <= 0 {
		cfg.PollWait = 5 * time.Second
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: cfg.PollWait + 25*time.Second}
	}
	t := &HTTPTransport{cfg: cfg, wake: make(chan struct{}), errs: make(chan error, 1)}
	if isServerRole(cfg.Role) {
		if cfg.Listener == nil {
			return nil, fmt.Errorf("cape: %s needs a listener", cfg.Role)
		}
		mux := http.NewServeMux()
		mux.HandleFunc(httpPathSend, t.handle)
		mux.HandleFunc(httpPathRecv, t.handle)
		t.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() {
			if err := t.srv.Serve(cfg.Listener); err != nil && !errors.Is(err, http.ErrServerClosed) {
				t.errs <- err
			}
		}()
	}
	return t, nil
}

func (t *HTTPTransport) notify() {
	close(t.wake)
	t.wake = make(chan struct{})
}

// Send implements Transport.
func (t *HTTPTransport) Send(ctx context.Context, m *Message) error {
	m.From = t.cfg.Role
	if isServerRole(t.cfg.Role) {
		t.mu.Lock()
		t.outbox = append(t.outbox, m)
		t.notify()
		t.mu.Unlock()
		return nil
	}
	if !isServerRole(m.To) {
		return fmt.Errorf("cape: %s cannot send to %s (sites talk only to the aggregator and the noise generator)", t.cfg.Role, m.To)
	}
	_, err := t.post(ctx, m.To, httpPathSend, envelope{Msg: m})
	return err
}

// Recv implements Transport.
func (t *HTTPTransport) Recv(ctx context.Context, from, kind string, stage int) (*Message, error) {
	if isServerRole(from) && from != t.cfg.Role {
		for {
			m, err := t.post(ctx, from, httpPathRecv, envelope{Kind: kind, Stage: stage})
			if err != nil {
				return nil, err
			}
			if m != nil {
				return m, nil
			}
		}
	}
	for {
		t.mu.Lock()
		for i, m := range t.inbox {
			if m.From == from && m.Kind == kind && m.Stage == stage {
				t.inbox = append(t.inbox[:i], t.inbox[i+1:]...)
				t.mu.Unlock()
				return m, nil
			}
		}
		wake := t.wake
		t.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return nil, fmt.Errorf("cape: %s waiting for %s %d from %s: %w (%w)", t.cfg.Role, kind, stage, from, ErrDropped, ctx.Err())
		case err := <-t.errs:
			return nil, fmt.Errorf("cape: %s server failed: %w", t.cfg.Role, err)
		}
	}
}

// post sends a sealed request to a server role and returns the message
// of the response (nil when a recv poll timed out empty).
func (t *HTTPTransport) post(ctx context.Context, server, path string, env envelope) (*Message, error) {
	base, ok := t.cfg.Peers[server]
	if !ok {
		return nil, fmt.Errorf("cape: %s has no address for %s", t.cfg.Role, server)
	}
	a, err := t.cfg.Keys.aead(server)
	if err != nil {
		return nil, err
	}
	env.Time = time.Now().UnixMilli()
	plain, err := json.Marshal(env)
	if err != nil {
		return nil, err
	}
	body := seal(a, plain, reqAAD(path, t.cfg.Role, server))
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(base, "/")+path, bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("X-Cape-Role", t.cfg.Role)
		resp, err := t.cfg.Client.Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("cape: %s: %s at %s did not answer: %w (%w)", t.cfg.Role, server, base, ErrDropped, ctx.Err())
			}
			// The server may not be up yet: retry until the context ends.
			select {
			case <-time.After(200 * time.Millisecond):
				continue
			case <-ctx.Done():
				return nil, fmt.Errorf("cape: %s cannot reach %s at %s (is it running?): %v: %w", t.cfg.Role, server, base, err, ErrDropped)
			}
		}
		rb, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		switch resp.StatusCode {
		case http.StatusOK:
		case http.StatusNoContent:
			return nil, nil
		case http.StatusUnauthorized:
			return nil, fmt.Errorf("cape: %s refused %s's credentials: %s", server, t.cfg.Role, strings.TrimSpace(string(rb)))
		default:
			return nil, fmt.Errorf("cape: %s answered %s: %s", server, resp.Status, strings.TrimSpace(string(rb)))
		}
		plainResp, err := open(a, rb, respAAD(path, t.cfg.Role, server, body[:a.NonceSize()]))
		if err != nil {
			return nil, fmt.Errorf("cape: response claiming to come from %s failed authentication", server)
		}
		if path == httpPathSend {
			return nil, nil
		}
		var m Message
		if err := json.Unmarshal(plainResp, &m); err != nil {
			return nil, err
		}
		if m.From != server || m.To != t.cfg.Role {
			return nil, fmt.Errorf("cape: %s delivered a message from %s to %s", server, m.From, m.To)
		}
		return &m, nil
	}
}

// handle serves both endpoints.
func (t *HTTPTransport) handle(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	peer := r.Header.Get("X-Cape-Role")
	a, err := t.cfg.Keys.aead(peer)
	if err != nil {
		http.Error(w, fmt.Sprintf("unknown role %q", peer), http.StatusUnauthorized)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	plain, err := open(a, body, reqAAD(r.URL.Path, peer, t.cfg.Role))
	if err != nil {
		http.Error(w, fmt.Sprintf("authentication failed for %s", peer), http.StatusUnauthorized)
		return
	}
	var env envelope
	if err := json.Unmarshal(plain, &env); err != nil {
		http.Error(w, "bad envelope", http.StatusBadRequest)
		return
	}
	if d := time.Since(time.UnixMilli(env.Time)); d > maxClockSkew || d < -maxClockSkew {
		http.Error(w, "stale request (clock skew or replay)", http.StatusUnauthorized)
		return
	}
	nonce := body[:a.NonceSize()]
	var out []byte
	switch r.URL.Path {
	case httpPathSend:
		m := env.Msg
		if m == nil || m.To != t.cfg.Role {
			http.Error(w, "message not addressed to this role", http.StatusBadRequest)
			return
		}
		m.From = peer // authenticated sender, never the claimed one
		t.mu.Lock()
		t.inbox = append(t.inbox, m)
		t.notify()
		t.mu.Unlock()
		out = []byte("{}")
	case httpPathRecv:
		m := t.takeOutbox(r.Context(), peer, env.Kind, env.Stage)
		if m == nil {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		if out, err = json.Marshal(m); err != nil {
			http.Error(w, "encode", http.StatusInternalServerError)
			return
		}
	}
	resp := seal(a, out, respAAD(r.URL.Path, peer, t.cfg.Role, nonce))
	w.Header().Set("Content-Type", "application/octet-stream")
	_, _ = w.Write(resp)
}

// takeOutbox waits up to PollWait for a message to peer and removes it.
func (t *HTTPTransport) takeOutbox(ctx context.Context, peer, kind string, stage int) *Message {
	timer := time.NewTimer(t.cfg.PollWait)
	defer timer.Stop()
	for {
		t.mu.Lock()
		for i, m := range t.outbox {
			if m.To == peer && m.Kind == kind && m.Stage == stage {
				t.outbox = append(t.outbox[:i], t.outbox[i+1:]...)
				t.notify()
				t.mu.Unlock()
				return m
			}
		}
		wake := t.wake
		t.mu.Unlock()
		select {
		case <-wake:
		case <-timer.C:
			return nil
		case <-ctx.Done():
			return nil
		}
	}
}

// Drain waits until every outbox message was fetched (or ctx ends) and
// then shuts the server down. It returns the roles whose messages were
// never fetched.
func (t *HTTPTransport) Drain(ctx context.Context) []string {
	var left []string
	for {
		t.mu.Lock()
		n := len(t.outbox)
		wake := t.wake
		if n == 0 || ctx.Err() != nil {
			for _, m := range t.outbox {
				left = append(left, m.To)
			}
			t.mu.Unlock()
			break
		}
		t.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
		}
	}
	if t.srv != nil {
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = t.srv.Shutdown(sctx)
	}
	return left
}
