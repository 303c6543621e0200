# ward's build. `make help` lists the targets; `make test` is what CI runs.
GO        ?= go
PKGS      ?= ./...
FUZZTIME  ?= 10s
BENCHTIME ?= 1s
COUNT     ?= 10
CPUS      ?= 1,2,4
BIN       := $(CURDIR)/bin

.PHONY: help test vet fmt-check unit bench fuzz cover lint test-arm64 demo bench-compare

help: ## list the targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

test: fmt-check vet unit ## gofmt check, full go vet, race tests with shuffle (what CI runs)

fmt-check: ## fail if gofmt would change a file
	@out=$$(gofmt -l . | grep -v '^bench/results/' || true); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet: ## the full go vet, not the subset go test runs
	$(GO) vet $(PKGS)

unit: ## go test -race -shuffle=on over every package, then the long single-goroutine runs (TestSim*) without -race
	$(GO) test -race -shuffle=on -count=1 $(PKGS)
	$(GO) test -shuffle=on -count=1 -run '^TestSim' $(PKGS)

bench: ## the package benchmarks, -count $(COUNT) at -cpu $(CPUS)
	$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) -count $(COUNT) -cpu $(CPUS) $(PKGS)

fuzz: ## every fuzz target of every package for $(FUZZTIME) each
	@set -e; for pkg in $$($(GO) list $(PKGS)); do \
	  dir=$$($(GO) list -f '{{.Dir}}' $$pkg); \
	  for f in $$(grep -ho '^func Fuzz[A-Za-z0-9_]*' $$dir/*_test.go 2>/dev/null | sed 's/func //'); do \
	    echo "== $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg; \
	  done; \
	done

cover: ## test coverage per package, with the profile in cover.out
	$(GO) test -coverprofile=cover.out $(PKGS)
	$(GO) tool cover -func=cover.out | tail -1

$(BIN)/staticcheck: tools/go.mod tools/go.sum
	cd tools && $(GO) build -o $(BIN)/staticcheck honnef.co/go/tools/cmd/staticcheck

lint: $(BIN)/staticcheck ## staticcheck, pinned in tools/go.mod
	$(BIN)/staticcheck $(PKGS)

test-arm64: ## the tests cross-compiled for arm64, run under qemu-user-static (installed if missing)
	@command -v qemu-aarch64-static >/dev/null || { \
	  echo "installing qemu-user-static"; \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq qemu-user-static; \
	  else sudo apt-get update -qq && sudo apt-get install -y -qq qemu-user-static; fi; }
	GOARCH=arm64 $(GO) test -count=1 -exec qemu-aarch64-static $(PKGS)
