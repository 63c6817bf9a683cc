package chash_test

import (
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/keyplace/chash"
	"github.com/stretchr/testify/assert"
)

func TestXXHash(t *testing.T) {
	// Published XXH64 digests of the empty input and of "a" with seed 0.
	assert.Equal(t, uint64(0xef46db3751d8e999), chash.XXHash.Sum64(nil))
	assert.Equal(t, uint64(0xd24ec4f1a98c6e5b), chash.XXHash.Sum64String("a"))
	assert.Equal(t, chash.XXHash, chash.XXHashSeed(0))

	for _, k := range []string{"", "a", "user:42:profile", string(make([]byte, 100))} {
		for _, seed := range []uint64{0, 1, 0xdeadbeef} {
			h := chash.XXHashSeed(seed)
			d := xxhash.NewWithSeed(seed)
			d.WriteString(k)
			assert.Equal(t, d.Sum64(), h.Sum64([]byte(k)), "seed %d key %q", seed, k)
			assert.Equal(t, h.Sum64([]byte(k)), h.Sum64String(k))
		}
		assert.NotEqual(t, chash.XXHashSeed(1).Sum64String(k), chash.XXHashSeed(2).Sum64String(k))
	}
}

func TestXXHashAllocs(t *testing.T) {
	b, s := []byte("user:12345:profile"), "user:12345:profile"
	for _, h := range []chash.Hasher{chash.XXHash, chash.XXHashSeed(99)} {
		assert.Zero(t, testing.AllocsPerRun(100, func() { h.Sum64(b) }))
		assert.Zero(t, testing.AllocsPerRun(100, func() { h.Sum64String(s) }))
	}
}

func TestSeedChangesPlacement(t *testing.T) {
	nodes := []chash.Node{{ID: "a"}, {ID: "b"}, {ID: "c"}, {ID: "d"}}
	a, _ := chash.NewRing(nodes)
	b, _ := chash.NewRing(nodes, chash.WithHasher(chash.XXHashSeed(42)))
	same := 0
	for i := 0; i < 10000; i++ {
		k := []byte{byte(i), byte(i >> 8), 'k'}
		if a.Lookup(k) == b.Lookup(k) {
			same++
		}
	}
	// Unrelated placements agree on about 1/4 of keys.
	assert.InDelta(t, 0.25, float64(same)/10000, 0.03)
}
