# AgentSite — everything a newcomer needs: `make run` and `make test`.
SHELL := /bin/bash
GO ?= go
BIN := bin/agentsite
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X main.version=$(VERSION)
# Tests talk to the Postgres server at 127.0.0.1:5432 (user postgres, trust);
# they create and drop their own databases.
TEST_FLAGS ?= -race -count=1 -timeout 30m

.PHONY: help run build test a2a-sdk axe ard test-short bench bench-search bench-million bench-idle bench-p2p bench-scheduler bench-planet bench-chat bench-nat bench-rogue a2a-tck generate lint fuzz demo clean

help: ## show the targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{n[NR]=$$1; d[NR]=$$2; if (length($$1) > w) w = length($$1)} END {for (i = 1; i <= NR; i++) printf "  %-*s  %s\n", w, n[i], d[i]}'

build: ## build bin/agentsite
	@echo "building $(BIN) (the first build downloads and compiles every module, a few minutes on two cores; each package is listed as it compiles)"
	CGO_ENABLED=0 $(GO) build -v -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/agentsite

# HTTP_ADDR is where `make run` serves, e.g. make run HTTP_ADDR=127.0.0.1:9090.
HTTP_ADDR ?= 127.0.0.1:8080
# ECHO_DELAY is the builtin echo's pause before each word (0 for none).
ECHO_DELAY ?= 50ms
run: build ## start a node + portal on embedded SQLite at http://127.0.0.1:8080 (HTTP_ADDR=... for another)
	$(BIN) serve --data-dir ./data --http-addr $(HTTP_ADDR) --echo-delay $(ECHO_DELAY)

test: a2a-sdk axe ## run every test (race detector on; real SQLite, Postgres, Chromium and the A2A JS SDK)
	$(GO) vet ./...
	$(GO) test $(TEST_FLAGS) ./...
	$(GO) test $(TEST_FLAGS) -tags agentsite_testnet -run 'TestTreatAsPublic|TestPlanetOverSlowLinks' ./p2p/

# The official A2A client (@a2a-js/sdk, pinned in testdata/a2a-js) that the
# A2A tests drive; installed once, if npm is here (the test skips loudly
# otherwise, and fails under CI=true).
a2a-sdk:
	@if [ ! -d testdata/a2a-js/node_modules ] && command -v npm >/dev/null 2>&1; then \
		npm ci --prefix testdata/a2a-js --no-audit --no-fund; fi
	@if [ ! -d testdata/a2a-js-1/node_modules ] && command -v npm >/dev/null 2>&1; then \
		npm ci --prefix testdata/a2a-js-1 --no-audit --no-fund; fi

# axe-core (pinned in testdata/axe), which the browser suite injects into
# every portal page to check accessibility; installed once, if npm is here
# (the suite skips loudly otherwise, and fails under CI=true).
axe:
	@if [ ! -d testdata/axe/node_modules ] && command -v npm >/dev/null 2>&1; then \
		npm ci --prefix testdata/axe --no-audit --no-fund; fi

ard: ## the ARD conformance tool (vendored in testdata/ard-spec) against a node: its AI Catalog and its registry
	testdata/ard-spec/run-against-node.sh

test-short: ## the fast tests only
	$(GO) test -short -count=1 ./...

bench: ## Go benchmarks of both stores (10k, 100k listings), a 2-step delegation, and the HTTP load run
	$(GO) test -run '^$$' -bench . -benchtime 200x -timeout 60m ./store/sqlite/ ./store/postgres/
	$(GO) test -run '^$$' -bench BenchmarkDelegation -benchtime 200x -timeout 30m ./cmd/agentsite/
	$(GO) run ./cmd/agentsite-load --store postgres --listings 10000 --concurrency 5,10,20 --duration 10s
	$(GO) run ./cmd/agentsite-load --store sqlite --listings 10000 --concurrency 5,10,20 --duration 10s
	$(MAKE) bench-search

bench-search: ## distinct-query search (every query a cache miss) on both stores at 10k and 100k, and the registry API's search beside it, against the bare net/http ceiling
	$(GO) run ./cmd/agentsite-load --store postgres --listings 10000 --mix distinct --concurrency 20 --duration 10s --ceiling
	$(GO) run ./cmd/agentsite-load --store sqlite --listings 10000 --mix distinct --concurrency 20 --duration 10s --ceiling
	$(GO) run ./cmd/agentsite-load --store postgres --listings 100000 --mix distinct --concurrency 20 --duration 10s --ceiling
	$(GO) run ./cmd/agentsite-load --store sqlite --listings 100000 --mix distinct --concurrency 20 --duration 10s --ceiling
	$(GO) run ./cmd/agentsite-load --store sqlite --listings 10000 --mix distinct --concurrency 20 --duration 10s --ceiling --path '/v0.1/servers?search=%s&limit=20'
	$(GO) run ./cmd/agentsite-load --store sqlite --listings 100000 --mix distinct --concurrency 20 --duration 10s --ceiling --path '/v0.1/servers?search=%s&limit=20'

bench-million: ## the 1M catalogue: distinct-query search at 1 and 20 clients, index load and RSS at 1,000,000 listings on SQLite and Postgres, then `agentsite import` of 1M lines into SQLite
	rm -rf /tmp/agentsite-million && mkdir -p /tmp/agentsite-million
	$(GO) run ./cmd/agentsite-load --store sqlite --listings 1000000 --data-dir /tmp/agentsite-million/sqlite --mix distinct --concurrency 1,20 --duration 20s
	$(GO) run ./cmd/agentsite-load --store postgres --listings 1000000 --quota-counts seeder --mix distinct --concurrency 1,20 --duration 20s
	$(GO) build -o $(BIN) ./cmd/agentsite
	python3 -c 'import json; [print(json.dumps({"name":f"agent-{i}","display_name":f"Agent {i}","description":"An agent for weather, travel and code.","tags":["weather","travel"],"version":"1.0.0","backend":{"kind":"builtin","builtin":"echo"}})) for i in range(1000000)]' > /tmp/agentsite-million/1m.jsonl
	/usr/bin/time -v $(BIN) import --data-dir /tmp/agentsite-million/data /tmp/agentsite-million/1m.jsonl 2>&1 | tail -25
	rm -rf /tmp/agentsite-million

bench-idle: build ## idle CPU of a host of 100,000 agents (no requests, no peers) on SQLite and Postgres, and store deadlines missed (AGENTS=, SETTLE=, WINDOW= seconds)
	STORE=sqlite scripts/bench-idle.sh $(BIN)
	STORE=postgres scripts/bench-idle.sh $(BIN)

bench-chat: ## chat turns to echo, local and cross-node, API, WebSocket and A2A, 5/10/20 clients: turns/s, p50/p99, CPU per turn in all and on each node
	$(GO) test -run '^$$' -bench BenchmarkChatTurns -benchtime 1x -timeout 30m ./cmd/agentsite/
	$(GO) test -run '^$$' -bench BenchmarkRemoteTurn -benchtime 200x -timeout 30m ./cmd/agentsite/
	$(GO) test -run '^$$' -bench BenchmarkA2ASend -benchtime 1x -timeout 30m ./cmd/agentsite/

bench-scheduler: ## the model scheduler: 20 callers (one sending 10x the others) on one slow fake model, without a scheduler and with it: throughput, waits per class, Jain's fairness; and what one tool call to a local MCP server adds to a turn
	$(GO) test -run '^$$' -bench 'BenchmarkModelScheduler|BenchmarkToolRoundTrip' -benchtime 1x -timeout 10m ./agent/runtime/

bench-p2p: ## propagation and DHT look-up latency on planets of 5, 10, 20 and 50 nodes
	$(GO) test -run '^$$' -bench BenchmarkPropagation -benchtime 20x -timeout 30m ./cmd/agentsite/

bench-planet: ## whole nodes at 50 ms RTT (a delaying dialer, -tags agentsite_testnet): idle bytes/s and CPU per node, propagation p50/p99, repair by sync, at 10 and 50 nodes (AGENTSITE_PLANET_SIZES)
	$(GO) test -tags agentsite_testnet -run '^$$' -bench BenchmarkPlanet -benchtime 1x -timeout 90m ./cmd/agentsite/

bench-nat: ## behind NAT (root; network namespaces): chat turns over the relay vs direct, time to reservation and to hole punch, relay cost with 50 reservations
	$(GO) test -run '^$$' -bench 'BenchmarkNAT' -benchtime 1x -timeout 30m ./cmd/agentsite/

bench-rogue: ## rogue peers: heap per 10k DHT PUTs, bytes a pipelining sync peer pulls in 20 s, heap under an endless sync reply, an honest agent's rank under 10k and 100k valid spam
	$(GO) test -run '^$$' -bench BenchmarkRogueDHTPut -benchtime 1x -timeout 30m ./p2p/
	$(GO) test -run '^$$' -bench BenchmarkRogueSyncPull -benchtime 1x -timeout 30m ./p2p/
	$(GO) test -run '^$$' -bench BenchmarkRogueEndlessReply -benchtime 1x -timeout 30m ./cmd/agentsite/
	ROGUE_SPAM=10000 ROGUE_IDS=100 $(GO) test -run '^$$' -bench BenchmarkRogueSpamRank -benchtime 1x -timeout 30m ./cmd/agentsite/
	ROGUE_SPAM=100000 ROGUE_IDS=1000 $(GO) test -run '^$$' -bench BenchmarkRogueSpamRank -benchtime 1x -timeout 60m ./cmd/agentsite/

a2a-tck: build ## the A2A conformance kit (a2a-tck 1.0, vendored in testdata/a2a-tck) at its MUST level against a fresh node; Debian python3 packages, see its run.sh
	testdata/a2a-tck/agentsite/run.sh $(BIN)

# DEMO_FLAGS passes flags to `agentsite demo`, e.g. DEMO_FLAGS='--base-port 9081'.
DEMO_FLAGS ?=
demo: build ## a local planet: three nodes at http://127.0.0.1:8081-8083 (node-a on Postgres if it is up)
	$(BIN) demo --dir ./data/demo $(DEMO_FLAGS)

generate: ## regenerate templ components
	$(GO) tool templ generate

lint: ## go vet, gofmt, and generated files up to date
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	@$(GO) tool templ generate >/dev/null 2>&1; if ! git diff --quiet -- '*_templ.go'; then echo "generated templ files are stale: run make generate and commit"; exit 1; fi

fuzz: ## fuzz record opening and validation, the heartbeat decoder and both sync page readers, a minute each
	$(GO) test -run '^$$' -fuzz FuzzOpen -fuzztime 60s ./agent/
	$(GO) test -run '^$$' -fuzz FuzzValidate -fuzztime 60s ./agent/
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeHeartbeat$$' -fuzztime 60s ./p2p/heartbeat/
	$(GO) test -run '^$$' -fuzz '^FuzzReadFeedPage$$' -fuzztime 60s ./p2p/catalogsync/
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeSyncPage$$' -fuzztime 60s ./p2p/catalogsync/

clean: ## remove build output (not ./data)
	rm -rf bin
