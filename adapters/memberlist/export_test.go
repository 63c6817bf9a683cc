package memberlist

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
