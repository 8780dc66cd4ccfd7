# shellcheck shell=bash
# Shared helpers for the toolchain scripts: logging with timings, the cache layout, pinned versions.
# Sourced, never executed.
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=versions.env
. "$REPO_ROOT/scripts/versions.env"

# Everything built lands here (gitignored). Override to share one cache between checkouts.
CACHE_DIR=${CLEANUP_E2E_CACHE:-$REPO_ROOT/_cache}
BIN_DIR=$CACHE_DIR/bin
mkdir -p "$BIN_DIR"

# One compile mode for every go command the scripts run (the toolchain, the images, the test binaries):
# static, -trimpath, Kubernetes' build tags. A package compiled for one is then in the Go build cache
# for the others, and ≈ 83 % of our dependencies' source is also in kube-apiserver and
# kube-controller-manager, which build-kube.sh builds at our dependencies' versions; in another mode
# a cold machine compiles them a second time. Trimmed paths read github.com/cleanup-e2e/cleanup-e2e/…
# in stack traces (internal/srcdir finds the files kept beside the source). No VCS stamp
# (-buildvcs=false): with -trimpath the checkout's commit and dirty flag are part of every main
# package's build ID, test mains included, so each commit or edit of any tracked file relinked all 43
# kept test binaries of a warm make test (≈ 3 min) and rebuilt every kind image, whose binaries
# carried the commit; the images are labelled with the digests of their inputs instead.
GO_TAGS=selinux,notest,grpcnotrace
export CGO_ENABLED=${CGO_ENABLED:-0}
case " ${GOFLAGS:-} " in
  *" -trimpath "*) ;;
  *) export GOFLAGS="-trimpath -buildvcs=false -tags=$GO_TAGS${GOFLAGS:+ $GOFLAGS}" ;;
esac

# Every Kubernetes binary build-kube.sh knows; a kind node image needs them all.
# shellcheck disable=SC2034 # read by the scripts that source this file
KUBE_BINARIES="kube-apiserver kube-controller-manager kube-scheduler kubelet kubeadm kube-proxy kubectl"

# printf's own clock, not $(date): bash 5.2 dropped a Ctrl-C that came during a command substitution
# (scripts/atonce says how often).
log() { printf '[%(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# step NAME CMD...: runs CMD, printing what it does and how long it took.
# Returns the command's status in every context: under `step ... || rc=1` set -e is off inside the
# function, and returning the log line's 0 let make lint pass with vet and shellcheck failing. The
# command runs bare, not as `"$@" || rc=$?`: that would switch set -e off inside a function it runs
# in every context, and a failing command midway would no longer stop it.
step() {
  local name=$1; shift
  local start=$SECONDS
  log "==> $name"
  "$@"
  local rc=$?
  if [ "$rc" = 0 ]; then
    log "<== $name done in $((SECONDS - start))s"
  else
    log "<== $name FAILED (exit $rc) after $((SECONDS - start))s"
  fi
  return "$rc"
}

# stamp_ok FILE CONTENT: true when FILE exists and holds CONTENT (the inputs a cached output was made from).
stamp_ok() { [ -f "$1" ] && [ "$(cat "$1")" = "$2" ]; }

# go_wrapper DIR OUTDIR WHAT ARGS...: `go build ARGS` in the wrapper module DIR (a module that requires
# the one to build), once the disk holds what building WHAT into OUTDIR needs.
go_wrapper() {
  local dir=$1 outdir=$2 what=$3; shift 3
  # a cold run fills ≈ 10 GB of Go build cache in all; a single Kubernetes binary ≈ 3 GB
  require_free_space "$(go env GOCACHE)" 3 "building $what (Go build cache)"
  require_free_space "$outdir" 1 "building $what (binary cache)"
  (cd "$dir" && go build -mod=mod "$@") # static and -trimpath: the one compile mode above
}

# keep_or_replace NEW OUT: moves NEW to OUT, unless OUT already holds the same bytes: then NEW goes and
# OUT keeps its modification time, which caches key on (envtest's etcd seeds,
# framework/cluster/envtest/seed.go: a kind run rebuilt etcd into the same bytes, and every next
# make test made both seeds again, its first starts racing the making).
keep_or_replace() {
  if [ -f "$2" ] && cmp -s "$1" "$2"; then rm -f "$1"; else mv -f "$1" "$2"; fi
}

# go_wrapper_build DIR OUT PKG [FLAGS...]: builds main package PKG (from a dependency module) in the
# wrapper module DIR into OUT, atomically so that an interrupted build never leaves a half binary.
go_wrapper_build() {
  local dir=$1 out=$2 pkg=$3; shift 3
  go_wrapper "$dir" "$(dirname "$out")" "$(basename "$out")" "$@" -o "$out.tmp" "$pkg"
  keep_or_replace "$out.tmp" "$out"
}

# go_wrapper_build_all DIR OUTDIR [FLAGS...] -- PKG...: go_wrapper_build for several main packages in
# one go command, which compiles what they share once and links one beside the others' compiles; each
# binary is OUTDIR/<PKG's last path element>.
go_wrapper_build_all() {
  local dir=$1 outdir=$2 flags=() p tmp="$2/.build"; shift 2
  while [ "$1" != -- ]; do flags+=("$1"); shift; done
  shift
  rm -rf "$tmp" && mkdir -p "$tmp"
  go_wrapper "$dir" "$outdir" "${*##*/}" "${flags[@]}" -o "$tmp/" "$@"
  for p in "$@"; do keep_or_replace "$tmp/${p##*/}" "$outdir/${p##*/}"; done
  rmdir "$tmp"
}

# unreachable URL: prints why URL cannot be reached and succeeds when its host does not resolve and no
# proxy is set (an offline machine, as this project's VMs), so a script skips an online path at once
# instead of failing on it after a build or a timeout; fails (prints nothing) when it may be reachable.
unreachable() {
  local host=${1#*://}; host=${host%%/*}; host=${host%:*}
  [ -z "${HTTPS_PROXY:-}${https_proxy:-}${ALL_PROXY:-}${all_proxy:-}" ] && command -v getent >/dev/null \
    && ! getent hosts "$host" >/dev/null && echo "$host does not resolve and no HTTPS proxy is set"
}

# download ARGS...: scripts/download (release files checked against their published SHA-256, files out
# of an image named by digest); how long it took goes to the log.
download() { (cd "$REPO_ROOT" && go run ./scripts/download "$@"); }

# as_root CMD...: runs CMD as root: directly when we are root, else through passwordless sudo (CI
# runners such as GitHub's), else fails saying what needed root.
as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"
  elif sudo -n true 2>/dev/null; then sudo -n "$@"
  else die "need root for: $* (run as root, or allow passwordless sudo)"
  fi
}

# apt_install PKG...: installs Debian packages, refreshing the package lists first only when the install
# fails (a fresh machine has none).
apt_install() {
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null 2>&1 \
    || { as_root apt-get update -qq >/dev/null && as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null; } \
    || die "apt-get install $* failed"
}

# require_free_space DIR GIB WHAT: fails, before anything is written, when the filesystem holding DIR
# has less than GIB GiB free, naming the directory, the numbers and what needs the space. A build that
# ran out of disk half-way would fail later with a far less clear error (the caches stay consistent
# either way: every output is written to a temporary name and renamed when complete).
require_free_space() {
  local dir=$1 want=$2 what=$3 avail
  while [ ! -d "$dir" ]; do dir=$(dirname "$dir"); done
  avail=$(df -Pk "$dir" | awk 'NR == 2 {print $4}')
  if (( avail < want * 1024 * 1024 )); then
    die "not enough disk space for $what: $(awk -v k="$avail" 'BEGIN {printf "%.1f", k / 1048576}') GiB free on the filesystem of $dir, need $want GiB.
       Free some space and rerun (nothing was changed). Safe to remove: superseded cleanup-e2e images
       (scripts/kind/prune.sh), the binary cache ($CACHE_DIR, rebuilt when needed), Go's build cache (go clean -cache)."
  fi
}

# sha256_files FILE...: what `sha256sum FILE...` prints, reading a file again only when its device,
# inode, size or modification time changed since it was hashed (kept in $CACHE_DIR/sha256sums, one
# line per file version). The kind tier's set-up hashes its image contexts and binaries on every run to
# tell whether to rebuild (≈ 900 MB, ≈ 12 s of CPU: most of a kept cluster's set-up).
sha256_files() {
  [ $# -gt 0 ] || return 0
  local db=$CACHE_DIR/sha256sums stats f
  touch "$db"
  stats=$(stat -c '%d:%i:%s:%.9Y %n' -- "$@")
  while IFS= read -r f; do # the versions not hashed yet; stat again after hashing: a file changed meanwhile is not kept
    local before after sum
    before=$(stat -c '%d:%i:%s:%.9Y' -- "$f")
    sum=$(sha256sum -- "$f" | cut -c1-64)
    after=$(stat -c '%d:%i:%s:%.9Y' -- "$f")
    [ "$before" != "$after" ] || printf '%s %s\n' "$after" "$sum" >>"$db"
  done < <(awk 'FILENAME == ARGV[1] {known[$1]; next} !($1 in known) {print substr($0, index($0, " ") + 1)}' "$db" - <<<"$stats")
  awk 'FILENAME == ARGV[1] {sum[$1] = $2; next}
    {name = substr($0, index($0, " ") + 1); if (!($1 in sum)) {print "sha256_files: " name " changed while it was hashed" > "/dev/stderr"; exit 1}
     print sum[$1] "  " name}' "$db" - <<<"$stats"
}
