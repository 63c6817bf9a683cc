package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/adapters/etcd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
)

func TestParseMember(t *testing.T) {
	m, err := etcd.ParseMember("n1", []byte(`{"id":"n1","weight":2.5,"zone":"z1","addr":"10.0.0.1:80","meta":{"rack":"a"},"future":1}`))
	require.NoError(t, err)
	assert.Equal(t, etcd.Member{ID: "n1", Weight: 2.5, Zone: "z1", Addr: "10.0.0.1:80", Meta: map[string]string{"rack": "a"}}, m)
	assert.Equal(t, chash.Node{ID: "n1", Weight: 2.5, Zone: "z1"}, m.Node(), "every field of chash.Node")
	for name, value := range map[string]string{
		"n1":  `{"id":"n2"}`,
		"":    `{"id":""}`,
		"neg": `{"id":"neg","weight":-1}`,
		"inf": `{"id":"inf","weight":1e400}`,
		"nan": `{"id":"nan","weight":NaN}`,
		"txt": `hello`,
		"big": `{"id":"big","addr":"` + strings.Repeat("x", etcd.DefaultMaxValueSize) + `"}`,
		"arr": `[]`,
	} {
		_, err := etcd.ParseMember(name, []byte(value))
		assert.ErrorIs(t, err, etcd.ErrBadMember, "%s = %s", name, value[:min(len(value), 40)])
	}
}

func FuzzParseMember(f *testing.F) {
	f.Add("n1", []byte(`{"id":"n1","weight":1}`))
	f.Add("n1", []byte(`{"id":"n1","weight":-0}`))
	f.Add("", []byte(`{}`))
	f.Fuzz(func(t *testing.T, name string, value []byte) {
		m, err := etcd.ParseMember(name, value)
		if err != nil {
			require.True(t, errors.Is(err, etcd.ErrBadMember), "%v", err)
			return
		}
		require.Equal(t, name, m.ID)
		_, err = chash.NewRendezvous([]chash.Node{m.Node()})
		if err != nil {
			require.ErrorIs(t, err, chash.ErrInvalidWeight, "only rendezvous's own weight range may reject it")
		}
	})
}

func TestArguments(t *testing.T) {
	ctx := context.Background()
	_, err := etcd.Register(ctx, nil, "/p", etcd.Member{ID: "a"})
	assert.ErrorIs(t, err, chash.ErrInvalidOption)
	_, err = etcd.Watch(ctx, nil, "/p", maglev)
	assert.ErrorIs(t, err, chash.ErrInvalidOption)
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{"127.0.0.1:1"}})
	require.NoError(t, err)
	defer c.Close()
	_, err = etcd.Register(ctx, c, "///", etcd.Member{ID: "a"})
	assert.ErrorIs(t, err, chash.ErrInvalidOption)
	_, err = etcd.Register(ctx, c, "/p", etcd.Member{ID: "a", Weight: -2})
	assert.ErrorIs(t, err, etcd.ErrBadMember)
	_, err = etcd.Register(ctx, c, "/p", etcd.Member{ID: "a/b"})
	assert.ErrorIs(t, err, etcd.ErrBadMember, "an ID with a / would be a nested prefix's member")
	assert.Error(t, etcd.Publish(ctx, nil, "/p", nil))
	_, err = etcd.Watch(ctx, c, "", maglev)
	assert.ErrorIs(t, err, chash.ErrInvalidOption)
}

func TestNilWatcher(t *testing.T) {
	var w *etcd.Watcher
	assert.Equal(t, chash.Node{}, w.LookupString("k"))
	assert.Equal(t, chash.Node{}, w.Lookup([]byte("k")))
	assert.Empty(t, w.AppendTopKString(nil, "k", 2))
	assert.Empty(t, w.AppendTopK(nil, []byte("k"), 2))
	assert.Nil(t, w.Nodes())
	assert.Zero(t, w.Len())
	assert.Zero(t, w.Revision())
	assert.Equal(t, chash.FingerprintNone, w.Fingerprint())
	assert.Equal(t, chash.FingerprintNone, chash.Fingerprint(w))
	assert.NoError(t, w.Close())
	var zero etcd.Watcher
	assert.Equal(t, chash.Node{}, zero.LookupString("k"))
	assert.Equal(t, chash.FingerprintNone, zero.Fingerprint())
	assert.NoError(t, zero.Close())
}

// Item 5: a watcher started before any member registered waits for the
// first, until its context ends; it never returns without a placer.
func TestWatchEmpty(t *testing.T) {
	addr := sharedEtcd(t)
	c, p := client(t, addr), prefix(t)
	short, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := etcd.Watch(short, c, p, maglev)
	assert.ErrorIs(t, err, etcd.ErrNoMembers)
	assert.ErrorIs(t, err, chash.ErrNoNodes)
	assert.ErrorIs(t, err, context.DeadlineExceeded)

	go func() {
		time.Sleep(300 * time.Millisecond)
		r, err := etcd.Register(context.Background(), client(t, addr), p, etcd.Member{ID: "first"})
		if err == nil {
			t.Cleanup(func() { r.Close() })
		}
	}()
	start := time.Now()
	w, err := etcd.Watch(ctxT(t), client(t, addr), p, maglev)
	require.NoError(t, err, "the watcher waits for the first member")
	defer w.Close()
	assert.Equal(t, "first", w.LookupString("k").ID)
	assert.Greater(t, time.Since(start), 250*time.Millisecond)
}

func TestWatcherLookupAllocs(t *testing.T) {
	addr := sharedEtcd(t)
	c, p := client(t, addr), prefix(t)
	putMembers(t, c, p, 10, 1)
	w := watchers(t, addr, p, 1)[0]
	buf := make([]chash.Node, 0, 3)
	key := []byte("user:1")
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		w.Lookup(key)
		w.LookupString("user:2")
		buf = w.AppendTopK(buf[:0], key, 3)
	}))
	assert.Len(t, buf, 3)
	assert.Equal(t, fmt.Sprint(w.View().Placer.LookupString("user:2")), fmt.Sprint(w.LookupString("user:2")))
}

// Members announce where to reach them.
func ExampleParseMember() {
	m, err := etcd.ParseMember("cache-7", []byte(`{"id":"cache-7","weight":2,"addr":"10.0.0.7:11211"}`))
	fmt.Println(m.ID, m.Weight, m.Addr, err)
	_, err = etcd.ParseMember("cache-8", []byte(`{"id":"cache-7"}`))
	fmt.Println(errors.Is(err, etcd.ErrBadMember))
	// Output:
	// cache-7 2 10.0.0.7:11211 <nil>
	// true
}
