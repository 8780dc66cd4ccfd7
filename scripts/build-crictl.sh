#!/usr/bin/env bash
# Builds crictl $CRICTL_VERSION (the CRI CLI on kind nodes) from the Go module proxy. The checksum
# database knows neither sigs.k8s.io/cri-tools (hence GONOSUMDB for it) nor the k8s.io/* pre-releases it
# requires, so the wrapper raises those to the release $CRICTL_KUBE_VERSION.
#
# Usage: scripts/build-crictl.sh
. "$(dirname "$0")/lib.sh"

out=$BIN_DIR/crictl-$CRICTL_VERSION
src=$CACHE_DIR/src/crictl-$CRICTL_VERSION
mkdir -p "$out"
export GONOSUMDB=${GONOSUMDB:+$GONOSUMDB,}sigs.k8s.io/cri-tools
CRICTL_KUBE_VERSION=v0.34.4
CRICTL_KUBE_MODULES="api apimachinery client-go cri-api cri-client kubectl kubelet cli-runtime component-base"

if [ -x "$out/crictl" ] && grep -q "${CRICTL_VERSION#v}" <<<"$("$out/crictl" --version 2>/dev/null || true)"; then
  log "crictl $CRICTL_VERSION cached at $out/crictl"; exit 0
fi
# shellcheck disable=SC2046,SC2086 # one module a word
wrapper_module "$src" "sigs.k8s.io/cri-tools@$CRICTL_VERSION" $(printf "k8s.io/%s@$CRICTL_KUBE_VERSION " $CRICTL_KUBE_MODULES)
step "build crictl $CRICTL_VERSION (cold ≈ 40 s)" go_wrapper_build "$src" "$out/crictl" sigs.k8s.io/cri-tools/cmd/crictl \
  -ldflags "-s -w -X sigs.k8s.io/cri-tools/pkg/version.Version=${CRICTL_VERSION#v}"
