package status_test

import (
	"errors"
	"testing"
	"time"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/chashtest"
	"github.com/keyplace/chash/status"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tracking wraps a constructor's placer in a Tracker.
func tracking(f func([]chash.Node, ...chash.Option) (*chash.Rendezvous, error)) func([]chash.Node) (chash.Placer, error) {
	return func(nodes []chash.Node) (chash.Placer, error) {
		p, err := f(nodes)
		if err != nil {
			return nil, err
		}
		return status.NewTracker(p), nil
	}
}

// A Tracker places as what it holds: the contract with rendezvous's
// bounds, lookups allocation-free and race-free included.
func TestContractTracker(t *testing.T) {
	chashtest.TestPlacer(t, chashtest.Spec{
		New:      tracking(chash.NewRendezvous),
		Weighted: true,
		MaxCV:    0.02, MaxPeak: 1.05, ShareTol: 0.05,
		Zero:      &status.Tracker{},
		NilPanics: []string{"Store", "Swap", "Build"},
		Variants: []func() (chash.Placer, error){
			func() (chash.Placer, error) {
				p, err := chash.NewRendezvous(chashtest.Nodes(10), chash.WithHasher(chash.XXHashSeed(7)))
				return status.NewTracker(p), err
			},
		},
	})
}

func TestTrackerHistory(t *testing.T) {
	a, err := chash.NewRing(chashtest.Nodes(3))
	require.NoError(t, err)
	b, err := chash.NewMaglev(chashtest.Nodes(4))
	require.NoError(t, err)

	var zero status.Tracker
	assert.Zero(t, zero.Revision())
	assert.True(t, zero.LastChange().IsZero())
	assert.Equal(t, chash.FingerprintNone, zero.Fingerprint())
	assert.Nil(t, zero.Load())

	before := time.Now()
	tr := status.NewTracker(a)
	assert.EqualValues(t, 1, tr.Revision())
	assert.Equal(t, chash.Fingerprint(a), tr.Fingerprint())
	assert.Equal(t, chash.Fingerprint(a), chash.Fingerprint(tr), "Fingerprint sees through Load")
	assert.False(t, tr.LastChange().Before(before))
	assert.Zero(t, tr.Builds())

	require.NoError(t, tr.Build(func() (chash.Placer, error) { time.Sleep(time.Millisecond); return b, nil }))
	assert.EqualValues(t, 2, tr.Revision())
	assert.Equal(t, chash.Fingerprint(b), tr.Fingerprint())
	assert.EqualValues(t, 1, tr.Builds())
	assert.GreaterOrEqual(t, tr.BuildTime(), time.Millisecond)

	boom := errors.New("boom")
	assert.ErrorIs(t, tr.Build(func() (chash.Placer, error) { return nil, boom }), boom)
	assert.EqualValues(t, 2, tr.Revision(), "a failed build keeps the placer and its revision")
	assert.EqualValues(t, 2, tr.Builds(), "a failed build counts")
	assert.Same(t, b, tr.Load())

	var typedNil *chash.Ring
	assert.Same(t, b, tr.Swap(typedNil))
	assert.EqualValues(t, 3, tr.Revision(), "emptying is a change")
	assert.Nil(t, tr.Load())
	assert.Equal(t, chash.FingerprintNone, tr.Fingerprint())
	assert.Zero(t, tr.LookupString("k"))
}

// Concurrent stores never lose a revision, and readers always see a
// fingerprint that belongs to the placer they see with it.
func TestTrackerConcurrentStores(t *testing.T) {
	a, _ := chash.NewRing(chashtest.Nodes(3))
	tr := status.NewTracker(a)
	const writers, each = 4, 50
	done := make(chan struct{})
	for range writers {
		go func() {
			defer func() { done <- struct{}{} }()
			for range each {
				tr.Store(a)
			}
		}()
	}
	for range writers {
		<-done
	}
	assert.EqualValues(t, 1+writers*each, tr.Revision())
}

func BenchmarkTrackerLookup(b *testing.B) {
	ring, _ := chash.NewRing(chashtest.Nodes(64))
	tr := status.NewTracker(ring)
	key := "user:42:profile"
	b.Run("ring", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			ring.LookupString(key)
		}
	})
	b.Run("tracker", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			tr.LookupString(key)
		}
	})
}
