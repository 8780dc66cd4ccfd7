#!/usr/bin/env bash
# Builds a FROM-scratch image holding one static binary, idempotently (skipped while the image already
# carries the same binary's sha256 in its io.cleanup-e2e.input label).
#
# Usage: scripts/kind/build-image.sh NAME:TAG BINARY [ENTRYPOINT-NAME]
#   The binary lands at /usr/local/bin/<ENTRYPOINT-NAME> (default: the binary's file name), which is
#   the image's ENTRYPOINT and is on containerd's default PATH, so `command: [name]` works too.
#   BASE_IMAGE=img builds on img instead of scratch (e.g. kube-proxy needs iptables).
#   Load the result into a kind cluster with the provider's LoadImages (framework/cluster/kind).
. "$(dirname "$0")/lib.sh"

[ $# -ge 2 ] || die "usage: $0 NAME:TAG BINARY [ENTRYPOINT-NAME]"
image=$1 binary=$2 entry=${3:-$(basename "$2")}
base=${BASE_IMAGE:-scratch}
case $image in *:latest|*@*) die "$image: use a non-latest tag (a latest tag makes the kubelet pull)";; *:*) ;; *) die "$image: needs a tag";; esac
[ -x "$binary" ] || die "$binary is not an executable file"

input="$(sha256_files "$binary" | cut -c1-64) $entry $base"
[ "$base" = scratch ] || input+=" $(docker image inspect --format '{{.Id}}' "$base")"
input=$(echo "$input" | sha256sum | cut -c1-64)
if [ "$(docker image inspect --format '{{index .Config.Labels "io.cleanup-e2e.input"}}' "$image" 2>/dev/null)" = "$input" ]; then
  log "image $image up to date"
  exit 0
fi

build() {
  local ctx
  ctx=$(mktemp -d "${TMPDIR:-/tmp}/cleanup-e2e-image.XXXXXX")
  # shellcheck disable=SC2064
  trap "rm -rf '$ctx'" RETURN
  cp "$binary" "$ctx/$entry"
  cat > "$ctx/Dockerfile" <<DOCKERFILE
FROM $base
COPY $entry /usr/local/bin/$entry
LABEL io.cleanup-e2e.input=$input
ENTRYPOINT ["/usr/local/bin/$entry"]
DOCKERFILE
  # the legacy builder warns on stderr: show it only on failure
  DOCKER_BUILDKIT=0 docker build -q -t "$image" "$ctx" >/dev/null 2>"$ctx.err" || { cat "$ctx.err" >&2; rm -f "$ctx.err"; return 1; }
  rm -f "$ctx.err"
}
step "build image $image ($(du -h "$binary" | cut -f1) binary, FROM $base)" build
