package cape

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
)

// Role names a party of the protocol: the aggregator, the noise generator
// or a site. Site s (1-based) is "site/s".
type Role string

// Server roles.
const (
	RoleAggregator Role = "aggregator"
	RoleNoise      Role = "noise"
)

// SiteRole returns the role name of site s (1-based).
func SiteRole(s int) Role { return Role(fmt.Sprintf("site/%d", s)) }

// MsgKind is the kind of a protocol message.
type MsgKind string

// Message kinds exchanged by the roles, in protocol order.
const (
	KindHello   MsgKind = "hello"   // site -> aggregator: SiteSpec
	KindPlan    MsgKind = "plan"    // aggregator -> noise, sites: RoundPlan
	KindE       MsgKind = "e"       // noise -> site: correlated noise e_s
	KindF       MsgKind = "f"       // aggregator -> site: noise f_s
	KindRelease MsgKind = "release" // site -> aggregator: a^_s = f(x_s) + e_s + f_s + g_s
	KindW       MsgKind = "w"       // aggregator -> sites: whitening matrix (capeAGN)
	KindResult  MsgKind = "result"  // aggregator -> sites: released result
)

// Message is the unit every transport carries. Values holds the numeric
// payload (noise, releases, matrices); Body holds small structured payloads
// (JSON). From is set by the transport, never trusted from the sender.
type Message struct {
	From   Role            `json:"from"`
	To     Role            `json:"to"`
	Kind   MsgKind         `json:"kind"`
	Stage  int             `json:"stage"`
	Body   json.RawMessage `json:"body,omitempty"`
	Values []float64       `json:"values,omitempty"`
	// Shape is the dense shape of the object Values encodes (a symmetric
	// D x D matrix travels as its D(D+1)/2 upper-triangle entries, a
	// symmetric tensor as its C(D+2,3) unique entries); it is used for
	// the paper's communication accounting, which counts dense objects.
	Shape []int `json:"shape,omitempty"`
}

// denseCount returns the number of values of the dense object.
func (m *Message) denseCount() int64 {
	if len(m.Shape) == 0 {
		return int64(len(m.Values))
	}
	n := int64(1)
	for _, d := range m.Shape {
		n *= int64(d)
	}
	return n
}

// Transport is how one role talks to the others; it is the only channel
// between roles. Send delivers m to m.To with From set to the caller's
// role. Recv blocks until a message of the given kind and stage from the
// given role arrives, the context ends, or the sender is known to be gone
// (then the error wraps ErrDropped). Implementations are safe for
// concurrent use by one role's goroutines.
type Transport interface {
	Send(ctx context.Context, m *Message) error
	Recv(ctx context.Context, from Role, kind MsgKind, stage int) (*Message, error)
}

// ErrDropped is wrapped by Recv when the peer left the protocol (closed
// its transport or did not answer within the round's timeout).
var ErrDropped = errors.New("cape: peer dropped out")

// Traffic counts what one role sent and received: messages, float64
// values and payload bytes (8 per value plus the structured body).
type Traffic struct {
	SentMessages, RecvMessages int
	SentValues, RecvValues     int64
	SentBytes, RecvBytes       int64
	// SentDense, RecvDense count values as dense objects (Message.Shape),
	// the unit of the paper's communication cost.
	SentDense, RecvDense int64
}

// LocalNetwork is the in-process transport: one mailbox per role, roles as
// goroutines. Create it with NewLocalNetwork, hand each role its Endpoint.
type LocalNetwork struct {
	mu      sync.Mutex
	boxes   map[Role]*mailbox
	traffic map[Role]*Traffic
	tap     func(*Message) // test hook: sees every delivered message
}

type mailbox struct {
	pending []*Message
	wake    chan struct{} // closed and replaced on every delivery or close
	closed  bool
}

// NewLocalNetwork returns a network with a mailbox for each role.
func NewLocalNetwork(roles ...Role) *LocalNetwork {
	n := &LocalNetwork{boxes: map[Role]*mailbox{}, traffic: map[Role]*Traffic{}}
	for _, r := range roles {
		n.boxes[r] = &mailbox{wake: make(chan struct{})}
		n.traffic[r] = &Traffic{}
	}
	return n
}

// Endpoint returns role's transport. It panics if role was not declared
// to NewLocalNetwork (programmer error).
func (n *LocalNetwork) Endpoint(role Role) *LocalEndpoint {
	if _, ok := n.boxes[role]; !ok {
		panic("cape: unknown role " + role)
	}
	return &LocalEndpoint{net: n, role: role}
}

// Traffic returns a copy of the per-role traffic counters.
func (n *LocalNetwork) Traffic() map[Role]Traffic {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make(map[Role]Traffic, len(n.traffic))
	for k, v := range n.traffic {
		out[k] = *v
	}
	return out
}

// LocalEndpoint is one role's view of a LocalNetwork.
type LocalEndpoint struct {
	net  *LocalNetwork
	role Role
}

// Send implements Transport. Messages are delivered by reference; senders
// must not modify a message after sending it.
func (e *LocalEndpoint) Send(ctx context.Context, m *Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	n := e.net
	n.mu.Lock()
	defer n.mu.Unlock()
	src := n.boxes[e.role]
	if src.closed {
		return fmt.Errorf("cape: %s sends after leaving", e.role)
	}
	box, ok := n.boxes[m.To]
	if !ok {
		return fmt.Errorf("cape: %s sends %s to unknown role %q", e.role, m.Kind, m.To)
	}
	m.From = e.role
	if box.closed {
		return fmt.Errorf("cape: %s sends %s to %s: %w", e.role, m.Kind, m.To, ErrDropped)
	}
	box.pending = append(box.pending, m)
	close(box.wake)
	box.wake = make(chan struct{})
	b := int64(8*len(m.Values) + len(m.Body))
	ts, tr := n.traffic[e.role], n.traffic[m.To]
	ts.SentMessages++
	ts.SentValues += int64(len(m.Values))
	ts.SentBytes += b
	tr.RecvMessages++
	tr.RecvValues += int64(len(m.Values))
	tr.RecvBytes += b
	ts.SentDense += m.denseCount()
	tr.RecvDense += m.denseCount()
	if n.tap != nil {
		n.tap(m)
	}
	return nil
}

// Recv implements Transport.
func (e *LocalEndpoint) Recv(ctx context.Context, from Role, kind MsgKind, stage int) (*Message, error) {
	n := e.net
	for {
		n.mu.Lock()
		box := n.boxes[e.role]
		for i, m := range box.pending {
			if m.From == from && m.Kind == kind && m.Stage == stage {
				box.pending = append(box.pending[:i], box.pending[i+1:]...)
				n.mu.Unlock()
				return m, nil
			}
		}
		if peer, ok := n.boxes[from]; !ok {
			n.mu.Unlock()
			return nil, fmt.Errorf("cape: %s waits for unknown role %q", e.role, from)
		} else if peer.closed {
			n.mu.Unlock()
			return nil, fmt.Errorf("cape: %s waiting for %s %d from %s: %w", e.role, kind, stage, from, ErrDropped)
		}
		wake := box.wake
		peerWake := n.boxes[from].wake
		n.mu.Unlock()
		select {
		case <-wake:
		case <-peerWake:
		case <-ctx.Done():
			return nil, fmt.Errorf("cape: %s waiting for %s %d from %s: %w (%w)", e.role, kind, stage, from, ErrDropped, ctx.Err())
		}
	}
}

// Close marks the role as gone: later Recv calls waiting on it fail with
// ErrDropped. Messages it already sent stay deliverable.
func (e *LocalEndpoint) Close() {
	n := e.net
	n.mu.Lock()
	defer n.mu.Unlock()
	box := n.boxes[e.role]
	if !box.closed {
		box.closed = true
		close(box.wake)
		box.wake = make(chan struct{})
	}
}
