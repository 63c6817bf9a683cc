package zookeeper_test

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/keyplace/chash/adapters/zookeeper"
	"github.com/keyplace/chash/member"
	"github.com/keyplace/chash/member/membertest"
)

// fleet is a fleet znode of the test's own on a shared server. Set writes
// its members as one multi-operation (ZooKeeper applies it atomically);
// the sources read through a proxy, which Break cuts and Restore mends.
type fleet struct {
	t     *testing.T
	path  string
	conn  *zk.Conn // the writer's, direct
	proxy *proxy
}

var fleets atomic.Int64

func newFleet(t *testing.T, s *server) *fleet {
	f := &fleet{t: t, path: fmt.Sprintf("/contract/f%d", fleets.Add(1)), conn: connect(t, s.addr, 10*time.Second),
		proxy: newProxy(t, s.addr)}
	for _, p := range []string{"/contract", f.path} {
		if _, err := f.conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatal(err)
		}
	}
	return f
}

func (f *fleet) Source() member.Source {
	src, err := zookeeper.NewSource(connect(f.t, f.proxy.addr(), 10*time.Second), f.path,
		zookeeper.WithInterval(100*time.Millisecond))
	if err != nil {
		f.t.Fatal(err)
	}
	return src
}

func (f *fleet) Set(ms []member.Member) error {
	old, _, err := f.conn.Children(f.path)
	if err != nil {
		return err
	}
	want := map[string][]byte{}
	for _, m := range ms {
		b, err := member.EncodeJSON(m)
		if err != nil {
			return err
		}
		want[m.ID] = b
	}
	var ops []any
	for _, name := range old {
		if _, ok := want[name]; !ok {
			ops = append(ops, &zk.DeleteRequest{Path: f.path + "/" + name, Version: -1})
		} else {
			ops = append(ops, &zk.SetDataRequest{Path: f.path + "/" + name, Data: want[name], Version: -1})
			delete(want, name)
		}
	}
	for name, b := range want {
		ops = append(ops, &zk.CreateRequest{Path: f.path + "/" + name, Data: b, Flags: zk.FlagEphemeral, Acl: zk.WorldACL(zk.PermAll)})
	}
	if len(ops) == 0 {
		return nil
	}
	_, err = f.conn.Multi(ops...)
	return err
}

func (f *fleet) Publish(s *member.Spec) error { return zookeeper.Publish(f.conn, f.path, s) }

func (f *fleet) Break() error { f.proxy.Cut(); return nil }

func (f *fleet) Restore() error { f.proxy.Restore(); return nil }

// The source keeps the contract every member source keeps, on a real
// ZooKeeper: members as znodes, the spec as the fleet znode's data, a
// connection cut reported and recovered.
func TestSourceContract(t *testing.T) {
	s := newServer(t)
	membertest.TestSource(t, membertest.Spec{
		NewFleet: func(t *testing.T) membertest.Fleet { return newFleet(t, s) },
		Silence:  300 * time.Millisecond,
		Addr:     true,
		Meta:     true,
	})
}
