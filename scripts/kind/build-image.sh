#!/usr/bin/env bash
# Builds a FROM-scratch image holding one static binary, skipped while the image carries the hash of
# its inputs (build_image, lib.sh).
#
# Usage: scripts/kind/build-image.sh NAME:TAG BINARY [ENTRYPOINT-NAME]
#   The binary lands at /usr/local/bin/<ENTRYPOINT-NAME> (default: the binary's file name), which is
#   the image's ENTRYPOINT and is on containerd's default PATH, so `command: [name]` works too.
#   BASE_IMAGE=img builds on img instead of scratch (e.g. kube-proxy needs iptables).
#   Load the result into a kind cluster with the provider's LoadImages (framework/cluster/kind).
. "$(dirname "$0")/lib.sh"

[ $# -ge 2 ] || die "usage: $0 NAME:TAG BINARY [ENTRYPOINT-NAME]"
image=$1 binary=$2 entry=${3:-$(basename "$2")}
case $image in *:latest|*@*) die "$image: use a non-latest tag (a latest tag makes the kubelet pull)";; *:*) ;; *) die "$image: needs a tag";; esac
[ -x "$binary" ] || die "$binary is not an executable file"
ctx=$(stage "one/${image//[\/:]/_}")
link "$binary" "$ctx/rootfs/usr/local/bin/$entry"
printf '%s\n' "FROM ${BASE_IMAGE:-scratch}" "COPY rootfs/ /" "ENTRYPOINT [\"/usr/local/bin/$entry\"]" >"$ctx/Dockerfile"
build_image "$image" "$ctx"
