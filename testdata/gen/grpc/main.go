// Command gen writes ../../grpc/vectors.tsv: the endpoint grpc-go's real
// ring_hash_experimental balancer sends each RPC to, over real gRPC servers
// on loopback (127.0.0.1:19001 and up, each serving the health service).
// The request hash comes from the "x-key" metadata (requestHashHeader), and
// the endpoint from the RPC's peer address. Sets named with -small use ring
// sizes 10 to 100, -capped 4096 to 4096, others grpc-go's defaults. Run
// from this directory:
//
//	go run . > ../../grpc/vectors.tsv
package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/keyplace/chash/testdata/gen/internal/vectors"
	"google.golang.org/grpc"
	_ "google.golang.org/grpc/balancer/ringhash"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/experimental/balancer/weight"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func addr(i int) string { return fmt.Sprintf("127.0.0.1:%d", 19000+i) }

func sets() []vectors.Set {
	out := vectors.StandardSets(addr, true)
	for _, s := range vectors.StandardSets(addr, true) {
		switch s.Name {
		case "U3", "W5":
			s.Name += "-small"
			out = append(out, s)
		case "U10":
			s.Name += "-capped"
			out = append(out, s)
		}
	}
	return out
}

func sizes(name string) (min, max int) {
	switch {
	case strings.HasSuffix(name, "-small"):
		return 10, 100
	case strings.HasSuffix(name, "-capped"):
		return 4096, 4096
	}
	return 0, 0
}

func run() error {
	for i := 1; i <= 10; i++ {
		lis, err := net.Listen("tcp", addr(i))
		if err != nil {
			return err
		}
		s := grpc.NewServer()
		healthpb.RegisterHealthServer(s, health.NewServer())
		go s.Serve(lis)
		defer s.Stop()
	}
	clients := map[string]healthpb.HealthClient{}
	for _, s := range sets() {
		cc, err := dial(s)
		if err != nil {
			return err
		}
		defer cc.Close()
		clients[s.Name] = healthpb.NewHealthClient(cc)
	}
	ks := vectors.Keys(2000, true)
	pick := func(s vectors.Set, key string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		ctx = metadata.AppendToOutgoingContext(ctx, "x-key", key)
		var p peer.Peer
		if _, err := clients[s.Name].Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Peer(&p)); err != nil {
			return "", err
		}
		return p.Addr.String(), nil
	}
	// A first pass connects every endpoint; the written pass then sees
	// them all ready.
	for _, s := range sets() {
		for _, k := range ks {
			if _, err := pick(s, k); err != nil {
				return err
			}
		}
	}
	return vectors.Write(os.Stdout, "grpc-go v1.85.0 ring_hash_experimental over real loopback servers, requestHashHeader x-key, hash key = address.\nColumns: the index in each set of the peer each RPC reached.", sets(), ks, pick)
}

func dial(s vectors.Set) (*grpc.ClientConn, error) {
	r := manual.NewBuilderWithScheme("gen" + strings.ToLower(strings.ReplaceAll(s.Name, "-", "")))
	var eps []resolver.Endpoint
	for i, id := range s.IDs {
		eps = append(eps, weight.Set(resolver.Endpoint{Addresses: []resolver.Address{{Addr: id}}}, weight.EndpointInfo{Weight: uint32(s.Weights[i])}))
	}
	r.InitialState(resolver.State{Endpoints: eps})
	min, max := sizes(s.Name)
	cfg := `"requestHashHeader":"x-key"`
	if min > 0 {
		cfg += fmt.Sprintf(`,"minRingSize":%d,"maxRingSize":%d`, min, max)
	}
	sc := `{"loadBalancingConfig":[{"ring_hash_experimental":{` + cfg + `}}]}`
	return grpc.NewClient(r.Scheme()+":///"+s.Name, grpc.WithResolvers(r), grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithDefaultServiceConfig(sc))
}
