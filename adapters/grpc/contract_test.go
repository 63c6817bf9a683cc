package chashgrpc

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/chashtest"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/ringhash"
)

// The balancer keeps the router contract against real gRPC servers: a
// Maglev table of 5 (which cannot place the sixth server) with a load
// factor of 1.25. A membership is a resolver update; a disruption is the
// server closing the channel's connection (GOAWAY) while the held
// streams run on, as MaxConnectionAge does, and the channel reconnecting.
func TestContractRouter(t *testing.T) {
	const c = 1.25
	bs, relays := startRelayed(t, 6)
	nodes := make([]chash.Node, len(bs))
	byAddr, byID := map[string]string{}, map[string]*backend{}
	for i, b := range bs {
		nodes[i] = chash.Node{ID: fmt.Sprintf("backend-%d", i)}
		byAddr[b.addr], byID[nodes[i].ID] = nodes[i].ID, b
	}
	eps := func(ns []chash.Node) []resolver.Endpoint {
		out := make([]resolver.Endpoint, len(ns))
		for i, n := range ns {
			out[i] = ringhash.SetHashKey(resolver.Endpoint{Addresses: []resolver.Address{{Addr: byID[n.ID].addr}}}, n.ID)
			if n.Weight > 1 {
				out[i] = weightSet(out[i], uint32(n.Weight))
			}
		}
		return out
	}
	conn, bal, r := dialResolver(t, eps(nodes[:5]), fmt.Sprintf(`{"loadBalancingConfig":[{"chash":{"algorithm":"maglev","tableSize":5,"loadFactor":%v}}]}`, c))
	// until waits for every endpoint named to be in state s.
	until := func(s connectivity.State, ids ...string) error {
		deadline := time.Now().Add(10 * time.Second)
		for {
			states := bal.states()
			n := 0
			for _, id := range ids {
				if states[id] == s {
					n++
				}
			}
			if n == len(ids) {
				return nil
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("endpoints %v: want %v, have %v", ids, s, states)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	start := time.Now()
	chashtest.TestRouter(t, chashtest.Router{
		Backends: nodes,
		Set: func(ns []chash.Node) error {
			if err := r.CC().UpdateState(resolver.State{Endpoints: eps(ns)}); err != nil || len(ns) == 0 {
				return err
			}
			conn.Connect()
			return until(connectivity.Ready, ids(ns)...)
		},
		Route: func(key string) (string, error) {
			addr, err := try(WithKey(context.Background(), key), conn)
			return byAddr[addr], err
		},
		Unplaceable: func(all []chash.Node) []chash.Node { return all },
		LoadFactor:  c,
		Hold: func(key string) (func(), error) {
			ctx, cancel := context.WithCancel(WithKey(context.Background(), key))
			st, err := healthpb.NewHealthClient(conn).Watch(ctx, &healthpb.HealthCheckRequest{}, grpc.WaitForReady(true))
			if err == nil {
				_, err = st.Recv()
			}
			if err != nil {
				cancel()
				return nil, err
			}
			return cancel, nil
		},
		InFlight: func() map[string]int {
			m := make(map[string]int, len(bs))
			for _, b := range bs {
				m[byAddr[b.addr]] = int(b.inflight.Load())
			}
			return m
		},
		Disrupt: func(id string) {
			relays[byID[id]].cycle()
			if err := until(connectivity.Idle, id); err != nil {
				t.Error(err)
				return
			}
			conn.Connect()
			if err := until(connectivity.Ready, id); err != nil {
				t.Error(err)
			}
		},
	})
	t.Logf("the router contract took %v", time.Since(start).Round(time.Millisecond))
}

// relayed is a backend whose server can be replaced on its address while
// the old one drains: one listener accepts the connections and hands each
// to the server serving now.
type relayed struct {
	b   *backend
	lis net.Listener
	mu  sync.Mutex
	cur *handoff // the current server's listener
}

// handoff is the listener one grpc.Server serves: the connections the
// relay hands it, until the server closes it.
type handoff struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
	addr  net.Addr
}

func (h *handoff) Accept() (net.Conn, error) {
	select {
	case c := <-h.conns:
		return c, nil
	case <-h.done:
		return nil, net.ErrClosed
	}
}

func (h *handoff) Close() error   { h.once.Do(func() { close(h.done) }); return nil }
func (h *handoff) Addr() net.Addr { return h.addr }

// startRelayed starts n backends, each behind a relay.
func startRelayed(t *testing.T, n int) ([]*backend, map[*backend]*relayed) {
	bs := make([]*backend, n)
	relays := make(map[*backend]*relayed, n)
	for i := range bs {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		bs[i] = &backend{addr: lis.Addr().String()}
		r := &relayed{b: bs[i], lis: lis}
		relays[bs[i]] = r
		bs[i].serve(r.next())
		go r.run()
		t.Cleanup(func() { lis.Close(); bs[i].stop() })
	}
	return bs, relays
}

// next returns a new handoff, to which the relay hands connections from
// now on.
func (r *relayed) next() net.Listener {
	h := &handoff{conns: make(chan net.Conn), done: make(chan struct{}), addr: r.lis.Addr()}
	r.mu.Lock()
	r.cur = h
	r.mu.Unlock()
	return h
}

func (r *relayed) run() {
	for {
		c, err := r.lis.Accept()
		if err != nil {
			return
		}
		for handed := false; !handed; {
			r.mu.Lock()
			h := r.cur
			r.mu.Unlock()
			select {
			case h.conns <- c:
				handed = true
			case <-h.done:
				r.mu.Lock()
				if r.cur == h { // stopped, not replaced
					c.Close()
					handed = true
				}
				r.mu.Unlock()
			}
		}
	}
}

// cycle serves the backend's address with a new server and has the old
// one close its connections gracefully (GOAWAY): the streams on them run
// on, counted by the backend, until they end.
func (r *relayed) cycle() {
	r.b.mu.Lock()
	old := r.b.srv
	r.b.mu.Unlock()
	r.b.serve(r.next())
	go old.GracefulStop()
}
