package chash_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/chashtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLookupsDoNotAllocate holds the package's central promise: no lookup
// path of any algorithm allocates, at any node count or key length, with
// the default hash or a seeded one, called directly or through a Holder.
func TestLookupsDoNotAllocate(t *testing.T) {
	if testing.CoverMode() != "" {
		t.Skip("coverage instrumentation allocates")
	}
	hashers := map[string][]chash.Option{
		"xxhash":      nil,
		"xxhash-seed": {chash.WithHasher(chash.XXHashSeed(7))},
	}
	for _, a := range chash.Algorithms() {
		for _, n := range benchNodeCounts {
			for hname, opts := range hashers {
				p, err := chash.New(a, chashtest.Nodes(n), opts...)
				if errors.Is(err, chash.ErrUnknownAlgorithm) {
					continue
				}
				require.NoError(t, err, "%v/nodes=%d/%s", a, n, hname)
				for _, size := range []int{1, 13, 80, 1000} {
					name := fmt.Sprintf("%v/nodes=%d/%s/key=%d", a, n, hname, size)
					checkNoAllocs(t, name, p, size, runs(n))
					checkNoAllocs(t, name+"/holder", chash.NewHolder(p), size, runs(n))
				}
			}
		}
	}
}

var allocKeyCache = map[int][2]any{}

// allocKeys returns 256 keys of exactly size bytes.
func allocKeys(size int) ([][]byte, []string) {
	if c, ok := allocKeyCache[size]; ok {
		return c[0].([][]byte), c[1].([]string)
	}
	bs, ss := make([][]byte, 256), make([]string, 256)
	for i := range bs {
		k := fmt.Sprintf("%0*d", size, i*7919)
		k = k[len(k)-size:]
		bs[i], ss[i] = []byte(k), k
	}
	allocKeyCache[size] = [2]any{bs, ss}
	return bs, ss
}

// runs is how many calls AllocsPerRun averages over: fewer for large
// placers, whose O(n) paths are slow under the race detector. A path that
// allocates on any regular fraction of calls still shows.
func runs(nodes int) int {
	if nodes > 100 {
		return 10
	}
	return 50
}

func checkNoAllocs(t *testing.T, name string, p chash.Placer, size, runs int) {
	t.Helper()
	bs, ss := allocKeys(size)
	buf := make([]chash.Node, 0, 8)
	i := 0
	paths := []struct {
		name string
		f    func()
	}{
		{"Lookup", func() { sinkNode = p.Lookup(bs[i&(len(bs)-1)]) }},
		{"LookupString", func() { sinkNode = p.LookupString(ss[i&(len(ss)-1)]) }},
		{"AppendTopK1", func() { buf = p.AppendTopK(buf[:0], bs[i&(len(bs)-1)], 1) }},
		{"AppendTopK3", func() { buf = p.AppendTopK(buf[:0], bs[i&(len(bs)-1)], 3) }},
		{"AppendTopKString3", func() { buf = p.AppendTopKString(buf[:0], ss[i&(len(ss)-1)], 3) }},
		{"AppendTopKString8", func() { buf = p.AppendTopKString(buf[:0], ss[i&(len(ss)-1)], 8) }},
	}
	for _, path := range paths {
		f := func() { path.f(); i++ }
		assert.Zero(t, testing.AllocsPerRun(runs, f), "%s/%s: allocations per call", name, path.name)
	}
}
