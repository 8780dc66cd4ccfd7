#!/bin/sh
# cgroup v2: makes the /kubelet cgroup (the kubelet's cgroupRoot) with the controllers it needs.
# Runs as kubelet.service's ExecStartPre: by then systemd has moved every process out of the root cgroup,
# so the root's subtree_control can be written.
set -eu
root=/sys/fs/cgroup
[ -f "$root/cgroup.controllers" ] || exit 0
for c in $(cat "$root/cgroup.controllers"); do
  echo "+$c" > "$root/cgroup.subtree_control" 2>/dev/null || echo "cannot enable cgroup controller $c" >&2
done
for d in kubelet kubelet.slice; do
  mkdir -p "$root/$d"
done
