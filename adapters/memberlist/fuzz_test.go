package memberlist_test

import (
	"context"
	"net"
	"testing"
	"time"

	ml "github.com/hashicorp/memberlist"
	"github.com/keyplace/chash"
	clml "github.com/keyplace/chash/adapters/memberlist"
	"github.com/keyplace/chash/member"
	"github.com/stretchr/testify/assert"
)

// A node given any bytes as a peer's spec message or metadata neither
// panics nor holds a spec that is not valid, and its source hands over
// only valid members.
func FuzzPeerBytes(f *testing.F) {
	f.Add([]byte(`s{"stamp":1,"by":"a","spec":{"algorithm":"maglev","table-size":1009}}`), []byte(`{"id":"x","weight":2}`))
	f.Add([]byte(`s{"stamp":18446744073709551615,"by":"","spec":null}`), []byte(`{"id":"x","weight":-1}`))
	f.Add([]byte(`s{"stamp":2,"spec":"ring vnodes=0"}`), []byte(`not json`))
	f.Fuzz(func(t *testing.T, msg, meta []byte) {
		n := clml.Detached(time.Second)
		clml.Merge(n, msg)
		if s := n.Spec(); s != nil {
			assert.NoError(t, s.Check())
		}
		clml.Events(n).NotifyJoin(&ml.Node{Name: "x", Addr: net.IPv4(127, 0, 0, 1), Meta: meta})
		sink := &recorder{}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- n.Source().Run(ctx, sink) }()
		for sink.count() == 0 {
			time.Sleep(time.Millisecond)
		}
		cancel()
		assert.NoError(t, <-done)
		for _, m := range sink.last().Members {
			assert.NoError(t, m.Check())
			assert.Equal(t, "x", m.ID)
		}
	})
}

// The zero and nil Node fail or do nothing, never panic.
func TestZeroNode(t *testing.T) {
	for _, n := range []*clml.Node{nil, {}} {
		_, err := n.Watch(context.Background(), nil)
		assert.ErrorIs(t, err, chash.ErrInvalidOption)
		assert.ErrorIs(t, n.Update(member.Member{ID: "a"}, time.Second), chash.ErrInvalidOption)
		assert.ErrorIs(t, n.Publish(nil), chash.ErrInvalidOption)
		assert.ErrorIs(t, n.Source().Run(context.Background(), &recorder{}), chash.ErrInvalidOption)
		assert.NoError(t, n.Leave(time.Second))
		assert.NoError(t, n.Shutdown())
		assert.Nil(t, n.Spec())
		assert.Empty(t, n.Addr())
	}
}
