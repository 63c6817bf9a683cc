package etcd_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/adapters/etcd"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// A fleet shares one view: every cache node registers, every client
// watches and looks keys up. (Not run as a test: it needs an etcd.)
func Example() {
	ctx := context.Background()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{"127.0.0.1:2379"}, DialTimeout: 5 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	// On each cache node:
	reg, err := etcd.Register(ctx, cli, "/fleet/cache", etcd.Member{ID: "cache-1", Addr: "10.0.0.1:11211"})
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Close()
	// On each client:
	view, err := etcd.Watch(ctx, cli, "/fleet/cache", func(nodes []chash.Node) (chash.Placer, error) {
		return chash.NewMaglev(nodes)
	}, etcd.WithViewHook(func(v *etcd.View) { log.Printf("view %d: %s", v.Version, v.Fingerprint) }))
	if err != nil {
		log.Fatal(err)
	}
	defer view.Close()
	fmt.Println(view.LookupString("user:42").ID)
}
