package chash_test

import (
	"fmt"
	"testing"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/internal/conformance"
	"github.com/keyplace/chash/internal/measure"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func ketamaServers(n int, weight func(i int) float64) []chash.Node {
	out := make([]chash.Node, n)
	for i := range out {
		out[i] = chash.Node{ID: fmt.Sprintf("10.0.%d.%d:11211", i/200, i%200+1), Weight: weight(i)}
	}
	return out
}

// TestKetamaDeriveRecounts adds and removes servers where every server's
// digest count changes (libmemcached gives 40 digests a server at 24 equal
// servers and 39 at 25; libketama 40 at 60 and 39 at 61; any weight change
// moves every count): Add and Remove must give the ring NewRing builds for
// the new membership, point for point.
func TestKetamaDeriveRecounts(t *testing.T) {
	equal := func(int) float64 { return 1 }
	mixed := func(i int) float64 { return float64(1 + i%5) }
	for _, tc := range []struct {
		v     chash.KetamaVariant
		nodes []chash.Node
		extra chash.Node
	}{
		{chash.KetamaLibmemcached, ketamaServers(24, equal), chash.Node{ID: "10.1.0.1:11211"}},
		{chash.KetamaLibketama, ketamaServers(60, equal), chash.Node{ID: "10.1.0.1:11211"}},
		{chash.KetamaSpy, ketamaServers(24, mixed), chash.Node{ID: "10.1.0.1:11211", Weight: 7}},
		{chash.KetamaLibmemcached, ketamaServers(10, mixed), chash.Node{ID: "10.1.0.1:11211", Weight: 4}},
	} {
		t.Run(fmt.Sprintf("%v/%d", tc.v, len(tc.nodes)), func(t *testing.T) {
			opt := chash.WithKetama(tc.v)
			small, err := chash.NewRing(tc.nodes, opt)
			require.NoError(t, err)
			large, err := chash.NewRing(append(tc.nodes[:len(tc.nodes):len(tc.nodes)], tc.extra), opt)
			require.NoError(t, err)
			// The counts do change: keys move between untouched servers,
			// which adding a server's points alone would not do.
			_, collateral := measure.Moves(conformance.Owners(small), conformance.Owners(large), tc.extra.ID)
			t.Logf("%d -> %d servers: %d -> %d points, collateral %.4f", len(tc.nodes), len(tc.nodes)+1, small.Points(), large.Points(), collateral)
			require.Positive(t, collateral, "the case does not change the other servers' counts")

			grown, err := small.Add(tc.extra)
			require.NoError(t, err)
			requireSameRing(t, large, grown)
			shrunk, err := large.Remove(tc.extra.ID)
			require.NoError(t, err)
			requireSameRing(t, small, shrunk)
		})
	}
}

func requireSameRing(t *testing.T, want, got *chash.Ring) {
	t.Helper()
	require.Equal(t, want.Nodes(), got.Nodes())
	require.Equal(t, want.Points(), got.Points())
	for _, k := range pinKeys(20_000, 10) {
		require.Equal(t, want.AppendTopKString(nil, k, 3), got.AppendTopKString(nil, k, 3), "key %q", k)
	}
}

// TestKetamaPointNameDuplicates: under libmemcached "10.0.0.1:11211" and
// "10.0.0.1" hash the same point names, so one would own nothing; they are
// the same server to the client and must be rejected as duplicates.
func TestKetamaPointNameDuplicates(t *testing.T) {
	opt := chash.WithKetama(chash.KetamaLibmemcached)
	_, err := chash.NewRing([]chash.Node{{ID: "10.0.0.1:11211"}, {ID: "10.0.0.2:11211"}, {ID: "10.0.0.1"}}, opt)
	assert.ErrorIs(t, err, chash.ErrDuplicateID)
	r, err := chash.NewRing([]chash.Node{{ID: "10.0.0.1:11211"}, {ID: "10.0.0.2:11211"}}, opt)
	require.NoError(t, err)
	_, err = r.Add(chash.Node{ID: "10.0.0.2"})
	assert.ErrorIs(t, err, chash.ErrDuplicateID)
	// Under the other variants the names differ and both are servers.
	for _, v := range []chash.KetamaVariant{chash.KetamaLibketama, chash.KetamaSpy} {
		_, err := chash.NewRing([]chash.Node{{ID: "10.0.0.1:11211"}, {ID: "10.0.0.1"}}, chash.WithKetama(v))
		assert.NoError(t, err, "%v", v)
	}
}
