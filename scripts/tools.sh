#!/usr/bin/env bash
# Builds every binary the envtest tier needs (kube-apiserver, kube-controller-manager, etcd, olm).
# Idempotent: cached binaries of the pinned versions are reused. First run on 2 cores ≈ 15 min.
. "$(dirname "$0")/lib.sh"
start=$SECONDS
bash "$REPO_ROOT/scripts/build-kube.sh" kube-apiserver kube-controller-manager
bash "$REPO_ROOT/scripts/build-etcd.sh"
bash "$REPO_ROOT/scripts/build-olm.sh" olm
log "envtest toolchain ready in $((SECONDS - start))s under $BIN_DIR"
