#!/usr/bin/env bash
# Builds CoreDNS $COREDNS_VERSION (the kind node's cluster DNS) from the Go module proxy: a wrapper module
# requiring github.com/coredns/coredns builds its root main package (all in-tree plugins).
# kubeadm asks for another tag; scripts/kind/node-image.sh tags the image as kubeadm expects.
#
# Usage: scripts/build-coredns.sh
. "$(dirname "$0")/lib.sh"

out=$BIN_DIR/coredns-$COREDNS_VERSION
src=$CACHE_DIR/src/coredns-$COREDNS_VERSION
mkdir -p "$out"

# (output captured first: `| grep -q` under pipefail fails when grep quits before the writer)
if [ -x "$out/coredns" ] && grep -q "${COREDNS_VERSION#v}" <<<"$("$out/coredns" -version 2>/dev/null || true)"; then
  log "coredns $COREDNS_VERSION cached at $out/coredns"; exit 0
fi
wrapper_module "$src" "github.com/coredns/coredns@$COREDNS_VERSION"
step "build coredns $COREDNS_VERSION (cold ≈ 4-5 min)" go_wrapper_build "$src" "$out/coredns" github.com/coredns/coredns \
  -ldflags "-s -w -X github.com/coredns/coredns/coremain.GitCommit=$COREDNS_VERSION"
