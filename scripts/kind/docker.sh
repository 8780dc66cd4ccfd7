#!/usr/bin/env bash
# Makes a Docker engine usable for kind on this machine, idempotently: installs docker.io when dockerd
# is missing, starts dockerd (overlay2, log in /var/log/cleanup-e2e-dockerd.log) or reuses a running one, and proves that
# `docker run --privileged` works.
# Where the kernel withholds CAP_SYS_RESOURCE from the bounding set, runc fails every --privileged
# container, which kind needs: dockerd's default runtime is then a runc wrapper that drops just that
# capability from the OCI spec.
#
# Usage: scripts/kind/docker.sh
. "$(dirname "$0")/lib.sh"

DOCKERD_LOG=/var/log/cleanup-e2e-dockerd.log
DAEMON_JSON=/etc/docker/daemon.json
RUNTIME_NAME=cleanup-e2e-runc
WRAPPER=/usr/local/libexec/cleanup-e2e/runc-without-sys-resource

# CAP_SYS_RESOURCE is capability 24.
sys_resource_missing() {
  local bnd
  bnd=$(awk '/^CapBnd:/ {print $2}' /proc/self/status)
  (( (16#$bnd >> 24 & 1) == 0 ))
}

real_runc() {
  local r
  for r in /usr/sbin/runc /usr/bin/runc /usr/local/sbin/runc; do
    [ -x "$r" ] && [ "$r" != "$WRAPPER" ] && { echo "$r"; return; }
  done
  die "runc not found (docker.io should have installed it)"
}

write_wrapper() {
  local runc jq
  runc=$(real_runc)
  jq=$(command -v jq) || die "jq is needed by the runc wrapper (apt-get install jq)"
  mkdir -p "$(dirname "$WRAPPER")"
  cat > "$WRAPPER.tmp" <<EOF
#!/bin/sh
# Written by cleanup-e2e scripts/kind/docker.sh. dockerd's default runtime on machines whose kernel
# withholds CAP_SYS_RESOURCE from the bounding set: removes that capability from the OCI spec that
# containerd's shim hands to runc (bundle config.json for create/run, --process file for exec), so that
# --privileged containers start, then runs the real runc with the same arguments.
strip() {
  [ -f "\$1" ] || return 0
  $jq -c 'def drop: if type == "object" then with_entries(.value |= (if type == "array" then map(select(. != "CAP_SYS_RESOURCE")) else . end)) else . end;
    if has("process") then .process.capabilities |= drop else .capabilities |= drop end' "\$1" > "\$1.nosysres" \\
    && mv -f "\$1.nosysres" "\$1"
}
prev=
for a in "\$@"; do
  case \$prev in
    --bundle|-b) strip "\$a/config.json" ;;
    --process|-p) strip "\$a" ;;
  esac
  case \$a in
    --bundle=*) strip "\${a#--bundle=}/config.json" ;;
    --process=*) strip "\${a#--process=}" ;;
  esac
  prev=\$a
done
exec $runc "\$@"
EOF
  chmod 0755 "$WRAPPER.tmp"
  mv -f "$WRAPPER.tmp" "$WRAPPER"
  log "runc wrapper at $WRAPPER (real runc: $runc)"
}

# configure_daemon WANT_WRAPPER: merges storage-driver (and the wrapper runtime) into daemon.json.
configure_daemon() {
  local want=$1 cur='{}'
  mkdir -p "$(dirname "$DAEMON_JSON")"
  [ -s "$DAEMON_JSON" ] && cur=$(cat "$DAEMON_JSON")
  if [ "$want" = 1 ]; then
    jq --arg n "$RUNTIME_NAME" --arg p "$WRAPPER" \
      '."storage-driver" = "overlay2" | .runtimes[$n] = {path: $p} | ."default-runtime" = $n' <<<"$cur" > "$DAEMON_JSON.tmp"
  else
    jq '."storage-driver" = "overlay2"' <<<"$cur" > "$DAEMON_JSON.tmp"
  fi
  mv -f "$DAEMON_JSON.tmp" "$DAEMON_JSON"
}

start_dockerd() {
  log "dockerd log: $DOCKERD_LOG"
  # setsid: the daemon outlives this script and is shared by every later run.
  setsid nohup dockerd >>"$DOCKERD_LOG" 2>&1 </dev/null &
  local _
  for _ in $(seq 1 60); do
    docker info >/dev/null 2>&1 && return 0
    sleep 1
  done
  tail -n 20 "$DOCKERD_LOG" >&2
  die "dockerd did not answer 'docker info' within 60s (log: $DOCKERD_LOG)"
}

check_runtime() {
  local default
  default=$(docker info --format '{{.DefaultRuntime}}')
  if [ "$default" != "$RUNTIME_NAME" ]; then
    die "dockerd is running with default runtime '$default', but this kernel withholds CAP_SYS_RESOURCE, so
       'docker run --privileged' (which kind needs) fails. Stop that dockerd and rerun scripts/kind/docker.sh
       (it adds runtime '$RUNTIME_NAME' -> $WRAPPER to $DAEMON_JSON as default-runtime), or add that yourself
       and restart dockerd."
  fi
  [ -x "$WRAPPER" ] || die "dockerd's default runtime $RUNTIME_NAME points at $WRAPPER, which is missing: rerun scripts/kind/docker.sh"
}

# smoke_test: a --privileged FROM-scratch container must run (the pause image prints its version).
smoke_test() {
  "$KIND_DIR/build-pause.sh"
  docker run --rm --pull=never --privileged --net=none "$PAUSE_IMAGE" -v >/dev/null \
    || die "'docker run --privileged $PAUSE_IMAGE' failed: see $DOCKERD_LOG"
}

need_wrapper=0
if sys_resource_missing; then
  need_wrapper=1
  log "CAP_SYS_RESOURCE is missing from the bounding set: docker needs the runc wrapper"
fi

# jq edits daemon.json and the OCI specs in the runc wrapper.
command -v dockerd >/dev/null && command -v jq >/dev/null || step "install docker.io and jq (apt)" apt_install docker.io jq

# The wrapper is rewritten every time (cheap, atomic): a reused dockerd may point at a deleted one.
[ "$need_wrapper" = 0 ] || step "write runc wrapper without CAP_SYS_RESOURCE" write_wrapper
if docker info >/dev/null 2>&1; then
  log "reusing running dockerd ($(docker info --format '{{.ServerVersion}}, storage {{.Driver}}, cgroup {{.CgroupDriver}} v{{.CgroupVersion}}'))"
else
  configure_daemon "$need_wrapper"
  step "start dockerd" start_dockerd
fi
[ "$need_wrapper" = 1 ] && check_runtime
step "docker run --privileged smoke test" smoke_test
log "docker ready: $(docker info --format '{{.ServerVersion}}, default runtime {{.DefaultRuntime}}')"
