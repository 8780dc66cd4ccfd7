# shellcheck shell=bash
# What scripts/e2e.sh runs beside itself: its suites and example consumers side by side (at_once, via
# scripts/atonce), and its background jobs, stopped when it exits (bg_stop). Sourced after lib.sh.
#
# A Ctrl-C reaches both the script and atonce (one process group): atonce stops the runs and exits 130,
# and the script's INT trap runs or, if bash lost the signal, at_once exits the script with 130.

# at_once RUN...: scripts/atonce with RUN... (NAME LOG CMD [ARG...] groups separated by ---); returns its
# status, or exits the script with 130 when atonce was interrupted. In the foreground because bash starts
# background commands with SIGINT ignored, so an early Ctrl-C would reach only bash. Hence a SIGTERM to
# the script alone waits for the runs (bash runs traps between commands).
at_once() {
  local rc=0
  "${ATONCE:-$BIN_DIR/atonce}" "$@" || rc=$?
  [ "$rc" != 130 ] || { log "interrupted (scripts/atonce stopped the runs)"; exit 130; }
  return "$rc"
}

# bg_stop stops every job in bash's job table (also one whose pid was not recorded yet). Each job's
# process group gets one SIGTERM (Ginkgo takes a second as "skip the cleanup"); a job not yet in its own
# group gets SIGTERM itself every 0.1 s, as it can miss one between fork and exec; SIGKILL after 10 s.
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
