#!/usr/bin/env bash
# Builds OLM $OLM_VERSION binaries (olm-operator and catalog-operator; package-server, cpb and
# copy-content for the kind image) from a wrapper module pinned to that version: the proxy refuses
# version lists for operator-framework modules, so `go install ...@version` fails on the lookup.
#
# Usage: scripts/build-olm.sh [olm|catalog|package-server|cpb|copy-content ...]   (default: olm)
. "$(dirname "$0")/lib.sh"

want=${*:-olm}
out=$BIN_DIR/olm-$OLM_VERSION
src=$CACHE_DIR/src/olm-$OLM_VERSION
mkdir -p "$out" "$src"
mod=github.com/operator-framework/operator-lifecycle-manager

if ! stamp_ok "$src/.stamp" "$OLM_VERSION"; then
  printf 'module cleanup-e2e.local/olm-wrapper\n\ngo 1.25\n\nrequire %s %s\n' "$mod" "$OLM_VERSION" > "$src/go.mod"
  echo "package wrapper" > "$src/doc.go"
  echo "$OLM_VERSION" > "$src/.stamp"
fi

for b in $want; do
  case $b in
    olm|catalog|package-server|copy-content) pkg=$mod/cmd/$b ;;
    cpb) pkg=$mod/util/cpb ;;
    *) die "unknown OLM binary $b (known: olm catalog package-server cpb copy-content)" ;;
  esac
  stamp=$out/.$b.stamp
  if [ -x "$out/$b" ] && stamp_ok "$stamp" "$OLM_VERSION"; then
    log "OLM $b $OLM_VERSION cached at $out/$b"; continue
  fi
  step "build OLM $b $OLM_VERSION (cold ≈ 2 min)" go_wrapper_build "$src" "$out/$b" "$pkg" -tags json1 \
    -ldflags "-s -w -X $mod/pkg/version.OLMVersion=${OLM_VERSION#v}"
  echo "$OLM_VERSION" > "$stamp"
done
