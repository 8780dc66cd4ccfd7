#!/usr/bin/env bash
# Gets OLM v1 $OLMV1_VERSION: operator-controller and catalogd, cached in $BIN_DIR/olmv1-$OLMV1_VERSION,
# and their module in the Go module cache (framework/olmv1 reads its CRDs there).
#
# Always built from a wrapper module: upstream ships only release images, on quay.io, which this
# project's machines cannot reach.
# -tags containers_image_openpgp replaces lib.sh's Kubernetes tags: with CGO off, containers/image's
# gpgme code does not build without it.
#
# Usage: scripts/build-olmv1.sh
. "$(dirname "$0")/lib.sh"

out=$BIN_DIR/olmv1-$OLMV1_VERSION
src=$CACHE_DIR/src/olmv1-$OLMV1_VERSION
mkdir -p "$out"
mod=github.com/operator-framework/operator-controller
bins=(operator-controller catalogd)

wrapper_module "$src" "$mod@$OLMV1_VERSION"

# The module, whichever way the binaries come: its CRDs are read from the module cache.
moddir=$(cd "$src" && GOFLAGS=-mod=mod go mod download -json "$mod@$OLMV1_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
[ -d "$moddir" ] || die "could not download $mod@$OLMV1_VERSION from the Go module proxy"

missing=()
for b in "${bins[@]}"; do
  if [ -x "$out/$b" ] && stamp_ok "$out/.$b.stamp" "$OLMV1_VERSION"; then
    log "OLM v1 $b $OLMV1_VERSION cached at $out/$b"
  else
    missing+=("$b")
  fi
done
[ ${#missing[@]} -gt 0 ] || exit 0

pkgs=()
for b in "${missing[@]}"; do pkgs+=("$mod/cmd/$b"); done
step "build OLM v1 ${missing[*]} $OLMV1_VERSION (cold ≈ 11 min)" \
  go_wrapper_build_all "$src" "$out" -tags containers_image_openpgp \
  -ldflags "-s -w -X $mod/internal/shared/version.version=$OLMV1_VERSION" -- "${pkgs[@]}"
for b in "${missing[@]}"; do echo "$OLMV1_VERSION" > "$out/.$b.stamp"; done
