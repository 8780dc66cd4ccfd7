#!/usr/bin/env bash
# Gets every binary the envtest tier needs: kube-apiserver and etcd (envtest's control plane),
# kube-controller-manager, olm, and OLM v1's operator-controller and catalogd. Reuses what is cached.
#
# kube-apiserver and etcd come, in this order of preference, from:
#   1. $KUBEBUILDER_ASSETS, when it holds both;
#   2. setup-envtest's download for $KUBE_VERSION (scripts/envtest-download.sh), tried once while
#      nothing else provides them; ENVTEST_DOWNLOAD=0 skips it;
#   3. a build from the Go module proxy (scripts/build-kube.sh, scripts/build-etcd.sh).
# kube-controller-manager and olm are not in envtest's releases: build-kube.sh and build-olm.sh download
# upstream's binaries when reachable, else build them. OLM v1 is always built (scripts/build-olmv1.sh).
. "$(dirname "$0")/lib.sh"
start=$SECONDS

has_control_plane() { [ -x "$1/kube-apiserver" ] && [ -x "$1/etcd" ]; }
recorded=$(cat "$CACHE_DIR/envtest-assets" 2>/dev/null || true)
from=""
if [ -n "${KUBEBUILDER_ASSETS:-}" ] && has_control_plane "$KUBEBUILDER_ASSETS"; then
  from="KUBEBUILDER_ASSETS=$KUBEBUILDER_ASSETS"
elif [ -n "$recorded" ] && has_control_plane "$recorded"; then
  from="setup-envtest ($recorded)"
elif [ ! -x "$BIN_DIR/kube-$KUBE_VERSION/kube-apiserver" ] && [ "${ENVTEST_DOWNLOAD:-1}" != 0 ] \
    && dir=$(bash "$REPO_ROOT/scripts/envtest-download.sh"); then
  from="setup-envtest ($dir)"
fi

# One build after the other: each go command already uses every core.
if [ -n "$from" ]; then
  log "kube-apiserver and etcd from $from"
  bash "$REPO_ROOT/scripts/build-kube.sh" kube-controller-manager
else
  [ -x "$BIN_DIR/kube-$KUBE_VERSION/kube-apiserver" ] ||
    log "building kube-apiserver and etcd from source: with kube-controller-manager and olm ≈ 10–13 min on 2 cores from empty Go caches, once (cached in $BIN_DIR)"
  bash "$REPO_ROOT/scripts/build-kube.sh" kube-apiserver kube-controller-manager
  bash "$REPO_ROOT/scripts/build-etcd.sh"
fi
bash "$REPO_ROOT/scripts/build-olm.sh" olm
bash "$REPO_ROOT/scripts/build-olmv1.sh" # OLM v1: operator-controller and catalogd (framework/olmv1)
log "envtest toolchain ready in $((SECONDS - start))s under $BIN_DIR"
