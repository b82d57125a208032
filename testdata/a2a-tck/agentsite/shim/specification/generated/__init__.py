"""Stand-in for the kit's generated protobuf modules (protoc 6.30; Debian's
python3-protobuf is 4.21): only the gRPC binding uses them."""
