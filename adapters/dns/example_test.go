package dns_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/keyplace/chash/adapters/dns"
	"github.com/keyplace/chash/member"
)

// A fleet shares one view from DNS: every client resolves the same SRV
// name and builds with the spec its TXT records publish. (Not run as a
// test: it needs a DNS server.)
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	w, err := dns.Watch(ctx, "dnssrv+_memcached._tcp.cache.example.com", nil, // nil: the published spec
		dns.WithInterval(30*time.Second),
		dns.WithViewHook(func(v *member.View) { log.Printf("view %d: %s", v.Version, v.Fingerprint) }))
	if err != nil {
		log.Fatal(err)
	}
	defer w.Close()
	fmt.Println(w.LookupString("user:42").ID) // "host:port" of the owner
}
