package member_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/chashtest"
	"github.com/keyplace/chash/member"
	"github.com/keyplace/chash/member/membertest"
)

// TestContract runs the contract on a Watcher following a static member
// set held in memory, with a rendezvous Builder: the watcher places as
// rendezvous hashing does, with its bounds.
func TestContract(t *testing.T) {
	var mu sync.Mutex
	var opened []*member.Watcher
	t.Cleanup(func() {
		for _, w := range opened {
			w.Close()
		}
	})
	follow := func(nodes []chash.Node) (chash.Placer, error) {
		// A source hands over what its members announce; a watcher skips
		// invalid members, so refuse them here as chash does.
		if _, err := chash.CheckNodes(nodes); err != nil {
			return nil, err
		}
		members := make([]member.Member, len(nodes))
		for i, n := range nodes {
			members[i] = member.Member{ID: n.ID, Weight: n.Weight, Zone: n.Zone}
		}
		var fleet membertest.Memory
		if err := fleet.Set(members); err != nil {
			return nil, err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		w, err := member.Follow(ctx, fleet.Source(), func(nodes []chash.Node) (chash.Placer, error) {
			return chash.NewRendezvous(nodes)
		})
		if err != nil {
			return nil, err
		}
		mu.Lock()
		opened = append(opened, w)
		mu.Unlock()
		return w, nil
	}
	chashtest.TestPlacer(t, chashtest.Spec{
		New:      follow,
		Zero:     &member.Watcher{},
		Weighted: true,
		MaxCV:    0.02, MaxPeak: 1.05, ShareTol: 0.05,
	})
}
