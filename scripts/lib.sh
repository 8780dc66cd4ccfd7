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
ARTIFACTS=${ARTIFACTS:-$REPO_ROOT/_artifacts} # JUnit, logs and failure artifacts of make test / make e2e

# One compile mode (static, -trimpath, Kubernetes' build tags) for every go command the scripts run, so
# a package compiled for one (most of ours are also in build-kube.sh's binaries) is reused by the others
# from the Go build cache; internal/srcdir maps trimmed paths back to files. -buildvcs=false: with
# -trimpath the commit and dirty flag enter every main package's build ID, so any edit would relink
# every test binary and rebuild every image.
GO_TAGS=selinux,notest,grpcnotrace
export CGO_ENABLED=${CGO_ENABLED:-0}
case " ${GOFLAGS:-} " in
  *" -trimpath "*) ;;
  *) export GOFLAGS="-trimpath -buildvcs=false -tags=$GO_TAGS${GOFLAGS:+ $GOFLAGS}" ;;
esac

# Every Kubernetes binary build-kube.sh knows; a kind node image needs them all.
# shellcheck disable=SC2034 # read by the scripts that source this file
KUBE_BINARIES="kube-apiserver kube-controller-manager kube-scheduler kubelet kubeadm kube-proxy kubectl"

# ONE_P_EXEC: go test's -exec flag of make test's runs on ≤ 2 CPUs: each test binary and every process it
# starts (API servers, etcd, OLM, operators) on one P. ≈ 20 processes are runnable at once there, and a
# Go process with a second P wakes and parks a second thread whenever it has two goroutines to run:
# context switches that buy nothing when every core is taken (docs/performance.md). Empty when the
# caller set GOMAXPROCS.
ONE_P_EXEC=()
# shellcheck disable=SC2034 # read by the scripts that source this file
if [ -z "${GOMAXPROCS:-}" ] && [ "$(nproc)" -le 2 ]; then ONE_P_EXEC=(-exec "env GOMAXPROCS=1"); fi

# printf's own clock, not $(date): bash can lose a Ctrl-C that comes during a command substitution.
log() { printf '[%(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# step NAME CMD...: runs CMD, logging its name and duration; returns CMD's status even where set -e is
# off (`step ... || rc=1`). CMD runs bare: `"$@" || rc=$?` would turn set -e off inside a function CMD.
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

# wrapper_module DIR MODULE@VERSION...: DIR as a module requiring those modules, so that `go build -mod=mod`
# there builds one of their main packages (`go install pkg@version` refuses a module with replace
# directives); the go command raises its go line to what they need. Rewritten when they change.
wrapper_module() {
  local dir=$1 m; shift
  mkdir -p "$dir"
  ! stamp_ok "$dir/.stamp" "$*" || return 0
  { printf 'module cleanup-e2e.local/wrapper\n\ngo 1.25\n\nrequire (\n'; for m; do printf '\t%s %s\n' "${m%@*}" "${m##*@}"; done; echo ')'; } >"$dir/go.mod"
  [ -f "$dir/main.go" ] || echo "package wrapper" >"$dir/doc.go"
  echo "$*" >"$dir/.stamp"
}

# go_wrapper DIR OUTDIR WHAT ARGS...: `go build ARGS` in wrapper module DIR (one requiring the module to
# build), after checking the disk has room for building WHAT into OUTDIR.
go_wrapper() {
  local dir=$1 outdir=$2 what=$3; shift 3
  # room for the largest single build, a Kubernetes binary
  require_free_space "$(go env GOCACHE)" 3 "building $what (Go build cache)"
  require_free_space "$outdir" 1 "building $what (binary cache)"
  (cd "$dir" && go build -mod=mod "$@") # static and -trimpath: the one compile mode above
}

# keep_or_replace NEW OUT: moves NEW to OUT, unless OUT holds the same bytes: then NEW goes and OUT keeps
# its modification time, which caches key on (envtest's etcd seeds, framework/cluster/envtest/seed.go).
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

# go_wrapper_build_all DIR OUTDIR [FLAGS...] -- PKG...: go_wrapper_build for several main packages in one
# go command, which compiles what they share once; each binary is OUTDIR/<PKG's last path element>.
go_wrapper_build_all() {
  local dir=$1 outdir=$2 flags=() p tmp="$2/.build"; shift 2
  while [ "$1" != -- ]; do flags+=("$1"); shift; done
  shift
  rm -rf "$tmp" && mkdir -p "$tmp"
  go_wrapper "$dir" "$outdir" "${*##*/}" "${flags[@]}" -o "$tmp/" "$@"
  for p in "$@"; do keep_or_replace "$tmp/${p##*/}" "$outdir/${p##*/}"; done
  rmdir "$tmp"
}

# unreachable URL: succeeds, printing why, when URL's host does not resolve and no proxy is set, so a
# script skips an online path at once instead of after a timeout; fails silently when it may be reachable.
unreachable() {
  local host=${1#*://}; host=${host%%/*}; host=${host%:*}
  [ -z "${HTTPS_PROXY:-}${https_proxy:-}${ALL_PROXY:-}${all_proxy:-}" ] && command -v getent >/dev/null \
    && ! getent hosts "$host" >/dev/null && echo "$host does not resolve and no HTTPS proxy is set"
}

# go_tool PKG@VERSION: prints the path of that Go program, linked once per $BIN_DIR (go run's binary
# copied out: the download tests use a $CACHE_DIR each, and a Go build cache serves them all).
go_tool() {
  local bin=$BIN_DIR/tools/${1##*/}
  if [ ! -x "$bin" ]; then
    mkdir -p "${bin%/*}"
    go run -exec cp "$1" "$bin.$$" >&2 || { log "could not build $1 from the Go module proxy"; return 1; }
    mv -f "$bin.$$" "$bin"
  fi
  echo "$bin"
}

# fetch_checked URL OUT: URL into OUT (executable), checked against the SHA-256 in URL.sha256 as dl.k8s.io
# publishes it; on any failure says why and writes nothing. DOWNLOAD_TIMEOUT: seconds per file (600);
# a host that sends nothing for 30 s fails sooner.
fetch_checked() {
  local curl=(curl -fsSL --connect-timeout 10 --speed-limit 1 --speed-time 30 --max-time "${DOWNLOAD_TIMEOUT:-600}")
  local tmp want got
  command -v curl >/dev/null || apt_install curl ca-certificates
  tmp=$(mktemp "$2.XXXXXX")
  if ! "${curl[@]}" -o "$tmp" "$1" || ! want=$("${curl[@]}" "$1.sha256"); then
    rm -f "$tmp"; log "$1: could not download it or its checksum (curl's error above)"; return 1
  fi
  got=$(sha256sum "$tmp" | cut -c1-64) want=${want%%[[:space:]]*}
  [ "$got" = "$want" ] || { rm -f "$tmp"; log "$1 has SHA-256 $got, but $1.sha256 says $want: not used"; return 1; }
  chmod 755 "$tmp" && mv -f "$tmp" "$2"
}

# image_files IMAGE DIR PATH...: the regular files PATH... of IMAGE's file system for linux/$GOARCH (its
# layers applied, as a runtime would: crane export) into DIR under their base names, all or none. IMAGE
# is named by digest, which crane checks every blob against.
image_files() {
  local image=$1 dir=$2 crane tmp p; shift 2
  [[ $image == *@sha256:* ]] || { log "$image: name it by digest (@sha256:…), as a release manifest does: the digest is what checks its content"; return 1; }
  crane=$(go_tool "github.com/google/go-containerregistry/cmd/crane@$(cd "$REPO_ROOT" && go list -m -f '{{.Version}}' github.com/google/go-containerregistry)") || return 1
  tmp=$(mktemp -d "$dir/.image.XXXXXX")
  if ! timeout "${DOWNLOAD_TIMEOUT:-600}" "$crane" export --platform "linux/$(go env GOARCH)" "$image" - | tar -x -C "$tmp"; then
    rm -rf "$tmp"; log "could not read the files of $image (crane's error above)"; return 1
  fi
  for p; do
    [ -f "$tmp/$p" ] && [ ! -L "$tmp/$p" ] || { rm -rf "$tmp"; log "$image (linux/$(go env GOARCH)) has no regular file $p"; return 1; }
  done
  for p; do chmod 755 "$tmp/$p" && mv -f "$tmp/$p" "$dir/${p##*/}"; done
  rm -rf "$tmp"
}

# as_root CMD...: runs CMD as root: directly, else through passwordless sudo, else fails saying why.
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

# require_free_space DIR GIB WHAT: fails before anything is written when DIR's filesystem has less than
# GIB GiB free, saying what needs it: clearer than a build running out of disk half-way.
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

# sha256_files FILE...: what `sha256sum FILE...` prints, rehashing a file only when its device, inode,
# size or mtime changed (sums kept in $CACHE_DIR/sha256sums): the kind set-up hashes large inputs every run.
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
