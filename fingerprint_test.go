package chash_test

import (
	"fmt"
	"math/rand"
	"regexp"
	"slices"
	"testing"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/chashtest"
	"github.com/keyplace/chash/internal/conformance"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fpNodes returns n nodes of weights 1 to 3.
func fpNodes(n int) []chash.Node {
	nodes := make([]chash.Node, n)
	for i := range nodes {
		nodes[i] = chash.Node{ID: fmt.Sprintf("node-%03d", i), Weight: float64(1 + i%3)}
	}
	return nodes
}

func fpBuild(t testing.TB, a chash.Algorithm, nodes []chash.Node, opts ...chash.Option) chash.Placer {
	t.Helper()
	p, err := chash.New(a, nodes, opts...)
	require.NoError(t, err)
	return p
}

// equalNodes returns n nodes of weight 1, for algorithms that need equal weights.
func fpEqual(n int) []chash.Node { return chashtest.Nodes(n) }

func fpNodesFor(a chash.Algorithm, n int) []chash.Node {
	if !a.Weighted() {
		return fpEqual(n)
	}
	return fpNodes(n)
}

var fpFormat = regexp.MustCompile(`^(ring|rendezvous|jump|jumpback|maglev|bounded|memento|anchor|dx|binomial|flip|jumpbackanchor|choosek|shardmap|placer)-[0-9a-f]{16}$`)

func TestFingerprintEqualPlacements(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for _, a := range chash.Algorithms() {
		nodes := fpNodesFor(a, 12)
		p := fpBuild(t, a, nodes)
		fp := chash.Fingerprint(p)
		assert.Regexp(t, fpFormat, fp)
		assert.Equal(t, fp, chash.Fingerprint(fpBuild(t, a, nodes)), "%v rebuilt", a)
		assert.Equal(t, fp, chash.Fingerprint(chash.NewHolder(p)), "%v in a holder", a)
		if !a.Positional() && !a.Stateful() { // their order is the bucket numbering
			shuffled := slices.Clone(nodes)
			rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
			q := fpBuild(t, a, shuffled)
			assert.Equal(t, fp, chash.Fingerprint(q), "%v shuffled", a)
			fpSamePlacement(t, p, q)
		}
	}
}

// samePlacement checks over many keys what equal fingerprints promise.
func fpSamePlacement(t *testing.T, p, q chash.Placer) {
	t.Helper()
	for i := range 2000 {
		k := fmt.Sprintf("key-%d", i)
		require.Equal(t, p.AppendTopKString(nil, k, 3), q.AppendTopKString(nil, k, 3), k)
	}
}

func TestFingerprintIgnoresWhatDoesNotPlace(t *testing.T) {
	nodes := fpNodes(8)
	same := func(a chash.Algorithm, base, other []chash.Option) {
		t.Helper()
		p, q := fpBuild(t, a, nodes, base...), fpBuild(t, a, nodes, other...)
		assert.Equal(t, chash.Fingerprint(p), chash.Fingerprint(q))
		fpSamePlacement(t, p, q)
	}
	same(chash.AlgorithmRing, nil, []chash.Option{chash.WithTableSize(101), chash.WithPartitions(64)})
	same(chash.AlgorithmRing, nil, []chash.Option{chash.WithVnodes(chash.DefaultVnodes)})
	same(chash.AlgorithmRing, nil, []chash.Option{chash.WithHasher(chash.XXHashSeed(0))})
	same(chash.AlgorithmRing, nil, []chash.Option{chash.WithWeightUnit(1)})
	same(chash.AlgorithmRendezvous, nil, []chash.Option{chash.WithVnodes(3), chash.WithLoadFactor(2)})
	same(chash.AlgorithmMaglev, nil, []chash.Option{chash.WithTableSize(chash.DefaultTableSize)})
	same(chash.AlgorithmBounded, nil, []chash.Option{chash.WithLoadFactor(chash.DefaultLoadFactor)})

	zero := []chash.Node{{ID: "a"}, {ID: "b", Weight: 2}}
	one := []chash.Node{{ID: "a", Weight: 1}, {ID: "b", Weight: 2}}
	for _, a := range []chash.Algorithm{chash.AlgorithmRing, chash.AlgorithmRendezvous, chash.AlgorithmMaglev, chash.AlgorithmBounded} {
		assert.Equal(t, chash.Fingerprint(fpBuild(t, a, zero)), chash.Fingerprint(fpBuild(t, a, one)), "%v: weight 0 is 1", a)
	}
}

// fpHasher is a custom Hasher: xxhash of the key, plus one.
type fpHasher struct{}

func (fpHasher) Sum64(b []byte) uint64       { return chash.XXHash.Sum64(b) + 1 }
func (fpHasher) Sum64String(s string) uint64 { return chash.XXHash.Sum64String(s) + 1 }

func TestFingerprintDiffers(t *testing.T) {
	nodes := fpNodes(8)
	seen := map[string]string{}
	add := func(name string, p chash.Placer) {
		t.Helper()
		fp := chash.Fingerprint(p)
		require.NotEqual(t, chash.FingerprintNone, fp, name)
		if prev, ok := seen[fp]; ok {
			t.Errorf("%s and %s share fingerprint %s", prev, name, fp)
		}
		seen[fp] = name
	}
	for _, a := range chash.Algorithms() {
		ns := fpNodesFor(a, 8)
		add(a.String(), fpBuild(t, a, ns))
		add(a.String()+" seed 1", fpBuild(t, a, ns, chash.WithHasher(chash.XXHashSeed(1))))
		add(a.String()+" seed 2", fpBuild(t, a, ns, chash.WithHasher(chash.XXHashSeed(2))))
		add(a.String()+" custom hasher", fpBuild(t, a, ns, chash.WithHasher(fpHasher{})))
		add(a.String()+" one more node", fpBuild(t, a, fpNodesFor(a, 9)))
		add(a.String()+" one node fewer", fpBuild(t, a, ns[1:]))
		renamed := slices.Clone(ns)
		renamed[3].ID = "renamed"
		add(a.String()+" renamed", fpBuild(t, a, renamed))
	}
	for i := range 3 {
		heavier := slices.Clone(nodes)
		heavier[i].Weight += 0.5
		for _, a := range []chash.Algorithm{chash.AlgorithmRing, chash.AlgorithmRendezvous, chash.AlgorithmMaglev, chash.AlgorithmBounded} {
			add(fmt.Sprintf("%v node %d heavier", a, i), fpBuild(t, a, heavier))
		}
	}
	add("jump weight 2", fpBuild(t, chash.AlgorithmJump, []chash.Node{{ID: "node-0", Weight: 2}, {ID: "node-1", Weight: 2}}))
	reordered := fpEqual(8)
	reordered[0], reordered[7] = reordered[7], reordered[0]
	add("jump reordered", fpBuild(t, chash.AlgorithmJump, reordered))
	add("ring vnodes 100", fpBuild(t, chash.AlgorithmRing, nodes, chash.WithVnodes(100)))
	for _, v := range []chash.KetamaVariant{chash.KetamaLibketama, chash.KetamaLibmemcached, chash.KetamaSpy} {
		add("ring "+v.String(), fpBuild(t, chash.AlgorithmRing, fpEqual(8), chash.WithKetama(v)))
	}
	add("maglev 101", fpBuild(t, chash.AlgorithmMaglev, nodes, chash.WithTableSize(101)))
	add("bounded 64 partitions", fpBuild(t, chash.AlgorithmBounded, nodes, chash.WithPartitions(64)))
	add("bounded load 1.5", fpBuild(t, chash.AlgorithmBounded, nodes, chash.WithLoadFactor(1.5)))
	add("foreign", fpForeign{fpBuild(t, chash.AlgorithmRing, nodes)})
	add("foreign maglev", fpForeign{fpBuild(t, chash.AlgorithmMaglev, nodes)})
}

// fpForeign is a Placer of a type the package does not know.
type fpForeign struct{ chash.Placer }

// fpBroken is a Placer whose every method panics.
type fpBroken struct{ chash.Placer }

func TestFingerprintNeverPanics(t *testing.T) {
	var h chash.Holder
	self := chash.NewHolder(nil)
	self.Store(self)
	for name, p := range map[string]chash.Placer{
		"nil":              nil,
		"nil ring":         (*chash.Ring)(nil),
		"nil rendezvous":   (*chash.Rendezvous)(nil),
		"nil jump":         (*chash.Jump)(nil),
		"nil maglev":       (*chash.Maglev)(nil),
		"nil bounded":      (*chash.Bounded)(nil),
		"nil holder":       (*chash.Holder)(nil),
		"zero ring":        &chash.Ring{},
		"zero rendezvous":  &chash.Rendezvous{},
		"zero jump":        &chash.Jump{},
		"zero maglev":      &chash.Maglev{},
		"zero bounded":     &chash.Bounded{},
		"empty holder":     &h,
		"self holder":      self,
		"holder of nil":    chash.NewHolder((*chash.Ring)(nil)),
		"foreign of empty": fpForeign{&chash.Ring{}},
	} {
		assert.Equal(t, chash.FingerprintNone, chash.Fingerprint(p), name)
	}
	assert.Regexp(t, fpFormat, chash.Fingerprint(fpBroken{}), "a placer that panics")
}

// fpLoader serves the placer it loads, as a Holder does.
type fpLoader struct{ fpForeign }

func (l fpLoader) Load() chash.Placer { return l.Placer }

func TestFingerprintLoader(t *testing.T) {
	p := fpBuild(t, chash.AlgorithmBounded, fpNodes(8))
	assert.Equal(t, chash.Fingerprint(p), chash.Fingerprint(fpLoader{fpForeign{p}}))
	assert.Equal(t, chash.FingerprintNone, chash.Fingerprint(fpLoader{}))
	// A typed nil places no key, whatever its methods would do.
	assert.Equal(t, chash.FingerprintNone, chash.Fingerprint((*fpNilLoader)(nil)), "a typed nil whose Load panics")
}

// fpNilLoader's Load panics on a nil receiver.
type fpNilLoader struct{ fpForeign }

func (l *fpNilLoader) Load() chash.Placer { return l.Placer }

func TestFingerprintForeign(t *testing.T) {
	a, b := fpBuild(t, chash.AlgorithmRing, fpNodes(8)), fpBuild(t, chash.AlgorithmRing, fpNodes(9))
	assert.Equal(t, chash.Fingerprint(fpForeign{a}), chash.Fingerprint(fpForeign{fpBuild(t, chash.AlgorithmRing, fpNodes(8))}))
	assert.NotEqual(t, chash.Fingerprint(fpForeign{a}), chash.Fingerprint(fpForeign{b}))
	// Same members, different placement: the probes tell them apart.
	c := fpBuild(t, chash.AlgorithmRing, fpNodes(8), chash.WithHasher(chash.XXHashSeed(5)))
	assert.NotEqual(t, chash.Fingerprint(fpForeign{a}), chash.Fingerprint(fpForeign{c}))
}

func TestFingerprintAllocs(t *testing.T) {
	p := fpBuild(t, chash.AlgorithmMaglev, fpNodes(1000))
	allocs := testing.AllocsPerRun(20, func() { chash.Fingerprint(p) })
	assert.LessOrEqual(t, allocs, 8.0, "a known placer's digest allocates a few buffers, not per node")
}

func BenchmarkFingerprint(b *testing.B) {
	for _, a := range chash.Algorithms() {
		p := fpBuild(b, a, fpNodesFor(a, 1000))
		b.Run(a.String()+"/1000", func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				chash.Fingerprint(p)
			}
		})
	}
	p := fpForeign{fpBuild(b, chash.AlgorithmRing, fpNodes(1000))}
	b.Run("foreign/1000", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			chash.Fingerprint(p)
		}
	})
}

// Two processes that built their placers from the same members, in any
// order, agree; one that missed a join does not.
func ExampleFingerprint() {
	a, _ := chash.NewMaglev([]chash.Node{{ID: "n1"}, {ID: "n2"}, {ID: "n3"}})
	b, _ := chash.NewMaglev([]chash.Node{{ID: "n3"}, {ID: "n1"}, {ID: "n2"}})
	c, _ := chash.NewMaglev([]chash.Node{{ID: "n1"}, {ID: "n2"}})
	fmt.Println(chash.Fingerprint(a) == chash.Fingerprint(b))
	fmt.Println(chash.Fingerprint(a) == chash.Fingerprint(c))
	fmt.Println(chash.Fingerprint(a))
	// Output:
	// true
	// false
	// maglev-82633999382ab1ad
}

// TestFingerprintZones: a Zoned's lists depend on its members' zones, so a
// change of zone changes its fingerprint (but not the wrapped placer's);
// a Migration has its target's.
func TestFingerprintZones(t *testing.T) {
	nodes := conformance.ZonedNodes(6, 3)
	moved := slices.Clone(nodes)
	moved[0].Zone = "z1"
	for _, a := range chash.Algorithms() {
		p, err := chash.New(a, nodes)
		require.NoError(t, err)
		q, err := chash.New(a, moved)
		require.NoError(t, err)
		require.Equal(t, chash.Fingerprint(p), chash.Fingerprint(q), a)
		zp, err := chash.NewZoned(p)
		require.NoError(t, err)
		zq, err := chash.NewZoned(q)
		require.NoError(t, err)
		assert.NotEqual(t, chash.Fingerprint(zp), chash.Fingerprint(zq), a)
		assert.Regexp(t, "^zoned-", chash.Fingerprint(zp))
		m, err := chash.NewMigration(q, p)
		require.NoError(t, err)
		assert.Equal(t, chash.Fingerprint(p), chash.Fingerprint(m), a)
	}
}
