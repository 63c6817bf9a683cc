package browsertest

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/balance"
	"github.com/keyplace/chash/status"
)

// Demo is a running service's placement, as the status page shows it: a
// status.Tracker over a ring, a balancer with a hot-key detector, leases
// held on it and keys made hot, all deterministic.
type Demo struct {
	Tracker  *status.Tracker
	Balancer *balance.Balancer
	Hot      *balance.HotKeys
	Page     *status.Handler
	leases   []balance.Lease
}

// NewDemo builds the placement of nodes in a tracker (a first ring of all
// but the last node, then all of them: revision 2), a balancer with hot
// keys over it, and holds leases for requests of which a third are for
// the hot keys.
func NewDemo(title string, nodes []chash.Node, hotKeys []string, requests int) (*Demo, error) {
	d := &Demo{Tracker: status.NewTracker(nil)}
	if len(nodes) > 1 {
		if err := d.Tracker.Build(func() (chash.Placer, error) { return chash.NewRing(nodes[:len(nodes)-1]) }); err != nil {
			return nil, err
		}
	}
	if err := d.Tracker.Build(func() (chash.Placer, error) { return chash.NewRing(nodes) }); err != nil {
		return nil, err
	}
	var err error
	if d.Hot, err = balance.NewHotKeys(balance.HotKeysConfig{Threshold: 1.0 / 64, Sample: 1, Window: 1 << 12}); err != nil {
		return nil, err
	}
	if d.Balancer, err = balance.New(d.Tracker.Load(), balance.WithHotKeys(d.Hot, 3)); err != nil {
		return nil, err
	}
	for i := range 3000 {
		if len(hotKeys) > 0 {
			d.Hot.ObserveString(hotKeys[i%len(hotKeys)])
		}
		d.Hot.ObserveString(fmt.Sprint("user:", i))
	}
	for i := range requests {
		key := fmt.Sprintf("user:%d", i)
		if i%3 == 0 && len(hotKeys) > 0 {
			key = hotKeys[i/3%len(hotKeys)]
		}
		l, err := d.Balancer.AcquireString(key)
		if err != nil {
			return nil, err
		}
		d.leases = append(d.leases, l)
	}
	d.Page, err = status.NewHandler(d.Tracker, status.WithBalancer(d.Balancer), status.WithTitle(title))
	return d, err
}

// Handler serves the status page at /status.
func (d *Demo) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/status", d.Page)
	return mux
}

// Nodes returns n nodes named cache-0 ... in zones eu-1, eu-2 and eu-3,
// each zone with nodes of weights 1 and 2.
func Nodes(n int) []chash.Node {
	out := make([]chash.Node, n)
	for i := range out {
		out[i] = chash.Node{ID: fmt.Sprintf("cache-%d", i), Zone: fmt.Sprintf("eu-%d", i%3+1), Weight: float64(1 + i/3%2)}
	}
	return out
}

// BuildChash builds the chash command of this workspace into dir and
// returns its path.
func BuildChash(dir string) (string, error) {
	bin := filepath.Join(dir, "chash")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/keyplace/chash/cmd/chash")
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("browsertest: go build cmd/chash: %w", err)
	}
	return bin, nil
}
