#!/usr/bin/env bash
# Builds etcd $ETCD_VERSION from the Go module proxy. go.etcd.io/etcd/server/v3 carries replace
# directives, so `go install` refuses it; a wrapper module with a one-line main builds it.
. "$(dirname "$0")/lib.sh"

out=$BIN_DIR/etcd-$ETCD_VERSION
src=$CACHE_DIR/src/etcd-$ETCD_VERSION
mkdir -p "$out" "$src"

# (output captured first: `| grep -q` under pipefail fails when grep quits before the writer)
if [ -x "$out/etcd" ] && grep -q "${ETCD_VERSION#v}" <<<"$("$out/etcd" --version 2>/dev/null || true)"; then
  log "etcd $ETCD_VERSION cached at $out/etcd"; exit 0
fi

# main.go first: wrapper_module writes a doc.go only where there is none
echo 'package main; import ("os"; "go.etcd.io/etcd/server/v3/etcdmain"); func main() { etcdmain.Main(os.Args) }' >"$src/main.go"
# shellcheck disable=SC2046 # one module a word
wrapper_module "$src" $(printf "go.etcd.io/etcd/%s@$ETCD_VERSION " server/v3 api/v3 client/pkg/v3 client/v3 pkg/v3)

step "build etcd $ETCD_VERSION (cold ≈ 1-2 min)" go_wrapper_build "$src" "$out/etcd" . -ldflags "-s -w"
