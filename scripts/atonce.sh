# shellcheck shell=bash
# at_once RUN...: scripts/atonce with RUN... (NAME LOG CMD [ARG...] groups separated by ---): make e2e's
# image builds beside its Go programs, its suites and example consumers side by side. Sourced after
# lib.sh; $BIN_DIR/atonce built first (or $ATONCE). Returns atonce's status, or exits the script with 130
# when atonce was interrupted.
#
# A Ctrl-C reaches both the script and atonce (one process group): atonce stops the runs and exits 130,
# and the script's INT trap runs or, if bash lost the signal, at_once exits the script. In the foreground
# because bash starts background commands with SIGINT ignored, so an early Ctrl-C would reach only bash.
# Hence a SIGTERM to the script alone waits for the runs (bash runs traps between commands).
at_once() {
  local rc=0
  "${ATONCE:-$BIN_DIR/atonce}" "$@" || rc=$?
  [ "$rc" != 130 ] || { log "interrupted (scripts/atonce stopped the runs)"; exit 130; }
  return "$rc"
}
