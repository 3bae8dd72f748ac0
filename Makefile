# Tributary: the two commands a newcomer runs are `make demo` and `make test`.
SWIFT ?= swift

.PHONY: demo test crash-test deps python-example test-tools build release bench fuzz fuzz-seeds proto entities lint docs \
	clean

## demo: build, then import 100,000 generated pull requests through a local coordinator and 2 workers
demo: deps
	$(SWIFT) build
	.build/debug/tributary demo

## test: lint, build (warnings are errors) and run every test, unit and integration. The heaviest suites (the chaos
## and multi-host tests, each an import of 100,000 rows through several processes, the replication and relay tests,
## the schedule and dependency tests with their own coordinators and workers) and the ones most sensitive to a loaded
## machine (the size limits', with a worker in the test process; the dashboard's, driving chromium; the election's
## and the failover's, whose etcd leases last 3 s) run after the rest, one after the other: on 2 cores, beside the
## others, the load pushed requests past their 10 s timeouts, the browser past its 60 s waits and etcd's answers past
## the election's 1 s.
HEAVY_TESTS = ChaosTests|MemorySoakTests|FeedRewriteTests|MultiHostTests|ReplicationTests|RelayTests|ScheduleIntegrationTests|DependencyIntegrationTests|LimitsTests|DashboardBrowserTests|StoreFilesystemTests|SyncStallTests|ClusterFailoverTests|LeaderElectionTests
# The tests run with Tests/preload/readdir_copy.c preloaded: it keeps Foundation's Process.run() (Swift 6.3.1) from
# reading past glibc's directory buffer when the test process holds many descriptors (the file says how).
PRELOAD = .build/readdir_copy.so
TEST_ENV = LD_PRELOAD=$(CURDIR)/$(PRELOAD)
$(PRELOAD): Tests/preload/readdir_copy.c
	mkdir -p $(dir $@)
	cc -shared -fPIC -O2 -o $@ $< -ldl
test: deps python-example test-tools lint $(PRELOAD)
	$(SWIFT) build --build-tests
	scripts/check-layers.sh .build/debug
	scripts/check-comments.sh
	scripts/check-write-path.sh
	scripts/check-shape.sh
	scripts/check-doc-paths.py
	$(TEST_ENV) $(SWIFT) test --skip-build --skip '$(HEAVY_TESTS)'
	$(TEST_ENV) $(SWIFT) test --skip-build --filter '$(HEAVY_TESTS)' --no-parallel

## deps: install libzmq3-dev and libsqlite3-dev with apt when missing (as root), or say how
deps:
	@scripts/install-deps.sh

## crash-test: the power-loss tests at CRASH_POINTS crash points per durability level (default 500), with figures
CRASH_POINTS ?= 500
crash-test: deps
	$(SWIFT) build --build-tests
	TRIBUTARY_CRASH_POINTS=$(CRASH_POINTS) $(SWIFT) test --skip-build --filter PowerLossTests

## python-example: install the Python example's packages from PyPI when missing and generate its protobuf classes
python-example:
	@python3 -c 'import zmq, google.protobuf, grpc_tools' 2>/dev/null \
		|| python3 -m pip install -q --disable-pip-version-check -r examples/python/requirements.txt
	@examples/python/generate.sh

## test-tools: what the tests use beyond the build, installed when missing (scripts/install-test-tools.sh): Python
## packages from PyPI (jsonschema, prometheus-client, selenium), Debian's chromium with chromium-driver and etcd-server
test-tools:
	@scripts/install-test-tools.sh


build: deps
	$(SWIFT) build

release: deps
	$(SWIFT) build -c release

## bench: figures against baselines measured in the same run (release build); BENCH_FLAGS=--quick for a short run.
## The standby figures start Debian's etcd (etcd-server), installed when missing
bench: deps
	@[ -x /usr/bin/etcd ] || scripts/apt-install.sh "The standby benchmark" etcd-server
	$(SWIFT) build -c release
	.build/release/tributary-bench $(BENCH_FLAGS)

## fuzz: every decoder of outside bytes under libFuzzer for FUZZ_SECONDS each (default 60), from Fuzz/corpus;
## a crash leaves its input in .build-fuzz/: copy it into Fuzz/corpus/<target>/ so FuzzCorpusTests replays it
FUZZ_SECONDS ?= 60
FUZZ_TARGETS = wire change-set model import-rows predicate
fuzz: deps
	$(SWIFT) build -c release --product tributary-fuzz --scratch-path .build-fuzz \
		-Xswiftc -sanitize=fuzzer -Xswiftc -DFUZZING
	@for target in $(FUZZ_TARGETS); do \
		mkdir -p .build-fuzz/corpus/$$target .build-fuzz/crashes/$$target; \
		echo "== $$target"; \
		TRIBUTARY_FUZZ_TARGET=$$target .build-fuzz/release/tributary-fuzz -max_total_time=$(FUZZ_SECONDS) \
			-print_final_stats=1 -timeout=10 -rss_limit_mb=2048 \
			-artifact_prefix=.build-fuzz/crashes/$$target/ .build-fuzz/corpus/$$target Fuzz/corpus/$$target \
			2>&1 | grep -E '^(stat::number_of_executed_units|stat::new_units_added|==|SUMMARY|Done)' || exit 1; \
	done

## fuzz-seeds: write the seed corpus again (committed in Fuzz/corpus)
fuzz-seeds:
	$(SWIFT) build --product tributary-fuzz
	.build/debug/tributary-fuzz seeds Fuzz/corpus

## proto: regenerate Sources/Shared/Protocol/tributary.pb.swift from tributary.proto
proto:
	scripts/generate-proto.sh

## entities: regenerate the committed entity types the tests compile (Tests/GeneratedEntities) from the models in
## Tests/Fixtures (the triage example's are written at build time by the TributaryEntities plugin)
entities:
	$(SWIFT) build --product tributary
	.build/debug/tributary generate swift --model Tests/Fixtures/demo-model.json --output Tests/GeneratedEntities/Demo
	.build/debug/tributary generate swift --model Tests/Fixtures/every-type-model.json --output Tests/GeneratedEntities/EveryType

## docs: the DocC documentation of the library products Tributary (three modules and the articles of
## Sources/Shared/Client/Tributary.docc) and TributaryCoordinator (its catalog in Sources/Shared/Coordinator), combined
## in .build/docs/Tributary.doccarchive (warnings are errors: every symbol link resolves); then
## scripts/check-doc-coverage.py fails on a public declaration of either product without a doc comment.
## `docc process-archive transform-for-static-hosting` turns the archive into a site a static file server shows
DOCS_TARGETS = TributaryCore TributaryProtocol TributaryClient TributaryCoordinator
DOCS_ARCHIVE = .build/docs/Tributary.doccarchive
docs: deps
	mkdir -p $(dir $(DOCS_ARCHIVE))
	$(SWIFT) package --allow-writing-to-directory $(dir $(DOCS_ARCHIVE)) generate-documentation \
		$(addprefix --target ,$(DOCS_TARGETS)) --enable-experimental-combined-documentation \
		--output-path $(DOCS_ARCHIVE) --warnings-as-errors
	@# The plugin reports success even when merging the modules' archives fails: check the archive is there.
	@test -d $(DOCS_ARCHIVE)/data || { echo "docs: no combined archive at $(DOCS_ARCHIVE)" >&2; exit 1; }
	python3 scripts/check-doc-coverage.py --product Tributary --product TributaryCoordinator $(DOCS_TARGETS)

## lint: check formatting against .swift-format (generated protobuf code and entity types excluded)
lint:
	$(SWIFT) format lint --strict $$(git ls-files 'Sources/*.swift' 'Tests/*.swift' Package.swift | grep -v '\.pb\.swift$$' | grep -v '^Tests/GeneratedEntities/')

clean:
	rm -rf .build .build-protoc
