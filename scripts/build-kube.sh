#!/usr/bin/env bash
# Gets Kubernetes binaries at $KUBE_VERSION: Kubernetes' release binaries when dl.k8s.io is reachable,
# else built from the Go module proxy.
#
# k8s.io/kubernetes replaces its staging modules with ./staging paths, so `go install` cannot build it.
# We generate a wrapper module that requires k8s.io/kubernetes and points each staging module at its
# published version, then build the upstream main packages from that module.
#
# Usage: scripts/build-kube.sh [binary...]   (default: kube-apiserver kube-controller-manager)
. "$(dirname "$0")/lib.sh"

want=${*:-kube-apiserver kube-controller-manager}
out=$BIN_DIR/kube-$KUBE_VERSION
src=$CACHE_DIR/src/kube-$KUBE_VERSION
mkdir -p "$out" "$src"

write_wrapper() {
  local mod
  mod=$(cd "$src" && GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
  [ -f "$mod" ] || die "could not download k8s.io/kubernetes@$KUBE_VERSION from the Go module proxy"
  {
    echo "module cleanup-e2e.local/kube-wrapper"
    echo
    echo "go 1.25"
    echo
    echo "require k8s.io/kubernetes $KUBE_VERSION"
    echo
    grep -E '^\s*k8s\.io/[a-z0-9-]+ => \./staging/' "$mod" | awk -v v="$KUBE_STAGING_VERSION" '{print "replace " $1 " => " $1 " " v}'
    echo
    # Our module's requirements too, so packages both use are at the same versions and shared in the
    # Go build cache with our test binaries and images (docs/toolchain.md).
    our_requirements | awk '{print "require " $1 " " $2}'
  } > "$src/go.mod.new"
  mv "$src/go.mod.new" "$src/go.mod"
  echo "package wrapper" > "$src/doc.go"
}

# our_requirements: "module version" for every requirement of our go.mod (Go ≥ 1.17 lists every module
# that provides a package to the build), but k8s.io/kubernetes.
our_requirements() {
  sed -e 's|//.*||' "$REPO_ROOT/go.mod" | awk '
    /^require \($/ { inside = 1; next }
    inside && /^\)/ { inside = 0; next }
    inside && NF == 2 { print $1, $2 }
    /^require [^(]/ && NF == 3 { print $2, $3 }' | grep -v '^k8s.io/kubernetes '
}

major=${KUBE_VERSION#v}; major=${major%%.*}
minor=${KUBE_VERSION#v*.}; minor=${minor%%.*}
ldflags="-s -w"
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X $p.gitVersion=$KUBE_VERSION -X $p.gitMajor=$major -X $p.gitMinor=$minor"
  ldflags+=" -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
done

# version_of BINARY: what the binary says its version is (kubectl and kubeadm have no --version flag).
version_of() {
  case $(basename "$1") in
    kubectl) "$1" version --client 2>/dev/null ;;
    kubeadm) "$1" version -o short 2>/dev/null ;;
    *) "$1" --version 2>/dev/null ;;
  esac
}

missing=()
for b in $want; do
  case " $KUBE_BINARIES " in *" $b "*) ;; *) die "unknown binary $b (known: $KUBE_BINARIES)";; esac
  # Capture before matching: grep -q exiting early would fail the pipe under pipefail.
  have=$( [ -x "$out/$b" ] && version_of "$out/$b" || true)
  if [[ $have == *"$KUBE_VERSION"* ]]; then
    log "$b $KUBE_VERSION cached at $out/$b"
  else
    missing+=("$b")
  fi
done
[ ${#missing[@]} -gt 0 ] || exit 0

# Kubernetes' release binaries from dl.k8s.io first, each checked against its published .sha256; what
# cannot be fetched is built below. KUBE_DOWNLOAD=0 skips this; KUBE_RELEASE_URL points at a mirror.
release=${KUBE_RELEASE_URL:-https://dl.k8s.io/release}/$KUBE_VERSION/bin/linux/$(go env GOARCH)
if [ "${KUBE_DOWNLOAD:-1}" = 0 ]; then
  :
elif why=$(unreachable "$release"); then
  log "${missing[*]} not downloaded: $why (release binaries: $release)"
else
  # After the first failure the rest are built: that host would likely time out on them too.
  while [ ${#missing[@]} -gt 0 ]; do
    b=${missing[0]}
    if ! step "download $b $KUBE_VERSION from $release" fetch_checked "$release/$b" "$out/$b"; then
      break
    fi
    if [[ $(version_of "$out/$b") != *"$KUBE_VERSION"* ]]; then
      log "$out/$b from $release does not say $KUBE_VERSION: removed"; rm -f "$out/$b"; break
    fi
    missing=("${missing[@]:1}")
  done
  [ ${#missing[@]} -gt 0 ] || exit 0
fi

stamp="$KUBE_VERSION/$KUBE_STAGING_VERSION/$(our_requirements | sha256sum | cut -c1-16)"
if ! stamp_ok "$src/.stamp" "$stamp"; then
  step "generate kubernetes wrapper module ($KUBE_VERSION, with our module's requirements)" write_wrapper
  echo "$stamp" > "$src/.stamp"
fi

# Every missing binary in one go command: they share most packages, and separate go commands running
# at once would compile them twice.
step "build ${missing[*]} $KUBE_VERSION (≈ 7–9 min on 2 cores from an empty Go build cache, ≈ 2 min once another Kubernetes binary was built here, seconds when warm)" \
  go_wrapper_build_all "$src" "$out" -tags "$GO_TAGS" -ldflags "$ldflags" -- "${missing[@]/#/k8s.io/kubernetes/cmd/}"
