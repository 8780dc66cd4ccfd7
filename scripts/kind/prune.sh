#!/usr/bin/env bash
# Frees the Docker disk space this project's builds take, and nothing else's:
#   - leftover node-build containers of killed node-image.sh runs;
#   - node images other than the one recorded in $KIND_CACHE/node-image (node-image.sh also removes
#     them after each build; this catches builds that were interrupted);
#   - dangling images carrying this project's labels (left behind when a rebuild moved a tag).
# --all also removes every image this project built (node image and its pieces, control-plane images,
# OLM, controller, fixture, bundle and catalog images): the next `make e2e` rebuilds them (the
# binaries stay in $CACHE_DIR). Running kind clusters are never touched (delete them with
# `CLEANUP_E2E_KIND_CLUSTER=<name> go run ./scripts/kind/cluster down`); an image a container uses stays.
#
# Usage: scripts/kind/prune.sh [--all]
. "$(dirname "$0")/lib.sh"

all=0
case ${1:-} in --all) all=1 ;; "") ;; *) die "usage: $0 [--all]" ;; esac
docker info >/dev/null 2>&1 || die "no usable Docker engine: run scripts/kind/docker.sh"
before=$(docker system df --format '{{.Type}} {{.Size}}' | awk '$1 == "Images" {print $2}')

for c in $(docker ps -aq --filter label=io.cleanup-e2e.node-build=1); do
  docker rm -f "$c" >/dev/null && log "removed leftover node-build container $c"
done

current=$(cat "$KIND_CACHE/node-image" 2>/dev/null || true)
ours() { # every image reference this project builds
  docker images --format '{{.Repository}}:{{.Tag}}' | grep -E "^($NODE_IMAGE_REPO|cleanup-e2e\.local/|fixtures\.local/)" || true
  docker images --filter label=io.cleanup-e2e.input --format '{{.Repository}}:{{.Tag}}' | grep -v '<none>' || true
}
for img in $(ours | sort -u); do
  # without a recorded node image (cache removed) no node image is known to be superseded
  if [ "$all" = 1 ] || { [ -n "$current" ] && [[ $img == "$NODE_IMAGE_REPO:"* ]] && [ "$img" != "$current" ]; }; then
    docker rmi "$img" >/dev/null 2>&1 && log "removed $img" || log "kept $img (a container uses it)"
  fi
done
for label in io.cleanup-e2e.input io.cleanup-e2e.complete; do
  docker image prune -f --filter "label=$label" >/dev/null
done
[ "$all" = 1 ] && rm -f "$KIND_CACHE/node-image"
after=$(docker system df --format '{{.Type}} {{.Size}}' | awk '$1 == "Images" {print $2}')
log "Docker images: $before before, $after now"
