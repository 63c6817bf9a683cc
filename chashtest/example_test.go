package chashtest_test

import (
	"fmt"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/chashtest"
)

// Modulo is a placer written outside the chash module: a key's node is its
// hash modulo n, in the order the nodes were given, and its next choices
// follow from further hashes of the key. It keeps the interface's rules,
// but any change of membership moves most keys.
type Modulo struct{ nodes []chash.Node }

// NewModulo validates nodes as chash's constructors do; Modulo has no
// weights.
func NewModulo(nodes []chash.Node) (*Modulo, error) {
	ns, err := chash.CheckNodes(nodes)
	if err != nil {
		return nil, err
	}
	for _, n := range ns {
		if n.Weight != 1 {
			return nil, fmt.Errorf("%w: node %q: modulo has no weights", chash.ErrInvalidWeight, n.ID)
		}
	}
	return &Modulo{nodes: ns}, nil
}

// moduloSpec is what a test of Modulo gives chashtest.TestPlacer:
//
//	func TestContract(t *testing.T) { chashtest.TestPlacer(t, moduloSpec) }
var moduloSpec = chashtest.Spec{
	New: func(nodes []chash.Node) (chash.Placer, error) {
		m, err := NewModulo(nodes)
		if err != nil {
			return nil, err
		}
		return m, nil
	},
	Zero: &Modulo{},
	// The node order is the placement, and no change is minimal: keys
	// move between untouched nodes.
	Ordered:    true,
	Collateral: 1,
	// A node's load strays only by sampling noise.
	MaxCV: 0.02, MaxPeak: 1.05, ShareTol: 0.05,
}

func Example() {
	p, err := moduloSpec.New(chashtest.Nodes(3))
	if err != nil {
		panic(err)
	}
	for _, key := range chashtest.Keys(3) {
		fmt.Print(key, ":")
		for _, n := range p.AppendTopKString(nil, key, 3) {
			fmt.Print(" ", n.ID)
		}
		fmt.Println()
	}
	// Output:
	// user:0:profile: node-0 node-2 node-1
	// user:1:profile: node-1 node-2 node-0
	// user:2:profile: node-1 node-0 node-2
}

// Positional declares that the placement depends on the order of the
// nodes given, as chash.IsPositional reads it: routers and client adapters
// then refuse to build a Modulo from a list whose order they do not
// control.
func (m *Modulo) Positional() bool { return true }

func (m *Modulo) Lookup(key []byte) chash.Node       { return m.lookup(hash(key)) }
func (m *Modulo) LookupString(key string) chash.Node { return m.lookup(hash(key)) }

func (m *Modulo) AppendTopK(dst []chash.Node, key []byte, k int) []chash.Node {
	return m.appendTopK(dst, hash(key), k)
}

func (m *Modulo) AppendTopKString(dst []chash.Node, key string, k int) []chash.Node {
	return m.appendTopK(dst, hash(key), k)
}

func (m *Modulo) Nodes() []chash.Node {
	if m == nil {
		return nil
	}
	return append([]chash.Node(nil), m.nodes...)
}

func (m *Modulo) Len() int {
	if m == nil {
		return 0
	}
	return len(m.nodes)
}

func (m *Modulo) lookup(h uint64) chash.Node {
	if m.Len() == 0 {
		return chash.Node{}
	}
	return m.nodes[h%uint64(len(m.nodes))]
}

// appendTopK appends the nodes in the key's order: choice j is the one of
// rank h_j mod (n-j) among the nodes not yet chosen, h_0 the key's hash
// and h_j+1 a mix of h_j.
func (m *Modulo) appendTopK(dst []chash.Node, h uint64, k int) []chash.Node {
	k = min(k, m.Len())
	start := len(dst)
	for j := 0; j < k; j++ {
		r := h % uint64(len(m.nodes)-j)
		for _, n := range m.nodes {
			if chosen(dst[start:], n.ID) {
				continue
			}
			if r == 0 {
				dst = append(dst, n)
				break
			}
			r--
		}
		h = mix(h + 0x9e3779b97f4a7c15)
	}
	return dst
}

func chosen(list []chash.Node, id string) bool {
	for _, n := range list {
		if n.ID == id {
			return true
		}
	}
	return false
}

// hash is FNV-1a, mixed.
func hash[K string | []byte](key K) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(key); i++ {
		h = (h ^ uint64(key[i])) * 1099511628211
	}
	return mix(h)
}

// mix is the SplitMix64 finalizer.
func mix(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
