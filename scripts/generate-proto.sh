#!/usr/bin/env bash
# Regenerates Sources/Shared/Protocol/tributary.pb.swift from tributary.proto (run by `make proto`).
# Needs protoc (apt: protobuf-compiler) and builds protoc-gen-swift from the swift-protobuf version the package
# resolves, in .build-protoc (takes a few minutes the first time).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v protoc >/dev/null || { echo "protoc is missing: apt-get install -y protobuf-compiler" >&2; exit 1; }
swift package resolve >/dev/null
plugin_source=".build/checkouts/swift-protobuf"
swift build -c release --package-path "$plugin_source" --scratch-path .build-protoc --product protoc-gen-swift
protoc --plugin=protoc-gen-swift=.build-protoc/release/protoc-gen-swift \
  --swift_out=Visibility=Public:Sources/Shared/Protocol \
  --proto_path=Sources/Shared/Protocol tributary.proto
echo "regenerated Sources/Shared/Protocol/tributary.pb.swift"
