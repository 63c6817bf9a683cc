package chash_test

import (
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"testing"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/chashtest"
	"github.com/keyplace/chash/internal/conformance"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// algorithmCase builds one algorithm both through New and through its own
// constructor, with the same options.
type algorithmCase struct {
	name   string
	a      chash.Algorithm
	opts   []chash.Option
	direct func(nodes []chash.Node, opts ...chash.Option) (chash.Placer, error)
}

// direct adapts a constructor to algorithmCase.direct, returning a nil
// Placer rather than a typed nil on error.
func direct[P chash.Placer](f func([]chash.Node, ...chash.Option) (P, error)) func([]chash.Node, ...chash.Option) (chash.Placer, error) {
	return func(nodes []chash.Node, opts ...chash.Option) (chash.Placer, error) {
		p, err := f(nodes, opts...)
		if err != nil {
			return nil, err
		}
		return p, nil
	}
}

func algorithmCases() []algorithmCase {
	seed := chash.WithHasher(chash.XXHashSeed(5))
	return []algorithmCase{
		{"ring", chash.AlgorithmRing, []chash.Option{chash.WithVnodes(40), seed}, direct(chash.NewRing)},
		{"ketama", chash.AlgorithmRing, []chash.Option{chash.WithKetama(chash.KetamaLibmemcached)}, direct(chash.NewRing)},
		{"rendezvous", chash.AlgorithmRendezvous, []chash.Option{seed}, direct(chash.NewRendezvous)},
		{"jump", chash.AlgorithmJump, []chash.Option{seed}, direct(chash.NewJump)},
		{"maglev", chash.AlgorithmMaglev, []chash.Option{chash.WithTableSize(1009), seed}, direct(chash.NewMaglev)},
		{"bounded", chash.AlgorithmBounded, []chash.Option{chash.WithPartitions(2048), chash.WithLoadFactor(1.1), seed}, direct(chash.NewBounded)},
	}
}

// TestNewMatchesConstructors: New(a, ...) builds the concrete type of a,
// placing every key and ranking every top 3 exactly as its constructor
// does with the same options.
func TestNewMatchesConstructors(t *testing.T) {
	keys := chashtest.Keys(20_000)
	for _, tc := range algorithmCases() {
		t.Run(tc.name, func(t *testing.T) {
			nodes := chashtest.Nodes(12)
			if tc.a != chash.AlgorithmJump {
				nodes = weightedNodes(12)
				for i := range nodes {
					nodes[i].Weight = float64(i%4 + 1) // whole numbers, for ketama
				}
			}
			got, err := chash.New(tc.a, nodes, tc.opts...)
			require.NoError(t, err)
			want, err := tc.direct(nodes, tc.opts...)
			require.NoError(t, err)
			require.IsType(t, want, got)
			assert.Equal(t, want.Nodes(), got.Nodes())
			assert.Equal(t, conformance.Owners(want), conformance.Owners(got))
			assert.Equal(t, topKChecksum(want, keys, 3), topKChecksum(got, keys, 3))
			switch w := want.(type) {
			case *chash.Ring:
				assert.Equal(t, w.Points(), got.(*chash.Ring).Points())
			case *chash.Maglev:
				assert.Equal(t, w.TableSize(), got.(*chash.Maglev).TableSize())
				assert.Equal(t, w.Entries(), got.(*chash.Maglev).Entries())
			case *chash.Bounded:
				g := got.(*chash.Bounded)
				assert.Equal(t, w.Partitions(), g.Partitions())
				assert.Equal(t, w.LoadFactor(), g.LoadFactor())
				for p := 0; p < w.Partitions(); p++ {
					require.Equal(t, w.Owner(p), g.Owner(p), "partition %d", p)
				}
			}
		})
	}
}

// TestOptionsReachTheirPlacers: the table-size, partition, load-factor and
// vnodes options change the placers that use them, through New and the
// constructors alike; the defaults are the documented constants; and an
// option for another algorithm changes nothing.
func TestOptionsReachTheirPlacers(t *testing.T) {
	nodes := chashtest.Nodes(5)
	others := []chash.Option{chash.WithVnodes(7), chash.WithTableSize(101), chash.WithPartitions(64), chash.WithLoadFactor(3)}

	p, err := chash.New(chash.AlgorithmMaglev, nodes, chash.WithTableSize(1009))
	require.NoError(t, err)
	assert.Equal(t, 1009, p.(*chash.Maglev).TableSize())
	assert.Equal(t, 1009, sum(p.(*chash.Maglev).Entries()))
	g, err := chash.NewMaglev(nodes, chash.WithVnodes(7), chash.WithPartitions(64), chash.WithLoadFactor(3))
	require.NoError(t, err)
	assert.Equal(t, chash.DefaultTableSize, g.TableSize())

	p, err = chash.New(chash.AlgorithmBounded, nodes, chash.WithPartitions(64), chash.WithLoadFactor(1.5))
	require.NoError(t, err)
	b := p.(*chash.Bounded)
	assert.Equal(t, 64, b.Partitions())
	assert.Equal(t, 1.5, b.LoadFactor())
	assert.Equal(t, 20, b.Capacity("node-0"), "ceil(1.5 × 64 / 5)")
	b, err = chash.NewBounded(nodes, chash.WithVnodes(7), chash.WithTableSize(101))
	require.NoError(t, err)
	assert.Equal(t, chash.DefaultPartitions, b.Partitions())
	assert.Equal(t, chash.DefaultLoadFactor, b.LoadFactor())

	p, err = chash.New(chash.AlgorithmRing, nodes, chash.WithVnodes(7))
	require.NoError(t, err)
	assert.Equal(t, 35, p.(*chash.Ring).Points())
	r, err := chash.NewRing(nodes, chash.WithTableSize(101), chash.WithPartitions(64), chash.WithLoadFactor(3))
	require.NoError(t, err)
	assert.Equal(t, 5*chash.DefaultVnodes, r.Points())

	// Rendezvous and jump use none of them.
	for _, a := range []chash.Algorithm{chash.AlgorithmRendezvous, chash.AlgorithmJump} {
		plain, err := chash.New(a, nodes)
		require.NoError(t, err)
		with, err := chash.New(a, nodes, others...)
		require.NoError(t, err)
		assert.Equal(t, conformance.Owners(plain), conformance.Owners(with), "%v", a)
	}
}

func sum(xs []int) int {
	t := 0
	for _, x := range xs {
		t += x
	}
	return t
}

// pinPlacers returns one placer of n nodes of every algorithm, a ketama
// ring and a Holder, by name.
func pinPlacers(t *testing.T, n int) map[string]chash.Placer {
	out := map[string]chash.Placer{}
	for _, tc := range algorithmCases() {
		p, err := chash.New(tc.a, chashtest.Nodes(n), tc.opts...)
		require.NoError(t, err)
		out[tc.name] = p
	}
	out["holder"] = chash.NewHolder(out["ring"])
	return out
}

// TestAppendTopKAfterMembers appends into a buffer that already holds
// members: the buffer is kept, and k distinct nodes follow it, the same k
// as into an empty buffer, whichever members the buffer holds.
func TestAppendTopKAfterMembers(t *testing.T) {
	const n = 8
	for name, p := range pinPlacers(t, n) {
		t.Run(name, func(t *testing.T) {
			members := p.Nodes()
			for _, key := range pinKeys(500, 5) {
				for _, k := range []int{1, 2, 3, 5, n, n + 3} {
					want := p.AppendTopKString(nil, key, k)
					require.Len(t, want, min(k, n))
					// The buffer holds the key's own top choices, and
					// then other members, so every way of skipping
					// "already chosen" nodes would show.
					for _, prefix := range [][]chash.Node{want[:1], members[:3], append(slices.Clone(want), members...)} {
						dst := slices.Clone(prefix)
						got := p.AppendTopKString(dst, key, k)
						require.Equal(t, prefix, got[:len(prefix)], "key %q, k %d: buffer changed", key, k)
						require.Equal(t, want, got[len(prefix):], "key %q, k %d after %d members", key, k, len(prefix))
						got = p.AppendTopK(slices.Clone(prefix), []byte(key), k)
						require.Equal(t, want, got[len(prefix):], "key %q, k %d after %d members ([]byte)", key, k, len(prefix))
					}
				}
			}
		})
	}
}

// TestTopKPrefixStable: asking for more replicas never reorders the first
// ones, for every algorithm.
func TestTopKPrefixStable(t *testing.T) {
	const n = 40
	for name, p := range pinPlacers(t, n) {
		t.Run(name, func(t *testing.T) {
			for _, key := range pinKeys(300, 6) {
				full := p.AppendTopKString(nil, key, n)
				require.Len(t, full, n)
				for k := 1; k < n; k++ {
					require.Equal(t, full[:k], p.AppendTopKString(nil, key, k), "key %q: top %d is not a prefix of top %d", key, k, n)
				}
			}
		})
	}
}

// TestInlining pins the hot-path helpers the compiler inlines today, as
// cespare/xxhash's tests do: a change that stops one inlining costs
// nanoseconds on every lookup and should be a decision, not an accident.
func TestInlining(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the package's test binary")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	// The test binary, so that the benchmarks' inlined helpers are seen
	// too; -c writes it to a temporary directory and runs nothing.
	cmd := exec.Command(gobin, "test", "-c", "-o", t.TempDir(), "-gcflags=-m", ".")
	cmd.Env = append(cmd.Environ(), "GOARCH=", "GOOS=")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, fn := range []string{
		// jumpHash is not here: it chooses between jumpFMA, in assembly, and
		// jumpGo, two calls that the inliner's budget does not allow.
		"mix64", "unit", "absent", "place.ClampK", "JumpBackHash", "jumpBackDraw", "jumpBack",
		"(*Jump).Lookup", "(*Jump).LookupString", "(*JumpBack).Lookup", "(*JumpBack).LookupString",
		"(*Rendezvous).Lookup", "(*Rendezvous).LookupString", "(*straw2).wide",
		"(*Maglev).Lookup", "(*Maglev).LookupString", "(*Ring).Lookup", "(*Ring).LookupString",
		"(*Maglev).at", "(*Maglev).slot", "(*Bounded).partition", "partitionHash",
		"(*Holder).Load", "place.Append[github.com/keyplace/chash.Node]",
		"firstStep", // BenchmarkJumpBackHash's inlined first step
	} {
		// Functions of other packages show as inlined at their calls.
		re := regexp.MustCompile(`(?m): (can inline|inlining call to) ` + regexp.QuoteMeta(fn) + `$`)
		assert.Regexp(t, re, string(out), fmt.Sprintf("%s is no longer inlined", fn))
	}
}
