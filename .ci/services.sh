#!/usr/bin/env bash
# Starts and stops the memcached, Redis and etcd servers that the adapter
# integration tests run against.
#
#   eval "$(.ci/services.sh start)"   # install if missing, start, wait, export env
#   trap '.ci/services.sh stop' EXIT  # stop them, also when a test fails
#
# start installs Debian's memcached, redis-server, etcd-server, chromium,
# knot (Knot DNS, whose servers the DNS tests run themselves) and zookeeper
# (whose servers the ZooKeeper tests run themselves) when they are
# missing (as root, or through passwordless sudo), starts 5 memcached
# (4 + 1 to add), 4 redis-server (3 + 1) daemons and one etcd on loopback
# with a data directory under the state directory, waits until each accepts
# connections and prints shell assignments on stdout:
#   export CHASH_MEMCACHED=127.0.0.1:21211,...   (5 addresses)
#   export CHASH_REDIS=127.0.0.1:26379,...       (4 addresses)
#   export CHASH_ETCD=127.0.0.1:22379            (etcd's client address)
#   export CHASH_ETCD_BIN=/usr/bin/etcd          (for tests that run, kill and
#                                                 restart etcds of their own)
#   export CHASH_KNOTD_BIN=/usr/sbin/knotd       (Knot DNS, from Debian's knot: the
#   export CHASH_KNOTC_BIN=/usr/sbin/knotc        DNS tests run, reload, kill and
#                                                 restart servers of their own)
#   export CHASH_CHROMIUM=/usr/bin/chromium      (headless, for the browser
#                                                 tests of adapters/browsertest)
#   export CHASH_ZOOKEEPER_JAR=/usr/share/java/zookeeper.jar  (Debian's zookeeper,
#                                                 3.8: the ZooKeeper tests run, kill
#                                                 and restart standalone servers of
#                                                 their own with java)
#   export CHASH_SERVICES_DIR=/tmp/...           (pidfiles and logs, for stop)
# Everything else goes to stderr. If start fails it stops what it started
# and prints a command that makes the eval fail.
#
# stop kills the daemons named by the pidfiles in $CHASH_SERVICES_DIR and
# removes the directory. The first ports can be moved with
# CHASH_MEMCACHED_PORT (default 21211), CHASH_REDIS_PORT (default 26379) and
# CHASH_ETCD_PORT (default 22379; etcd's peer port is the next one).
set -euo pipefail

memcached_count=5
redis_count=4
memcached_port=${CHASH_MEMCACHED_PORT:-21211}
redis_port=${CHASH_REDIS_PORT:-26379}
etcd_port=${CHASH_ETCD_PORT:-22379}

log() { echo "services: $*" >&2; }

# as_root runs a command as root: directly, through sudo -n, or not at all.
as_root() {
	if [ "$(id -u)" -eq 0 ]; then
		"$@"
	elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
		sudo -n "$@"
	else
		log "need root to run: $*"
		return 1
	fi
}

install_missing() {
	local missing=()
	command -v memcached >/dev/null || missing+=(memcached)
	command -v redis-server >/dev/null || missing+=(redis-server)
	command -v etcd >/dev/null || missing+=(etcd-server)
	command -v knotd >/dev/null || [ -x /usr/sbin/knotd ] || missing+=(knot)
	command -v chromium >/dev/null || missing+=(chromium)
	[ -f /usr/share/java/zookeeper.jar ] || missing+=(zookeeper)
	[ ${#missing[@]} -eq 0 ] && return 0
	if ! command -v apt-get >/dev/null; then
		log "missing ${missing[*]} and no apt-get: install them by hand"
		return 1
	fi
	log "installing ${missing[*]}"
	local apt=(env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}")
	# Refresh the package lists only when the install cannot work without it.
	if ! as_root "${apt[@]}" >&2; then
		log "install failed; running apt-get update and retrying"
		as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q >&2
		as_root "${apt[@]}" >&2
	fi
	command -v memcached >/dev/null && command -v redis-server >/dev/null && command -v etcd >/dev/null && command -v chromium >/dev/null &&
		{ command -v knotd >/dev/null || [ -x /usr/sbin/knotd ]; } && [ -f /usr/share/java/zookeeper.jar ]
}

# port_open reports whether something accepts TCP connections on port.
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# wait_port waits up to 10 s for port to accept connections.
wait_port() {
	local i
	for ((i = 0; i < 100; i++)); do
		port_open "$1" && return 0
		sleep 0.1
	done
	log "nothing accepts connections on 127.0.0.1:$1 (logs in $dir)"
	return 1
}

start_memcached() {
	local port=$1 user=()
	# memcached refuses to run as root unless told which user to become.
	[ "$(id -u)" -eq 0 ] && user=(-u root)
	memcached -d -l 127.0.0.1 -p "$port" -U 0 -m 64 -c 1024 "${user[@]}" \
		-P "$dir/memcached-$port.pid" >>"$dir/memcached-$port.log" 2>&1
}

start_redis() {
	local port=$1
	redis-server --bind 127.0.0.1 --port "$port" --daemonize yes \
		--pidfile "$dir/redis-$port.pid" --logfile "$dir/redis-$port.log" \
		--dir "$dir" --save '' --appendonly no >&2
}

# start_etcd starts a single-member etcd on port (clients) and port+1
# (peers), in the background: etcd has no daemon mode of its own.
start_etcd() {
	local port=$1 peer=$(($1 + 1))
	etcd --name chash-ci --data-dir "$dir/etcd-$port.data" \
		--listen-client-urls "http://127.0.0.1:$port" --advertise-client-urls "http://127.0.0.1:$port" \
		--listen-peer-urls "http://127.0.0.1:$peer" --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
		--initial-cluster "chash-ci=http://127.0.0.1:$peer" \
		</dev/null >>"$dir/etcd-$port.log" 2>&1 &
	echo $! >"$dir/etcd-$port.pid"
}

# addrs prints count comma-separated loopback addresses from port first.
addrs() {
	local first=$1 count=$2 i out=""
	for ((i = 0; i < count; i++)); do
		out+="${out:+,}127.0.0.1:$((first + i))"
	done
	echo "$out"
}

stop_dir() {
	local d=$1 f pid i
	[ -d "$d" ] || return 0
	for f in "$d"/*.pid; do
		[ -e "$f" ] || continue
		pid=$(cat "$f" 2>/dev/null || true)
		[[ "$pid" =~ ^[0-9]+$ ]] || continue
		kill "$pid" 2>/dev/null || continue
		for ((i = 0; i < 50; i++)); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null
	done
	rm -rf "$d"
}

start() {
	install_missing
	local p ports=()
	for ((p = memcached_port; p < memcached_port + memcached_count; p++)); do ports+=("$p"); done
	for ((p = redis_port; p < redis_port + redis_count; p++)); do ports+=("$p"); done
	ports+=("$etcd_port" "$((etcd_port + 1))")
	for p in "${ports[@]}"; do
		if port_open "$p"; then
			log "port $p is already in use: stop what holds it, or set CHASH_MEMCACHED_PORT / CHASH_REDIS_PORT / CHASH_ETCD_PORT"
			return 1
		fi
	done
	for ((p = memcached_port; p < memcached_port + memcached_count; p++)); do start_memcached "$p"; done
	for ((p = redis_port; p < redis_port + redis_count; p++)); do start_redis "$p"; done
	start_etcd "$etcd_port"
	for p in "${ports[@]}"; do wait_port "$p"; done
	log "$memcached_count memcached, $redis_count redis-server and 1 etcd running, state in $dir"
	echo "export CHASH_MEMCACHED=$(addrs "$memcached_port" "$memcached_count")"
	echo "export CHASH_REDIS=$(addrs "$redis_port" "$redis_count")"
	echo "export CHASH_ETCD=127.0.0.1:$etcd_port"
	echo "export CHASH_ETCD_BIN=$(command -v etcd)"
	echo "export CHASH_KNOTD_BIN=$(command -v knotd || echo /usr/sbin/knotd)"
	echo "export CHASH_KNOTC_BIN=$(command -v knotc || echo /usr/sbin/knotc)"
	echo "export CHASH_CHROMIUM=$(command -v chromium)"
	echo "export CHASH_ZOOKEEPER_JAR=/usr/share/java/zookeeper.jar"
	echo "export CHASH_SERVICES_DIR=$dir"
}

case "${1:-}" in
start)
	dir=$(mktemp -d "${TMPDIR:-/tmp}/chash-services.XXXXXX")
	# A subshell outside any condition, so that set -e applies inside it.
	set +e
	(
		set -e
		start
	)
	rc=$?
	set -e
	if [ "$rc" -ne 0 ]; then
		stop_dir "$dir"
		echo "echo 'services: start failed' >&2; false"
		exit "$rc"
	fi
	;;
stop)
	if [ -z "${CHASH_SERVICES_DIR:-}" ]; then
		log "CHASH_SERVICES_DIR is not set: nothing to stop"
		exit 0
	fi
	case "$CHASH_SERVICES_DIR" in
	*/chash-services.*) stop_dir "$CHASH_SERVICES_DIR" ;;
	*) log "refusing to clean up $CHASH_SERVICES_DIR: not made by start" ;;
	esac
	log "stopped"
	;;
*)
	echo "usage: $0 start|stop" >&2
	exit 2
	;;
esac
