"""The committed ``portal/machinery/kubeproto/*_pb2.py`` are what ``make protos`` makes of the
``.proto`` files beside them: a changed field number in a ``.proto`` that was not compiled
again would otherwise go unnoticed. Compared as descriptors, so another protoc release
(which words the generated module differently) does not count as a change."""

from __future__ import annotations

import importlib
from pathlib import Path

from google.protobuf import descriptor_pb2
from grpc_tools import protoc

from tests.helpers.protos import without_json_names

ROOT = Path(__file__).resolve().parents[3]
PROTOS = sorted((ROOT / "portal/machinery/kubeproto").glob("*.proto"))


def test_every_proto_is_compiled_and_current(tmp_path):
    assert len(PROTOS) == 8
    out = tmp_path / "set.pb"
    sources = [str(p.relative_to(ROOT)) for p in PROTOS]
    assert protoc.main(["protoc", f"-I{ROOT}", f"--descriptor_set_out={out}", *sources]) == 0
    compiled = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes())
    assert sorted(f.name for f in compiled.file) == sources
    for file in compiled.file:
        without_json_names(file.message_type)
        module = importlib.import_module(
            file.name.removesuffix(".proto").replace("/", ".") + "_pb2"
        )
        committed = descriptor_pb2.FileDescriptorProto.FromString(module.DESCRIPTOR.serialized_pb)
        assert committed == file, f"{file.name} changed: run make protos"
        assert (ROOT / f"{file.name.removesuffix('.proto')}_pb2.pyi").exists()
