#!/usr/bin/env bash
# `make lint`: gofmt, go vet (root module, the examples and their own test modules), shellcheck over every shell script, and
# actionlint over the GitHub workflow. Installs shellcheck (apt) when missing.
. "$(dirname "$0")/lib.sh"
cd "$REPO_ROOT"
rc=0
unformatted=$(git ls-files -z '*.go' | xargs -0 gofmt -l)
[ -z "$unformatted" ] || { log "gofmt needed on: $unformatted"; rc=1; }
step "go vet ./..." go vet ./... || rc=1
for gomod in examples/*/go.mod examples/*/test/*/go.mod; do
  step "go vet $(dirname "$gomod")" bash -c 'cd "$1" && go vet ./...' _ "$(dirname "$gomod")" || rc=1
done
command -v shellcheck >/dev/null || step "install shellcheck (apt)" apt_install shellcheck
mapfile -t shells < <(git ls-files '*.sh' .ci/run images/kind-node/files/usr/local/bin/entrypoint)
step "shellcheck (${#shells[@]} scripts)" shellcheck -x -S warning "${shells[@]}" || rc=1
step "actionlint" go run "github.com/rhysd/actionlint/cmd/actionlint@$ACTIONLINT_VERSION" -shellcheck= || rc=1
[ "$rc" = 0 ] && log "lint: clean" || log "lint: FAILED"
exit $rc
