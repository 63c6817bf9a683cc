package memberlist

import (
	"fmt"
	"sync"
	"time"

	ml "github.com/hashicorp/memberlist"
	"github.com/keyplace/chash"
	"github.com/keyplace/chash/member"
)

// Node is this process's node in a memberlist cluster: a member (Join) or
// an observer (Observe). It holds the cluster's members as its memberlist
// reports them and the cluster's placement spec, and hands them to the
// sources it makes (Source, Watch). Its methods are safe for concurrent
// use. A nil or zero Node is not usable: build one with Join or Observe.
type Node struct {
	list     *ml.Memberlist
	name     string
	interval time.Duration // the probe interval: how often a peer answers
	hooks    []func(error)
	queue    *ml.TransmitLimitedQueue

	mu    sync.Mutex
	meta  []byte          // the member's JSON; nil for an observer
	peers map[string]peer // alive and suspect nodes, by name, self included
	spec  specState
	gen   uint64        // raised on each change of peers or spec
	heard uint64        // raised on each word from a peer
	wake  chan struct{} // closed and replaced on each change and word
}

// peer is what a node announces: its metadata and gossip address.
type peer struct {
	meta string
	addr string
}

// Option configures a Node.
type Option func(*Node)

// WithErrorHook adds a function that receives what the node cannot use:
// spec messages from peers that do not parse (member.ErrBadSpec). Members
// that are not valid are reported by the sources, to their watchers. It
// is called from memberlist's goroutines and must not block; a nil f is
// ignored.
func WithErrorHook(f func(error)) Option {
	return func(n *Node) {
		if f != nil {
			n.hooks = append(n.hooks, f)
		}
	}
}

func (n *Node) report(err error) {
	for _, f := range n.hooks {
		f(err)
	}
}

// Join starts a memberlist node for m, named m.ID, announcing the JSON of
// m as its metadata, and joins the cluster through seeds ("host:port" of
// any of its nodes; none starts a new cluster). cfg configures memberlist
// and is copied; its Name is replaced by m.ID; Join sets its Delegate,
// which must be nil, and its Events and Ping delegates, calling the ones
// cfg has after its own. The confirmation interval of the node's sources
// is cfg.ProbeInterval.
//
// It fails with an error wrapping member.ErrBadMember if m is not valid or
// its JSON is longer than memberlist.MetaMaxSize (512 bytes), with
// chash.ErrInvalidOption for a nil cfg or one with a Delegate, and if
// memberlist cannot start or no seed answers (the node is then shut down).
func Join(cfg *ml.Config, m member.Member, seeds []string, opts ...Option) (*Node, error) {
	meta, err := encode(m)
	if err != nil {
		return nil, err
	}
	return start(cfg, m.ID, meta, seeds, opts)
}

// Observe starts a memberlist node that follows the cluster without being
// a member: it announces no metadata, so no key is placed on it. It is
// named cfg.Name, which must be unique in the cluster and not a member's
// ID (memberlist.DefaultLANConfig names every node of a host alike: set
// one per process). Otherwise it is as Join.
func Observe(cfg *ml.Config, seeds []string, opts ...Option) (*Node, error) {
	if cfg == nil || cfg.Name == "" {
		return nil, fmt.Errorf("%w: memberlist: observe: a config with a Name", chash.ErrInvalidOption)
	}
	return start(cfg, cfg.Name, nil, seeds, opts)
}

// encode returns m's metadata: its JSON, within memberlist's limit.
func encode(m member.Member) ([]byte, error) {
	b, err := member.EncodeJSON(m)
	if err != nil {
		return nil, err
	}
	if len(b) > ml.MetaMaxSize {
		return nil, fmt.Errorf("%w: memberlist: %q: JSON of %d bytes, over memberlist's %d of node metadata",
			member.ErrBadMember, m.ID, len(b), ml.MetaMaxSize)
	}
	return b, nil
}

func start(cfg *ml.Config, name string, meta []byte, seeds []string, opts []Option) (*Node, error) {
	if cfg == nil {
		return nil, fmt.Errorf("%w: memberlist: nil config", chash.ErrInvalidOption)
	}
	if cfg.Delegate != nil {
		return nil, fmt.Errorf("%w: memberlist: the config has a Delegate: the node's metadata and state are this package's", chash.ErrInvalidOption)
	}
	n := &Node{name: name, meta: meta, interval: max(cfg.ProbeInterval, 10*time.Millisecond),
		peers: map[string]peer{}, wake: make(chan struct{})}
	for _, o := range opts {
		if o != nil {
			o(n)
		}
	}
	n.queue = &ml.TransmitLimitedQueue{NumNodes: n.numPeers, RetransmitMult: max(cfg.RetransmitMult, 1)}
	c := *cfg
	c.Name = name
	d := &delegate{n: n, events: cfg.Events, ping: cfg.Ping}
	c.Delegate, c.Events, c.Ping = d, d, d
	list, err := ml.Create(&c)
	if err != nil {
		return nil, fmt.Errorf("memberlist: start %s: %w", name, err)
	}
	n.list = list
	if len(seeds) > 0 {
		if _, err := list.Join(seeds); err != nil {
			list.Shutdown()
			return nil, fmt.Errorf("memberlist: %s: join %v: %w", name, seeds, err)
		}
	}
	return n, nil
}

// errNoNode is the error of a call on a nil or zero Node.
var errNoNode = fmt.Errorf("%w: memberlist: a nil or zero Node (build one with Join or Observe)", chash.ErrInvalidOption)

// started reports whether n was built by Join or Observe.
func (n *Node) started() bool { return n != nil && n.list != nil }

// Name returns the node's name in the cluster: its member's ID. Empty for
// a nil Node.
func (n *Node) Name() string {
	if n == nil {
		return ""
	}
	return n.name
}

// Addr returns the node's gossip address, "ip:port", where other nodes
// can join the cluster. Empty for a nil or zero Node.
func (n *Node) Addr() string {
	if !n.started() {
		return ""
	}
	return n.list.LocalNode().Address()
}

// Memberlist returns the node's memberlist, for what this package does
// not cover (its health score, user messages), or nil for a nil or zero
// Node. Do not Shutdown it behind the Node's back: use Leave or Shutdown.
func (n *Node) Memberlist() *ml.Memberlist {
	if n == nil {
		return nil
	}
	return n.list
}

// Update announces m, which must have the node's ID, in place of the
// member announced so far (a new weight, zone or address), and waits until
// the update is broadcast or timeout passes. It fails with
// member.ErrBadMember as Join does, and for an observer.
func (n *Node) Update(m member.Member, timeout time.Duration) error {
	if !n.started() {
		return errNoNode
	}
	meta, err := encode(m)
	if err != nil {
		return err
	}
	n.mu.Lock()
	switch {
	case n.meta == nil:
		n.mu.Unlock()
		return fmt.Errorf("memberlist: update %s: an observer announces no member", n.name)
	case m.ID != n.name:
		n.mu.Unlock()
		return fmt.Errorf("%w: memberlist: update %s with ID %q: the ID cannot change", member.ErrBadMember, n.name, m.ID)
	}
	n.meta = meta
	n.mu.Unlock()
	if err := n.list.UpdateNode(timeout); err != nil {
		return fmt.Errorf("memberlist: update %s: %w", n.name, err)
	}
	return nil
}

// Leave announces that the node leaves, waits until the announcement is
// broadcast or timeout passes, and shuts the node down. The other nodes
// drop it at once, without waiting for failure detection. Its watchers
// keep their last view. Leaving again, or a nil or zero Node, does
// nothing.
func (n *Node) Leave(timeout time.Duration) error {
	if !n.started() {
		return nil
	}
	err := n.list.Leave(timeout)
	n.list.Shutdown()
	if err != nil {
		return fmt.Errorf("memberlist: leave %s: %w", n.name, err)
	}
	return nil
}

// Shutdown stops the node without announcing it: the others find it gone
// by failure detection, as after a crash. Calling it again, or after
// Leave, or on a nil or zero Node, does nothing.
func (n *Node) Shutdown() error {
	if !n.started() {
		return nil
	}
	return n.list.Shutdown()
}

// numPeers is the cluster size the broadcast queue scales its
// retransmissions by.
func (n *Node) numPeers() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return max(len(n.peers), 1)
}

// changed records a change of peers or spec and wakes the sources; n.mu
// is held.
func (n *Node) changed() {
	n.gen++
	n.signal()
}

// signal wakes the sources; n.mu is held.
func (n *Node) signal() {
	close(n.wake)
	n.wake = make(chan struct{})
}

// confirm records a word from a peer.
func (n *Node) confirm() {
	n.mu.Lock()
	n.heard++
	n.signal()
	n.mu.Unlock()
}
