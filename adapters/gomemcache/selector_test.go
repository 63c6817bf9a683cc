package gomemcache_test

import (
	"errors"
	"fmt"
	"math"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/bradfitz/gomemcache/memcache"
	"github.com/keyplace/chash"
	"github.com/keyplace/chash/adapters/gomemcache"
)

var four = []string{"127.0.0.1:11211", "127.0.0.1:11212", "127.0.0.1:11213", "127.0.0.1:11214"}

func TestNewErrors(t *testing.T) {
	cases := []struct {
		name    string
		servers []string
		opts    []gomemcache.Option
		want    error
	}{
		{"empty list", nil, nil, gomemcache.ErrNoServers},
		{"empty list is memcache's error", []string{}, nil, memcache.ErrNoServers},
		{"empty address", []string{""}, nil, gomemcache.ErrBadAddress},
		{"missing port", []string{"127.0.0.1"}, nil, gomemcache.ErrBadAddress},
		{"bad port", []string{"127.0.0.1:memcache-ish"}, nil, gomemcache.ErrBadAddress},
		{"port out of range", []string{"127.0.0.1:70000"}, nil, gomemcache.ErrBadAddress},
		{"zero port", []string{"127.0.0.1:0"}, nil, gomemcache.ErrBadAddress},
		{"stray colon", []string{"127.0.0.1:11211:1"}, nil, gomemcache.ErrBadAddress},
		{"repeated address", []string{four[0], four[0]}, nil, chash.ErrDuplicateID},
		{"unknown algorithm", four, []gomemcache.Option{gomemcache.WithAlgorithm(99)}, chash.ErrUnknownAlgorithm},
		{"negative weight", four, []gomemcache.Option{gomemcache.WithWeights(map[string]float64{four[1]: -1})}, chash.ErrInvalidWeight},
		{"NaN weight", four, []gomemcache.Option{gomemcache.WithWeights(map[string]float64{four[1]: math.NaN()})}, chash.ErrInvalidWeight},
		{"bad placer option", four, []gomemcache.Option{gomemcache.WithPlacerOptions(chash.WithVnodes(0))}, chash.ErrInvalidOption},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := gomemcache.New(c.servers, c.opts...)
			if !errors.Is(err, c.want) {
				t.Fatalf("New(%q) error = %v, want %v", c.servers, err, c.want)
			}
			if s != nil {
				t.Fatalf("New(%q) returned a selector with error %v", c.servers, err)
			}
			t.Logf("%v", err)
		})
	}
}

func TestSetServersErrorKeepsServers(t *testing.T) {
	s, err := gomemcache.New(four)
	if err != nil {
		t.Fatal(err)
	}
	before, _ := s.PickServer("some key")
	for _, bad := range [][]string{nil, {"nope"}, {four[0], four[0]}} {
		if err := s.SetServers(bad...); err == nil {
			t.Fatalf("SetServers(%q) succeeded", bad)
		}
	}
	after, err := s.PickServer("some key")
	if err != nil || after.String() != before.String() || s.Placer().Len() != 4 {
		t.Fatalf("after failed SetServers: %v, %v, %d servers; want %v and 4 servers", after, err, s.Placer().Len(), before)
	}
}

func TestZeroSelector(t *testing.T) {
	var s gomemcache.Selector
	if a, err := s.PickServer("k"); a != nil || !errors.Is(err, memcache.ErrNoServers) {
		t.Fatalf("zero PickServer = %v, %v; want nil, memcache.ErrNoServers", a, err)
	}
	calls := 0
	if err := s.Each(func(net.Addr) error { calls++; return nil }); err != nil || calls != 0 {
		t.Fatalf("zero Each: %d calls, %v", calls, err)
	}
	if s.Placer() != nil {
		t.Fatal("zero Placer is not nil")
	}
	if err := s.SetServers(four...); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PickServer("k"); err != nil {
		t.Fatal(err)
	}
}

// TestPickServer checks that every key goes to the address of the node the
// placer chooses, and that Each reports the servers in the order given.
func TestPickServer(t *testing.T) {
	servers := append([]string{"/tmp/memcached.sock"}, four...)
	s, err := gomemcache.New(servers, gomemcache.WithAlgorithm(chash.AlgorithmRing))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for i := range 100_000 {
		key := fmt.Sprintf("key:%d", i)
		a, err := s.PickServer(key)
		if err != nil {
			t.Fatal(err)
		}
		if want := s.Placer().LookupString(key).ID; a.String() != want {
			t.Fatalf("PickServer(%q) = %v, placer says %s", key, a, want)
		}
		seen[a.Network()+" "+a.String()]++
	}
	if len(seen) != 5 || seen["unix /tmp/memcached.sock"] == 0 || seen["tcp "+four[3]] == 0 {
		t.Fatalf("keys per server: %v", seen)
	}
	var order []string
	_ = s.Each(func(a net.Addr) error { order = append(order, a.String()); return nil })
	if fmt.Sprint(order) != fmt.Sprint(servers) {
		t.Fatalf("Each order %q, want %q", order, servers)
	}
	stop := errors.New("stop")
	calls := 0
	if err := s.Each(func(net.Addr) error { calls++; return stop }); err != stop || calls != 1 {
		t.Fatalf("Each with an error: %d calls, %v", calls, err)
	}
}

func TestPickServerAllocs(t *testing.T) {
	s, err := gomemcache.New(four)
	if err != nil {
		t.Fatal(err)
	}
	var a net.Addr
	allocs := testing.AllocsPerRun(1000, func() { a, _ = s.PickServer("user:12345:profile") })
	if allocs != 0 {
		t.Fatalf("PickServer allocates %v times per call, want 0", allocs)
	}
	_ = a.String()
}

func TestWeights(t *testing.T) {
	s, err := gomemcache.New(four, gomemcache.WithWeights(map[string]float64{four[0]: 3, "10.0.0.9:11211": 7}))
	if err != nil {
		t.Fatal(err)
	}
	const n = 100_000
	heavy := 0
	for i := range n {
		if a, _ := s.PickServer(fmt.Sprintf("key:%d", i)); a.String() == four[0] {
			heavy++
		}
	}
	// Weight 3 of a total of 6: half the keys, within 5 points (the ring's
	// load varies by about 8% of a share at 160 points per unit weight).
	if f := float64(heavy) / n; math.Abs(f-0.5) > 0.05 {
		t.Fatalf("server of weight 3 in 6 got %.3f of the keys, want 0.5 ± 0.05", f)
	}
}

// TestConcurrentSetServers swaps membership while readers pick servers:
// every pick must come from the old set or the new one (run with -race).
func TestConcurrentSetServers(t *testing.T) {
	five := append(append([]string{}, four...), "127.0.0.1:11215")
	s, err := gomemcache.New(four)
	if err != nil {
		t.Fatal(err)
	}
	valid := map[string]bool{}
	for _, a := range five {
		valid[a] = true
	}
	var wg sync.WaitGroup
	done := make(chan struct{})
	errs := make(chan error, 8)
	for r := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				a, err := s.PickServer(fmt.Sprintf("r%d:%d", r, i))
				if err != nil || !valid[a.String()] {
					errs <- fmt.Errorf("PickServer = %v, %v", a, err)
					return
				}
			}
		}()
	}
	for i := range 200 {
		list := four
		if i%2 == 0 {
			list = five
		}
		if err := s.SetServers(list...); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func ExampleNew() {
	sel, err := gomemcache.New([]string{"10.0.0.1:11211", "10.0.0.2:11211", "10.0.0.3:11211"})
	if err != nil {
		fmt.Println(err)
		return
	}
	// The client connects lazily: nothing is contacted until a request.
	mc := memcache.NewFromSelector(sel)
	_ = mc

	before, _ := sel.PickServer("user:42")
	// Adding a server moves only the keys the new server takes over.
	if err := sel.SetServers("10.0.0.1:11211", "10.0.0.2:11211", "10.0.0.3:11211", "10.0.0.4:11211"); err != nil {
		fmt.Println(err)
		return
	}
	after, _ := sel.PickServer("user:42")
	fmt.Println(before.Network(), after.String() == before.String() || after.String() == "10.0.0.4:11211")

	_, err = gomemcache.New([]string{"10.0.0.1"})
	fmt.Println(err)
	// Output:
	// tcp true
	// gomemcache: bad server address: server 0 "10.0.0.1": address 10.0.0.1: missing port in address
}

// FuzzNew feeds arbitrary server lists (comma-separated) and keys: New
// must fail cleanly or give a selector whose picks are among the servers.
func FuzzNew(f *testing.F) {
	f.Add("127.0.0.1:11211,127.0.0.1:11212", "key")
	f.Add("/tmp/mc.sock,[::1]:11211", "")
	f.Add(",", "k")
	f.Add("127.0.0.1:11211,127.0.0.1:11211", "k")
	f.Add("127.0.0.1", "k")
	f.Fuzz(func(t *testing.T, list, key string) {
		servers := strings.Split(list, ",")
		for _, s := range servers {
			// Host names would be looked up in DNS: keep to literals.
			if host, _, err := net.SplitHostPort(s); err == nil && host != "" && net.ParseIP(host) == nil && !strings.Contains(s, "/") {
				t.Skip("host name")
			}
		}
		sel, err := gomemcache.New(servers)
		if err != nil {
			return
		}
		a, err := sel.PickServer(key)
		var all []net.Addr
		_ = sel.Each(func(a net.Addr) error { all = append(all, a); return nil })
		if err != nil || len(all) != len(servers) || !slices.Contains(all, a) {
			t.Fatalf("PickServer(%q) = %v, %v; servers %q resolve to %v", key, a, err, servers, all)
		}
	})
}
