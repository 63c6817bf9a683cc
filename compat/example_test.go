package compat_test

import (
	"fmt"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/compat"
)

// A go-redis Ring's shards, by name: GoRedis sends every key where the Ring
// does, hash tags included.
func ExampleNewGoRedis() {
	p, err := compat.NewGoRedis([]chash.Node{{ID: "shard-1"}, {ID: "shard-2"}, {ID: "shard-3"}})
	if err != nil {
		panic(err)
	}
	fmt.Println(p.LookupString("{user42}:cart").ID, p.LookupString("user42").ID)
	// Output: shard-2 shard-2
}

// A gomemcache ServerList as given to SetServers, and the one-time cost of
// leaving CRC-32 mod n for a ring.
func ExampleNewGomemcacheList() {
	servers := []string{"10.0.0.1:11211", "10.0.0.2:11211", "10.0.0.3:11211", "10.0.0.4:11211", "10.0.0.5:11211"}
	old, err := compat.NewGomemcacheList(servers...)
	if err != nil {
		panic(err)
	}
	ring, err := chash.NewRing(old.Nodes())
	if err != nil {
		panic(err)
	}
	m, err := chash.Diff(old, ring)
	if err != nil {
		panic(err)
	}
	fmt.Println(old.LookupString("user:42").ID)
	fmt.Printf("moving to a ring moves %.0f%% of keys\n", 100*m.Moved)
	// Output:
	// 10.0.0.4:11211
	// moving to a ring moves 80% of keys
}

// groupcache's HTTPPool peers, in the order given to Set.
func ExampleNewGroupcache() {
	p, err := compat.NewGroupcache([]chash.Node{{ID: "http://10.0.0.1:8080"}, {ID: "http://10.0.0.2:8080"}}, compat.GroupcacheReplicas)
	if err != nil {
		panic(err)
	}
	fmt.Println(p.LookupString("user:42").ID)
	// Output: http://10.0.0.1:8080
}

// An nginx upstream with "hash $key consistent", servers as written.
func ExampleNewNginxConsistent() {
	p, err := compat.NewNginxConsistent([]chash.Node{{ID: "10.0.0.1:8080"}, {ID: "10.0.0.2:8080", Weight: 2}, {ID: "unix:/run/app.sock"}})
	if err != nil {
		panic(err)
	}
	fmt.Println(p.LookupString("/video/42").ID)
	// Output: 10.0.0.2:8080
}

// An nginx upstream with plain "hash $key".
func ExampleNewNginxHash() {
	p, err := compat.NewNginxHash([]chash.Node{{ID: "10.0.0.1:8080"}, {ID: "10.0.0.2:8080"}, {ID: "10.0.0.3:8080"}})
	if err != nil {
		panic(err)
	}
	fmt.Println(p.LookupString("/video/42").ID)
	// Output: 10.0.0.2:8080
}

// grpc-go's ring_hash over endpoint addresses, keyed by the request hash
// header's value.
func ExampleNewGRPCRingHash() {
	p, err := compat.NewGRPCRingHash([]chash.Node{{ID: "10.0.0.1:50051"}, {ID: "10.0.0.2:50051"}, {ID: "10.0.0.3:50051"}}, 0, 0)
	if err != nil {
		panic(err)
	}
	fmt.Println(p.LookupString("session-7").ID, p.Entries())
	// Output: 10.0.0.2:50051 1026
}

// Envoy's ring_hash, hosts in the configured order.
func ExampleNewEnvoyRingHash() {
	p, err := compat.NewEnvoyRingHash([]chash.Node{{ID: "10.0.0.1:8080"}, {ID: "10.0.0.2:8080", Weight: 3}}, 0, 0)
	if err != nil {
		panic(err)
	}
	fmt.Println(p.LookupString("session-7").ID)
	// Output: 10.0.0.2:8080
}

// Envoy's Maglev with its default table of 65537 entries.
func ExampleNewEnvoyMaglev() {
	p, err := compat.NewEnvoyMaglev([]chash.Node{{ID: "10.0.0.1:8080"}, {ID: "10.0.0.2:8080"}, {ID: "10.0.0.3:8080"}}, 0)
	if err != nil {
		panic(err)
	}
	fmt.Println(p.LookupString("session-7").ID, p.Entries())
	// Output: 10.0.0.2:8080 [21846 21846 21845]
}

// Caddy's uri_hash policy over dial addresses, keyed by the request URI.
func ExampleNewCaddy() {
	p, err := compat.NewCaddy([]chash.Node{{ID: "10.0.0.1:8080"}, {ID: "10.0.0.2:8080"}, {ID: "10.0.0.3:8080"}})
	if err != nil {
		panic(err)
	}
	fmt.Println(p.LookupString("/video/42").ID)
	// Output: 10.0.0.3:8080
}
