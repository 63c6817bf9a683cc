package dns_test

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/keyplace/chash/adapters/dns"
	"github.com/keyplace/chash/member"
	"github.com/keyplace/chash/member/membertest"
	"github.com/stretchr/testify/require"
)

// fleet is the SRV name _cache._tcp.chash.test on a Knot server of the
// test's own; Break stops the server, Restore starts it again.
type fleet struct {
	t       *testing.T
	k       *knot
	mu      sync.Mutex
	members []member.Member
	spec    *member.Spec
}

func (f *fleet) Source() member.Source {
	src, err := dns.NewSource(query, dns.WithServers(f.k.addr), dns.WithInterval(50*time.Millisecond),
		dns.WithTimeout(100*time.Millisecond))
	require.NoError(f.t, err)
	return src
}

func (f *fleet) Set(ms []member.Member) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.members = slices.Clone(ms)
	return f.k.load(srvZone(f.members, f.spec))
}

func (f *fleet) Publish(s *member.Spec) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.spec = s
	return f.k.load(srvZone(f.members, f.spec))
}

func (f *fleet) Break() error { f.k.kill(); return nil }

func (f *fleet) Restore() error { f.k.start(); return nil }

// The source keeps the contract every member source keeps, on a real
// Knot DNS server: SRV records, their zones and exact weights in TXT, a
// spec in TXT.
func TestSourceContract(t *testing.T) {
	membertest.TestSource(t, membertest.Spec{
		NewFleet: func(t *testing.T) membertest.Fleet { return &fleet{t: t, k: newKnot(t)} },
		Silence:  300 * time.Millisecond,
		ID:       memberID,
	})
}
