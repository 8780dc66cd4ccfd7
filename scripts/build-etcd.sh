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

if ! stamp_ok "$src/.stamp" "$ETCD_VERSION"; then
  cat > "$src/go.mod" <<MOD
module cleanup-e2e.local/etcd-wrapper

go 1.25

require (
	go.etcd.io/etcd/server/v3 $ETCD_VERSION
	go.etcd.io/etcd/api/v3 $ETCD_VERSION
	go.etcd.io/etcd/client/pkg/v3 $ETCD_VERSION
	go.etcd.io/etcd/client/v3 $ETCD_VERSION
	go.etcd.io/etcd/pkg/v3 $ETCD_VERSION
)
MOD
  cat > "$src/main.go" <<'GO'
// Command etcd runs the upstream etcd server entrypoint.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
  echo "$ETCD_VERSION" > "$src/.stamp"
fi

step "build etcd $ETCD_VERSION (cold ≈ 1-2 min)" go_wrapper_build "$src" "$out/etcd" . -ldflags "-s -w"
