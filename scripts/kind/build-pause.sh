#!/usr/bin/env bash
# Builds the pod sandbox ("pause") binary from images/pause and its FROM-scratch image, tagged as
# kubeadm $KUBE_VERSION expects ($PAUSE_IMAGE), so no node ever tries to pull it.
#
# Usage: scripts/kind/build-pause.sh
. "$(dirname "$0")/lib.sh"

out=$BIN_DIR/pause-$PAUSE_VERSION
src=$CACHE_DIR/src/pause
mkdir -p "$out" "$src"
input=$(sha256sum "$REPO_ROOT/images/pause/main.go" | cut -c1-64)
if [ -x "$out/pause" ] && stamp_ok "$out/.stamp" "$input"; then
  log "pause $PAUSE_VERSION cached at $out/pause"
else
  # A module of its own, so a go.mod being edited in the checkout never breaks this build.
  cp "$REPO_ROOT/images/pause/main.go" "$src/main.go"
  printf 'module cleanup-e2e.local/pause\n\ngo 1.25\n' > "$src/go.mod"
  step "build pause $PAUSE_VERSION" go_wrapper_build "$src" "$out/pause" . -ldflags "-s -w -X main.version=$PAUSE_VERSION"
  echo "$input" > "$out/.stamp"
fi
"$REPO_ROOT/scripts/kind/build-image.sh" "$PAUSE_IMAGE" "$out/pause" pause
