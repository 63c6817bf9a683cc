package balance_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/balance"
	"github.com/keyplace/chash/chashtest"
)

// TestBalancerChoices checks every acquire of a random workload against a
// model of WithChoices(d): the candidate with the least load for its
// weight among the first d, the first kept unless another is strictly
// lighter; with a bound, within it. Stats counts the acquires served away
// from the first choice.
func TestBalancerChoices(t *testing.T) {
	nodes := []chash.Node{{ID: "a", Weight: 1}, {ID: "b", Weight: 3}, {ID: "c", Weight: 2}, {ID: "d", Weight: 1}, {ID: "e", Weight: 1}, {ID: "f", Weight: 2}}
	p, err := chash.NewRendezvous(nodes)
	require.NoError(t, err)
	for _, d := range []int{2, 3} {
		for _, bounded := range []bool{false, true} {
			opts := []balance.Option{balance.WithChoices(d), balance.WithoutLoadBound()}
			if bounded {
				opts = []balance.Option{balance.WithChoices(d), balance.WithLoadFactor(1.25)}
			}
			b := newBalancer(t, p, opts...)
			bd := newBounds(p, 1.25)
			rng := rand.New(rand.NewPCG(7, uint64(d)))
			var held []balance.Lease
			away, kept := uint64(0), 0
			for step := 0; step < 5000; step++ {
				if len(held) > 0 && rng.IntN(2) == 0 {
					i := rng.IntN(len(held))
					require.True(t, held[i].Release())
					held = slices.Delete(held, i, i+1)
					continue
				}
				key := fmt.Sprint("k", rng.IntN(30))
				cand := p.AppendTopKString(nil, key, d)
				want := cand[0]
				for _, n := range cand[1:] {
					if float64(b.Load(n.ID))*want.Weight < float64(b.Load(want.ID))*n.Weight {
						want = n
					}
				}
				tt := b.InFlight() + 1
				room := !bounded || b.Load(want.ID) < lim(bd.of(tt, want))
				l, err := b.AcquireString(key)
				require.NoError(t, err)
				if room {
					require.Equal(t, want, l.Node(), "d=%d bounded=%v step %d", d, bounded, step)
				}
				if bounded {
					require.LessOrEqual(t, b.Load(l.Node().ID), lim(bd.of(tt, l.Node())))
				}
				if l.Node() != cand[0] {
					away++
				} else {
					kept++
				}
				held = append(held, l)
			}
			var statsAway uint64
			for _, n := range b.Stats().Nodes {
				statsAway += n.Away
			}
			assert.Equal(t, away, statsAway, "d=%d bounded=%v: Stats' Away", d, bounded)
			assert.Positive(t, kept)
			assert.Positive(t, away)
			for _, l := range held {
				l.Release()
			}
			checkZero(t, b)
		}
	}
}

// TestBalancerSpread: once a key is hot, its acquires land on its first R
// nodes, R = min(maxR, ceil(share × n)), spread about evenly, and are
// counted in Stats; a cold key stays on its first choice.
func TestBalancerSpread(t *testing.T) {
	const n = 16
	p, err := chash.NewRendezvous(chashtest.Nodes(n))
	require.NoError(t, err)
	for _, maxR := range []int{3, n} {
		h, err := balance.NewHotKeys(balance.HotKeysConfig{Threshold: 1.0 / n, Sample: 1, Window: 1024})
		require.NoError(t, err)
		b := newBalancer(t, p, balance.WithHotKeys(h, maxR), balance.WithoutLoadBound())
		for i := 0; i < 4096; i++ { // 2/7 of the traffic: hot
			key := "hot"
			if i%7 != 0 && i%7 != 3 {
				key = fmt.Sprint("cold-", i)
			}
			l, err := b.AcquireString(key)
			require.NoError(t, err)
			l.Release()
		}
		share := h.ShareString("hot")
		require.InDelta(t, 2.0/7, share, 0.02)
		r := min(maxR, int(math.Ceil(share*n)))
		require.Equal(t, p.AppendTopKString(nil, "hot", r), b.AppendReplicasString(nil, "hot"), "maxR %d", maxR)
		// Go on at 2/7: each acquire lands on one of the replicas
		// named then, and they share the load about evenly.
		count := map[string]int{}
		var held []balance.Lease
		for i := 0; i < 400; i++ {
			l, err := b.AcquireString("hot")
			require.NoError(t, err)
			require.Contains(t, b.AppendReplicasString(nil, "hot"), l.Node())
			count[l.Node().ID]++
			held = append(held, l)
			for j := 0; j < 2+i%2; j++ {
				l, err := b.AcquireString(fmt.Sprint("cold-", i, "-", j))
				require.NoError(t, err)
				l.Release()
			}
		}
		assert.Len(t, count, min(maxR, 5), "maxR %d: replicas used (2/7 of 16 nodes is 4.6)", maxR)
		for id, c := range count {
			assert.Less(t, c, 2*400/len(count), "maxR %d: node %s", maxR, id)
		}
		cold, err := b.AcquireString("cold-1")
		require.NoError(t, err)
		assert.Equal(t, p.LookupString("cold-1"), cold.Node())
		assert.Equal(t, []chash.Node{cold.Node()}, b.AppendReplicasString(nil, "cold-1"))
		cold.Release()
		st := b.Stats()
		require.Len(t, st.HotKeys, 1)
		assert.Equal(t, "hot", st.HotKeys[0].Key)
		var spread uint64
		for _, n := range st.Nodes {
			spread += n.Spread
		}
		assert.GreaterOrEqual(t, spread, uint64(400))
		for _, l := range held {
			l.Release()
		}
		checkZero(t, b)
	}
}
