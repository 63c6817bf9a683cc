package memberlist_test

import (
	"context"
	"strings"
	"testing"
	"time"

	ml "github.com/hashicorp/memberlist"
	"github.com/keyplace/chash"
	clml "github.com/keyplace/chash/adapters/memberlist"
	"github.com/keyplace/chash/member"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// Join and Update refuse what memberlist cannot carry or this package
// cannot read back: an invalid member, metadata over 512 bytes, a config
// with a Delegate of its own, another ID.
func TestJoinRefuses(t *testing.T) {
	_, err := clml.Join(testConfig("x"), member.Member{}, nil)
	assert.ErrorIs(t, err, member.ErrBadMember, "no ID")
	big := member.Member{ID: "big", Meta: map[string]string{"k": strings.Repeat("v", 500)}}
	_, err = clml.Join(testConfig("big"), big, nil)
	assert.ErrorIs(t, err, member.ErrBadMember, "metadata over 512 bytes")
	_, err = clml.Join(nil, member.Member{ID: "a"}, nil)
	assert.ErrorIs(t, err, chash.ErrInvalidOption)
	cfg := testConfig("a")
	cfg.Delegate = &rawMeta{}
	_, err = clml.Join(cfg, member.Member{ID: "a"}, nil)
	assert.ErrorIs(t, err, chash.ErrInvalidOption)
	_, err = clml.Observe(testConfig(""), nil)
	assert.ErrorIs(t, err, chash.ErrInvalidOption, "an observer needs a name")

	n := join(t, member.Member{ID: "a"})
	assert.ErrorIs(t, n.Update(member.Member{ID: "b"}, time.Second), member.ErrBadMember)
	assert.ErrorIs(t, n.Update(big, time.Second), member.ErrBadMember)
	o := observe(t, "o", n.Addr())
	assert.Error(t, o.Update(member.Member{ID: "o"}, time.Second), "an observer announces no member")
	_, err = clml.Join(testConfig("c"), member.Member{ID: "c"}, []string{"127.0.0.1:1"})
	assert.Error(t, err, "no seed answers")
}

// rawMeta is a memberlist Delegate that announces any metadata: a node of
// another program in the cluster.
type rawMeta struct{ meta []byte }

func (r *rawMeta) NodeMeta(int) []byte                 { return r.meta }
func (r *rawMeta) NotifyMsg([]byte)                    {}
func (r *rawMeta) GetBroadcasts(int, int) [][]byte     { return nil }
func (r *rawMeta) LocalState(bool) []byte              { return nil }
func (r *rawMeta) MergeRemoteState(buf []byte, _ bool) {}

// rawNode joins a memberlist node of another program, announcing meta.
func rawNode(t *testing.T, name, meta string, seed string) *ml.Memberlist {
	cfg := testConfig(name)
	cfg.Delegate = &rawMeta{meta: []byte(meta)}
	l, err := ml.Create(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { l.Shutdown() })
	_, err = l.Join([]string{seed})
	require.NoError(t, err)
	return l
}

// Nodes whose metadata is not a member, or names another ID, are reported
// and left out; everyone else is served, every field of chash.Node
// included.
func TestBadMembers(t *testing.T) {
	a := join(t, member.Member{ID: "a", Weight: 2, Zone: "z1", Addr: "10.0.0.1:1"})
	rawNode(t, "garbage", "not json", a.Addr())
	rawNode(t, "liar", `{"id":"someone-else"}`, a.Addr())
	rawNode(t, "negative", `{"id":"negative","weight":-1}`, a.Addr())
	join(t, member.Member{ID: "b", Zone: "z2"}, a.Addr())
	var reported errs
	w, err := a.Watch(ctxT(t, 5*time.Second), rendezvous, member.WithErrorHook(reported.hook))
	require.NoError(t, err)
	defer w.Close()
	require.Eventually(t, func() bool { return w.Len() == 2 }, 5*time.Second, 5*time.Millisecond)
	require.Eventually(t, func() bool {
		return reported.has(member.ErrBadMember, "garbage") && reported.has(member.ErrBadMember, "someone-else") &&
			reported.has(member.ErrBadMember, "negative")
	}, 5*time.Second, 5*time.Millisecond)
	v := w.View()
	assert.Equal(t, member.Member{ID: "a", Weight: 2, Zone: "z1", Addr: "10.0.0.1:1"}, v.Members[0])
	assert.Equal(t, "z2", v.Members[1].Zone)
}

// The spec published on one node reaches the others by broadcast, and a
// node that joins later by the state sync of its join; a newer spec
// replaces it everywhere, whoever publishes it, and outlives its
// publisher; a spec message that does not parse is reported and changes
// nothing.
func TestSpecState(t *testing.T) {
	var reported errs
	a := join(t, member.Member{ID: "a"})
	b, err := clml.Join(testConfig("b"), member.Member{ID: "b"}, []string{a.Addr()}, clml.WithErrorHook(reported.hook))
	require.NoError(t, err)
	defer b.Shutdown()
	maglev := member.Spec{Algorithm: chash.AlgorithmMaglev, TableSize: 1009}
	require.NoError(t, a.Publish(&maglev))
	require.Eventually(t, func() bool { s := b.Spec(); return s != nil && *s == maglev }, 5*time.Second, 5*time.Millisecond,
		"the broadcast reached b")

	late := join(t, member.Member{ID: "late"}, b.Addr())
	assert.Equal(t, &maglev, late.Spec(), "the join's state sync carries the spec")
	w, err := late.Watch(ctxT(t, 5*time.Second), nil)
	require.NoError(t, err)
	defer w.Close()
	require.Eventually(t, func() bool { return w.Len() == 3 }, 5*time.Second, 5*time.Millisecond)
	ref, err := maglev.Build(w.Nodes())
	require.NoError(t, err)
	assert.Equal(t, chash.Fingerprint(ref), w.Fingerprint(), "a nil Builder builds with the published spec")

	ring := member.Spec{Algorithm: chash.AlgorithmRing}
	require.NoError(t, late.Publish(&ring))
	require.NoError(t, late.Leave(time.Second))
	for _, n := range []*clml.Node{a, b} {
		require.Eventually(t, func() bool { s := n.Spec(); return s != nil && *s == ring }, 5*time.Second, 5*time.Millisecond,
			"the newer spec reached %s, and outlived its publisher", n.Name())
	}
	require.Eventually(t, func() bool { s := w.View().Spec; return s != nil && *s == ring }, 5*time.Second, 5*time.Millisecond,
		"the watcher of the node that left keeps the last view it built")

	require.NoError(t, a.Memberlist().SendReliable(b.Memberlist().LocalNode(), []byte(`s{"stamp":99,"by":"x","spec":{"algorithm":"nope"}}`)))
	require.Eventually(t, func() bool { return reported.has(member.ErrBadSpec, "nope") }, 5*time.Second, 5*time.Millisecond)
	assert.Equal(t, &ring, b.Spec(), "a spec that does not parse changes nothing")
	assert.ErrorIs(t, a.Publish(&member.Spec{}), member.ErrBadSpec)
	require.NoError(t, a.Publish(nil))
	require.Eventually(t, func() bool { return b.Spec() == nil }, 5*time.Second, 5*time.Millisecond, "a removal spreads too")
}
