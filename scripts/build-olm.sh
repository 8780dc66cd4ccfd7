#!/usr/bin/env bash
# Gets OLM $OLM_VERSION binaries (olm and catalog; package-server, cpb and copy-content for the kind
# image): upstream's, out of the olm image its release manifests pin by digest, else built from a
# wrapper module (`go install ...@version` fails: the proxy lists no operator-framework versions).
#
#   OLM_DOWNLOAD=0         build from source without trying the image
#   OLM_RELEASE_IMAGE=ref  another image (a mirror: by digest; the tests serve one); not OLM_IMAGE,
#                          the kind image scripts/images.sh builds, which would reach here when exported
#
# Usage: scripts/build-olm.sh [olm|catalog|package-server|cpb|copy-content ...]   (default: olm)
. "$(dirname "$0")/lib.sh"

want=${*:-olm}
out=$BIN_DIR/olm-$OLM_VERSION
src=$CACHE_DIR/src/olm-$OLM_VERSION
mkdir -p "$out"
mod=github.com/operator-framework/operator-lifecycle-manager

wrapper_module "$src" "$mod@$OLM_VERSION"

# The release module, whichever way the binaries come: its manifests pin the olm image and are what
# framework/olm applies; offline, its source is what is built.
moddir=$(cd "$src" && GOFLAGS=-mod=mod go mod download -json "$mod@$OLM_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
[ -d "$moddir" ] || die "could not download $mod@$OLM_VERSION from the Go module proxy"

# olm_image: the image OLM's release manifests run, by digest.
olm_image() { grep -m1 -o 'quay.io/operator-framework/olm@sha256:[0-9a-f]\{64\}' "$moddir/deploy/upstream/quickstart/olm.yaml"; }

# pkg_of BINARY: its main package in OLM's module.
pkg_of() {
  case $1 in
    olm|catalog|package-server|copy-content) echo "$mod/cmd/$1" ;;
    cpb) echo "$mod/util/cpb" ;;
    *) die "unknown OLM binary $1 (known: olm catalog package-server cpb copy-content)" ;;
  esac
}

missing=()
for b in $want; do
  pkg_of "$b" >/dev/null
  if [ -x "$out/$b" ] && stamp_ok "$out/.$b.stamp" "$OLM_VERSION"; then
    log "OLM $b $OLM_VERSION cached at $out/$b"
  else
    missing+=("$b")
  fi
done
[ ${#missing[@]} -gt 0 ] || exit 0

if [ "${OLM_DOWNLOAD:-1}" != 0 ]; then
  if ! image=${OLM_RELEASE_IMAGE:-$(olm_image)}; then
    log "OLM $OLM_VERSION's release manifest names no olm image by digest: building from source"
  elif why=$(unreachable "$image"); then
    log "OLM ${missing[*]} not taken from $image: $why"
  elif step "OLM ${missing[*]} $OLM_VERSION from upstream's image $image" \
      image_files "$image" "$out" "${missing[@]/#/bin/}"; then
    # image_files writes every file or none
    for b in "${missing[@]}"; do echo "$OLM_VERSION" > "$out/.$b.stamp"; done
    exit 0
  fi
fi

for b in "${missing[@]}"; do
  step "build OLM $b $OLM_VERSION (cold ≈ 3 min)" go_wrapper_build "$src" "$out/$b" "$(pkg_of "$b")" -tags json1 \
    -ldflags "-s -w -X $mod/pkg/version.OLMVersion=${OLM_VERSION#v}"
  echo "$OLM_VERSION" > "$out/.$b.stamp"
done
