# shellcheck shell=bash disable=SC2034
# Shared by the kind-tier scripts: the toolchain helpers (../lib.sh) plus the kind node image's pins.
# Sourced, never executed.
# shellcheck source=../lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

KIND_DIR=$REPO_ROOT/scripts/kind
# Image tags kubeadm $KUBE_VERSION asks for (`kubeadm config images list`); node-image.sh checks them
# against the built kubeadm and fails when they drift.
PAUSE_VERSION=3.10.2
PAUSE_IMAGE=registry.k8s.io/pause:$PAUSE_VERSION
ETCD_IMAGE_TAG=3.7.0-0      # we ship etcd $ETCD_VERSION under the tag kubeadm expects
COREDNS_IMAGE_TAG=v1.14.6   # we ship coredns $COREDNS_VERSION under the tag kubeadm expects
# The node image and where its pieces are cached.
NODE_IMAGE_REPO=cleanup-e2e.local/kind-node
KIND_CACHE=$CACHE_DIR/kind
mkdir -p "$KIND_CACHE"

# docker_root: Docker's data root, where images and the kind node's volumes take their space.
docker_root() { docker info --format '{{.DockerRootDir}}'; }
