#!/bin/sh
# Generates generated/tributary_pb2.py from the project's wire protocol (Sources/Shared/Protocol/tributary.proto).
# grpcio-tools bundles a protoc that matches the protobuf runtime pinned in requirements.txt.
set -eu
cd "$(dirname "$0")"
mkdir -p generated
python3 -m grpc_tools.protoc -I ../../Sources/Shared/Protocol --python_out=generated \
    ../../Sources/Shared/Protocol/tributary.proto
echo "wrote generated/tributary_pb2.py"
