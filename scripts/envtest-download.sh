#!/usr/bin/env bash
# Gets envtest's kube-apiserver and etcd the conventional way: setup-envtest downloads controller-tools'
# release for $KUBE_VERSION (hash-checked). Prints their directory and records it in
# $CACHE_DIR/envtest-assets (read by framework/toolchain); on failure says why and exits 1.
#
# Usage: scripts/envtest-download.sh
#   ENVTEST_INDEX=url       another release index (a mirror; the tests serve one locally)
#   DOWNLOAD_TIMEOUT=seconds how long the download may take (default 600, as for every download)
. "$(dirname "$0")/lib.sh"

# Offline, don't build setup-envtest only to see it fail.
index=${ENVTEST_INDEX:-https://raw.githubusercontent.com/kubernetes-sigs/controller-tools/HEAD/envtest-releases.yaml}
if why=$(unreachable "$index"); then
  log "setup-envtest not tried: $why (its release index: $index)"
  exit 1
fi

tool=$(go_tool "sigs.k8s.io/controller-runtime/tools/setup-envtest@$SETUP_ENVTEST_VERSION") || exit 1

args=(use "${KUBE_VERSION#v}" --bin-dir "$CACHE_DIR/setup-envtest" -p path)
[ -z "${ENVTEST_INDEX:-}" ] || args+=(--index "$ENVTEST_INDEX")
errlog=$CACHE_DIR/setup-envtest.log
if ! dir=$(timeout "${DOWNLOAD_TIMEOUT:-600}" "$tool" "${args[@]}" 2>"$errlog"); then
  log "setup-envtest could not fetch envtest $KUBE_VERSION: $(tail -n 1 "$errlog")"
  exit 1
fi
for b in kube-apiserver etcd; do
  [ -x "$dir/$b" ] || die "setup-envtest reported $dir, which has no $b"
done
version=$("$dir/kube-apiserver" --version 2>/dev/null || true)
[[ $version == *"$KUBE_VERSION" ]] || die "setup-envtest's kube-apiserver in $dir says '$version', want $KUBE_VERSION"
echo "$dir" > "$CACHE_DIR/envtest-assets.tmp"
mv -f "$CACHE_DIR/envtest-assets.tmp" "$CACHE_DIR/envtest-assets"
log "envtest $KUBE_VERSION from setup-envtest: $dir"
echo "$dir"
