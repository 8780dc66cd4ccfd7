#!/usr/bin/env bash
# Builds every image the kind tier runs, offline, and lists them in $CACHE_DIR/images.list (one
# reference a line) for the kind provider to load into the node.
#
# All images are FROM scratch with non-latest tags, so nothing is ever pulled:
#   cleanup-e2e.local/olm:$OLM_VERSION     OLM's binaries at the paths its manifests use, plus /bin/cp
#                                          (the unpack Job runs `/bin/cp -Rv /bin/cpb /util/cpb`)
#   cleanup-e2e.local/opm:$OPERATOR_REGISTRY_VERSION  /bin/opm, /bin/grpc_health_probe, /bin/cp
#   fixtures.local/catalog:v0.1.0          the opm image + bundles/catalog, running `opm serve /configs`
#   fixtures.local/bundle/<op>:<version>   bundles/<op>/<version>/bundle.Dockerfile as is
#   fixtures.local/<op>:<version>          cmd/fixture-operator, one image tagged per operator and version
#   cleanup-e2e.local/{operand-cleanup,payload-applier}:v0.1.0
#   cleanup-e2e.local/{catalogd,operator-controller}:$OLMV1_VERSION  OLM v1's managers, as upstream's
#   cleanup-e2e.local/smoke-operator:v0.0.1  e2e/smoke's test binary, which runs the smoke operator
#   example.com/memcached-operator:v0.0.1  examples/memcached-operator's manager at /manager
# Non-root images use numeric users (scratch has no user database): 65532; OLM's 1001, as upstream.
#
# An image is rebuilt only when the hash of its build context (its io.cleanup-e2e.input label) changes.
#
# Usage: scripts/images.sh            (needs Docker: scripts/kind/docker.sh)
. "$(dirname "$0")/kind/lib.sh"
cd "$REPO_ROOT"

OLM_IMAGE=cleanup-e2e.local/olm:$OLM_VERSION
OPM_IMAGE=cleanup-e2e.local/opm:$OPERATOR_REGISTRY_VERSION
CATALOG_IMAGE=fixtures.local/catalog:v0.1.0
OPERAND_CLEANUP_IMAGE=cleanup-e2e.local/operand-cleanup:v0.1.0
PAYLOAD_APPLIER_IMAGE=cleanup-e2e.local/payload-applier:v0.1.0
SMOKE_IMAGE=cleanup-e2e.local/smoke-operator:v0.0.1
MEMCACHED_IMAGE=example.com/memcached-operator:v0.0.1
NONROOT=65532

GOBIN_DIR=$IMG_CACHE/bin
mkdir -p "$GOBIN_DIR"
built=() # the images the list names
start_all=$SECONDS

docker info >/dev/null 2>&1 || die "no usable Docker engine: run scripts/kind/docker.sh"
require_free_space "$(docker_root)" 2 "building the test images (Docker's data root)"

# --- binaries -----------------------------------------------------------------------------------
step "OLM binaries (scripts/build-olm.sh)" bash scripts/build-olm.sh olm catalog package-server cpb copy-content
step "opm and grpc_health_probe (scripts/build-opm.sh)" bash scripts/build-opm.sh opm grpc_health_probe
step "OLM v1 binaries (scripts/build-olmv1.sh)" bash scripts/build-olmv1.sh
OLM_BIN=$BIN_DIR/olm-$OLM_VERSION
OPM_BIN=$BIN_DIR/opm-$OPERATOR_REGISTRY_VERSION
# One go command for all four (each binary named after its package's directory): it loads the package
# graph once and does not relink an up-to-date binary.
step "go build cp, fixture-operator, operand-cleanup, payload-applier" \
  env CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$GOBIN_DIR/" \
  ./images/cp ./cmd/fixture-operator ./cmd/operand-cleanup ./cmd/payload-applier
# Built in the example's own module, as its Dockerfile does.
step "go build examples/memcached-operator/cmd (the example operator's manager)" \
  env CGO_ENABLED=0 go build -C examples/memcached-operator -trimpath -ldflags '-s -w' -o "$GOBIN_DIR/memcached-manager" ./cmd
step "go test -c ./e2e/smoke (the smoke operator's binary)" \
  env CGO_ENABLED=0 go test -c -trimpath -ldflags '-s -w' -o "$GOBIN_DIR/smoke.test" ./e2e/smoke

# --- OLM and opm ----------------------------------------------------------------------------------
ctx=$(stage olm)
for b in olm catalog package-server cpb copy-content; do link "$OLM_BIN/$b" "$ctx/rootfs/bin/$b"; done
link "$GOBIN_DIR/cp" "$ctx/rootfs/bin/cp"
mkdir -m 1777 "$ctx/rootfs/tmp"
scratch_image "$OLM_IMAGE" "$ctx" 1001 /bin/olm "EXPOSE 8080 5443"

ctx=$(stage opm)
link "$OPM_BIN/opm" "$ctx/rootfs/bin/opm"
link "$OPM_BIN/grpc_health_probe" "$ctx/rootfs/bin/grpc_health_probe"
link "$GOBIN_DIR/cp" "$ctx/rootfs/bin/cp"
mkdir -m 1777 "$ctx/rootfs/tmp"
scratch_image "$OPM_IMAGE" "$ctx" 1001 /bin/opm

# The catalog, as `opm generate dockerfile` builds one. A FROM-scratch build cannot RUN `opm serve
# --cache-only`, so the cache is made here with the same opm and copied in owned by the opm image's user
# (`opm serve` checks the cache's integrity when --cache-dir is given).
ctx=$(stage catalog)
cp -r bundles/catalog "$ctx/configs"
cat > "$ctx/Dockerfile" <<EOF
FROM $OPM_IMAGE
COPY configs /configs
COPY --chown=1001:1001 cache /tmp/cache
LABEL operators.operatorframework.io.index.configs.v1=/configs
EXPOSE 50051
ENTRYPOINT ["/bin/opm"]
CMD ["serve", "/configs", "--cache-dir=/tmp/cache"]
EOF
serve_cache() { "$OPM_BIN/opm" serve "$1/configs" --cache-dir="$1/cache" --cache-only 2>"$1.log" || { cat "$1.log" >&2; return 1; }; }
build_image "$CATALOG_IMAGE" "$ctx" "$ctx/Dockerfile" serve_cache "$ctx"

# --- bundles and fixture operators ------------------------------------------------------------------
ctx=$(stage fixture-operator)
link "$GOBIN_DIR/fixture-operator" "$ctx/rootfs/fixture-operator"
scratch_image cleanup-e2e.local/fixture-operator:v0.1.0 "$ctx" "$NONROOT:$NONROOT" /fixture-operator
for dir in bundles/*/v*/; do
  dir=${dir%/}; op=$(basename "$(dirname "$dir")"); version=$(basename "$dir")
  [ -f "$dir/bundle.Dockerfile" ] || continue
  build_image "fixtures.local/bundle/$op:$version" "$dir" "$dir/bundle.Dockerfile"
  tag_image cleanup-e2e.local/fixture-operator:v0.1.0 "fixtures.local/$op:$version"
done

# --- the systems under test -----------------------------------------------------------------------
for pair in "operand-cleanup $OPERAND_CLEANUP_IMAGE" "payload-applier $PAYLOAD_APPLIER_IMAGE"; do
  read -r name image <<<"$pair"
  ctx=$(stage "$name")
  link "$GOBIN_DIR/$name" "$ctx/rootfs/$name"
  scratch_image "$image" "$ctx" "$NONROOT:$NONROOT" "/$name"
done

# OLM v1's managers, laid out as upstream's Dockerfiles (WORKDIR /: catalogd's Deployment runs
# ./catalogd); /tmp and /var/tmp for containers/image's temporary files.
for name in catalogd operator-controller; do
  ctx=$(stage "olmv1-$name")
  link "$BIN_DIR/olmv1-$OLMV1_VERSION/$name" "$ctx/rootfs/$name"
  mkdir -p "$ctx/rootfs/var"
  mkdir -m 1777 "$ctx/rootfs/tmp" "$ctx/rootfs/var/tmp"
  scratch_image "cleanup-e2e.local/$name:$OLMV1_VERSION" "$ctx" "$NONROOT:$NONROOT" "/$name" "WORKDIR /"
done

# The example operator as its kubebuilder Dockerfile lays it out (/manager, user 65532), FROM scratch.
ctx=$(stage memcached-operator)
link "$GOBIN_DIR/memcached-manager" "$ctx/rootfs/manager"
scratch_image "$MEMCACHED_IMAGE" "$ctx" "$NONROOT:$NONROOT" /manager

# /tmp: the test binary links controller-runtime's envtest, whose init creates a directory under /tmp.
ctx=$(stage smoke-operator)
link "$GOBIN_DIR/smoke.test" "$ctx/rootfs/smoke.test"
mkdir -m 1777 "$ctx/rootfs/tmp"
scratch_image "$SMOKE_IMAGE" "$ctx" "$NONROOT:$NONROOT" /smoke.test "ENV CLEANUP_E2E_SMOKE_OPERATOR=1"

# A rebuild moves a tag and leaves the old image dangling: drop those (ours only, by label).
docker image prune -f --filter label=io.cleanup-e2e.input >/dev/null || true

# --- the list the provider loads ------------------------------------------------------------------
printf '%s\n' "${built[@]}" | grep -v '^cleanup-e2e.local/fixture-operator:' > "$CACHE_DIR/images.list.tmp"
mv -f "$CACHE_DIR/images.list.tmp" "$CACHE_DIR/images.list"
log "$(wc -l < "$CACHE_DIR/images.list") images ready in $((SECONDS - start_all))s, listed in $CACHE_DIR/images.list"
