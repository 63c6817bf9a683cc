// Command gen writes ../consistent.tsv and ../hash.tsv: the upstream server
// a real nginx proxies each key to under "hash $http_x_key consistent" and
// plain "hash $http_x_key". It starts nginx (Debian's package: apt-get
// install nginx) with one upstream block per set, backends that answer
// with their own server parameter, and sends one request per key and set.
// The empty key is left out: nginx sends it by round robin. In set F-down
// the middle server is down, so the column shows nginx's failover choice. Run from this
// directory:
//
//	go run .
package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/keyplace/chash/testdata/gen/internal/vectors"
)

const sockDir = "/tmp/chash-nginx-gen"

// deadServer is a server with no backend: connections to it are refused.
const deadServer = "127.0.0.1:18099"

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run() error {
	sets := vectors.StandardSets(func(i int) string { return fmt.Sprintf("127.0.0.1:%d", 18080+i) }, true)
	sets = append(sets, vectors.Set{Name: "X", IDs: []string{"127.0.0.1:18081", "unix:" + sockDir + "/b.sock", "127.0.0.1:18083"}, Weights: []int{1, 2, 1}})
	// F-down: the middle server refuses connections, so nginx tries the
	// next server in its failover order.
	sets = append(sets, vectors.Set{Name: "F-down", IDs: []string{"127.0.0.1:18081", "127.0.0.1:18082", deadServer, "127.0.0.1:18084", "127.0.0.1:18085"}, Weights: []int{1, 1, 1, 1, 1}})
	if err := os.RemoveAll(sockDir); err != nil {
		return err
	}
	if err := os.MkdirAll(sockDir, 0o755); err != nil {
		return err
	}
	conf := config(sets)
	if err := os.WriteFile(filepath.Join(sockDir, "nginx.conf"), []byte(conf), 0o644); err != nil {
		return err
	}
	cmd := exec.Command("nginx", "-p", sockDir, "-c", filepath.Join(sockDir, "nginx.conf"))
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	// SIGTERM lets the master stop its worker; SIGKILL would orphan it.
	defer func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() }()
	if err := waitPort(front(len(sets)*2 - 1)); err != nil {
		return err
	}
	for m, mode := range []string{"consistent", "hash"} {
		f, err := os.Create(filepath.Join("..", "..", "nginx", mode+".tsv"))
		if err != nil {
			return err
		}
		comment := fmt.Sprintf("%s (Debian 12 package), upstream with \"hash $http_x_key%s\", one request per key with header X-Key.\nColumns: the index in each set of the server whose backend answered.", nginxVersion(), map[string]string{"consistent": " consistent", "hash": ""}[mode])
		err = vectors.Write(f, comment, sets, vectors.Keys(2000, false), func(s vectors.Set, key string) (string, error) {
			return get(front(2*index(sets, s)+m), key)
		})
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func index(sets []vectors.Set, s vectors.Set) int {
	for i := range sets {
		if sets[i].Name == s.Name {
			return i
		}
	}
	return -1
}

func front(i int) string { return fmt.Sprintf("127.0.0.1:%d", 18200+i) }

// config returns an nginx.conf with a backend per server parameter and, for
// set i, fronts 2i (consistent) and 2i+1 (plain hash).
func config(sets []vectors.Set) string {
	var b strings.Builder
	fmt.Fprintf(&b, "daemon off;\nmaster_process on;\nworker_processes 1;\nuser root;\npid %s/nginx.pid;\nerror_log %s/error.log;\nevents { worker_connections 256; }\nhttp {\n  access_log off;\n", sockDir, sockDir)
	backends := map[string]bool{}
	for i, s := range sets {
		for m, dir := range []string{"hash $http_x_key consistent;", "hash $http_x_key;"} {
			fmt.Fprintf(&b, "  upstream u%d_%d {\n    %s\n", i, m, dir)
			for j, id := range s.IDs {
				fmt.Fprintf(&b, "    server %s weight=%d;\n", id, s.Weights[j])
			}
			fmt.Fprintf(&b, "  }\n  server { listen %s; location / { proxy_pass http://u%d_%d; } }\n", front(2*i+m), i, m)
		}
		for _, id := range s.IDs {
			if !backends[id] && id != deadServer {
				backends[id] = true
				fmt.Fprintf(&b, "  server { listen %s; location / { return 200 \"%s\"; } }\n", id, id)
			}
		}
	}
	b.WriteString("}\n")
	return b.String()
}

var client = &http.Client{Timeout: 5 * time.Second}

func get(addr, key string) (string, error) {
	req, err := http.NewRequestWithContext(context.Background(), "GET", "http://"+addr+"/", nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("X-Key", key)
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return "", fmt.Errorf("%s: status %d", addr, resp.StatusCode)
	}
	return string(body), err
}

func waitPort(addr string) error {
	for i := 0; i < 100; i++ {
		if c, err := net.Dial("tcp", addr); err == nil {
			return c.Close()
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("nginx did not start: see %s/error.log", sockDir)
}

func nginxVersion() string {
	out, _ := exec.Command("nginx", "-v").CombinedOutput()
	return strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(out)), "nginx version: "))
}
