package memberlist_test

import (
	"errors"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	ml "github.com/hashicorp/memberlist"
	clml "github.com/keyplace/chash/adapters/memberlist"
	"github.com/keyplace/chash/member"
	"github.com/keyplace/chash/member/membertest"
)

// fleet is a gossip cluster of this process's own on loopback: an anchor
// observer every node joins through, a member node for each member Set
// holds, and an observer on a breakable transport for each Source. Break
// cuts the sources' observers off the cluster; Restore reconnects them.
type fleet struct {
	t         *testing.T
	anchor    *clml.Node
	mu        sync.Mutex
	members   map[string]*clml.Node
	meta      map[string]string // the JSON each member announces
	observers []*clml.Node
	links     []*breakable
}

func newFleet(t *testing.T) *fleet {
	anchor, err := clml.Observe(slower(testConfig("anchor")), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { anchor.Shutdown() })
	return &fleet{t: t, anchor: anchor, members: map[string]*clml.Node{}, meta: map[string]string{}}
}

// slower probes every 500 ms: two dozen nodes in one process under the
// race detector, on a loaded machine, then raise no false suspicion.
func slower(c *ml.Config) *ml.Config {
	c.ProbeInterval, c.ProbeTimeout = fleetProbe, fleetProbe/2
	return c
}

const fleetProbe = 500 * time.Millisecond

func (f *fleet) Source() member.Source {
	f.mu.Lock()
	defer f.mu.Unlock()
	b := newBreakable(f.t)
	n, err := clml.Observe(slower(configOn(fmt.Sprintf("observer-%d", len(f.observers)), b)), []string{f.anchor.Addr()})
	if err != nil {
		f.t.Fatalf("observer: %v", err)
	}
	f.t.Cleanup(func() { n.Shutdown() })
	f.observers = append(f.observers, n)
	f.links = append(f.links, b)
	return n.Source()
}

// Set joins, updates and leaves member nodes, all at once, until the
// cluster holds exactly ms, and returns once every node that follows it
// (the anchor and the observers not cut off) holds them.
func (f *fleet) Set(ms []member.Member) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	want := map[string]string{}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var problems []error
	var joined []*clml.Node
	do := func(fn func() error) {
		wg.Go(func() {
			if err := fn(); err != nil {
				mu.Lock()
				problems = append(problems, err)
				mu.Unlock()
			}
		})
	}
	gone := map[string]*clml.Node{}
	for id, n := range f.members {
		gone[id] = n
	}
	for _, m := range ms {
		delete(gone, m.ID)
		b, err := member.EncodeJSON(m)
		if err != nil {
			return err
		}
		want[m.ID] = string(b)
		switch n, ok := f.members[m.ID]; {
		case !ok:
			do(func() error {
				n, err := clml.Join(slower(testConfig(m.ID)), m, []string{f.anchor.Addr()})
				if err == nil {
					mu.Lock()
					joined = append(joined, n)
					mu.Unlock()
				}
				return err
			})
		case f.meta[m.ID] != string(b):
			do(func() error { return n.Update(m, time.Second) })
		}
		f.meta[m.ID] = string(b)
	}
	for id, n := range gone {
		delete(f.members, id)
		delete(f.meta, id)
		do(func() error { return n.Leave(time.Second) })
	}
	wg.Wait()
	for _, n := range joined {
		f.members[n.Name()] = n
		f.t.Cleanup(func() { n.Shutdown() })
	}
	if err := errors.Join(problems...); err != nil {
		return err
	}
	followers := []*clml.Node{f.anchor}
	for i, o := range f.observers {
		if !f.links[i].broken.Load() {
			followers = append(followers, o)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, o := range followers {
		for !maps.Equal(members(o), want) {
			if time.Now().After(deadline) {
				return fmt.Errorf("%s holds %d members, not the %d set, after 10 s", o.Name(), len(members(o)), len(want))
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	return nil
}

// members returns the members n holds: its peers with metadata.
func members(n *clml.Node) map[string]string {
	out := clml.Peers(n)
	maps.DeleteFunc(out, func(_, meta string) bool { return meta == "" })
	return out
}

func (f *fleet) Publish(s *member.Spec) error { return f.anchor.Publish(s) }

func (f *fleet) Break() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, b := range f.links {
		b.broken.Store(true)
	}
	return nil
}

func (f *fleet) Restore() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, b := range f.links {
		b.broken.Store(false)
	}
	return nil
}

// The source keeps the contract every member source keeps, on real
// memberlist nodes gossiping over loopback: members in node metadata,
// the spec as cluster state, a node cut off from the cluster reported
// silent.
func TestSourceContract(t *testing.T) {
	membertest.TestSource(t, membertest.Spec{
		NewFleet: func(t *testing.T) membertest.Fleet { return newFleet(t) },
		Silence:  3 * fleetProbe,
		Settle:   10 * time.Second,
		// Set leaves nodes all at once, and their leaves reach an
		// observer within a few gossip intervals of each other: a
		// window of four gathers them, as the suite's Empty case
		// (every member gone at once) expects.
		Options: []member.Option{member.WithCoalesce(4 * gossipEvery)},
		Addr:    true,
		Meta:    true,
	})
}
