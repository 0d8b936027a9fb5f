# Weft's developer entry points. `make help` lists them.
.DEFAULT_GOAL := help

GOLANGCI_LINT_VERSION := v2.15.0
BIN := $(CURDIR)/.bin
GOLANGCI_LINT := $(BIN)/golangci-lint-$(GOLANGCI_LINT_VERSION)

.PHONY: help run test bench lint build soak

help: ## List the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  %-8s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

# run builds the binary and runs it rather than `go run`, which exits 1
# when Ctrl-C reaches it: the stack's clean stop exits 0 and make says
# nothing more.
run: ## Start the whole system on embedded defaults (weft dev); Ctrl-C stops it
	go build -o $(BIN)/weft ./cmd/weft
	$(BIN)/weft dev

test: browser ## Run every test with -race against real Postgres and embedded NATS JetStream
	go test -race -count=1 ./...

.PHONY: browser
browser: ## Install headless Chromium for the browser tests when missing
	.ci/ensure-chromium

bench: ## Run every benchmark of ./bench for about 23 minutes (real Postgres and JetStream) and print the figures BENCHMARKS.md records
	go test -run '^$$' -bench . -benchtime 4s ./bench

.PHONY: bench-peers
bench-peers: ## Run the DBOS peer (bench/peers/dbos) and BenchmarkSystem in interleaved pairs (PEER_PAIRS=2) and print them side by side
	PEER_PAIRS=$(or $(PEER_PAIRS),2) ./bench/peers/run.sh

soak: ## Soak the topology as processes under seeded faults (SOAK_DURATION=5m, SOAK_SEED, SOAK_FAULTS; docs/reliability.md)
	go run ./soak/cmd/soak

build: ## Build the weft binary into .bin/weft
	go build -o $(BIN)/weft ./cmd/weft

lint: $(GOLANGCI_LINT) ## Run golangci-lint (pinned version, config in .golangci.yaml)
	$(GOLANGCI_LINT) run ./...

$(GOLANGCI_LINT):
	GOBIN=$(BIN) go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	mv $(BIN)/golangci-lint $@
