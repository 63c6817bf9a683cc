package memberlist

import (
	"time"

	ml "github.com/hashicorp/memberlist"
)

// Peers returns what n holds of each alive or suspect node: its metadata,
// by name.
func Peers(n *Node) map[string]string {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make(map[string]string, len(n.peers))
	for name, p := range n.peers {
		out[name] = p.meta
	}
	return out
}

// Detached returns a Node with no memberlist, whose peers a test sets
// through its event delegate (Events), as memberlist would: the source and
// watcher alone, without a cluster.
func Detached(interval time.Duration) *Node {
	n := &Node{name: "detached", interval: interval, peers: map[string]peer{}, wake: make(chan struct{})}
	n.queue = &ml.TransmitLimitedQueue{NumNodes: n.numPeers, RetransmitMult: 1}
	return n
}

// Events returns n's memberlist event delegate.
func Events(n *Node) ml.EventDelegate { return &delegate{n: n} }

// Merge hands b to n as a peer's spec state, as a broadcast does.
func Merge(n *Node, b []byte) { (&delegate{n: n}).NotifyMsg(b) }
