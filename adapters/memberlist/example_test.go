package memberlist_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"time"

	ml "github.com/hashicorp/memberlist"
	"github.com/keyplace/chash"
	clml "github.com/keyplace/chash/adapters/memberlist"
	"github.com/keyplace/chash/member"
)

// A fleet shares one view through gossip: each node joins with its member,
// one publishes the placement spec, and every process watches with it.
func Example() {
	config := func(name string) *ml.Config {
		c := ml.DefaultLANConfig()
		c.Name, c.BindAddr, c.BindPort, c.LogOutput = name, "127.0.0.1", 0, io.Discard
		return c
	}
	first, err := clml.Join(config("cache-1"), member.Member{ID: "cache-1", Zone: "eu-1a", Addr: "10.0.0.1:11211"}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer first.Leave(time.Second)
	second, err := clml.Join(config("cache-2"), member.Member{ID: "cache-2", Zone: "eu-1b", Addr: "10.0.0.2:11211"},
		[]string{first.Addr()})
	if err != nil {
		log.Fatal(err)
	}
	defer second.Leave(time.Second)
	if err := first.Publish(&member.Spec{Algorithm: chash.AlgorithmMaglev}); err != nil {
		log.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	w, err := second.Watch(ctx, nil) // nil: the spec the fleet publishes
	if err != nil {
		log.Fatal(err)
	}
	defer w.Close()
	for w.Len() < 2 || w.View().Spec == nil {
		time.Sleep(10 * time.Millisecond)
	}
	fmt.Println(w.Len(), w.View().Spec)
	// Output: 2 maglev
}
