// Command gen writes ../../caddy/vectors.tsv: the upstream Caddy's uri_hash
// selection policy (reverseproxy.URIHashSelection) picks for a request
// whose URI is each key, called in-process. Run from this directory:
//
//	go run . > ../../caddy/vectors.tsv
package main

import (
	"fmt"
	"net/http"
	"os"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp/reverseproxy"
	"github.com/keyplace/chash/testdata/gen/internal/vectors"
)

func main() {
	sets := vectors.StandardSets(func(i int) string { return fmt.Sprintf("10.0.0.%d:8080", i) }, false)
	pools := map[string]reverseproxy.UpstreamPool{}
	for _, s := range sets {
		for _, id := range s.IDs {
			pools[s.Name] = append(pools[s.Name], &reverseproxy.Upstream{Dial: id})
		}
	}
	err := vectors.Write(os.Stdout, "Caddy v2.11.9 reverseproxy.URIHashSelection.Select, request URI = key.\nColumns: the index in each set of the upstream selected.", sets, vectors.Keys(2000, true),
		func(s vectors.Set, key string) (string, error) {
			u := reverseproxy.URIHashSelection{}.Select(pools[s.Name], &http.Request{RequestURI: key}, nil)
			if u == nil {
				return "", fmt.Errorf("no upstream")
			}
			return u.Dial, nil
		})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
