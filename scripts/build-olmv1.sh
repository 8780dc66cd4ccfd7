#!/usr/bin/env bash
# Gets OLM v1 $OLMV1_VERSION: operator-controller and catalogd (operator-framework/operator-controller,
# both main packages in one module), cached in $BIN_DIR/olmv1-$OLMV1_VERSION, and the module itself in
# the Go module cache (framework/olmv1 reads its CRDs from config/base/*/crd/bases there).
#
# The conventional online path is upstream's release images (quay.io/operator-framework/operator-controller
# and .../catalogd at the version; upstream ships no standalone binaries). They are not reachable on this
# project's machines, so nothing is tried online: both are built from a wrapper module pinned to the
# version, as build-olm.sh does offline. (Taking them out of the release image by digest, like
# build-olm.sh, is left for a machine that reaches quay.io.)
#
# The one compile mode of scripts/lib.sh (static, -trimpath) with -tags containers_image_openpgp
# instead of its Kubernetes tags: with CGO off, containers/image's signature/mechanism_gpgme.go does
# not build without it (undefined: gpgme.…). Measured on 2 cores under load (docs/olm-v1.md): empty Go
# build cache ≈ 11 min; build cache warm ≈ 10 s, 1.5 min with a new wrapper module (6 s of CPU; the
# wait not looked into, likely the go command filling the new go.sum over the network).
#
# Usage: scripts/build-olmv1.sh
. "$(dirname "$0")/lib.sh"

out=$BIN_DIR/olmv1-$OLMV1_VERSION
src=$CACHE_DIR/src/olmv1-$OLMV1_VERSION
mkdir -p "$out" "$src"
mod=github.com/operator-framework/operator-controller
bins=(operator-controller catalogd)

if ! stamp_ok "$src/.stamp" "$OLMV1_VERSION"; then
  printf 'module cleanup-e2e.local/olmv1-wrapper\n\ngo 1.25\n\nrequire %s %s\n' "$mod" "$OLMV1_VERSION" > "$src/go.mod"
  echo "package wrapper" > "$src/doc.go"
  echo "$OLMV1_VERSION" > "$src/.stamp"
fi

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
