#!/usr/bin/env bash
# Proves the documented adoption path on a fresh kubebuilder go/v4 scaffold with a webhook: the
# operator's module is never touched. It builds kubebuilder's CLI from the Go module proxy, scaffolds
# an operator (init, create api, create webhook --defaulting --programmatic-validation), applies the
# one edit a user would make (finalizer.patch: the controller adds a finalizer and removes it on
# delete), generates the manifests with the scaffold's own Makefile (make manifests; controller-gen
# and kustomize come from the proxy), renders its bundle from `kustomize build config/default` with
# kustomize-to-bundle (what `make bundle` does with operator-sdk, which cannot be built here), and
# puts this directory's test/uninstall module — the uninstall suite, a module of its own — into the
# scaffold. The scaffold is cached under $CACHE_DIR/kubebuilder-scaffold by the hash of its inputs.
#
#   run.sh prepare      prepare (or reuse) the scaffold; print the directory MODULE of its
#                       test/uninstall module
#   run.sh verify MODULE  fail unless the scaffold's go.mod, go.sum and Go code are what kubebuilder
#                       generated plus finalizer.patch (run after the tests: they must change nothing)
#   run.sh image MODULE   build the operator's image into the host's Docker (for PROVIDER=kind)
#   run.sh              all of it, then `go test ./...` in the uninstall module
# verify and image take the directory prepare printed, not this script's hash of the inputs: an edit
# of this script during a run must not move the run to another scaffold.
#
# scripts/test-examples.sh runs it in make test (envtest: the bundle without its webhooks) and in
# make e2e (kind: the bundle as it is, the image built here).
. "$(dirname "$0")/../../scripts/lib.sh"
HERE=$REPO_ROOT/examples/kubebuilder-scaffold

KUBEBUILDER_VERSION=v4.16.0
# The project as `kubebuilder init` names it (its directory). Its own domain, image and package, so
# that on a shared kind cluster it never meets examples/memcached-operator's memcacheds.cache.example.com.
PROJECT=memcached-scaffold
DOMAIN=scaffold.example.com
REPO=example.com/$PROJECT
GROUP=cache VERSION=v1alpha1 KIND=Memcached
IMAGE=example.com/$PROJECT:v0.0.1
BUNDLE_VERSION=0.0.1

KB_CACHE=$CACHE_DIR/kubebuilder-scaffold
KUBEBUILDER=$KB_CACHE/bin/kubebuilder-$KUBEBUILDER_VERSION
# Everything the prepared scaffold depends on; a change makes a new one.
key=$( (echo "$KUBEBUILDER_VERSION $PROJECT $DOMAIN $REPO $GROUP $VERSION $KIND $IMAGE $BUNDLE_VERSION $(go env GOVERSION)"
  cat "$HERE/run.sh" "$HERE/finalizer.patch" "$HERE"/kustomize-to-bundle/*.go) | sha256sum | cut -c1-12)
WORK=$KB_CACHE/$KUBEBUILDER_VERSION-$key
SCAFFOLD=$WORK/$PROJECT

# code_sums DIR: the sha256 of the scaffold's go.mod, go.sum and every .go file, what must not change
# (bin/ holds the Makefile's tools, test/uninstall is the uninstall module).
code_sums() {
  (cd "$1" && find . \( -path ./bin -o -path ./test/uninstall \) -prune -o -type f \( -name '*.go' -o -name go.mod -o -name go.sum \) -print0 |
    LC_ALL=C sort -z | xargs -0 sha256sum)
}

scaffold() {
  local start=$SECONDS tmp
  mkdir -p "$KB_CACHE/bin"
  if [ ! -x "$KUBEBUILDER" ]; then
    step "go install sigs.k8s.io/kubebuilder/v4@$KUBEBUILDER_VERSION" \
      env GOBIN="$KB_CACHE/bin/.install" go install "sigs.k8s.io/kubebuilder/v4@$KUBEBUILDER_VERSION"
    mv -f "$KB_CACHE/bin/.install/kubebuilder" "$KUBEBUILDER"
  fi
  rm -rf "$WORK"
  tmp=$KB_CACHE/.making-$key
  rm -rf "$tmp"
  mkdir -p "$tmp/$PROJECT"
  # The scaffold's own tools are built as its Makefile builds them, in its default mode (not this
  # repo's static, trimmed one: they are not shared with anything of ours).
  (
    cd "$tmp/$PROJECT"
    unset GOFLAGS
    step "kubebuilder init" "$KUBEBUILDER" init --domain "$DOMAIN" --repo "$REPO"
    step "kubebuilder create api" "$KUBEBUILDER" create api --group "$GROUP" --version "$VERSION" --kind "$KIND" --resource --controller
    step "kubebuilder create webhook" "$KUBEBUILDER" create webhook --group "$GROUP" --version "$VERSION" --kind "$KIND" --defaulting --programmatic-validation
    code_sums . >../pristine.sha256
    # The one edit: what a user adds to the scaffold's empty Reconcile.
    step "apply finalizer.patch" patch -p1 --no-backup-if-mismatch <"$HERE/finalizer.patch"
    code_sums . >../edited.sha256
    step "make manifests" make manifests
    step "make kustomize" make kustomize
    bin/kustomize build config/default >../config-default.yaml
    bin/kustomize build config/samples >../samples.yaml
  )
  # Only the patched controller may differ from what kubebuilder generated.
  local changed
  changed=$( (diff "$tmp/pristine.sha256" "$tmp/edited.sha256" || true) | awk '/^[<>]/ {print $3}' | sort -u)
  [ "$changed" = "./internal/controller/${KIND,,}_controller.go" ] ||
    die "the scripted edit changed more than the controller: $changed"
  step "kustomize-to-bundle" go run ./examples/kubebuilder-scaffold/kustomize-to-bundle -package "$PROJECT" -version "$BUNDLE_VERSION" \
    -image "$IMAGE" -default "$tmp/config-default.yaml" -samples "$tmp/samples.yaml" -out "$tmp/$PROJECT/bundle"
  mv "$tmp" "$WORK"
  log "scaffold $SCAFFOLD prepared in $((SECONDS - start))s"
}

# uninstall_module: this directory's test/uninstall, copied into the scaffold, its replace pointing
# at this checkout (an operator repo would require a released version instead).
uninstall_module() {
  local dst=$SCAFFOLD/test/uninstall
  rm -rf "$dst"
  mkdir -p "$dst"
  cp "$HERE"/test/uninstall/* "$dst/"
  (cd "$dst" && go mod edit -replace "github.com/cleanup-e2e/cleanup-e2e=$REPO_ROOT")
}

prepare() {
  exec 9>"$CACHE_DIR/.kubebuilder-scaffold.lock"
  flock 9 # make test and make e2e may prepare at once
  if [ ! -f "$WORK/edited.sha256" ]; then
    scaffold >&2 # standard output is the module's directory alone
    # Older scaffolds (other versions or inputs) go.
    find "$KB_CACHE" -mindepth 1 -maxdepth 1 -name 'v*' ! -name "$(basename "$WORK")" -exec rm -rf {} +
  else
    log "scaffold $SCAFFOLD up to date (kubebuilder $KUBEBUILDER_VERSION)"
  fi
  uninstall_module
  flock -u 9
  echo "$SCAFFOLD/test/uninstall"
}

# scaffold_of MODULE: the scaffold (and its work directory) of the uninstall module MODULE.
scaffold_of() {
  [ -n "${1:-}" ] || die "usage: $0 verify|image MODULE (the directory prepare printed)"
  SCAFFOLD=$(cd "$1/../.." && pwd) && WORK=$(dirname "$SCAFFOLD")
}

verify() {
  if ! diff "$WORK/edited.sha256" <(code_sums "$SCAFFOLD"); then
    die "the scaffold's go.mod, go.sum or Go code changed (above: < as kubebuilder made it plus finalizer.patch, > now)"
  fi
  log "scaffold unchanged: go.mod, go.sum and $(($(wc -l <"$WORK/edited.sha256") - 2)) Go files are kubebuilder's plus finalizer.patch"
}

# image: what the scaffold's `make docker-build IMG=...` makes — its Dockerfile builds
# `go build -a -o manager cmd/main.go` with the operator's go.mod and runs it as 65532 — FROM scratch
# instead of distroless, since no image can be pulled here.
image() {
  local ctx=$KB_CACHE/image
  rm -rf "$ctx"
  mkdir -p "$ctx"
  # In the scripts' compile mode (lib.sh), which the envtest runs of the suite build ./cmd in too.
  step "go build the manager (the scaffold's module)" go build -C "$SCAFFOLD" -o "$ctx/manager" ./cmd
  printf 'FROM scratch\nCOPY manager /manager\nUSER 65532:65532\nENTRYPOINT ["/manager"]\n' >"$ctx/Dockerfile"
  # the legacy builder (no BuildKit here) warns on stderr on every build: shown only on failure
  step "docker build $IMAGE" bash -c 'DOCKER_BUILDKIT=0 docker build -q -t "$1" "$2" >/dev/null 2>"$3" || { cat "$3" >&2; exit 1; }' \
    _ "$IMAGE" "$ctx" "$KB_CACHE/image.err"
}

case ${1:-all} in
  prepare) prepare ;;
  verify) scaffold_of "${2:-}" && verify ;;
  image) scaffold_of "${2:-}" && image ;;
  all)
    dir=$(prepare)
    scaffold_of "$dir"
    if [ "${CLEANUP_E2E_PROVIDER:-${PROVIDER:-envtest}}" = kind ]; then image; fi
    rc=0
    # CLEANUP_E2E_ROOT: the framework's trimmed source paths (-trimpath, lib.sh) name no directory
    # on disk; outside this checkout it finds the checkout by it (internal/srcdir).
    (cd "$dir" && CLEANUP_E2E_ROOT=$REPO_ROOT go test -count=1 -timeout "${EXAMPLE_TIMEOUT:-20m}" ./...) || rc=1
    verify || rc=1
    exit $rc
    ;;
  *) die "usage: $0 [prepare | verify MODULE | image MODULE]" ;;
esac
