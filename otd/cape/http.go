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
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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
//
// Run binding and replay (doc.go, "Threat model"). The aggregator draws a
// fresh 128-bit session ID from crypto/rand for each run; clients fetch it
// first (POST /cape/v1/session, answered sealed and bound to the request's
// nonce; the noise generator fetches it as a client of the aggregator and
// uses it for its own server). Every request carries its role, the session
// ID, a sequence number (per client, strictly increasing from a
// time-based start) and a timestamp in headers, authenticated by an
// HMAC-SHA256 over them and the body length (X-Cape-Auth, key derived from
// the pair's key) and repeated in the body's authenticated data. A server
// refuses, before reading the body, a request whose header MAC fails, whose
// session is not the current run's (a message recorded in an earlier run),
// whose sequence number it has seen (a replay within the run; a window of
// 64 allows concurrent requests to arrive out of order), or whose timestamp
// is more than maxClockSkew away. It accepts at most one message of each
// (sender, kind, stage) per run and at most MaxQueue undelivered messages
// per sender. Every refusal is reported through HTTPConfig.OnReject with
// the claimed role and the reason.
//
// Resource limits: the body is read only after the header MAC verified, up
// to a limit sized from the protocol's largest message (MaxValues values of
// at most bytesPerValue bytes of JSON, plus smallBody; recv and session
// requests: smallBody), with http.MaxBytesReader; the server has header,
// read, write and idle timeouts and serves at most MaxConns connections at
// once (further connections wait in the kernel's accept queue).

const (
	httpPathSend    = "/cape/v1/send"
	httpPathRecv    = "/cape/v1/recv"
	httpPathSession = "/cape/v1/session"
	// maxClockSkew bounds the age of an accepted request.
	maxClockSkew = 5 * time.Minute
	// maxBody caps a response body read by a client (a D = 200 tensor
	// stage is about 1.4 M values, 30 MB of JSON): 256 MiB.
	maxBody = 256 << 20
	// smallBody caps a request without numeric payload (session, recv,
	// hello): a sealed envelope of at most a few hundred bytes; 64 KiB.
	smallBody = 64 << 10
	// bytesPerValue bounds the JSON of one float64 with its separator
	// ("-1.2345678901234567e-308," is 25 bytes).
	bytesPerValue = 32
	// maxMsgStage bounds the stage number of an accepted message (CAPE
	// jobs have at most 2 stages).
	maxMsgStage = 16
	// seqWindow is the replay window of sequence numbers.
	seqWindow = 64

	hdrRole    = "X-Cape-Role"
	hdrSession = "X-Cape-Session"
	hdrSeq     = "X-Cape-Seq"
	hdrTime    = "X-Cape-Time"
	hdrAuth    = "X-Cape-Auth"
)

// Defaults of HTTPConfig's limits.
const (
	// DefaultMaxValues is the default largest number of float64 values in
	// a message a server accepts (set HTTPConfig.MaxValues from the job:
	// Job.MaxValues).
	DefaultMaxValues = 1 << 16
	// DefaultMaxConns is the default cap on concurrent connections.
	DefaultMaxConns = 64
	// DefaultMaxQueue is the default cap on undelivered messages per
	// sender.
	DefaultMaxQueue = 4
)

// MaxValues returns the largest number of float64 values any message of
// the job carries (the largest stage statistic), which sizes the servers'
// body limit (HTTPConfig.MaxValues).
func (j *Job) MaxValues() int {
	m := 0
	for st := 0; st < j.Stages(); st++ {
		if l := j.Length(st); l > m {
			m = l
		}
	}
	if j.Kind == JobAGN && j.D*j.K > m {
		m = j.D * j.K // W
	}
	return m
}

// isServerRole reports whether role runs an HTTP server.
func isServerRole(role Role) bool { return role == RoleAggregator || role == RoleNoise }

// Keyring holds one role's pairwise keys: Keys[peer] is the 32-byte key
// this role shares with peer.
type Keyring struct {
	Role Role            `json:"role"`
	Keys map[Role]string `json:"keys"` // hex
}

// NewKeyrings derives pairwise keys for an aggregator, a noise generator
// and S sites from a fresh 32-byte master secret (crypto/rand): the key of
// roles a < b is HMAC-SHA256(master, a "|" b). Each returned keyring holds
// only the keys of its own pairs (sites: aggregator and noise; noise:
// aggregator and every site; aggregator: noise and every site).
func NewKeyrings(sites int) (map[Role]*Keyring, error) {
	if sites < 2 || sites > MaxSites {
		return nil, fmt.Errorf("cape: %d sites, want 2..%d", sites, MaxSites)
	}
	master := make([]byte, 32)
	if _, err := rand.Read(master); err != nil {
		return nil, err
	}
	roles := []Role{RoleAggregator, RoleNoise}
	for s := 1; s <= sites; s++ {
		roles = append(roles, SiteRole(s))
	}
	out := map[Role]*Keyring{}
	for _, r := range roles {
		out[r] = &Keyring{Role: r, Keys: map[Role]string{}}
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

func (k *Keyring) aead(peer Role) (cipher.AEAD, error) {
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

// macKey returns the key of the header MAC for peer, derived from the
// pair's key (separate from the AEAD key).
func (k *Keyring) macKey(peer Role) ([]byte, error) {
	h, ok := k.Keys[peer]
	if !ok {
		return nil, fmt.Errorf("cape: %s has no key for %s", k.Role, peer)
	}
	key, err := hex.DecodeString(h)
	if err != nil || len(key) != 32 {
		return nil, fmt.Errorf("cape: bad key for %s", peer)
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte("cape/v1 header mac"))
	return m.Sum(nil), nil
}

// reqHeader holds the authenticated header fields of a request.
type reqHeader struct {
	path, from, to, session string
	seq                     uint64
	time                    int64 // unix milliseconds
	length                  int64 // body bytes
}

func (h *reqHeader) fields() string {
	return h.path + "|" + h.from + "|" + h.to + "|" + h.session + "|" + strconv.FormatUint(h.seq, 10) + "|" + strconv.FormatInt(h.time, 10)
}

func (h *reqHeader) mac(key []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("cape/v1 hdr|" + h.fields() + "|" + strconv.FormatInt(h.length, 10)))
	return hex.EncodeToString(m.Sum(nil))
}

func reqAAD(h *reqHeader) []byte {
	return []byte("cape/v1 req|" + h.fields())
}

func respAAD(h *reqHeader, reqNonce []byte) []byte {
	return append([]byte("cape/v1 resp|"+h.fields()+"|"), reqNonce...)
}

// envelope is the sealed plaintext of a request.
type envelope struct {
	Msg   *Message `json:"msg,omitempty"`
	Kind  MsgKind  `json:"kind,omitempty"`
	Stage int      `json:"stage,omitempty"`
}

// sessionReply is the sealed plaintext of a session response.
type sessionReply struct {
	Session string `json:"session"`
}

// seqWin is a sliding replay window over sequence numbers: max is the
// largest accepted, bit i of bits marks max-i as seen.
type seqWin struct {
	max, bits uint64
}

func (w *seqWin) accept(s uint64) bool {
	switch {
	case s == 0:
		return false
	case s > w.max:
		if d := s - w.max; d >= 64 {
			w.bits = 0
		} else {
			w.bits <<= d
		}
		w.bits |= 1
		w.max = s
		return true
	}
	d := w.max - s
	if d >= seqWindow || w.bits&(1<<d) != 0 {
		return false
	}
	w.bits |= 1 << d
	return true
}

// limitListener accepts at most n connections at once; further ones wait
// in the kernel's queue until an accepted one closes.
type limitListener struct {
	net.Listener
	sem       chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

func newLimitListener(l net.Listener, n int) *limitListener {
	return &limitListener{Listener: l, sem: make(chan struct{}, n), done: make(chan struct{})}
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	return &limitConn{Conn: c, release: func() { <-l.sem }}, nil
}

func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// HTTPConfig configures an HTTPTransport. Zero values mean the defaults.
type HTTPConfig struct {
	Role Role
	Keys *Keyring
	// Peers maps the server roles this role contacts to base URLs
	// ("http://127.0.0.1:7000").
	Peers map[Role]string
	// Listener is the server's socket (aggregator and noise generator);
	// nil for sites.
	Listener net.Listener
	// PollWait is how long a server holds a recv request open (default 5 s).
	PollWait time.Duration
	// Client is the HTTP client (default: PollWait + 25 s timeout).
	Client *http.Client
	// Session is the aggregator's run ID (default: 16 random bytes from
	// crypto/rand, hex). Other roles learn it from the aggregator.
	Session string
	// MaxValues is the largest number of values in a message the server
	// accepts (default DefaultMaxValues; the aggregator sets Job.MaxValues).
	MaxValues int
	// MaxConns caps the server's concurrent connections (default
	// DefaultMaxConns); MaxQueue the undelivered messages per sender
	// (default DefaultMaxQueue).
	MaxConns, MaxQueue int
	// Server timeouts: request headers (default 10 s), whole request
	// (default the larger of 60 s and PollWait + 30 s), idle keep-alive
	// connections (default 30 s). Responses must be written within
	// PollWait + 30 s.
	ReadHeaderTimeout, ReadTimeout, IdleTimeout time.Duration
	// OnReject, if set, is called for every refused request with the role
	// the request claimed and the reason (replay, forged, oversized, ...).
	// It may be called from several goroutines at once.
	OnReject func(role Role, reason string)
}

// HTTPTransport is a Transport over HTTP between processes.
type HTTPTransport struct {
	cfg     HTTPConfig
	srv     *http.Server
	mu      sync.Mutex
	session string
	inbox   []*Message
	outbox  []*Message
	wake    chan struct{}
	errs    chan error
	seq     atomic.Uint64
	windows map[Role]*seqWin
	seen    map[string]bool // "peer|kind|stage" accepted this run
	sending int             // accepted sends and fetched messages whose response is being written
	rejects atomic.Int64
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
	if cfg.MaxValues <= 0 {
		cfg.MaxValues = DefaultMaxValues
	}
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = DefaultMaxConns
	}
	if cfg.MaxQueue <= 0 {
		cfg.MaxQueue = DefaultMaxQueue
	}
	if cfg.ReadHeaderTimeout <= 0 {
		cfg.ReadHeaderTimeout = 10 * time.Second
	}
	if cfg.ReadTimeout <= 0 {
		cfg.ReadTimeout = max(time.Minute, cfg.PollWait+30*time.Second)
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = 30 * time.Second
	}
	t := &HTTPTransport{cfg: cfg, wake: make(chan struct{}), errs: make(chan error, 1),
		windows: map[Role]*seqWin{}, seen: map[string]bool{}}
	// Sequence numbers start at the clock so that a restarted client does
	// not reuse the numbers of its previous incarnation.
	t.seq.Store(uint64(time.Now().UnixNano()))
	if cfg.Role == RoleAggregator {
		t.session = cfg.Session
		if t.session == "" {
			b := make([]byte, 16)
			if _, err := rand.Read(b); err != nil {
				return nil, err
			}
			t.session = hex.EncodeToString(b)
		}
	}
	if isServerRole(cfg.Role) {
		if cfg.Listener == nil {
			return nil, fmt.Errorf("cape: %s needs a listener", cfg.Role)
		}
		mux := http.NewServeMux()
		mux.HandleFunc(httpPathSend, t.handle)
		mux.HandleFunc(httpPathRecv, t.handle)
		if cfg.Role == RoleAggregator {
			mux.HandleFunc(httpPathSession, t.handle)
		}
		t.srv = &http.Server{Handler: mux, ReadHeaderTimeout: cfg.ReadHeaderTimeout, ReadTimeout: cfg.ReadTimeout,
			WriteTimeout: cfg.PollWait + 30*time.Second, IdleTimeout: cfg.IdleTimeout, MaxHeaderBytes: 16 << 10}
		ln := newLimitListener(cfg.Listener, cfg.MaxConns)
		go func() {
			if err := t.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				t.errs <- err
			}
		}()
	}
	return t, nil
}

// Session returns the run's session ID ("" until a non-aggregator role
// has fetched it from the aggregator).
func (t *HTTPTransport) Session() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.session
}

// Rejections returns the number of requests the server refused.
func (t *HTTPTransport) Rejections() int64 { return t.rejects.Load() }

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
func (t *HTTPTransport) Recv(ctx context.Context, from Role, kind MsgKind, stage int) (*Message, error) {
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

// ensureSession returns the run's session ID, fetching it from the
// aggregator on first use.
func (t *HTTPTransport) ensureSession(ctx context.Context) (string, error) {
	if s := t.Session(); s != "" {
		return s, nil
	}
	if _, err := t.post(ctx, RoleAggregator, httpPathSession, envelope{}); err != nil {
		return "", err
	}
	return t.Session(), nil
}

// post sends a sealed request to a server role and returns the message
// of the response (nil when a recv poll timed out empty, and for send and
// session requests).
func (t *HTTPTransport) post(ctx context.Context, server Role, path string, env envelope) (*Message, error) {
	base, ok := t.cfg.Peers[server]
	if !ok {
		return nil, fmt.Errorf("cape: %s has no address for %s", t.cfg.Role, server)
	}
	a, err := t.cfg.Keys.aead(server)
	if err != nil {
		return nil, err
	}
	mk, err := t.cfg.Keys.macKey(server)
	if err != nil {
		return nil, err
	}
	plain, err := json.Marshal(env)
	if err != nil {
		return nil, err
	}
	session := ""
	if path != httpPathSession {
		if session, err = t.ensureSession(ctx); err != nil {
			return nil, err
		}
	}
	pc := &postCall{server: server, base: base, path: path, session: session, a: a, mk: mk, plain: plain}
	for {
		m, retry, err := t.postAttempt(ctx, pc)
		if !retry {
			return m, err
		}
	}
}

// postCall is one request that post sends, attempt after attempt.
type postCall struct {
	server              Role
	base, path, session string
	a                   cipher.AEAD
	mk                  []byte
	plain               []byte // the envelope, not yet sealed
}

// postAttempt makes one attempt at pc with a fresh sequence number, time
// and nonce. retry (after a pause) means the server was not reachable or
// not ready and the caller should try again.
func (t *HTTPTransport) postAttempt(ctx context.Context, pc *postCall) (m *Message, retry bool, err error) {
	server, base, path, a := pc.server, pc.base, pc.path, pc.a
	h := &reqHeader{path: path, from: string(t.cfg.Role), to: string(server), session: pc.session, seq: t.seq.Add(1), time: time.Now().UnixMilli()}
	body := seal(a, pc.plain, reqAAD(h))
	h.length = int64(len(body))
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(base, "/")+path, bytes.NewReader(body))
	if err != nil {
		return nil, false, err
	}
	req.Header.Set(hdrRole, string(t.cfg.Role))
	req.Header.Set(hdrSession, pc.session)
	req.Header.Set(hdrSeq, strconv.FormatUint(h.seq, 10))
	req.Header.Set(hdrTime, strconv.FormatInt(h.time, 10))
	req.Header.Set(hdrAuth, h.mac(pc.mk))
	resp, err := t.cfg.Client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, false, fmt.Errorf("cape: %s: %s at %s did not answer: %w (%w)", t.cfg.Role, server, base, ErrDropped, ctx.Err())
		}
		// The server may not be up yet: retry until the context ends.
		if err := sleepCtx(ctx, 200*time.Millisecond); err != nil {
			return nil, false, fmt.Errorf("cape: %s cannot reach %s at %s (is it running?): %v: %w", t.cfg.Role, server, base, err, ErrDropped)
		}
		return nil, true, nil
	}
	rb, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	resp.Body.Close()
	if err != nil {
		return nil, false, err
	}
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNoContent:
		return nil, false, nil
	case http.StatusServiceUnavailable:
		// The noise generator has not learnt the session yet.
		if err := sleepCtx(ctx, 200*time.Millisecond); err != nil {
			return nil, false, fmt.Errorf("cape: %s: %s at %s not ready: %s: %w", t.cfg.Role, server, base, strings.TrimSpace(string(rb)), ErrDropped)
		}
		return nil, true, nil
	case http.StatusConflict:
		if path == httpPathSend {
			// Only this role can have sent that message in this run:
			// an earlier attempt whose answer was lost was delivered.
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("cape: %s answered %s: %s", server, resp.Status, strings.TrimSpace(string(rb)))
	case http.StatusUnauthorized:
		return nil, false, fmt.Errorf("cape: %s refused %s's credentials: %s", server, t.cfg.Role, strings.TrimSpace(string(rb)))
	default:
		return nil, false, fmt.Errorf("cape: %s answered %s: %s", server, resp.Status, strings.TrimSpace(string(rb)))
	}
	plainResp, err := open(a, rb, respAAD(h, body[:a.NonceSize()]))
	if err != nil {
		return nil, false, fmt.Errorf("cape: response claiming to come from %s failed authentication", server)
	}
	m, err = t.postReply(server, path, plainResp)
	return m, false, err
}

// postReply decodes the authenticated reply to a request on path: nothing
// for send, the run's session for session, the message for recv.
func (t *HTTPTransport) postReply(server Role, path string, plainResp []byte) (*Message, error) {
	switch path {
	case httpPathSend:
		return nil, nil
	case httpPathSession:
		var sr sessionReply
		if err := json.Unmarshal(plainResp, &sr); err != nil || sr.Session == "" {
			return nil, fmt.Errorf("cape: bad session reply from %s", server)
		}
		t.mu.Lock()
		if t.session == "" {
			t.session = sr.Session
		}
		t.mu.Unlock()
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

func sleepCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// bodyLimit returns the largest request body accepted on path.
func (t *HTTPTransport) bodyLimit(path string) int64 {
	if path == httpPathSend {
		return smallBody + bytesPerValue*int64(t.cfg.MaxValues)
	}
	return smallBody
}

// refuse answers a refused request and reports it.
func (t *HTTPTransport) refuse(w http.ResponseWriter, role Role, code int, reason string) {
	t.rejects.Add(1)
	if t.cfg.OnReject != nil {
		t.cfg.OnReject(role, reason)
	}
	http.Error(w, reason, code)
}

// handle serves the endpoints. Everything up to the body read depends only
// on the headers, so an unauthenticated request costs no body memory.
func (t *HTTPTransport) handle(w http.ResponseWriter, r *http.Request) {
	peer, a, h, ok := t.authenticate(w, r)
	if !ok {
		return
	}
	path := h.path
	limit := t.bodyLimit(path)
	if r.ContentLength > limit {
		t.refuse(w, peer, http.StatusRequestEntityTooLarge, fmt.Sprintf("body of %d bytes on %s exceeds the limit of %d", r.ContentLength, path, limit))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		t.refuse(w, peer, http.StatusBadRequest, fmt.Sprintf("body on %s not read: %v", path, err))
		return
	}
	plain, err := open(a, body, reqAAD(h))
	if err != nil {
		t.refuse(w, peer, http.StatusUnauthorized, fmt.Sprintf("body on %s failed authentication (forged or tampered)", path))
		return
	}
	var env envelope
	if err := json.Unmarshal(plain, &env); err != nil {
		t.refuse(w, peer, http.StatusBadRequest, fmt.Sprintf("bad envelope on %s", path))
		return
	}
	nonce := body[:a.NonceSize()]
	var out []byte
	switch path {
	case httpPathSession:
		out, _ = json.Marshal(sessionReply{Session: t.Session()})
	case httpPathSend:
		if !t.enqueue(w, peer, env.Msg) {
			return
		}
		defer t.doneSending()
		out = []byte("{}")
	case httpPathRecv:
		m := t.takeOutbox(r.Context(), peer, env.Kind, env.Stage)
		if m == nil {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		defer t.doneSending()
		if out, err = json.Marshal(m); err != nil {
			http.Error(w, "encode", http.StatusInternalServerError)
			return
		}
	}
	resp := seal(a, out, respAAD(h, nonce))
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.Itoa(len(resp)))
	_, _ = w.Write(resp)
	// Push the complete response to the connection before doneSending
	// lets Drain close the server.
	_ = http.NewResponseController(w).Flush()
}

// authenticate checks a request's headers: method, known role, length,
// header MAC, clock skew and, outside the session endpoint, this run's
// session and a fresh sequence number. It answers a refused request
// itself and then returns ok = false.
func (t *HTTPTransport) authenticate(w http.ResponseWriter, r *http.Request) (peer Role, a cipher.AEAD, h *reqHeader, ok bool) {
	claimed := r.Header.Get(hdrRole)
	if len(claimed) > 64 {
		claimed = claimed[:64] + "..."
	}
	peer = Role(claimed)
	path := r.URL.Path
	if r.Method != http.MethodPost {
		t.refuse(w, peer, http.StatusMethodNotAllowed, "POST only")
		return peer, nil, nil, false
	}
	a, err := t.cfg.Keys.aead(peer)
	if err != nil {
		t.refuse(w, peer, http.StatusUnauthorized, fmt.Sprintf("unknown role %q on %s", peer, path))
		return peer, nil, nil, false
	}
	mk, _ := t.cfg.Keys.macKey(peer)
	if r.ContentLength < 0 {
		t.refuse(w, peer, http.StatusLengthRequired, "request without Content-Length")
		return peer, nil, nil, false
	}
	seq, err1 := strconv.ParseUint(r.Header.Get(hdrSeq), 10, 64)
	tm, err2 := strconv.ParseInt(r.Header.Get(hdrTime), 10, 64)
	h = &reqHeader{path: path, from: string(peer), to: string(t.cfg.Role), session: r.Header.Get(hdrSession), seq: seq, time: tm, length: r.ContentLength}
	if err1 != nil || err2 != nil || !hmac.Equal([]byte(r.Header.Get(hdrAuth)), []byte(h.mac(mk))) {
		t.refuse(w, peer, http.StatusUnauthorized, fmt.Sprintf("forged or unauthenticated request on %s: header MAC missing or wrong", path))
		return peer, nil, nil, false
	}
	if d := time.Since(time.UnixMilli(tm)); d > maxClockSkew || d < -maxClockSkew {
		t.refuse(w, peer, http.StatusUnauthorized, fmt.Sprintf("stale request on %s: timestamp %v away (clock skew or replay)", path, d.Round(time.Second)))
		return peer, nil, nil, false
	}
	if path != httpPathSession && !t.checkReplay(w, peer, h) {
		return peer, nil, nil, false
	}
	return peer, a, h, true
}

// checkReplay refuses a request sealed for another run's session or
// carrying a sequence number already used (or too old) for its peer.
func (t *HTTPTransport) checkReplay(w http.ResponseWriter, peer Role, h *reqHeader) bool {
	cur := t.Session()
	if cur == "" {
		// The noise generator has not fetched the session yet.
		http.Error(w, "session not established yet", http.StatusServiceUnavailable)
		return false
	}
	if h.session != cur {
		t.refuse(w, peer, http.StatusUnauthorized, fmt.Sprintf("replay on %s: sealed for session %.12q, not this run's (a message recorded in another run)", h.path, h.session))
		return false
	}
	t.mu.Lock()
	win := t.windows[peer]
	if win == nil {
		win = &seqWin{}
		t.windows[peer] = win
	}
	ok := win.accept(h.seq)
	t.mu.Unlock()
	if !ok {
		t.refuse(w, peer, http.StatusUnauthorized, fmt.Sprintf("replay on %s: sequence number %d already used or too old", h.path, h.seq))
		return false
	}
	return true
}

// enqueue queues a message sent by peer (its authenticated sender) for
// this role: one per kind and stage per run, at most MaxQueue undelivered
// per peer. On success the sender counts as waiting for its answer, and
// the caller must call doneSending once it has answered.
func (t *HTTPTransport) enqueue(w http.ResponseWriter, peer Role, m *Message) bool {
	if m == nil || m.To != t.cfg.Role {
		t.refuse(w, peer, http.StatusBadRequest, "message not addressed to this role")
		return false
	}
	if !knownKind(m.Kind) || m.Stage < 0 || m.Stage >= maxMsgStage {
		t.refuse(w, peer, http.StatusBadRequest, fmt.Sprintf("message of unknown kind %.20q or stage %d", m.Kind, m.Stage))
		return false
	}
	m.From = peer // authenticated sender, never the claimed one
	key := string(peer) + "|" + string(m.Kind) + "|" + strconv.Itoa(m.Stage)
	t.mu.Lock()
	if t.seen[key] {
		t.mu.Unlock()
		t.refuse(w, peer, http.StatusConflict, fmt.Sprintf("duplicate %s %d: one per run accepted (replay or reorder)", m.Kind, m.Stage))
		return false
	}
	n := 0
	for _, q := range t.inbox {
		if q.From == peer {
			n++
		}
	}
	if n >= t.cfg.MaxQueue {
		t.mu.Unlock()
		t.refuse(w, peer, http.StatusTooManyRequests, fmt.Sprintf("queue full: %d undelivered messages", n))
		return false
	}
	t.seen[key] = true
	t.inbox = append(t.inbox, m)
	t.sending++ // the sender waits for this answer: Drain must not close first
	t.notify()
	t.mu.Unlock()
	return true
}

func knownKind(k MsgKind) bool {
	switch k {
	case KindHello, KindPlan, KindE, KindF, KindRelease, KindW, KindResult:
		return true
	}
	return false
}

// doneSending marks the response to an accepted send or to a fetch of a
// message as written.
func (t *HTTPTransport) doneSending() {
	t.mu.Lock()
	t.sending--
	t.notify()
	t.mu.Unlock()
}

// takeOutbox waits up to PollWait for a message to peer and removes it.
func (t *HTTPTransport) takeOutbox(ctx context.Context, peer Role, kind MsgKind, stage int) *Message {
	timer := time.NewTimer(t.cfg.PollWait)
	defer timer.Stop()
	for {
		t.mu.Lock()
		for i, m := range t.outbox {
			if m.To == peer && m.Kind == kind && m.Stage == stage {
				t.outbox = append(t.outbox[:i], t.outbox[i+1:]...)
				t.sending++ // until its response is written (doneSending)
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

// Drain waits until every outbox message was fetched and its response
// written (or ctx ends) and then closes the server. It returns the roles whose messages were
// never fetched.
func (t *HTTPTransport) Drain(ctx context.Context) []Role {
	var left []Role
	for {
		t.mu.Lock()
		n := len(t.outbox)
		wake := t.wake
		if (n == 0 && t.sending == 0) || ctx.Err() != nil {
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
		// Every fetched message's response has been written (or ctx
		// ended): close at once, including idle connections and the
		// connections clients opened speculatively but never used, which
		// Shutdown would wait for.
		_ = t.srv.Close()
	}
	return left
}
