package etcd_test

import (
	"context"
	"testing"
	"time"

	"github.com/keyplace/chash/adapters/etcd"
	"github.com/keyplace/chash/member"
	"github.com/keyplace/chash/member/membertest"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// fleet is a prefix of the test's own on the shared etcd; its sources
// reach etcd through a proxy that Break cuts.
type fleet struct {
	t      *testing.T
	c      *clientv3.Client
	px     *proxy
	prefix string
}

func (f *fleet) Source() member.Source {
	src, err := etcd.NewSource(client(f.t, f.px.addr()), f.prefix, etcd.WithProgressInterval(100*time.Millisecond))
	require.NoError(f.t, err)
	return src
}

// Set makes the prefix hold exactly ms, in one transaction, leaving the
// spec alone.
func (f *fleet) Set(ms []member.Member) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := f.c.Get(ctx, f.prefix+"/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return err
	}
	keep := map[string]bool{f.prefix + "/": true}
	var ops []clientv3.Op
	for _, m := range ms {
		b, err := member.EncodeJSON(m)
		if err != nil {
			return err
		}
		keep[f.prefix+"/"+m.ID] = true
		ops = append(ops, clientv3.OpPut(f.prefix+"/"+m.ID, string(b)))
	}
	for _, kv := range resp.Kvs {
		if !keep[string(kv.Key)] {
			ops = append(ops, clientv3.OpDelete(string(kv.Key)))
		}
	}
	_, err = f.c.Txn(ctx).Then(ops...).Commit()
	return err
}

func (f *fleet) Publish(s *member.Spec) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return etcd.Publish(ctx, f.c, f.prefix, s)
}

func (f *fleet) Break() error { f.px.cut(); return nil }

func (f *fleet) Restore() error { f.px.restore(); return nil }

// The source keeps the contract every member source keeps
// (membertest.TestSource), on a real etcd.
func TestSourceContract(t *testing.T) {
	addr := sharedEtcd(t)
	membertest.TestSource(t, membertest.Spec{
		NewFleet: func(t *testing.T) membertest.Fleet {
			return &fleet{t: t, c: client(t, addr), px: newProxy(t, addr), prefix: prefix(t)}
		},
		Silence: 500 * time.Millisecond,
		Addr:    true,
		Meta:    true,
	})
}
