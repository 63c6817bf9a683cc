package chashcaddy

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp/reverseproxy"
	"github.com/keyplace/chash"
	"github.com/keyplace/chash/chashtest"
)

func init() { caddy.RegisterModule(new(testMembers)) }

// members is the upstream list testMembers serves, set by the test.
var members struct {
	sync.Mutex
	dials []string
}

// testMembers is a dynamic upstream source, as Caddy's own "a" and "srv"
// sources are: each request gets the list the test set last.
type testMembers struct{}

func (*testMembers) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.reverse_proxy.upstreams.chashtest_members",
		New: func() caddy.Module { return new(testMembers) },
	}
}

func (*testMembers) GetUpstreams(*http.Request) ([]*reverseproxy.Upstream, error) {
	members.Lock()
	defer members.Unlock()
	ups := make([]*reverseproxy.Upstream, len(members.dials))
	for i, d := range members.dials {
		ups[i] = &reverseproxy.Upstream{Dial: d}
	}
	return ups, nil
}

func (*testMembers) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // the module's name
	if d.NextArg() {
		return d.ArgErr()
	}
	return nil
}

// The policy keeps the router contract in Caddy, proxying to real HTTP
// backends: a Maglev table of 5, which cannot place the sixth upstream.
// A membership is the upstream list of a dynamic upstream source, which
// the policy places when a request brings it; Set sends one request and
// reports a refusal by the policy's Refused counter, as an operator would
// see it. The policy has no leases of its own (load_factor reads Caddy's
// in-flight counts), so the Lease case is not run.
func TestContractRouter(t *testing.T) {
	bs := startBackends(t, 6)
	nodes := make([]chash.Node, len(bs))
	for i, b := range bs {
		nodes[i] = chash.Node{ID: b.addr}
	}
	// The static upstreams are Caddy's fallback should the source fail;
	// it does not.
	base := runCaddy(t, bs, `dynamic chashtest_members
		lb_policy chash {
			key {http.request.header.X-Tenant}
			algorithm maglev
			table_size 5
		}`)
	send := &http.Client{Timeout: 5 * time.Second}
	route := func(key string) (string, error) {
		req, err := http.NewRequest(http.MethodGet, base+"/", nil)
		if err != nil {
			return "", err
		}
		req.Header.Set("X-Tenant", key)
		resp, err := send.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("status %s", resp.Status)
		}
		return string(body), err
	}
	start := time.Now()
	chashtest.TestRouter(t, chashtest.Router{
		Backends: nodes,
		Set: func(ns []chash.Node) error {
			dials := make([]string, len(ns))
			for i, n := range ns {
				dials[i] = n.ID
			}
			members.Lock()
			members.dials = dials
			members.Unlock()
			if len(ns) == 0 {
				return nil
			}
			before := ReadCounters()
			if _, err := route("probe"); err != nil {
				return err
			}
			if after := ReadCounters(); after.Refused > before.Refused {
				return errors.New("chashcaddy: the pool was refused (counted and logged)")
			}
			return nil
		},
		Route:       route,
		Unplaceable: func(all []chash.Node) []chash.Node { return all },
	})
	t.Logf("the router contract took %v", time.Since(start).Round(time.Millisecond))
}
