# ward's build. `make help` lists the targets; `make test` is what CI runs.
GO        ?= go
PKGS      ?= ./...
FUZZTIME  ?= 10s
BENCHTIME ?= 1s
COUNT     ?= 10
CPUS      ?= 1,2,4
BIN       := $(CURDIR)/bin

.PHONY: help test vet fmt-check unit contrib loadtest loadtest-faults faults-test bench-quick bench-deps bench-scaling bench-instructions bench-pool bench bench-pkg bench-report fuzz cover lint test-arm64 demo demo-netflix

help: ## list the targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

test: fmt-check vet unit contrib faults-test bench-quick ## gofmt check, full go vet, race tests with shuffle, every contrib module, the fault harness's tests, the bench suite's quick mode (what CI runs)

demo: ## the overload simulator: every rule, breaker and shedder through simulated overloads (cold start, capacity steps, spike, 4x overload, an 8-slot backend), a pool, as tables and a scores table against the settling bars
	$(GO) run ./cmd/wardsim

demo-netflix: ## the same tables with the Netflix-style Go port's algorithms beside ward's (bench module)
	cd bench && $(GO) run ./cmd/wardsim-netflix

fmt-check: ## fail if gofmt would change a file
	@out=$$(gofmt -l . | grep -v '^bench/results/' || true); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet: ## the full go vet, not the subset go test runs
	$(GO) vet $(PKGS)

unit: ## go test -race -shuffle=on over every package (the GOMAXPROCS stress test included), the long single-goroutine runs (TestSim*) without -race, every test again in the ward_nolinkname build
	$(GO) test -race -shuffle=on -count=1 $(PKGS)
	$(GO) test -shuffle=on -count=1 -run '^TestSim' $(PKGS)
	$(GO) vet -tags ward_nolinkname $(PKGS)
	$(GO) test -shuffle=on -count=1 -tags ward_nolinkname $(PKGS)

bench-pkg: ## the packages' own benchmarks, -count $(COUNT) at -cpu $(CPUS)
	$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) -count $(COUNT) -cpu $(CPUS) $(PKGS)

loadtest: ## the example service driven open-loop (a fixed arrival rate, from a separate Go process) at 0.5x-4x capacity, unprotected and under each protection (Knee included), Knee from cold, the shedder on a one-CPU CPU-bound service under a step overload, then loadtest-faults (about 10 minutes in all, loopback only); results in loadtest/results/
	./loadtest/run.sh
	$(MAKE) loadtest-faults

loadtest-faults: ## client-side faults: a dependency down, failing, 30%/60% failing, slow, flapping, called open-loop through ward's Transport, go-zero's breaker and gobreaker side by side (about 4 minutes, loopback only; FAULTS_SHORT=1 for a smoke run); results in loadtest/faults/results/
	./loadtest/faults/run.sh

faults-test: ## the fault harness's module (loadtest/faults, its own go.mod): go vet and go test -race
	cd loadtest/faults && $(GO) vet ./... && $(GO) test -race -count=1 ./...

CONTRIB := $(patsubst %/go.mod,%,$(wildcard contrib/*/go.mod))

contrib: ## every nested module under contrib/ (its own go.mod): go vet and go test -race; services they need (redis-server) are started by their tests
	@set -e; for d in $(CONTRIB); do echo "== $$d"; (cd $$d && $(GO) vet ./... && $(GO) test -race -count=1 ./...); done

bench-quick: ## the comparison suite in quick mode: every scenario checked, a few iterations each, no timing
	cd bench && $(GO) vet ./... && $(GO) test -count=1 ./... && $(GO) test -run '^$$' -bench . -skip KeyIndexMemory -benchtime 20x -cpu 1,2 . > /dev/null

SUITE_TIME ?= 200ms
RESULT     := results/$(shell go env GOOS)-$(shell go env GOARCH)-$(shell ((grep -m1 'model name' /proc/cpuinfo || lscpu | grep -m1 'Model name') 2>/dev/null || echo unknown) | sed 's/.*: *//' | tr 'A-Z' 'a-z' | sed 's/[^a-z0-9]\{1,\}/-/g; s/^-//; s/-$$//')

bench: ## the comparison suite against the anchors: $(COUNT) rounds at -cpu $(CPUS), each running every benchmark once, so that a comparison's implementations run side by side in every round and the machine's drift moves them alike; raw file + benchstat table in bench/results, README table regenerated
	@mkdir -p bench/results
	cd bench && $(GO) test -c -o $(BIN)/bench.test . && { \
	  echo "command: make bench COUNT=$(COUNT) CPUS=$(CPUS) SUITE_TIME=$(SUITE_TIME)"; \
	  echo "rounds: $(COUNT), each running every benchmark once (-test.count 1) at -cpu $(CPUS), one test binary"; \
	  echo "go: $$($(GO) env GOVERSION)"; \
	  echo "date: $$(date -u +%Y-%m-%dT%H:%MZ)"; \
	  echo "cores: $$(nproc)"; \
	  for i in $$(seq $(COUNT)); do \
	    $(BIN)/bench.test -test.run '^$$' -test.bench . -test.skip KeyIndexMemory -test.benchmem -test.benchtime $(SUITE_TIME) -test.count 1 -test.cpu $(CPUS) -test.timeout 3h | grep -v '^PASS$$'; \
	  done; \
	} | tee $(RESULT).tmp && mv $(RESULT).tmp $(RESULT).txt
	cd bench && $(GO) tool benchstat -col /impl $(RESULT).txt > $(RESULT)-benchstat.txt
	$(MAKE) bench-report

bench-deps: ## xsync's MapOf, sync.Map and go.uber.org/atomic beside what ward uses instead: lookups, atomics, index memory per key
	cd bench && { echo "command: make bench-deps"; $(GO) test -run '^$$' -bench 'KeyLookup|AtomicWord' -benchmem -benchtime 300ms -count 6 -cpu 1,2 . && \
	  $(GO) test -run '^$$' -bench KeyIndexMemory -benchtime 1x -count 2 . ; } | tee results/deps-$(shell go env GOOS)-$(shell go env GOARCH).txt

SCALING_RESULT := results/scaling-$(shell go env GOOS)-$(shell go env GOARCH)-$(shell nproc)core

bench-scaling: ## the admission paths at -cpu 1,2,4,8,16 beside the shared-word anchors: ns/op and calls/s/core, raw file in bench/results/scaling-*
	@mkdir -p bench/results
	cd bench && { \
	  echo "command: make bench-scaling (cd bench && go test -run '^$$' -bench Scaling -benchtime 100ms -count 10 -cpu 1,2,4,8,16 .)"; \
	  echo "date: $$(date -u +%Y-%m-%dT%H:%MZ)"; \
	  echo "cores: $$(nproc)"; \
	  $(GO) test -run '^$$' -bench Scaling -benchtime 100ms -count 10 -cpu 1,2,4,8,16 . ; \
	} | tee $(SCALING_RESULT).tmp && mv $(SCALING_RESULT).tmp $(SCALING_RESULT).txt

bench-instructions: ## callgrind instructions per single-goroutine call, ward and every anchor, the floor and the targets (valgrind needed; a row not measured fails the run)
	cd bench && sh cmd/instructions/instructions.sh 50000 results/instructions-$(shell go env GOOS)-$(shell go env GOARCH).txt

POOL_RESULT := results/pool-contended-$(shell go env GOOS)-$(shell go env GOARCH)
POOL_N      ?= 200000x

bench-pool: ## ward's pool against vitess's smartconnpool, a channel pool and the channel pool with a double-release guard: Size 8 shared by 8x, 64x and 512x Size goroutines at -cpu 1,2, $(COUNT) alternating runs of one test binary (the pools' order turned by one each run), $(POOL_N) steady-state borrows each (nested module bench/smartconnpool, not in make test); raw file, benchstat table and the round-by-round ratios (cmd/paired) in bench/results/pool-contended-*
	@mkdir -p bench/results
	cd bench/smartconnpool && $(GO) test -c -o $(BIN)/pool-contended.test . && { \
	  echo "command: make bench-pool COUNT=$(COUNT) POOL_N=$(POOL_N)"; \
	  echo "go: $$($(GO) env GOVERSION)"; \
	  echo "date: $$(date -u +%Y-%m-%dT%H:%MZ)"; \
	  echo "cores: $$(nproc)"; \
	  for i in $$(seq $(COUNT)); do $(BIN)/pool-contended.test -test.run '^$$' -test.bench Contended -test.benchmem -test.benchtime $(POOL_N) -test.count 1 -test.cpu 1,2 -rotate $$i | grep -v '^PASS$$'; done; \
	} | tee ../$(POOL_RESULT).tmp && mv ../$(POOL_RESULT).tmp ../$(POOL_RESULT).txt
	cd bench && $(GO) tool benchstat -col "/impl@(ward smartconnpool chan chan-guarded)" $(POOL_RESULT).txt > $(POOL_RESULT)-benchstat.txt
	cd bench && $(GO) run ./cmd/paired -base ward $(POOL_RESULT).txt > $(POOL_RESULT)-paired.txt

bench-report: ## regenerate the README's performance table from bench/results
	cd bench && $(GO) run ./cmd/report -results results -readme ../README.md

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

test-arm64: ## the tests cross-compiled for arm64 (the bench suite's too) and for 32-bit arm, run under qemu-user-static (installed if missing)
	@command -v qemu-aarch64-static >/dev/null && command -v qemu-arm-static >/dev/null || { \
	  echo "installing qemu-user-static"; \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq qemu-user-static; \
	  else sudo apt-get update -qq && sudo apt-get install -y -qq qemu-user-static; fi; }
	GOARCH=arm64 $(GO) test -count=1 -exec qemu-aarch64-static $(PKGS)
	cd bench && GOARCH=arm64 $(GO) test -count=1 -exec qemu-aarch64-static ./...
	GOARCH=arm GOARM=7 $(GO) vet $(PKGS)
	GOARCH=arm GOARM=7 $(GO) test -count=1 -exec qemu-arm-static $(PKGS)
