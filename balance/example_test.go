package balance_test

import (
	"expvar"
	"fmt"
	"log"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/balance"
)

// Each request acquires a node for its key and releases it when done; a
// node at its bound passes the request to the key's next choice.
func ExampleNew() {
	p, err := chash.NewMaglev([]chash.Node{{ID: "a"}, {ID: "b"}, {ID: "c"}})
	if err != nil {
		log.Fatal(err)
	}
	b, err := balance.New(p, balance.WithLoadFactor(1.25))
	if err != nil {
		log.Fatal(err)
	}
	lease, err := b.AcquireString("user:42")
	if err != nil {
		log.Fatal(err) // ErrOverloaded: only under concurrent contention
	}
	defer lease.Release() // when the request ends; a second Release does nothing
	fmt.Println(lease.Node().ID, b.InFlight())
	// Output: b 1
}

// A service publishes the balancer's load through expvar (served at
// /debug/vars by net/http's default mux); Stats is cheap enough to read on
// every scrape.
func ExampleBalancer_Stats() {
	p, err := chash.NewRendezvous([]chash.Node{{ID: "a"}, {ID: "b"}, {ID: "c"}})
	if err != nil {
		panic(err)
	}
	b, err := balance.New(p)
	if err != nil {
		panic(err)
	}
	expvar.Publish("chash_balancer", expvar.Func(func() any { return b.Stats() }))
	for i := 0; i < 4; i++ {
		if _, err := b.AcquireString("user:42"); err != nil { // held, for the example
			panic(err)
		}
	}
	fmt.Println(expvar.Get("chash_balancer"))
	// Output:
	// {"InFlight":4,"Nodes":[{"ID":"a","Weight":1,"InFlight":2,"Away":2,"Spilled":2,"Spread":0},{"ID":"b","Weight":1,"InFlight":0,"Away":0,"Spilled":0,"Spread":0},{"ID":"c","Weight":1,"InFlight":2,"Away":0,"Spilled":0,"Spread":0}],"Spills":2,"Overloads":0,"HotKeys":null}
}

// Reads of a key that takes a large share of the traffic are spread over
// several of its first choices; writes go to all of them.
func ExampleWithHotKeys() {
	nodes := make([]chash.Node, 8)
	for i := range nodes {
		nodes[i] = chash.Node{ID: fmt.Sprint("cache-", i)}
	}
	p, err := chash.NewRendezvous(nodes)
	if err != nil {
		panic(err)
	}
	// Keys worth half a node's share (1/16) are hot.
	hot, err := balance.NewHotKeys(balance.HotKeysConfig{Threshold: 1.0 / 16, Sample: 1, Window: 1024})
	if err != nil {
		panic(err)
	}
	b, err := balance.New(p, balance.WithHotKeys(hot, 4))
	if err != nil {
		panic(err)
	}
	for i := 0; i < 4000; i++ { // every other request reads "celebrity"
		key := "celebrity"
		if i%2 == 1 {
			key = fmt.Sprint("user:", i)
		}
		l, err := b.AcquireString(key)
		if err != nil {
			panic(err)
		}
		l.Release()
	}
	fmt.Println(len(b.AppendReplicasString(nil, "celebrity")), "replicas for celebrity")
	fmt.Println(len(b.AppendReplicasString(nil, "user:1")), "replica for user:1")
	for _, k := range b.Stats().HotKeys {
		fmt.Printf("%s: %.1f\n", k.Key, k.Share)
	}
	// Output:
	// 4 replicas for celebrity
	// 1 replica for user:1
	// celebrity: 0.5
}

// Power of two choices: the lighter of a key's first two nodes, the first
// kept unless the second is strictly lighter.
func ExampleWithChoices() {
	p, err := chash.NewRendezvous([]chash.Node{{ID: "a"}, {ID: "b"}, {ID: "c"}})
	if err != nil {
		panic(err)
	}
	b, err := balance.New(p, balance.WithChoices(2), balance.WithoutLoadBound())
	if err != nil {
		panic(err)
	}
	for i := 0; i < 6; i++ {
		l, err := b.AcquireString("hot-key") // held, for the example
		if err != nil {
			panic(err)
		}
		fmt.Print(l.Node().ID, " ")
	}
	fmt.Println()
	// Output: a b a b a b
}
