# shellcheck shell=bash
# What scripts/e2e.sh runs beside itself: its suites and example consumers side by side (at_once,
# through scripts/atonce), and its background jobs, stopped when it exits (bg_stop).
# Sourced after lib.sh, never executed.
#
# A Ctrl-C reaches both the script and atonce (one process group): atonce stops the runs and exits 130,
# and the script's INT trap runs, or, where bash dropped the signal (it did: scripts/atonce says when),
# at_once exits the script with 130.

# at_once RUN...: scripts/atonce with RUN... (NAME LOG CMD [ARG...] groups separated by ---). Returns
# atonce's status; when atonce was interrupted, exits the script with 130 (the INT trap's work, where
# bash dropped the signal). In the foreground: bash starts a background command with SIGINT ignored, so
# a Ctrl-C that came before atonce asked for SIGINT reached only bash (with the script ignoring SIGINT,
# as if bash dropped it, 5 of 8 runs of the test lost one); in the foreground atonce dies of it, with
# the same 130. So a SIGTERM sent to the script alone (not to its process group) waits for the runs:
# bash runs traps between commands.
at_once() {
  local rc=0
  "${ATONCE:-$BIN_DIR/atonce}" "$@" || rc=$?
  [ "$rc" != 130 ] || { log "interrupted (scripts/atonce stopped the runs)"; exit 130; }
  return "$rc"
}

# bg_stop stops the script's background jobs (bash's job table: also one whose pid was not recorded yet
# when the signal came; make e2e's prebuild). Each job's process group gets one SIGTERM (Ginkgo takes a
# second as "skip the cleanup"); a job without a group of its own yet (forked an instant before its
# setsid) gets SIGTERM itself, again every 0.1 s until it is gone or has its group (a process between
# fork and exec can miss one); SIGKILL after 10 s.
bg_stop() {
  local pids pid alive termed=" "
  pids=$(jobs -p)
  [ -n "$pids" ] || return 0
  log "stopping the script's background jobs (pids $(echo $pids))"
  for _ in {1..100}; do
    alive=0
    for pid in $pids; do
      if kill -0 -- -"$pid" 2>/dev/null; then
        alive=1
        [[ $termed == *" $pid "* ]] || { kill -TERM -- -"$pid" 2>/dev/null || true; termed+="$pid "; }
      elif kill -0 "$pid" 2>/dev/null; then
        alive=1
        kill -TERM "$pid" 2>/dev/null || true
      fi
    done
    [ "$alive" = 1 ] || return 0
    sleep 0.1
  done
  for pid in $pids; do kill -KILL -- -"$pid" "$pid" 2>/dev/null || true; done
}
