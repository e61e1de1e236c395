"""Publishing a store (spec 9 and 14): copy a local store to object storage or to a directory a
web server serves, in an order that never lets a reader see a root describing missing objects.

Modules: :mod:`~cz.publish.classify` (objects, phases, cache classes, the re-encode rule, all
from the format library's :mod:`chronozarr.io._objects` and :mod:`chronozarr.format._growth`),
:mod:`~cz.publish.targets` (S3 and directory targets), :mod:`~cz.publish.planning` (what to
upload, or refuse), :mod:`~cz.publish.execution` (the uploads, phase by phase).

The work has two halves. :func:`plan_publish` reads the local store and the target and decides
what to upload, or refuses; nothing is written. :func:`execute` uploads, in four phases separated
by barriers (spec 9, 14):

1. every chunk and shard object (band/x/y coordinate chunks included),
2. ``time/c/0`` of every level and ``volatility/c/0/0``,
3. every ``zarr.json`` below the root,
4. the root ``zarr.json``.

A phase starts only when every upload of the previous one has succeeded, so an interrupted
publish leaves no root on a fresh target and the old root on an existing one (the old root still
decodes every timestep it lists: spec 14, "Readers").

Object classes and cache lifetimes (spec 14, "Publishing"). An object *changes in place* when an
append may rewrite it under the same key: every zarr.json, every 1-d time coordinate chunk
(``time/c/0``), ``volatility/c/0/0``, and for every sharded array the time shard holding the last
timestep (the one an append grows). Those get :data:`SHORT_CACHE_CONTROL`; every other chunk and
shard object is immutable and gets :data:`LONG_CACHE_CONTROL`. Nothing gets a Content-Encoding.

Change detection (re-publish after an append). The target is listed once (size and ETag per
object). A local object is unchanged when the target holds an object of the same size and the
same MD5: objects up to 64 MiB go up in one PUT, for which S3 (and R2, GCS, MinIO, moto) return
the MD5 of the content as the ETag; every object also carries its MD5 as user metadata
``chronozarr-md5`` (``x-amz-meta-chronozarr-md5``), read with one HEAD when the ETag is not a
plain MD5 (multipart uploads, SSE-KMS). A directory target compares size and MD5 of the file.

Refusal (spec 9: a re-encode goes under a new prefix). When the target already holds a root, the
local store must be that store grown by appends: the same chronozarr block in everything an
append never changes (variable, bands, nodata, CRS, encoding, anchor interval, the existing
times, anchors and delta references, levels' paths, transforms, grids and spatial shapes,
multiscales, the arrays' codecs and chunking, the lengths of shards an append cannot touch), and
byte-identical chunk objects for every existing timestep (the trailing shard of the old store may
only grow: its old bytes must be a prefix of the new one). Anything else raises
:class:`PublishRefusedError` before the first byte is written.
"""

from chronozarr.io import Phase, StoreObject
from cz.publish.classify import (
    LONG_CACHE_CONTROL,
    SHORT_CACHE_CONTROL,
    cache_control,
    classify_store,
    content_type,
    reencode_differences,
)
from cz.publish.errors import PublishError, PublishRefusedError
from cz.publish.execution import PublishResult, execute, hold, publish
from cz.publish.planning import PublishPlan, plan_publish
from cz.publish.targets import (
    MD5_METADATA_KEY,
    DirectoryTarget,
    S3Target,
    Target,
    TargetObject,
    file_md5,
    open_target,
)

__all__ = [
    "LONG_CACHE_CONTROL",
    "MD5_METADATA_KEY",
    "SHORT_CACHE_CONTROL",
    "DirectoryTarget",
    "Phase",
    "PublishError",
    "PublishPlan",
    "PublishRefusedError",
    "PublishResult",
    "S3Target",
    "StoreObject",
    "Target",
    "TargetObject",
    "cache_control",
    "classify_store",
    "content_type",
    "execute",
    "file_md5",
    "hold",
    "open_target",
    "plan_publish",
    "publish",
    "reencode_differences",
]
