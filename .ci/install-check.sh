#!/usr/bin/env bash
# Proves that an outside user can install a release by version: the modules
# as the go command would download them, not the workspace.
#
#   .ci/install-check.sh [vX.Y.Z]
#
# The version defaults to the one the nested modules require of the core
# (the next release). From HEAD, committed changes only:
#   1. a temporary clone of the repository, tagged there by .ci/release.sh
#      (tags of that version already in the clone are dropped first; nothing
#      is pushed, the repository itself is not touched);
#   2. a file-system module proxy (GOPROXY=file://...) holding every tagged
#      module's @v/list, .info, .mod and .zip, written by .ci/modproxy with
#      golang.org/x/mod/zip from "git archive" of the tags;
#   3. a fresh module example.com/user outside the repository, with
#      GOWORK=off and an empty module cache, that go-gets the core and two
#      adapters at that version from that proxy (third-party modules from
#      proxy.golang.org, checked against sum.golang.org; ours not, as they
#      are not public yet), builds a program using the core, compat,
#      shardmap, balance, adapters/http and adapters/gomemcache with
#      -mod=readonly, vets it, and tests one lookup.
# Everything temporary is removed on exit. Needs git, go and the Go module
# proxy (or a warm module cache for the third-party modules).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
start=$SECONDS
core=github.com/keyplace/chash

version=${1:-}
if [ -z "$version" ]; then
  version=$(GOWORK=off go mod edit -json adapters/http/go.mod |
    awk -v core="$core" '/"Path":/ { gsub(/[",]/, "", $2); p = $2 } /"Version":/ && p == core { gsub(/[",]/, "", $2); print $2; p = "" }')
  [ -n "$version" ] || { echo "install-check: adapters/http/go.mod does not require $core" >&2; exit 1; }
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/chash-install-check.XXXXXX")
# The module cache's files are read-only: make them writable to remove them.
cleanup() { chmod -R u+w "$tmp" 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT

if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
  echo "install-check: note: uncommitted changes are not checked, only HEAD $(git rev-parse --short HEAD)"
fi

# 1. The release, in a clone.
git clone -q --no-checkout "$repo" "$tmp/repo"
git -C "$tmp/repo" checkout -q --detach "$(git rev-parse HEAD)"
stale=$(git -C "$tmp/repo" tag -l "$version" "*/$version")
[ -z "$stale" ] || git -C "$tmp/repo" tag -d $stale >/dev/null
# Annotated tags need an identity, which a CI machine may lack.
git -C "$tmp/repo" config user.name >/dev/null || git -C "$tmp/repo" config user.name "install-check"
git -C "$tmp/repo" config user.email >/dev/null || git -C "$tmp/repo" config user.email "install-check@localhost"
(cd "$tmp/repo" && "$repo/.ci/release.sh" "$version") | sed 's/^/  /'
tags=$(git -C "$tmp/repo" tag --points-at HEAD -l "$version" "*/$version")

# 2. The proxy.
(cd .ci/modproxy && GOWORK=off GOFLAGS=-mod=readonly go build -o "$tmp/modproxy" .)
echo "module proxy $tmp/proxy:"
# shellcheck disable=SC2086 # one argument per tag
"$tmp/modproxy" -repo "$tmp/repo" -out "$tmp/proxy" $tags | sed 's/^/  /'

# 3. A user's module.
mkdir "$tmp/user"
cd "$tmp/user"
export GOWORK=off GOTOOLCHAIN=local
export GOMODCACHE="$tmp/modcache"
# Ours from the file proxy; the rest from the local module cache when it has
# them (a file proxy too), else from proxy.golang.org. GONOPROXY=none: a
# GOPRIVATE set for github.com/keyplace must not send the go command to
# github.com directly.
shared_cache=$(GOMODCACHE= go env GOMODCACHE)/cache/download
export GOPROXY="file://$tmp/proxy,file://$shared_cache,https://proxy.golang.org"
export GOPRIVATE=github.com/keyplace GONOSUMDB=github.com/keyplace GONOPROXY=none
export GOFLAGS=-mod=mod

go mod init example.com/user 2>/dev/null
cat >main.go <<'EOF'
// Command user places a key with each public package of chash and two of
// its adapters, as a program outside the repository would.
package main

import (
	"fmt"
	"log"

	"github.com/keyplace/chash"
	"github.com/keyplace/chash/adapters/gomemcache"
	chashhttp "github.com/keyplace/chash/adapters/http"
	"github.com/keyplace/chash/balance"
	"github.com/keyplace/chash/compat"
	"github.com/keyplace/chash/shardmap"
)

// Weight 1, not 0: a shard map reads weight 0 as a drained node.
var nodes = []chash.Node{{ID: "10.0.0.1:8080", Weight: 1}, {ID: "10.0.0.2:8080", Weight: 1}, {ID: "10.0.0.3:8080", Weight: 1}}

// place returns the owner of key under each placement.
func place(key string) ([]string, error) {
	ring, err := chash.NewRing(nodes)
	if err != nil {
		return nil, fmt.Errorf("chash.NewRing: %w", err)
	}
	redis, err := compat.NewGoRedis(nodes)
	if err != nil {
		return nil, fmt.Errorf("compat.NewGoRedis: %w", err)
	}
	sm, err := shardmap.New(nodes, shardmap.Spec{Partitions: 64, Replicas: 2})
	if err != nil {
		return nil, fmt.Errorf("shardmap.New: %w", err)
	}
	bal, err := balance.New(ring)
	if err != nil {
		return nil, fmt.Errorf("balance.New: %w", err)
	}
	lease, err := bal.AcquireString(key)
	if err != nil {
		return nil, fmt.Errorf("Balancer.AcquireString: %w", err)
	}
	defer lease.Release()
	if _, err := chashhttp.New(chashhttp.Header("X-Tenant"), ring); err != nil {
		return nil, fmt.Errorf("chashhttp.New: %w", err)
	}
	sel, err := gomemcache.New([]string{"127.0.0.1:11211", "127.0.0.1:11212"})
	if err != nil {
		return nil, fmt.Errorf("gomemcache.New: %w", err)
	}
	addr, err := sel.PickServer(key)
	if err != nil {
		return nil, fmt.Errorf("Selector.PickServer: %w", err)
	}
	return []string{
		ring.LookupString(key).ID,
		redis.LookupString(key).ID,
		sm.LookupString(key).ID,
		lease.Node().ID,
		addr.String(),
	}, nil
}

func main() {
	owners, err := place("user:42")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(owners)
}
EOF
cat >main_test.go <<'EOF'
package main

import (
	"testing"

	"github.com/keyplace/chash"
)

func TestLookup(t *testing.T) {
	ring, err := chash.NewRing(nodes)
	if err != nil {
		t.Fatal(err)
	}
	a, b := ring.LookupString("user:42"), ring.LookupString("user:42")
	if a.ID == "" || a != b {
		t.Fatalf("LookupString(user:42) = %v, then %v", a, b)
	}
	if _, err := place("user:42"); err != nil {
		t.Fatal(err)
	}
}
EOF

echo "go get, as a user (GOPROXY=$GOPROXY):"
go get "$core@$version" "$core/adapters/http@$version" "$core/adapters/gomemcache@$version" 2>&1 | sed 's/^/  /'
go mod tidy
# The go.mod and go.sum that go get and go mod tidy wrote must be complete.
export GOFLAGS=-mod=readonly
go mod verify >/dev/null
go build -o user .
go vet ./...
go test -count=1 ./...
./user
# The released core's own tests pass from the module cache: its golden
# files and vectors (testdata/) are in the module zip.
go test -count=1 -short -run 'Golden|Vector' "$core" "$core/compat"

# What was built is the release from the file proxy, not something else.
got=$(go list -m -f '{{.Path}} {{.Version}}' all | grep "^$core")
echo "$got" | sed 's/^/  /'
for m in "$core" "$core/adapters/http" "$core/adapters/gomemcache"; do
  grep -qx "$m $version" <<<"$got" || { echo "install-check: $m is not at $version" >&2; exit 1; }
done
zip=$(go list -m -f '{{.Dir}}' "$core")
case $zip in "$GOMODCACHE"/*) ;; *) echo "install-check: $core came from $zip" >&2; exit 1 ;; esac
echo "ok  install by version $version from a file-system module proxy ($((SECONDS - start)) s)"
