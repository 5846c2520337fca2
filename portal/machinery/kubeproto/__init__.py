"""Kubernetes' protobuf messages that this server reads and writes: the ``.proto`` files here
are the subset of upstream's ``generated.proto`` needed (same packages, messages and field
numbers), and the ``*_pb2`` modules are what ``make protos`` compiles from them."""
