package memberlist

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	ml "github.com/hashicorp/memberlist"
	"github.com/keyplace/chash/member"
)

// delegate is the node's memberlist Delegate, EventDelegate and
// PingDelegate. memberlist calls the event methods with its node lock
// held: they only copy and signal.
type delegate struct {
	n      *Node
	events ml.EventDelegate
	ping   ml.PingDelegate
}

// NodeMeta returns the member's JSON, which encode kept within limit.
func (d *delegate) NodeMeta(limit int) []byte {
	d.n.mu.Lock()
	defer d.n.mu.Unlock()
	if len(d.n.meta) > limit {
		return nil
	}
	return append([]byte(nil), d.n.meta...)
}

// specMessage marks the user messages and state that carry a spec: the
// first byte, so that other kinds can follow.
const specMessage = 's'

// NotifyMsg receives a spec broadcast.
func (d *delegate) NotifyMsg(b []byte) {
	if len(b) > 0 && b[0] == specMessage {
		d.n.merge(b[1:], "broadcast")
	}
}

// GetBroadcasts returns the spec broadcasts due.
func (d *delegate) GetBroadcasts(overhead, limit int) [][]byte {
	return d.n.queue.GetBroadcasts(overhead, limit)
}

// LocalState returns the spec held, for a push/pull sync: a peer
// answered.
func (d *delegate) LocalState(bool) []byte {
	d.n.confirm()
	return d.n.specBytes()
}

// MergeRemoteState merges the spec a peer holds: a peer answered.
func (d *delegate) MergeRemoteState(buf []byte, _ bool) {
	d.n.confirm()
	if len(buf) > 0 && buf[0] == specMessage {
		d.n.merge(buf[1:], "state sync")
	}
}

func (d *delegate) NotifyJoin(node *ml.Node) {
	d.n.set(node)
	if d.events != nil {
		d.events.NotifyJoin(node)
	}
}

func (d *delegate) NotifyUpdate(node *ml.Node) {
	d.n.set(node)
	if d.events != nil {
		d.events.NotifyUpdate(node)
	}
}

func (d *delegate) NotifyLeave(node *ml.Node) {
	n := d.n
	n.mu.Lock()
	if _, ok := n.peers[node.Name]; ok {
		delete(n.peers, node.Name)
		n.changed()
	}
	n.mu.Unlock()
	if d.events != nil {
		d.events.NotifyLeave(node)
	}
}

func (d *delegate) AckPayload() []byte {
	if d.ping != nil {
		return d.ping.AckPayload()
	}
	return nil
}

// NotifyPingComplete: a peer answered a probe.
func (d *delegate) NotifyPingComplete(other *ml.Node, rtt time.Duration, payload []byte) {
	d.n.confirm()
	if d.ping != nil {
		d.ping.NotifyPingComplete(other, rtt, payload)
	}
}

// set records what node announces.
func (n *Node) set(node *ml.Node) {
	p := peer{meta: string(node.Meta), addr: node.Address()}
	n.mu.Lock()
	if old, ok := n.peers[node.Name]; !ok || old != p {
		n.peers[node.Name] = p
		n.changed()
	}
	n.mu.Unlock()
}

// specState is the cluster's placement spec register: the spec with the
// highest stamp wins, the publisher's name breaking ties; a nil Spec with
// a stamp is a removal.
type specState struct {
	Stamp uint64       `json:"stamp"`
	By    string       `json:"by"`
	Spec  *member.Spec `json:"spec"`
}

func (s specState) newer(o specState) bool {
	return s.Stamp > o.Stamp || s.Stamp == o.Stamp && s.By > o.By
}

func (s specState) encode() []byte {
	b, _ := json.Marshal(s) // a checked spec always marshals
	return append([]byte{specMessage}, b...)
}

// specBroadcast is a spec state to broadcast; a newer one replaces it in
// the queue.
type specBroadcast []byte

func (b specBroadcast) Invalidates(o ml.Broadcast) bool { _, ok := o.(specBroadcast); return ok }
func (b specBroadcast) Message() []byte                 { return b }
func (b specBroadcast) Finished()                       {}

// specBytes returns the spec state held, or nil if none was published.
func (n *Node) specBytes() []byte {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.spec.Stamp == 0 {
		return nil
	}
	return n.spec.encode()
}

// merge keeps a spec state received if it is newer than the one held,
// and broadcasts it again.
func (n *Node) merge(b []byte, how string) {
	var s specState
	if err := json.Unmarshal(b, &s); err != nil {
		n.report(fmt.Errorf("memberlist: %s: spec from a %s: %w", n.name, how, wrapSpec(err)))
		return
	}
	n.mu.Lock()
	newer := s.Stamp > 0 && s.newer(n.spec)
	if newer {
		n.spec = s
		n.changed()
	}
	n.mu.Unlock()
	if newer {
		n.queue.QueueBroadcast(specBroadcast(s.encode()))
	}
}

// wrapSpec makes err wrap member.ErrBadSpec.
func wrapSpec(err error) error {
	if errors.Is(err, member.ErrBadSpec) {
		return err
	}
	return fmt.Errorf("%w: %v", member.ErrBadSpec, err)
}

// Publish makes s the cluster's placement spec (nil removes it): it
// stamps it one above the stamp this node holds and broadcasts it; the
// nodes converge on it as the package doc says, and watchers given a nil
// Builder build with it. It fails with member.ErrBadSpec if s is not
// valid. It names the hasher seed, never the secret. (A stamp at its
// largest value stays there, and the publisher's name decides.)
func (n *Node) Publish(s *member.Spec) error {
	if !n.started() {
		return errNoNode
	}
	if s != nil {
		if err := s.Check(); err != nil {
			return err
		}
		c := *s
		s = &c
	}
	n.mu.Lock()
	n.spec = specState{Stamp: n.spec.Stamp + min(1, math.MaxUint64-n.spec.Stamp), By: n.name, Spec: s}
	st := n.spec
	n.changed()
	n.mu.Unlock()
	n.queue.QueueBroadcast(specBroadcast(st.encode()))
	return nil
}

// Spec returns the cluster's placement spec as this node holds it, or nil
// (also for a nil Node).
func (n *Node) Spec() *member.Spec {
	if n == nil {
		return nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.spec.Spec == nil {
		return nil
	}
	c := *n.spec.Spec
	return &c
}
