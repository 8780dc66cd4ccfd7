# cleanup-e2e — see README.md. Every target builds what it needs first; outputs are cached in _cache/.
SHELL := /usr/bin/env bash
ARTIFACTS ?= $(CURDIR)/_artifacts
# empty: `make e2e` picks kind when Docker can run it, else envtest; `make test` always uses envtest
PROVIDER ?=
export ARTIFACTS PROVIDER

.PHONY: all tools test test-kind e2e unit bench lint clean help flake-hunt

all: test

help: ## list targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

tools: ## kube-apiserver, kube-controller-manager, etcd, olm, OLM v1's managers into _cache/ (downloaded where reachable, else built)
	@scripts/tools.sh

test: tools ## unit tests + every suite on the envtest provider + the example consumers (CI stage 1)
	@scripts/test.sh

flake-hunt: ## make test FLAKE_HUNT_RUNS times (default 20, every second under stress-ng), then the e2e suites on envtest with ginkgo --repeat; per-test runs and failures in ARTIFACTS/flake-hunt
	@scripts/flake-hunt.sh

test-kind: ## the kind tier's own tests against Docker (provider lifecycle, Ctrl-C during make e2e)
	@scripts/test-kind.sh

e2e: ## the main job: every suite on $(PROVIDER) (default kind if Docker works, else envtest), JUnit + artifacts under $(ARTIFACTS)
	@scripts/e2e.sh

unit: ## unit tests only (no cluster binaries needed for most packages)
	go test -count=1 $$(go list ./... | grep -v '/e2e/')

lint: ## gofmt, go vet, shellcheck over the scripts, actionlint over the workflow
	@scripts/lint.sh

bench: tools ## benchmarks, printed as ratios measured side by side
	go test -run '^$$' -bench . -benchtime 1x -timeout 60m ./pkg/...

clean: ## remove artifacts (keeps the binary cache; rm -rf _cache for a cold start)
	rm -rf $(ARTIFACTS)
