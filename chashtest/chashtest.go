// Package chashtest checks implementations of [chash.Placer] against the
// contract every placer of the chash module keeps, in the manner of
// testing/fstest.TestFS: a test describes its placer in a [Spec] and
// [TestPlacer] runs the whole contract as named subtests. Every placer of
// the module runs it (each in a test named TestContract...), and a placer
// written outside the module can run it the same way.
//
// The contract has two parts. The rules of the interface hold for every
// placer: Lookup and LookupString agree, AppendTopK appends (and never
// overwrites or reads back) up to k distinct members in one preference
// order led by Lookup's node, Nodes and Len agree, lookups do not allocate,
// concurrent reads are race-free, the zero value and the nil pointer
// behave as an empty placer and never panic, constructors refuse a nil
// placer with [chash.ErrNilPlacer], and [chash.Fingerprint] is
// [chash.FingerprintNone] for an empty placer and equal for two placers
// exactly when they place the probe keys alike. The properties of
// consistent placement are measured over many keys, against the bounds the
// Spec declares, since algorithms differ: balance, the share a node added
// or removed takes or gives up, keys moved between untouched nodes,
// honoured weights and the spread of second choices.
//
// A placer that lacks a property declares it rather than failing: Ordered
// for one whose node order is its placement (jump's buckets), Collateral 1
// for one with no minimal disruption (hash modulo n), and so on; see
// [Spec].
//
// The package imports only the standard library and the chash module, and
// reports through the testing package, so that users can import it.
package chashtest

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/keyplace/chash"
)

// Spec describes a placer under test: how to build it, what it declares
// about itself and the bounds it promises. Only New is required.
//
// The bounds are for the suite's full run, which places 100,000 keys. In
// -short mode, and under the race detector (which is there for races, not
// statistics), the suite places 20,000 keys and widens each bound by the
// sampling noise at that count: a bound b becomes √(b² + (zσ)²), σ the
// standard deviation at 20,000 keys of what it bounds and z from 2 (for
// the CV, an average over nodes) to 4.5 (for a maximum over nodes), so
// that a placer meeting b fails on noise about once in 10⁴ runs.
type Spec struct {
	// New builds the placer from nodes, with the algorithm's options
	// already bound. On error it may return a nil Placer or a typed nil.
	New func(nodes []chash.Node) (chash.Placer, error)

	// Zero is the zero value of the placer's type, such as
	// &compat.Caddy{}. The suite takes the type from it and checks a
	// fresh zero value and the nil pointer of that type, made by
	// reflection (for a type that is not a pointer, Zero itself and the
	// type's own zero value): both must behave as an empty placer. Nil
	// means the type New returns.
	Zero chash.Placer
	// NilPanics names methods documented to panic on a nil pointer of the
	// type (Holder's Store and Swap), which the Empty case does not call
	// on it. The zero value must still accept them.
	NilPanics []string

	// Nodes, when set, returns the suite's n nodes, for placers whose IDs
	// must have a shape (compatibility placers hash "host:port"). Its
	// first m nodes must be Nodes(m), and their weights 0 or 1. Nil means
	// the package's Nodes, with zones z0, z1, z2 in turn when ZoneAware.
	Nodes func(n int) []chash.Node
	// Keys, when set, returns n distinct keys for the placer. Nil means
	// the package's Keys.
	Keys func(n int) []string

	// Ordered is set when the node order is part of the placement (jump:
	// node i is bucket i). The suite then checks that Nodes keeps the
	// given order, instead of checking independence from input order.
	Ordered bool
	// KeepsOrder is set when Nodes reports the members in the order given
	// although the placement does not depend on it (as for the compat
	// placers of systems that list servers in order and break only exact
	// ties by it). Ordered implies it.
	KeepsOrder bool
	// Weighted is set when unequal weights are supported. When it is not,
	// the suite checks that unequal weights are rejected with
	// ErrInvalidWeight.
	Weighted bool
	// RemoveLast is set when only the last node can be removed without
	// renumbering (jump): the removal tests remove the last node.
	RemoveLast bool
	// ZoneAware is set when AppendTopK spans failure domains (Zoned): its
	// first k nodes are in min(k, z) distinct domains of the z there are,
	// and second choices spread over the nodes of the other domains.
	ZoneAware bool
	// Derive is set when chash.Derive supports the placer: the suite
	// checks that it places as New does for the new members (as Next
	// does, when set).
	Derive bool

	// MaxCV and MaxPeak bound the coefficient of variation and the
	// peak/mean of the load of 10 equal nodes over the suite's keys
	// (sampling noise at 10,000 keys a node is about 1%). Zero means 0.12
	// and 1.25, which a ring of 160 points a node meets.
	MaxCV, MaxPeak float64
	// ShareTol bounds |share/expected - 1| for weighted shares (weights
	// 1:2:3:4), and, with 2·MaxCV if that is larger, for the share a node
	// added to 10 takes (1/11) and the share of a node removed from 10
	// (1/10), not counting collateral moves. Zero means 0.3.
	ShareTol float64
	// Collateral bounds the fraction of all keys that may move between
	// nodes other than the one added, removed or reweighted. Zero demands
	// that none move; 1 declares no minimal disruption at all (modulo
	// placement), and the suite then checks only the shares.
	Collateral float64
	// Spread bounds how concentrated second choices are: for the keys
	// whose first choice is a node, no other node may take more than
	// Spread/(n-1) of them as second choice, and every other node must
	// take some. Zero means 2.5. A Spread of 9 or more (one node taking
	// the share of the suite's 9 others) declares that a node's keys may
	// all have the same second choice, as when the next choice is the
	// next server of a list, and turns the check off.
	Spread float64

	// WeightTVD bounds the total variation distance between shares and
	// w/Σw over random weight vectors (see the WeightVectors case). Zero
	// means 0.03.
	WeightTVD float64
	// NewScaled, when set, builds the placer with weights counted in the
	// given unit, for placers whose weights are not scale-free (a ring,
	// or a system whose weights are whole numbers): a vector New rejects
	// must then be accepted and honoured in its smallest weight's unit.
	NewScaled func(nodes []chash.Node, unit float64) (chash.Placer, error)

	// Add and Remove, when set, derive a placer from another (its Add and
	// Remove methods); the suite checks the result places every key as
	// the placer it compares with does (New's, or Next's).
	Add    func(p chash.Placer, n chash.Node) (chash.Placer, error)
	Remove func(p chash.Placer, id string) (chash.Placer, error)
	// Next, when set, is how the placement moves to a new membership when
	// it depends on its history, such as a shard map's Rebalance: the
	// suite measures a join, a departure or a reweight as the move from p
	// to Next(p, nodes) instead of to New(nodes).
	Next func(p chash.Placer, nodes []chash.Node) (chash.Placer, error)

	// Variants build placers of the same type with other settings (other
	// ring or table sizes, seeds), over any nodes. With the suite's own
	// builds they must have equal fingerprints exactly when they place
	// the probe keys alike.
	Variants []func() (chash.Placer, error)

	// Wrap, when set, marks the placer as a wrapper of another (a Zoned, a
	// Migration): Wrap(inner) builds it over inner. The Views case builds
	// it over a *chash.Holder whose placer then changes: the wrapper must
	// follow the Holder or refuse it with ErrInvalidOption.
	Wrap func(inner chash.Placer) (chash.Placer, error)

	// MaxTopKRatio bounds, in BenchmarkPlacer, the time of a list of every
	// member against a plain ring's. Zero means 50.
	MaxTopKRatio float64
}

// TestPlacer runs the whole contract on the placer s describes, each case
// a subtest that -run can select (TestContract/Balance):
//
//   - BadInput: New refuses no nodes, an empty or repeated ID, a
//     negative, NaN or infinite weight (and unequal weights unless
//     Weighted) with chash's errors; one node owns every key.
//   - Nodes: Nodes reports the members with effective weights, by ID or
//     in the given order (KeepsOrder), as a copy.
//   - Determinism: placers built alike agree; Lookup and LookupString
//     agree.
//   - Order: the placement does not depend on the order of the nodes
//     given, unless Ordered.
//   - Balance: MaxCV and MaxPeak over 10 nodes.
//   - Add, Remove: a node joining 10 or leaving takes or gives up its
//     share, within ShareTol; at most Collateral of the keys move between
//     the others; Add and Remove agree with New (or Next).
//   - Weights: shares follow weights 1:2:3:4; doubling a weight moves keys
//     only to that node, within Collateral.
//   - TopK: the interface's rules on 10,000 keys (2,000 in a short run;
//     see CheckPlacer), and
//     zone-spanning lists when ZoneAware.
//   - AppendToDst: appending to a dst that holds members, with spare
//     capacity full of them, keeps dst and never reads it, at every k.
//   - TopKSpread: second choices spread over the other nodes (Spread).
//   - TopKPrefix: each key has one preference order: top k is a prefix of
//     top k+1.
//   - WeightVectors: 24 random weight vectors (8 in a short run) are
//     honoured (WeightTVD).
//   - Derive: chash.Derive places as New (or Next) does, when Derive.
//   - Empty: the zero value and the nil pointer are empty placers and no
//     exported method panics on them, called with zero arguments (a
//     canceled Context for a Context; NilPanics are not called on the nil
//     pointer);
//     Fingerprint is FingerprintNone, Diff and Shares fail with
//     ErrNoNodes.
//   - NilPlacer: NewZoned, NewMigration and Derive refuse the nil pointer
//     with ErrNilPlacer.
//   - Fingerprint: equal exactly when members and the top 4 of 2,000 keys
//     are, over the suite's builds and Variants.
//   - Allocs: no allocation in lookups or in AppendTopK into a slice with
//     room (skipped under the race detector and coverage).
//   - Concurrent: concurrent reads see what a single reader sees, and a
//     Holder swapped under readers serves whole placers.
//   - Positional: a placement that depends on the node order (Ordered)
//     says so, to chash.IsPositional (a Positional() bool method) or
//     with a Stateful() bool method; one that does not, does not; a
//     Holder and a Zoned of it answer alike.
//   - Views: a view (a placer with a Load() Placer method) is refused by
//     chash.NewZoned and balance.New with ErrInvalidOption; a wrapper
//     (Wrap) of a Holder follows it or refuses it.
//   - HugeWeights: weights that would size a structure past any bound
//     (129 nodes of 1e9; when Weighted, one of 4e9 among 256 of 1, and
//     1 to 2^57) get an error or a working placer: never a panic, nor
//     more than 1 GiB allocated. CI runs it on 386 too.
//
// Cases that do not apply to what s declares pass at once. A short run
// (-short, or the race detector) checks fewer keys in the cases that check
// each key rather than measure them all.
func TestPlacer(t *testing.T, s Spec) {
	t.Helper()
	if s.New == nil {
		t.Fatal("chashtest: Spec.New is nil")
	}
	su := newSuite(s)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.run(t, su) })
	}
}

// Keys returns n distinct keys shaped like real ones ("user:42:profile"),
// the same on every call: Keys(m) is the first m of Keys(n).
func Keys(n int) []string {
	if n <= len(keyCache()) {
		return slices.Clone(keyCache()[:n])
	}
	return makeKeys(n)
}

func makeKeys(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("user:%d:profile", i)
	}
	return out
}

// keyCache holds the suite's full key set, built once.
var keyCache = sync.OnceValue(func() []string { return makeKeys(fullKeys) })

// Nodes returns n nodes of weight 0 (meaning 1) named node-0, node-1, ...:
// similar names, as fleets have, which a weak hash fails to spread.
func Nodes(n int) []chash.Node {
	out := make([]chash.Node, n)
	for i := range out {
		out[i] = chash.Node{ID: fmt.Sprintf("node-%d", i)}
	}
	return out
}

// zonedNodes is Nodes with zones z0, z1, z2 in turn, the default of a
// ZoneAware Spec.
func zonedNodes(n int) []chash.Node {
	out := Nodes(n)
	for i := range out {
		out[i].Zone = fmt.Sprintf("z%d", i%3)
	}
	return out
}

// CheckTopK checks p's answers for one key: Lookup and LookupString agree
// on a member; AppendTopK and AppendTopKString agree on min(max(k, 0),
// Len) distinct members led by Lookup's node, of which the list for k-1 is
// a prefix; and appending to a slice that already holds nodes keeps them
// and appends the same nodes.
func CheckTopK(t testing.TB, p chash.Placer, key string, k int) {
	t.Helper()
	if err := checkTopK(p, newRoster(p.Nodes()), key, k); err != nil {
		t.Fatal(err)
	}
}

// CheckPlacer checks the interface's rules on one placer: Nodes and Len
// agree, Nodes returns a copy of distinct members of positive weight,
// CheckTopK holds for 2,000 keys at k = 1 and 2 and for 2,000/Len of them
// (at least 20) at k = Len and Len+1, k <= 0
// appends nothing, k = MaxInt appends every member, and (unless under the
// race detector or coverage, whose instrumentation allocates) lookups and
// AppendTopK into a slice with room do not allocate. A placer with no
// members must behave as empty.
func CheckPlacer(t testing.TB, p chash.Placer) {
	t.Helper()
	if err := checkPlacer(p, Keys(2000)); err != nil {
		t.Fatal(err)
	}
	if err := checkAllocs(p); err != nil {
		t.Error(err)
	}
}
