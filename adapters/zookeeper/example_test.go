package zookeeper_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/keyplace/chash"
	"github.com/keyplace/chash/adapters/zookeeper"
	"github.com/keyplace/chash/member"
)

// A fleet shares one view through ZooKeeper: each node registers an
// ephemeral znode, one process publishes the placement spec, and every
// process watches with it. (Not run as a test: it needs a ZooKeeper.)
func Example() {
	conn, _, err := zk.Connect([]string{"127.0.0.1:2181"}, 10*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	reg, err := zookeeper.Register(ctx, conn, "/fleets/cache", member.Member{ID: "cache-1", Zone: "eu-1a", Addr: "10.0.0.1:11211"})
	if err != nil {
		log.Fatal(err)
	}
	defer reg.Close()
	if err := zookeeper.Publish(conn, "/fleets/cache", &member.Spec{Algorithm: chash.AlgorithmMaglev}); err != nil {
		log.Fatal(err)
	}

	w, err := zookeeper.Watch(ctx, conn, "/fleets/cache", nil) // nil: the published spec
	if err != nil {
		log.Fatal(err)
	}
	defer w.Close()
	fmt.Println(w.LookupString("user:42").ID, w.Fingerprint())
}
