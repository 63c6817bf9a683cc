#!/usr/bin/env bash
# Tags a release of every published module of the repository, consistently.
#
#   .ci/release.sh [-push] [-remote NAME] vX.Y.Z
#       Checks that the work tree is clean, that no go.mod has a replace
#       directive, and that every published nested module requires exactly
#       vX.Y.Z of github.com/keyplace/chash (and of any sibling module it
#       requires); then creates, at HEAD, the annotated tags
#         vX.Y.Z  adapters/caddy/vX.Y.Z  adapters/etcd/vX.Y.Z  ...  benchmarks/vX.Y.Z
#       one per published module. Nothing is pushed unless -push is given;
#       with -push the tags go to NAME (default origin) in one atomic push.
#       Tags that already exist at HEAD are kept; tags elsewhere are an error.
#
#   .ci/release.sh -bump vX.Y.Z
#       The step before: rewrites every published nested module's requirement
#       on the core (and on siblings) to vX.Y.Z, and go.work's version-pinned
#       replace (which keeps the workspace from fetching that not yet
#       published version), and commits exactly those files in one commit.
#
# A release is thus:  .ci/release.sh -bump v0.4.0  (review, push the commit),
#                     .ci/release.sh v0.4.0        (check, tag; inspect)
#                     .ci/release.sh -push v0.4.0  (push the tags).
# Between releases the nested modules keep requiring the last version they
# were bumped to; the workspace (go.work) builds them against this tree.
#
# Published modules are those of every tracked go.mod except ones whose
# go.mod carries the line "// chash-release: unpublished" (testdata/gen/, whose
# vector generators nobody imports, and the CI tool .ci/modproxy).
#
# The script works on the repository containing the current directory (so
# .ci/install-check.sh can run it in a temporary clone). It needs git and go
# (for "go mod edit"; nothing is downloaded).
set -euo pipefail

usage() {
  sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
  exit 2
}

push=0 bump=0 remote=origin version=
while [ $# -gt 0 ]; do
  case $1 in
    -push | --push) push=1 ;;
    -bump | --bump) bump=1 ;;
    -remote | --remote) [ $# -ge 2 ] || usage; remote=$2; shift ;;
    -h | -help | --help) usage ;;
    -*) echo "release: unknown flag $1" >&2; usage ;;
    *) [ -z "$version" ] || usage; version=$1 ;;
  esac
  shift
done
[ -n "$version" ] || usage
[ "$bump" = 0 ] || [ "$push" = 0 ] || { echo "release: -bump and -push do not go together" >&2; exit 2; }

die() { echo "release: $*" >&2; exit 1; }

semver='^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$'
[[ $version =~ $semver ]] || die "$version is not a version vMAJOR.MINOR.PATCH[-PRERELEASE]"
# The module paths have no /vN suffix, so only major versions 0 and 1 exist.
case $version in v0.* | v1.*) ;; *) die "$version: a major version above 1 needs /vN module paths" ;; esac

cd "$(git rev-parse --show-toplevel)"
export GOWORK=off GOFLAGS=-mod=mod  # go mod edit reads and writes single files

if [ -n "$(git status --porcelain --untracked-files=normal)" ]; then
  git status --short >&2
  die "the work tree is not clean: commit or stash first"
fi

# Modules: directory, path, published or not.
dirs=() paths=() published=()
while IFS= read -r gomod; do
  dir=$(dirname "$gomod")
  path=$(cd "$dir" && go mod edit -json | awk '/"Module": \{/{m=1} m&&/"Path":/{gsub(/[",]/,"",$2); print $2; m=0}')
  [ -n "$path" ] || die "$gomod has no module path"
  dirs+=("$dir") paths+=("$path")
  if grep -q '^// chash-release: unpublished' "$gomod"; then published+=(0); else published+=(1); fi
done < <(git ls-files -- go.mod; git ls-files -- '*/go.mod' | sort)

[ "${dirs[0]:-}" = . ] || die "no go.mod at the repository root"
core=${paths[0]}

# requirements DIR: "path version" for each require line of DIR/go.mod.
requirements() {
  (cd "$1" && go mod edit -json) | awk '
    /^\t"Require": \[/ { r = 1; next }
    r && /^\t\]/ { r = 0 }
    r && /"Path":/ { gsub(/[",]/, "", $2); p = $2 }
    r && /"Version":/ { gsub(/[",]/, "", $2); print p, $2 }'
}
# index_of PATH: the index of the repository's module PATH, or nothing.
index_of() {
  local i
  for i in "${!paths[@]}"; do [ "${paths[$i]}" = "$1" ] && echo "$i" && return; done
  return 0
}

problems=()
for i in "${!dirs[@]}"; do
  dir=${dirs[$i]} path=${paths[$i]}
  json=$(cd "$dir" && go mod edit -json) || die "cannot read $dir/go.mod"
  if grep -q '"Replace": \[' <<<"$json"; then
    problems+=("$dir/go.mod has a replace directive: users' builds ignore it")
  fi
  [ "${published[$i]}" = 1 ] || continue
  if [ "$dir" != . ] && [ "$path" != "$core/$dir" ]; then
    problems+=("$dir/go.mod: module $path, but the go command looks for $core/$dir there")
  fi
  [ "$dir" != . ] || continue
  requires_core=0
  while read -r rpath rversion; do
    j=$(index_of "$rpath")
    [ -n "$j" ] || continue
    [ "$rpath" != "$core" ] || requires_core=1
    if [ "${published[$j]}" != 1 ]; then
      problems+=("$dir/go.mod requires $rpath, which is never published")
    elif [ "$bump" = 0 ] && [ "$rversion" != "$version" ]; then
      problems+=("$dir/go.mod requires $rpath $rversion, not $version (run .ci/release.sh -bump $version)")
    fi
  done < <(requirements "$dir")
  [ "$requires_core" = 1 ] || problems+=("$dir/go.mod does not require $core")
done
if [ ${#problems[@]} -gt 0 ]; then
  printf 'release: %s\n' "${problems[@]}" >&2
  exit 1
fi

if [ "$bump" = 1 ]; then
  changed=()
  pinned=() # module paths the nested modules require: go.work pins them
  for i in "${!dirs[@]}"; do
    dir=${dirs[$i]}
    [ "$dir" != . ] && [ "${published[$i]}" = 1 ] || continue
    edits=()
    while read -r rpath rversion; do
      [ -n "$(index_of "$rpath")" ] || continue
      edits+=("-require=$rpath@$version")
      [[ " ${pinned[*]:-} " == *" $rpath "* ]] || pinned+=("$rpath")
    done < <(requirements "$dir")
    (cd "$dir" && go mod edit "${edits[@]}")
    changed+=("$dir/go.mod")
  done
  if [ -f go.work ]; then
    # Replace each required in-repo module at the new version by its
    # directory, dropping the replaces of older versions.
    edits=()
    while read -r old oldversion; do
      [ -n "$(index_of "$old")" ] && [ -n "$oldversion" ] && edits+=("-dropreplace=$old@$oldversion")
    done < <(GOWORK= go work edit -json | awk '
      /^\t"Replace": \[/ { r = 1; next }
      r && /^\t\]/ { r = 0 }
      r && /"Old": \{/ { o = 1; p = ""; v = "" }
      r && o && /"Path":/ { gsub(/[",]/, "", $2); p = $2 }
      r && o && /"Version":/ { gsub(/[",]/, "", $2); v = $2 }
      r && o && /^\t\t\t\}/ { print p, v; o = 0 }')
    for p in "${pinned[@]}"; do
      j=$(index_of "$p")
      edits+=("-replace=$p@$version=./${dirs[$j]#.}")
    done
    GOWORK= go work edit "${edits[@]}"
    changed+=(go.work)
  fi
  if git diff --quiet -- "${changed[@]}"; then
    echo "release: every nested module already requires $version; nothing to commit"
    exit 0
  fi
  git add -- "${changed[@]}"
  git commit -q -m "Nested modules require $core $version, for the release" -- "${changed[@]}"
  echo "release: committed $(git rev-parse --short HEAD): nested modules require $version."
  echo "release: push it, let CI pass, then run: .ci/release.sh $version"
  exit 0
fi

head=$(git rev-parse HEAD)
tags=() new=() messages=()
for i in "${!dirs[@]}"; do
  [ "${published[$i]}" = 1 ] || continue
  dir=${dirs[$i]}
  if [ "$dir" = . ]; then t=$version; else t=$dir/$version; fi
  tags+=("$t")
  if at=$(git rev-parse -q --verify "refs/tags/$t^{commit}"); then
    [ "$at" = "$head" ] || die "tag $t exists already, at $(git rev-parse --short "$at"), not at HEAD"
    echo "release: tag $t exists at HEAD already"
  else
    new+=("$t") messages+=("${paths[$i]} $version")
  fi
done
for k in "${!new[@]}"; do
  git tag -a -m "${messages[$k]}" "${new[$k]}" "$head"
done
echo "release: tagged $(git rev-parse --short HEAD) as:"
printf '  %s\n' "${tags[@]}"
if [ "$push" = 1 ]; then
  git push --atomic "$remote" "${tags[@]/#/refs/tags/}"
  echo "release: pushed the tags to $remote"
else
  echo "release: nothing pushed; to publish: .ci/release.sh -push $version (or git push --atomic $remote ${tags[*]})"
fi
