package etcd_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/adapters/etcd"
	"github.com/keyplace/chash/chashtest"
)

// TestContract runs the contract on a Watcher serving a static membership:
// New writes the nodes as members under a prefix of their own and watches
// it with a rendezvous Builder, so the watcher places as rendezvous hashing
// does, with its bounds. It needs the etcd CHASH_ETCD names.
func TestContract(t *testing.T) {
	addr := sharedEtcd(t)
	c := client(t, addr)
	base := prefix(t)
	var mu sync.Mutex
	var opened []*etcd.Watcher
	t.Cleanup(func() {
		for _, w := range opened {
			w.Close()
		}
	})
	n := 0
	newWatcher := func(nodes []chash.Node) (chash.Placer, error) {
		// A registrant refuses what chash refuses, and etcd holds one key
		// per ID: a watcher, which skips bad values, never sees them.
		if _, err := chash.CheckNodes(nodes); err != nil {
			return nil, err
		}
		mu.Lock()
		n++
		p := fmt.Sprintf("%s/%d", base, n)
		mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, node := range nodes {
			v, err := json.Marshal(etcd.Member{ID: node.ID, Weight: node.Weight})
			if err != nil {
				return nil, err
			}
			if _, err := c.Put(ctx, p+"/"+node.ID, string(v)); err != nil {
				return nil, err
			}
		}
		w, err := etcd.Watch(ctx, c, p, func(nodes []chash.Node) (chash.Placer, error) { return chash.NewRendezvous(nodes) })
		if err != nil {
			return nil, err
		}
		mu.Lock()
		opened = append(opened, w)
		mu.Unlock()
		return w, nil
	}
	chashtest.TestPlacer(t, chashtest.Spec{
		New:      newWatcher,
		Zero:     &etcd.Watcher{},
		Weighted: true,
		MaxCV:    0.02, MaxPeak: 1.05, ShareTol: 0.05,
	})
}
