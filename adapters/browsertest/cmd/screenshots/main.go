// Command screenshots regenerates the pictures of the README: the status
// page of a demo service (docs/status.png) and the chash report of a
// rollout plan (docs/report.png), rendered by headless Chromium.
//
//	cd adapters/browsertest && go run ./cmd/screenshots -out ../../docs
//
// (status/screenshots.sh at the repository's root runs it.)
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/keyplace/chash/adapters/browsertest"
)

func main() {
	out := flag.String("out", "docs", "directory to write status.png and report.png to")
	flag.Parse()
	if err := run(*out); err != nil {
		log.Fatal(err)
	}
}

func run(out string) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	b, err := browsertest.Start(context.Background(), 1280, 800)
	if err != nil {
		return err
	}
	defer b.Close()

	demo, err := browsertest.NewDemo("sessions cache, eu", browsertest.Nodes(12), []string{"user:42:cart", "sku:991:stock"}, 240)
	if err != nil {
		return err
	}
	srv := httptest.NewServer(demo.Handler())
	defer srv.Close()
	if err := shoot(b, srv.URL+"/status", filepath.Join(out, "status.png")); err != nil {
		return err
	}

	tmp, err := os.MkdirTemp("", "chash-screenshots-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin, err := browsertest.BuildChash(tmp)
	if err != nil {
		return err
	}
	page := filepath.Join(tmp, "plan.html")
	cmd := exec.Command(bin, "report", "plan", "-algo", "ring", "-from", "20", "-to", "30", "-step", "2",
		"-rate", "200k", "-hit", "94%", "-origin", "25k", "-o", page)
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("chash report plan: %w", err)
	}
	files := httptest.NewServer(http.FileServer(http.Dir(tmp)))
	defer files.Close()
	return shoot(b, files.URL+"/plan.html", filepath.Join(out, "report.png"))
}

// shoot loads url and writes its screenshot to path, refusing a page that
// fetched from elsewhere or logged an error.
func shoot(b *browsertest.Browser, url, path string) error {
	tab, err := b.Open(url)
	if err != nil {
		return err
	}
	defer tab.Close()
	tab.Settle()
	if bad := append(tab.Blocked(), tab.Problems()...); len(bad) > 0 {
		return fmt.Errorf("%s: %v", url, bad)
	}
	if err := tab.Screenshot(path); err != nil {
		return err
	}
	fmt.Println("wrote", path)
	return nil
}
