#!/usr/bin/env bash
# Builds opm $OPERATOR_REGISTRY_VERSION (catalog pods' `opm serve`, unpack Jobs' `opm alpha bundle
# extract`) and grpc_health_probe (catalog pods' probe), static, from a wrapper module (tag
# containers_image_openpgp: no gpgme without cgo). Without cgo opm's sqlite is a stub: only the
# deprecated sqlite commands, which nothing here uses, fail.
#
# Usage: scripts/build-opm.sh [opm|grpc_health_probe ...]   (default: both)
. "$(dirname "$0")/lib.sh"

want=${*:-opm grpc_health_probe}
out=$BIN_DIR/opm-$OPERATOR_REGISTRY_VERSION
src=$CACHE_DIR/src/opm-$OPERATOR_REGISTRY_VERSION
mkdir -p "$out"
reg=github.com/operator-framework/operator-registry
probe=github.com/grpc-ecosystem/grpc-health-probe
inputs="$OPERATOR_REGISTRY_VERSION $GRPC_HEALTH_PROBE_VERSION"

wrapper_module "$src" "$reg@$OPERATOR_REGISTRY_VERSION" "$probe@$GRPC_HEALTH_PROBE_VERSION"

for b in $want; do
  case $b in
    opm) pkg=$reg/cmd/opm
      flags=(-tags containers_image_openpgp -ldflags "-s -w -X '$reg/cmd/opm/version.opmVersion=$OPERATOR_REGISTRY_VERSION'") ;;
    grpc_health_probe) pkg=$probe flags=(-ldflags "-s -w") ;;
    *) die "unknown binary $b (known: opm grpc_health_probe)" ;;
  esac
  stamp=$out/.$b.stamp
  if [ -x "$out/$b" ] && stamp_ok "$stamp" "$inputs"; then
    log "$b cached at $out/$b"; continue
  fi
  step "build $b ($pkg, static; opm cold ≈ 3 min)" go_wrapper_build "$src" "$out/$b" "$pkg" "${flags[@]}"
  echo "$inputs" > "$stamp"
done
