"""Block I/O traces: statistics, reading into Arrow/pandas, and conversion to a canonical Parquet.

The readers are the core's (``ssdlab_core::trace``): MSR Cambridge, SPC/UMass, FIU, Alibaba
2020, Tencent CBS, blkparse text, fio iolog v2/v3, MQSim and DiskSim ASCII, plain or gzip/bzip2,
detected from the first lines unless ``format`` names one. Every record becomes
``time_ns, op, offset, len, dev`` in ns and bytes, with the trace's own time origin.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Optional

from ssdlab import _core

if TYPE_CHECKING:
    import pyarrow as pa

OPS = ["read", "write", "trim", "flush"]
BATCH = 1 << 20


def formats() -> list[str]:
    """The formats, by name."""
    return list(_core.trace_formats())


def stats(
    path: "str | os.PathLike[str]",
    format: Optional[str] = None,  # noqa: A002 - the CLI's --format
    *,
    strict: bool = True,
    blk_action: str = "D",
    devices: int = 10,
    progress: Optional[Callable[[int], Any]] = None,
) -> dict[str, Any]:
    """One pass over a trace: counts, read ratio, size histogram, footprint (distinct 4 KiB
    pages), sequentiality, inter-arrival times, out-of-order records and the busiest devices.
    ``strict=False`` skips malformed lines and counts them."""
    name, doc = _core.trace_stats(os.fspath(path), format, strict, blk_action, devices, progress)
    out = json.loads(doc)
    out["format"] = name
    return out


def batches(
    path: "str | os.PathLike[str]", format: Optional[str] = None, *, strict: bool = True, blk_action: str = "D", batch: int = BATCH  # noqa: A002
) -> Iterator["pa.RecordBatch"]:
    """The trace as Arrow record batches of the canonical schema, streaming."""
    yield from _from_reader(_core.TraceBatches(os.fspath(path), format, strict, blk_action), batch)


def schema() -> "pa.Schema":
    """The canonical record: ns, op (read/write/trim/flush), byte offset and length, device id."""
    import pyarrow as pa

    return pa.schema([
        pa.field("time_ns", pa.uint64()),
        pa.field("op", pa.dictionary(pa.uint8(), pa.string())),
        pa.field("offset", pa.uint64()),
        pa.field("len", pa.uint64()),
        pa.field("dev", pa.uint32()),
    ])


def read(path: "str | os.PathLike[str]", format: Optional[str] = None, *, strict: bool = True, blk_action: str = "D") -> "pa.Table":  # noqa: A002
    """The whole trace as one Arrow table (``.to_pandas()`` for a DataFrame)."""
    import pyarrow as pa

    return pa.Table.from_batches(list(batches(path, format, strict=strict, blk_action=blk_action)), schema=schema())


def convert(
    path: "str | os.PathLike[str]",
    out: "str | os.PathLike[str]",
    format: Optional[str] = None,  # noqa: A002
    *,
    strict: bool = True,
    blk_action: str = "D",
    progress: Optional[Callable[[int], Any]] = None,
) -> dict[str, Any]:
    """Streams a trace into Parquet (one row group per million records), with the source
    format, device names and reader counts in the file's metadata. Returns the counts."""
    import pyarrow.parquet as pq

    reader = _core.TraceBatches(os.fspath(path), format, strict, blk_action)
    tmp = os.fspath(out) + ".partial"
    records = 0
    try:
        with pq.ParquetWriter(tmp, schema(), compression="zstd") as w:
            for b in _from_reader(reader):
                w.write_batch(b)
                records += b.num_rows
                if progress:
                    progress(records)
            counts = json.loads(reader.counts())
            meta = {"format": reader.format, "devices": reader.device_names(), "counts": counts, "records": records}
            w.add_key_value_metadata({"ssdlab.trace": json.dumps(meta)})
        os.replace(tmp, out)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return meta


def _from_reader(reader: Any, batch: int = BATCH) -> Iterator["pa.RecordBatch"]:
    import numpy as np
    import pyarrow as pa

    ops = pa.array(OPS, pa.string())
    while (cols := reader.next_batch(batch)) is not None:
        yield pa.RecordBatch.from_arrays(
            [
                pa.array(np.frombuffer(cols["time_ns"], "<u8")),
                pa.DictionaryArray.from_arrays(pa.array(np.frombuffer(cols["op"], "u1")), ops),
                pa.array(np.frombuffer(cols["offset"], "<u8")),
                pa.array(np.frombuffer(cols["len"], "<u8")),
                pa.array(np.frombuffer(cols["dev"], "<u4")),
            ],
            schema=schema(),
        )
