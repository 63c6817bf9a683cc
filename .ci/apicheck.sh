#!/usr/bin/env bash
# API compatibility of the core module against its last release.
#
#   .ci/apicheck.sh
#
# Finds the highest release tag vX.Y.Z (no pre-releases) reachable from
# HEAD; without one ("nothing released yet", or a shallow clone fetched
# without tags) it says so and passes. Otherwise it writes the export data of
# every public package of github.com/keyplace/chash at that tag (from "git
# archive" of it; internal packages are left out) and compares the work tree's
# packages with it using golang.org/x/exp/cmd/apidiff at a pinned version.
# It fails on any incompatible change that .ci/apidiff-allow.txt does not
# list: one change a line, exactly as apidiff prints it after "- ", with
# "#" comments. A major version above 0 should allow none; a v0 minor
# release may allow some, each reviewed.
#
# GOWORK=off: the core module is built alone, as its users build it.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOWORK=off

# A version of golang.org/x/exp whose apidiff builds with the Go in CI.
apidiff_version=v0.0.0-20261113113407-e3970619a1a4
allow=.ci/apidiff-allow.txt

core=$(go mod edit -json | awk '/"Module": \{/{m=1} m&&/"Path":/{gsub(/[",]/,"",$2); print $2; m=0}')
last=$(git tag --merged HEAD -l 'v[0-9]*' --sort=-v:refname | grep -E '^v[0-9]+\.[0-9]+\.[0-9]+$' | head -n 1 || true)
if [ -z "$last" ]; then
  if [ "$(git rev-parse --is-shallow-repository)" = true ]; then
    echo "apicheck: shallow clone; fetch the history and tags to compare (git fetch --unshallow --tags)"
  fi
  echo "apicheck: no earlier release, skipped"
  exit 0
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/chash-apicheck.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

GOBIN="$tmp/bin" GOFLAGS= go install "golang.org/x/exp/cmd/apidiff@$apidiff_version"
apidiff=$tmp/bin/apidiff

# The release, as its module zip has it (nested modules' directories do not
# matter: only the core module's packages are loaded).
mkdir "$tmp/old"
git archive "$last" | tar -x -C "$tmp/old"
quiet() { grep -v '^Ignoring internal package' >&2 || true; }
(cd "$tmp/old" && "$apidiff" -m -w "$tmp/old.x" "$core") 2> >(quiet) ||
  { echo "apicheck: cannot load $core at $last" >&2; exit 1; }
"$apidiff" -m "$tmp/old.x" "$core" >"$tmp/report" 2> >(quiet) ||
  { echo "apicheck: cannot load $core from the work tree" >&2; exit 1; }

echo "apicheck: $core at $last ($(git rev-list --count "$last..HEAD") commits before HEAD) against the work tree"
if [ -s "$tmp/report" ]; then sed 's/^/  /' "$tmp/report"; else echo "  no API changes"; fi

# The incompatible changes, one a line without the "- ".
awk '/^Incompatible changes:$/ { on = 1; next } /^[A-Z].*:$/ { on = 0 } on && /^- / { print substr($0, 3) }' \
  "$tmp/report" >"$tmp/incompatible"
allowed=()
if [ -f "$allow" ]; then
  while IFS= read -r line; do
    line=${line%$'\r'}
    case $line in '' | '#'*) continue ;; esac
    allowed+=("$line")
  done <"$allow"
fi
is_allowed() {
  local a
  for a in "${allowed[@]}"; do [ "$a" = "$1" ] && return 0; done
  return 1
}
bad=0
while IFS= read -r change; do
  if [ ${#allowed[@]} -gt 0 ] && is_allowed "$change"; then
    echo "apicheck: allowed by $allow: $change"
  else
    echo "apicheck: incompatible: $change"
    bad=$((bad + 1))
  fi
done <"$tmp/incompatible"
for a in ${allowed[@]+"${allowed[@]}"}; do
  grep -qxF -- "$a" "$tmp/incompatible" || echo "apicheck: note: $allow lists a change apidiff no longer reports: $a"
done
if [ "$bad" -gt 0 ]; then
  echo "apicheck: $bad incompatible change(s) since $last; restore the API, or list each in $allow if it is deliberate"
  exit 1
fi
echo "ok  API compatible with $last"
