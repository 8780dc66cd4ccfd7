#!/usr/bin/env bash
# Builds the kind node image for Kubernetes $KUBE_VERSION from locally built binaries, pulling nothing
# (kind's own `build node-image` pulls its base and control-plane images):
#   1. rootfs: debootstrap bookworm with systemd, containerd, runc, iptables, CNI plugins, ...;
#   2. binaries: scripts/build-{kube,etcd,coredns,crictl}.sh, scripts/kind/build-pause.sh;
#   3. base: images/kind-node/Dockerfile (entrypoint, units, containerd/CNI config) on the rootfs;
#   4. control-plane images tagged as `kubeadm config images list` says: FROM scratch, except kube-proxy
#      (on images/iptables);
#   5. node: binaries copied in, images imported into its containerd, committed as
#      $NODE_IMAGE_REPO:$KUBE_VERSION-<hash of all inputs>.
# Each step is skipped while its inputs are unchanged. Only a complete build gets the final tag, and
# $KIND_CACHE/node-image (read by framework/cluster/kind) is written last, so an interrupted build is
# never reused. Where kindest/node:$KUBE_VERSION can be pulled, it is used instead
# (NODE_IMAGE_UPSTREAM=0: don't try).
#
# Usage: scripts/kind/node-image.sh [--rootfs-only]   prints the node image name on stdout
. "$(dirname "$0")/lib.sh"

ROOTFS_PACKAGES=(
  systemd systemd-sysv                                  # init
  containerd runc containernetworking-plugins           # container runtime, CNI (ptp, host-local, portmap)
  iptables conntrack ethtool socat iproute2 kmod        # kubelet / kube-proxy networking
  util-linux mount libseccomp2 procps ca-certificates jq
)
DEBIAN_SUITE=bookworm
DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
UPSTREAM_IMAGE=kindest/node:$KUBE_VERSION
out_file=$KIND_CACHE/node-image

sha() { sha256sum | cut -c1-64; }
image_exists() { docker image inspect "$1" >/dev/null 2>&1; }
label_of() { docker image inspect --format "{{index .Config.Labels \"$2\"}}" "$1" 2>/dev/null || true; }

# Make sure Docker runs, unless scripts/e2e.sh just did.
[ "${CLEANUP_E2E_DOCKER_READY:-}" = 1 ] || "$KIND_DIR/docker.sh"

# --- 0. upstream image, where it can be had
if [ "${NODE_IMAGE_UPSTREAM:-1}" != 0 ]; then
  if image_exists "$UPSTREAM_IMAGE" || timeout 20 docker pull -q "$UPSTREAM_IMAGE" >/dev/null 2>&1; then
    log "using upstream $UPSTREAM_IMAGE"
    echo "$UPSTREAM_IMAGE" > "$out_file.tmp" && mv -f "$out_file.tmp" "$out_file"
    echo "$UPSTREAM_IMAGE"; exit 0
  fi
  log "$UPSTREAM_IMAGE cannot be pulled here: building the node image locally"
fi

# --- 1. rootfs
rootfs_hash=$(printf '%s\n' "$DEBIAN_SUITE" "${ROOTFS_PACKAGES[@]}" | sha | cut -c1-12)
ROOTFS_IMAGE=$NODE_IMAGE_REPO-rootfs:$rootfs_hash
rootfs_tar=$KIND_CACHE/rootfs-$rootfs_hash.tar
debootstrap_rootfs() {
  require_free_space "$KIND_CACHE" 2 "the debootstrap rootfs"
  command -v debootstrap >/dev/null || apt_install debootstrap
  local dir=$KIND_CACHE/rootfs-$rootfs_hash.d
  # debootstrap needs root (chroot, device nodes); as_root uses sudo when this is not root
  as_root rm -rf "$dir"
  as_root debootstrap --variant=minbase --include="$(IFS=,; echo "${ROOTFS_PACKAGES[*]}")" \
    "$DEBIAN_SUITE" "$dir" "$DEBIAN_MIRROR" > "$KIND_CACHE/debootstrap.log" 2>&1 \
    || { tail -n 20 "$KIND_CACHE/debootstrap.log" >&2; die "debootstrap failed (log: $KIND_CACHE/debootstrap.log)"; }
  # what a container image does not need: package caches, docs, the build host's identity
  as_root sh -c 'cd "$1" && rm -rf var/cache/apt/archives/*.deb var/lib/apt/lists/* usr/share/doc/* \
    usr/share/man/* usr/share/locale/* var/log/*.log && : > etc/machine-id' _ "$dir"
  as_root tar -C "$dir" --numeric-owner -cf "$rootfs_tar.tmp" .
  as_root chown "$(id -u):$(id -g)" "$rootfs_tar.tmp"
  mv -f "$rootfs_tar.tmp" "$rootfs_tar"
  as_root rm -rf "$dir"
}
if ! image_exists "$ROOTFS_IMAGE"; then
  [ -s "$rootfs_tar" ] || step "debootstrap $DEBIAN_SUITE rootfs (≈ 1-2 min)" debootstrap_rootfs
  step "import rootfs as $ROOTFS_IMAGE" docker import "$rootfs_tar" "$ROOTFS_IMAGE" >/dev/null
else
  log "rootfs image $ROOTFS_IMAGE cached"
fi

[ "${1:-}" = --rootfs-only ] && exit 0

# --- 2. binaries (each script is a no-op when cached)
step "binaries" >&2 bash -c '
  set -e
  "$0/scripts/build-kube.sh" $1
  "$0/scripts/build-etcd.sh"
  "$0/scripts/build-coredns.sh"
  "$0/scripts/build-crictl.sh"
  "$0/scripts/kind/build-pause.sh"' "$REPO_ROOT" "$KUBE_BINARIES"
KUBE_BIN=$BIN_DIR/kube-$KUBE_VERSION
ETCD_BIN=$BIN_DIR/etcd-$ETCD_VERSION/etcd
COREDNS_BIN=$BIN_DIR/coredns-$COREDNS_VERSION/coredns
CRICTL_BIN=$BIN_DIR/crictl-$CRICTL_VERSION/crictl

# The images kubeadm will ask for must be exactly the ones we ship.
want_images=$("$KUBE_BIN/kubeadm" config images list --kubernetes-version "$KUBE_VERSION" 2>/dev/null | sort)
ship_images=$(printf '%s\n' \
  "registry.k8s.io/kube-apiserver:$KUBE_VERSION" "registry.k8s.io/kube-controller-manager:$KUBE_VERSION" \
  "registry.k8s.io/kube-scheduler:$KUBE_VERSION" "registry.k8s.io/kube-proxy:$KUBE_VERSION" \
  "registry.k8s.io/coredns/coredns:$COREDNS_IMAGE_TAG" "$PAUSE_IMAGE" "registry.k8s.io/etcd:$ETCD_IMAGE_TAG" | sort)
[ "$want_images" = "$ship_images" ] || die "kubeadm $KUBE_VERSION wants images
$want_images
but this script ships
$ship_images
(update the tags in scripts/kind/lib.sh)"

# --- 3. base image, and the iptables tools alone as kube-proxy's base (instead of the whole rootfs)
# on_rootfs IMAGE DIR: docker build of images/DIR FROM the rootfs image (its PAUSE_IMAGE filled in).
on_rootfs() {
  local ctx
  ctx=$(mktemp -d "${TMPDIR:-/tmp}/cleanup-e2e-$2.XXXXXX")
  cp -a "$REPO_ROOT/images/$2/." "$ctx/"
  [ ! -f "$ctx/files/etc/containerd/config.toml" ] || sed -i "s#@PAUSE_IMAGE@#$PAUSE_IMAGE#" "$ctx/files/etc/containerd/config.toml"
  DOCKER_BUILDKIT=0 docker build -q --build-arg "ROOTFS=$ROOTFS_IMAGE" -t "$1" "$ctx" >/dev/null 2>"$ctx/err" \
    || { cat "$ctx/err" >&2; rm -rf "$ctx"; return 1; }
  rm -rf "$ctx"
}
# content hashes only: checkouts share the cache
base_hash=$( { echo "$ROOTFS_IMAGE $PAUSE_IMAGE"; cd "$REPO_ROOT/images/kind-node" && find . -type f | sort | xargs sha256sum; } | sha | cut -c1-12)
BASE_IMAGE=$NODE_IMAGE_REPO-base:$base_hash
ipt_hash=$( { echo "$ROOTFS_IMAGE"; sha256sum <"$REPO_ROOT/images/iptables/Dockerfile"; } | sha | cut -c1-12)
IPTABLES_IMAGE=$NODE_IMAGE_REPO-iptables:$ipt_hash
for pair in "$BASE_IMAGE kind-node" "$IPTABLES_IMAGE iptables"; do
  read -r image dir <<<"$pair"
  if image_exists "$image"; then log "image $image cached"; else step "build image $image" on_rootfs "$image" "$dir"; fi
done

# --- 4. control-plane images
cp_images() {
  local img=$KIND_DIR/build-image.sh
  "$img" "registry.k8s.io/kube-apiserver:$KUBE_VERSION" "$KUBE_BIN/kube-apiserver"
  "$img" "registry.k8s.io/kube-controller-manager:$KUBE_VERSION" "$KUBE_BIN/kube-controller-manager"
  "$img" "registry.k8s.io/kube-scheduler:$KUBE_VERSION" "$KUBE_BIN/kube-scheduler"
  "$img" "registry.k8s.io/etcd:$ETCD_IMAGE_TAG" "$ETCD_BIN"
  "$img" "registry.k8s.io/coredns/coredns:$COREDNS_IMAGE_TAG" "$COREDNS_BIN"
  BASE_IMAGE=$IPTABLES_IMAGE "$img" "registry.k8s.io/kube-proxy:$KUBE_VERSION" "$KUBE_BIN/kube-proxy"
}
step "control-plane images" cp_images >&2
mapfile -t images <<<"$ship_images"

# --- 5. node image
node_hash=$( {
  echo "$BASE_IMAGE"
  for i in "${images[@]}"; do docker image inspect --format '{{.Id}}' "$i"; done
  sha256_files "$KUBE_BIN/kubelet" "$KUBE_BIN/kubeadm" "$KUBE_BIN/kubectl" "$CRICTL_BIN" | cut -c1-64
  sha256sum "$0" | cut -c1-64
} | sha | cut -c1-12)
NODE_IMAGE=$NODE_IMAGE_REPO:$KUBE_VERSION-$node_hash
build_node() {
  local c=cleanup-e2e-node-build-$node_hash
  # what a build needs in Docker's data root: docs/kind.md
  require_free_space "$(docker_root)" 3 "building the kind node image (Docker's data root)"
  docker rm -f "$c" >/dev/null 2>&1 || true # leftover of a killed build
  # removed however this ends (error, Ctrl-C): an unfinished build never gets the node image's tag
  # shellcheck disable=SC2064
  trap "docker rm -f '$c' >/dev/null 2>&1 || true" EXIT
  docker run -d --name "$c" --label io.cleanup-e2e.node-build=1 --entrypoint=sleep \
    --security-opt seccomp=unconfined "$BASE_IMAGE" infinity >/dev/null
  local b
  for b in kubelet kubeadm kubectl; do docker cp "$KUBE_BIN/$b" "$c:/usr/bin/$b"; done
  docker cp "$CRICTL_BIN" "$c:/usr/local/bin/crictl"
  docker exec "$c" sh -c "chown root:root /usr/bin/kube* /usr/local/bin/crictl && echo $KUBE_VERSION > /kind/version"
  # a private containerd just to import the images (its state lands in /var/lib/containerd)
  docker exec -d "$c" sh -c 'containerd >/var/log/containerd-build.log 2>&1'
  local i
  for i in $(seq 1 30); do docker exec "$c" ctr version >/dev/null 2>&1 && break; sleep 1; done
  docker exec "$c" ctr version >/dev/null || die "containerd did not start in the build container"
  for i in "${images[@]}"; do
    docker save "$i" | docker exec -i "$c" ctr -n k8s.io images import \
      --label=io.cri-containerd.pinned=pinned --no-unpack --digests - >/dev/null \
      || die "importing $i into the node's containerd failed"
  done
  local got
  got=$(docker exec "$c" ctr -n k8s.io images list -q | grep -v '^sha256:' | sort)
  for i in "${images[@]}"; do grep -qx "$i" <<<"$got" || die "image $i missing in the node's containerd after import (have: $got)"; done
  docker exec "$c" sh -c 'pkill containerd; while pgrep -x containerd >/dev/null; do sleep 0.2; done; rm -rf /var/log/containerd-build.log /tmp/* /run/containerd'
  docker commit \
    --change 'ENTRYPOINT ["/usr/local/bin/entrypoint", "/sbin/init"]' --change 'CMD []' \
    --change "LABEL io.cleanup-e2e.complete=$node_hash io.cleanup-e2e.kube-version=$KUBE_VERSION" \
    "$c" "$NODE_IMAGE" >/dev/null
}
if [ "$(label_of "$NODE_IMAGE" io.cleanup-e2e.complete)" = "$node_hash" ]; then
  log "node image $NODE_IMAGE cached"
else
  step "build node image $NODE_IMAGE" build_node
fi
echo "$NODE_IMAGE" > "$out_file.tmp" && mv -f "$out_file.tmp" "$out_file"
# Older builds (other input hashes) go, unless a container still uses them.
for old in $(docker images --format '{{.Repository}}:{{.Tag}}' | grep -E "^$NODE_IMAGE_REPO(-base|-rootfs|-iptables)?:" \
    | grep -vxF -e "$NODE_IMAGE" -e "$BASE_IMAGE" -e "$ROOTFS_IMAGE" -e "$IPTABLES_IMAGE"); do
  docker rmi "$old" >/dev/null 2>&1 && log "removed outdated image $old" || true
done
log "node image: $NODE_IMAGE ($(docker image inspect --format '{{.Size}}' "$NODE_IMAGE" | awk '{printf "%.0f MB", $1/1e6}'))"
echo "$NODE_IMAGE"
