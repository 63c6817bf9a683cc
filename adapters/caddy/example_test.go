package chashcaddy_test

import (
	"fmt"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	chashcaddy "github.com/keyplace/chash/adapters/caddy"
)

// The policy's Caddyfile block, as it appears inside reverse_proxy after
// lb_policy.
func ExampleSelection_UnmarshalCaddyfile() {
	var s chashcaddy.Selection
	err := s.UnmarshalCaddyfile(caddyfile.NewTestDispenser(`chash {
		key {http.request.header.X-Tenant}
		algorithm maglev
		load_factor 1.25
	}`))
	fmt.Println(err, s.Key, s.Algorithm, s.LoadFactor)
	// Output: <nil> {http.request.header.X-Tenant} maglev 1.25
}
