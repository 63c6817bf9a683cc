package gomemcache_test

// Integration tests against real memcached servers: the ones .ci/services.sh
// starts, named by CHASH_MEMCACHED (at least five comma-separated
// addresses). Without it they skip, unless CI is set, where they fail.

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
	"github.com/keyplace/chash"
	"github.com/keyplace/chash/adapters/gomemcache"
)

// selector is what both placements under test offer: gomemcache's
// ServerList and the chash Selector.
type selector interface {
	memcache.ServerSelector
	SetServers(servers ...string) error
}

func memcachedServers(t *testing.T) []string {
	t.Helper()
	env := os.Getenv("CHASH_MEMCACHED")
	if env == "" {
		if ci := os.Getenv("CI"); ci != "" && ci != "false" && ci != "0" {
			t.Fatal("CI is set but CHASH_MEMCACHED is not: the integration tests need the servers `eval \"$(.ci/services.sh start)\"` starts")
		}
		t.Skip("CHASH_MEMCACHED is not set: skipping the test against real memcached servers " +
			"(run `eval \"$(.ci/services.sh start)\"` from the repository root first; see README.md)")
	}
	servers := strings.Split(env, ",")
	if len(servers) < 5 {
		t.Fatalf("CHASH_MEMCACHED=%q: want at least 5 addresses", env)
	}
	all := memcache.New(servers...)
	if err := all.Ping(); err != nil {
		t.Fatalf("memcached servers in CHASH_MEMCACHED are not all reachable: %v", err)
	}
	if err := all.FlushAll(); err != nil {
		t.Fatalf("flush_all: %v", err)
	}
	return servers[:5]
}

func testKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("chash:key:%06d", i)
	}
	return keys
}

func keyCount() int {
	if testing.Short() {
		return 20_000
	}
	return 100_000
}

// fill stores every key, with the key as its value, from 16 goroutines:
// gomemcache has no multi-set, and one at a time takes seconds.
func fill(t *testing.T, mc *memcache.Client, keys []string) {
	t.Helper()
	const workers = 16
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(keys); i += workers {
				if err := mc.Set(&memcache.Item{Key: keys[i], Value: []byte(keys[i])}); err != nil {
					errs[w] = fmt.Errorf("set %s: %w", keys[i], err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
}

// readBack reads every key with GetMulti and reports which were found.
func readBack(t *testing.T, mc *memcache.Client, keys []string) []bool {
	t.Helper()
	hit := make([]bool, len(keys))
	for lo := 0; lo < len(keys); lo += 1000 {
		batch := keys[lo:min(lo+1000, len(keys))]
		items, err := mc.GetMulti(batch)
		if err != nil {
			t.Fatalf("GetMulti: %v", err)
		}
		for i, k := range batch {
			if it, ok := items[k]; ok {
				if !bytes.Equal(it.Value, []byte(k)) {
					t.Fatalf("key %s has value %q", k, it.Value)
				}
				hit[lo+i] = true
			}
		}
	}
	return hit
}

// change fills the servers in before through sel, switches sel to after and
// reads every key back: it returns which keys were still found.
func change(t *testing.T, sel selector, keys, before, after []string) []bool {
	t.Helper()
	if err := sel.SetServers(before...); err != nil {
		t.Fatal(err)
	}
	mc := memcache.NewFromSelector(sel)
	mc.MaxIdleConns = 16
	fill(t, mc, keys)
	if err := sel.SetServers(after...); err != nil {
		t.Fatal(err)
	}
	return readBack(t, mc, keys)
}

// crcServer is where ServerList puts key: CRC-32 (IEEE) modulo the count.
func crcServer(key string, servers []string) string {
	return servers[crc32.ChecksumIEEE([]byte(key))%uint32(len(servers))]
}

// check compares the keys found with the keys whose server did not change
// (which must be exactly the same keys), and their fraction with want.
func check(t *testing.T, name string, keys []string, hit []bool, stayed func(key string) bool, want, tol float64) {
	t.Helper()
	hits := 0
	for i, k := range keys {
		if hit[i] != stayed(k) {
			t.Errorf("%s: key %s found=%v but its server changed=%v", name, k, hit[i], !stayed(k))
		}
		if hit[i] {
			hits++
		}
	}
	f := float64(hits) / float64(len(keys))
	t.Logf("%s: %d of %d keys still hit (%.2f%%)", name, hits, len(keys), 100*f)
	if math.Abs(f-want) > tol {
		t.Errorf("%s: hit rate %.4f, want %.2f ± %.2f", name, f, want, tol)
	}
}

// TestIntegrationAddServer is the seed articles' scenario: fill four
// servers, add a fifth, read everything back.
func TestIntegrationAddServer(t *testing.T) {
	servers := memcachedServers(t)
	keys := testKeys(keyCount())
	four, five := servers[:4], servers[:5]

	t.Run("ServerList", func(t *testing.T) {
		memcachedServers(t) // flush
		hit := change(t, new(memcache.ServerList), keys, four, five)
		stayed := func(k string) bool { return crcServer(k, four) == crcServer(k, five) }
		check(t, "ServerList 4->5", keys, hit, stayed, 0.20, 0.02)
	})
	t.Run("chash", func(t *testing.T) {
		memcachedServers(t)
		sel, err := gomemcache.New(four)
		if err != nil {
			t.Fatal(err)
		}
		old := sel.Placer()
		hit := change(t, sel, keys, four, five)
		stayed := func(k string) bool { return old.LookupString(k).ID == sel.Placer().LookupString(k).ID }
		check(t, "chash ring 4->5", keys, hit, stayed, 0.80, 0.05)
	})
}

// TestIntegrationRemoveServer removes the middle one of five servers.
func TestIntegrationRemoveServer(t *testing.T) {
	servers := memcachedServers(t)
	keys := testKeys(keyCount())
	five := servers[:5]
	removed := five[2]
	four := slices.DeleteFunc(slices.Clone(five), func(s string) bool { return s == removed })

	t.Run("ServerList", func(t *testing.T) {
		memcachedServers(t)
		hit := change(t, new(memcache.ServerList), keys, five, four)
		stayed := func(k string) bool { return crcServer(k, five) == crcServer(k, four) }
		check(t, "ServerList 5->4", keys, hit, stayed, 0.20, 0.02)
	})
	t.Run("chash", func(t *testing.T) {
		memcachedServers(t)
		sel, err := gomemcache.New(five)
		if err != nil {
			t.Fatal(err)
		}
		old := sel.Placer()
		hit := change(t, sel, keys, five, four)
		// Only the removed server's keys miss: every other key hits.
		stayed := func(k string) bool { return old.LookupString(k).ID != removed }
		check(t, "chash ring 5->4", keys, hit, stayed, 0.80, 0.05)
	})
	// A stateful algorithm has jump's memory and speed, and SetServers
	// derives its placer: the middle server leaves and every other key
	// still hits.
	for _, a := range []chash.Algorithm{chash.AlgorithmMemento, chash.AlgorithmAnchor} {
		t.Run("chash "+a.String(), func(t *testing.T) {
			memcachedServers(t)
			sel, err := gomemcache.New(five, gomemcache.WithAlgorithm(a))
			if err != nil {
				t.Fatal(err)
			}
			old := sel.Placer()
			hit := change(t, sel, keys, five, four)
			stayed := func(k string) bool { return old.LookupString(k).ID != removed }
			check(t, "chash "+a.String()+" 5->4", keys, hit, stayed, 0.80, 0.05)
		})
	}
}

// TestIntegrationServeWhileChanging keeps readers and writers busy while
// the server list switches between four and five servers: every request
// must succeed or miss, none may fail.
func TestIntegrationServeWhileChanging(t *testing.T) {
	servers := memcachedServers(t)
	sel, err := gomemcache.New(servers[:4])
	if err != nil {
		t.Fatal(err)
	}
	mc := memcache.NewFromSelector(sel)
	mc.MaxIdleConns = 16
	keys := testKeys(1000)
	var wg sync.WaitGroup
	done := make(chan struct{})
	errs := make([]error, 8)
	var requests [8]int
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				k := keys[(i*8+w)%len(keys)]
				err := mc.Set(&memcache.Item{Key: k, Value: []byte(k)})
				if err == nil {
					_, err = mc.Get(k)
				}
				if err != nil && !errors.Is(err, memcache.ErrCacheMiss) {
					errs[w] = fmt.Errorf("request %d for %s: %w", i, k, err)
					return
				}
				requests[w]++
			}
		}()
	}
	for i := range 100 {
		if err := sel.SetServers(servers[:4+i%2]...); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond)
	}
	close(done)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, n := range requests {
		total += n
	}
	t.Logf("%d set+get pairs during 100 membership changes, none failed", total)
}

// TestIntegrationUnreachable points a selector at a live server and at a
// closed port: keys on the live one work, the others fail with the dial
// error, and nothing panics.
func TestIntegrationUnreachable(t *testing.T) {
	servers := memcachedServers(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()

	sel, err := gomemcache.New([]string{servers[0], closed})
	if err != nil {
		t.Fatal(err)
	}
	mc := memcache.NewFromSelector(sel)
	var live, dead int
	var deadErr error
	for _, k := range testKeys(200) {
		err := mc.Set(&memcache.Item{Key: k, Value: []byte(k)})
		switch sel.Placer().LookupString(k).ID {
		case closed:
			dead++
			if !errors.Is(err, syscall.ECONNREFUSED) || !strings.Contains(err.Error(), closed) {
				t.Fatalf("set %s on closed port %s: error %v, want connection refused", k, closed, err)
			}
			deadErr = err
		default:
			live++
			if err != nil {
				t.Fatalf("set %s on live server: %v", k, err)
			}
		}
	}
	if live == 0 || dead == 0 {
		t.Fatalf("%d keys on the live server, %d on the closed port: want some of each", live, dead)
	}
	if _, err := mc.GetMulti(testKeys(200)); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("GetMulti across a closed port: %v, want connection refused", err)
	}
	t.Logf("%d keys on the closed port fail with: %v", dead, deadErr)
}
