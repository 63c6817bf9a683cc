package chashhttp_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/keyplace/chash"
	chashhttp "github.com/keyplace/chash/adapters/http"
)

// Three backends on loopback, each answering with its own address, behind
// a reverse proxy that routes by the X-Tenant header with a load bound.
func Example() {
	var nodes []chash.Node
	for range 3 {
		var addr string
		backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, addr)
		}))
		defer backend.Close()
		addr = strings.TrimPrefix(backend.URL, "http://")
		nodes = append(nodes, chash.Node{ID: addr}) // a node's ID is its backend's host:port
	}
	placer, err := chash.NewRendezvous(nodes)
	if err != nil {
		panic(err)
	}
	router, err := chashhttp.New(chashhttp.Header("X-Tenant"), placer, chashhttp.WithLoadFactor(1.25))
	if err != nil {
		panic(err)
	}
	proxy := httptest.NewServer(router.ReverseProxy(nil))
	defer proxy.Close()

	served := func(tenant string) string {
		req, _ := http.NewRequest(http.MethodGet, proxy.URL+"/orders", nil)
		req.Header.Set("X-Tenant", tenant)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return string(body)
	}
	first := served("tenant-42")
	fmt.Println("tenant-42 stays on its backend:", served("tenant-42") == first)
	fmt.Println("which is the placer's choice:", first == placer.LookupString("tenant-42").ID)
	// Output:
	// tenant-42 stays on its backend: true
	// which is the placer's choice: true
}
