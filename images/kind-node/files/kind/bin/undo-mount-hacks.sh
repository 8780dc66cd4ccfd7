#!/bin/sh
# Removes the entrypoint's temporary mounts once systemd has set up its cgroup hierarchies.
set -eu
if findmnt -n /proc/cgroups >/dev/null 2>&1; then
  umount /proc/cgroups
fi
