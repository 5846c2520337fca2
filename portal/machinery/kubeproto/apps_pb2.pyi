from portal.machinery.kubeproto import meta_pb2 as _meta_pb2
from portal.machinery.kubeproto import runtime_pb2 as _runtime_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ControllerRevision(_message.Message):
    __slots__ = ("metadata", "data", "revision")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    metadata: _meta_pb2.ObjectMeta
    data: _runtime_pb2.RawExtension
    revision: int
    def __init__(self, metadata: _Optional[_Union[_meta_pb2.ObjectMeta, _Mapping]] = ..., data: _Optional[_Union[_runtime_pb2.RawExtension, _Mapping]] = ..., revision: _Optional[int] = ...) -> None: ...

class ControllerRevisionList(_message.Message):
    __slots__ = ("metadata", "items")
    METADATA_FIELD_NUMBER: _ClassVar[int]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    metadata: _meta_pb2.ListMeta
    items: _containers.RepeatedCompositeFieldContainer[ControllerRevision]
    def __init__(self, metadata: _Optional[_Union[_meta_pb2.ListMeta, _Mapping]] = ..., items: _Optional[_Iterable[_Union[ControllerRevision, _Mapping]]] = ...) -> None: ...
