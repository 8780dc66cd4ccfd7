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
IMG_CACHE=$CACHE_DIR/images # build contexts (stage) and the binaries images.sh builds

# docker_root: Docker's data root, where images and the kind node's volumes take their space.
docker_root() { docker info --format '{{.DockerRootDir}}'; }

# context_hash DIR [EXTRA]: hash of every file (content, mode) and directory (mode) under DIR.
context_hash() {
  (cd "$1" && find . -printf '%p %m %y\n' | LC_ALL=C sort && mapfile -d '' files < <(find . -type f -print0 | LC_ALL=C sort -z)
   sha256_files "${files[@]}"
   echo "${2:-}") | sha256sum | cut -c1-64
}

# build_image IMAGE CONTEXT [DOCKERFILE [PREPARE...]]: docker build, skipped while IMAGE carries the
# context's hash; IMAGE is added to the array built. Command PREPARE runs after hashing, so it may only
# add what derives from hashed inputs.
build_image() {
  local image=$1 ctx=$2 dockerfile=${3:-$2/Dockerfile} base input
  shift $(( $# < 3 ? $# : 3 ))
  base=$(awk 'toupper($1)=="FROM" {print $2; exit}' "$dockerfile")
  input=$(context_hash "$ctx" "$(cat "$dockerfile") $( [ "$base" = scratch ] || docker image inspect --format '{{.Id}}' "$base")")
  built+=("$image")
  if [ "$(docker image inspect --format '{{index .Config.Labels "io.cleanup-e2e.input"}}' "$image" 2>/dev/null)" = "$input" ]; then
    log "image $image up to date"
    return
  fi
  [ $# -eq 0 ] || "$@"
  # the legacy builder is chatty on stderr: show it only on failure
  local err
  err=$(mktemp)
  step "build image $image ($(du -sh "$ctx" | cut -f1) context)" \
    bash -c 'DOCKER_BUILDKIT=0 docker build -q --label "io.cleanup-e2e.input=$1" -f "$2" -t "$3" "$4" >/dev/null 2>"$5" || { cat "$5" >&2; exit 1; }' \
    _ "$input" "$dockerfile" "$image" "$ctx" "$err"
  rm -f "$err"
}

# tag_image SRC DST: DST names the same image as SRC.
tag_image() {
  built+=("$2")
  [ "$(docker image inspect --format '{{.Id}}' "$2" 2>/dev/null)" = "$(docker image inspect --format '{{.Id}}' "$1")" ] || docker tag "$1" "$2"
}

# stage DIR: a fresh build context directory under the image cache.
stage() {
  rm -rf "$IMG_CACHE/ctx/$1"
  mkdir -p "$IMG_CACHE/ctx/$1"
  echo "$IMG_CACHE/ctx/$1"
}

# link SRC DST: put SRC into a context without copying it (same file system), else copy.
link() { mkdir -p "$(dirname "$2")"; ln -f "$1" "$2" 2>/dev/null || cp -f "$1" "$2"; }

# scratch_image IMAGE CTX USER ENTRYPOINT [LINE...]: IMAGE FROM scratch holding CTX/rootfs, run as USER
# with ENTRYPOINT; each LINE (EXPOSE, ENV, WORKDIR) goes into its Dockerfile.
scratch_image() {
  local image=$1 ctx=$2 user=$3 entrypoint=$4; shift 4
  printf '%s\n' "FROM scratch" "COPY rootfs/ /" "$@" "USER $user" "ENTRYPOINT [\"$entrypoint\"]" >"$ctx/Dockerfile"
  build_image "$image" "$ctx"
}
