# Tributary: the two commands a newcomer runs are `make demo` and `make test`.
SWIFT ?= swift

.PHONY: demo test deps python-example build release bench proto lint clean

## demo: build, then import 100,000 generated pull requests through a local coordinator and 2 workers
demo: deps
	$(SWIFT) build
	.build/debug/tributary demo

## test: lint, build (warnings are errors) and run every test, unit and integration
test: deps python-example lint
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build

## deps: install libzmq3-dev and libsqlite3-dev with apt when missing (as root), or say how
deps:
	@scripts/install-deps.sh

## python-example: install the Python example's packages from PyPI when missing and generate its protobuf classes
python-example:
	@python3 -c 'import zmq, google.protobuf, grpc_tools' 2>/dev/null \
		|| python3 -m pip install -q --disable-pip-version-check -r examples/python/requirements.txt
	@examples/python/generate.sh

build: deps
	$(SWIFT) build

release: deps
	$(SWIFT) build -c release

## bench: figures against baselines measured in the same run (release build); BENCH_FLAGS=--quick for a short run
bench: deps
	$(SWIFT) build -c release
	.build/release/tributary-bench $(BENCH_FLAGS)

## proto: regenerate Sources/Shared/Protocol/tributary.pb.swift from tributary.proto
proto:
	scripts/generate-proto.sh

## lint: check formatting against .swift-format (generated protobuf code excluded)
lint:
	$(SWIFT) format lint --strict $$(git ls-files 'Sources/*.swift' 'Tests/*.swift' Package.swift | grep -v '\.pb\.swift$$')

clean:
	rm -rf .build .build-protoc
