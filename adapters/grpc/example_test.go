package chashgrpc_test

import (
	"context"
	"fmt"
	"net"

	chashgrpc "github.com/keyplace/chash/adapters/grpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"
)

// Three health servers on loopback stand in for a service's replicas;
// every RPC for one tenant goes to the same one of them, whether the key
// comes from the x-tenant header or from WithKey.
func Example() {
	var eps []resolver.Endpoint
	for range 3 {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			panic(err)
		}
		srv := grpc.NewServer()
		healthpb.RegisterHealthServer(srv, health.NewServer())
		go srv.Serve(lis)
		defer srv.Stop()
		eps = append(eps, resolver.Endpoint{Addresses: []resolver.Address{{Addr: lis.Addr().String()}}})
	}
	r := manual.NewBuilderWithScheme("example")
	r.InitialState(resolver.State{Endpoints: eps})

	conn, err := grpc.NewClient("example:///replicas",
		grpc.WithResolvers(r),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultServiceConfig(`{"loadBalancingConfig": [{"chash":
			{"algorithm": "rendezvous", "header": "x-tenant", "loadFactor": 1.25}}]}`))
	if err != nil {
		panic(err)
	}
	defer conn.Close()
	client := healthpb.NewHealthClient(conn)

	backend := func(ctx context.Context) string {
		var p peer.Peer
		if _, err := client.Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Peer(&p), grpc.WaitForReady(true)); err != nil {
			panic(err)
		}
		return p.Addr.String()
	}
	byHeader := backend(metadata.AppendToOutgoingContext(context.Background(), "x-tenant", "tenant-42"))
	byKey := backend(chashgrpc.WithKey(context.Background(), "tenant-42"))
	fmt.Println("same replica for tenant-42:", byHeader == byKey)
	// Output: same replica for tenant-42: true
}

func ExampleParseConfig() {
	_, err := chashgrpc.ParseConfig([]byte(`{"algorithm": "ring_hash", "header": "x-user", "minRingSize": 1024}`))
	fmt.Println(err)
	_, err = chashgrpc.ParseConfig([]byte(`{"algorithm": "maglev", "tableSize": 1000}`))
	fmt.Println(err)
	// Output:
	// <nil>
	// chashgrpc: invalid config: chash: invalid option: WithTableSize(1000): want a prime from 2 to 16777216
}
