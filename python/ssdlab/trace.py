"""Block I/O traces: statistics, reading into Arrow/pandas, and conversion to a canonical Parquet.

The readers are the core's (``ssdlab_core::trace``): MSR Cambridge, SPC/UMass, FIU, Alibaba
2020, Tencent CBS, blkparse text, fio iolog v2/v3, MQSim and DiskSim ASCII, plain or compressed
(gzip, bzip2, xz, zstd), detected from the first lines unless ``format`` names one, and the
canonical Parquet this module writes (by its magic). Every record becomes
``time_ns, op, offset, len, dev``: ns from the first record (int64, so pandas takes MSR's
1601-based clock), the op, bytes, and the device's name. The trace's own time origin is kept in
the schema's metadata (``ssdlab.trace``: ``schema_version``, ``time_origin_ns``, the source
format), and reading a converted file back gives the original's times.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Optional

from ssdlab import _core
from ssdlab.api import _bool_arg, _callable_arg, _int_arg, _path_arg, _text_arg
from ssdlab.names import names
from ssdlab.units import format_bytes

if TYPE_CHECKING:
    import pyarrow as pa
    from rich.console import Console

#: The kinds of request a trace holds, in the order of their codes (the core's).
OPS = list(names("op"))
BATCH = 1 << 20
# The canonical layout's version (the core reads up to its own `columnar::SCHEMA_VERSION`).
SCHEMA_VERSION = 2


def _reader_args(path: object, format: object, blk_action: object, strict: object) -> tuple[str, Optional[str], str]:  # noqa: A002
    """The arguments every reader takes, checked (an SsdlabError naming a wrong one)."""
    _bool_arg(strict, "strict")
    return _path_arg(path, "path"), _text_arg(format, "format", optional=True), _text_arg(blk_action, "blk_action")  # type: ignore[return-value]


def formats() -> list[str]:
    """The formats, by name."""
    return list(_core.trace_formats())


def stats(
    path: str | os.PathLike[str],
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
    _int_arg(devices, "devices", 0, 1 << 20)
    _callable_arg(progress, "progress")
    p, f, b = _reader_args(path, format, blk_action, strict)
    name, doc = _core.trace_stats(p, f, strict, b, devices, progress)
    out = json.loads(doc)
    out["format"] = name
    return out


def batches(
    path: str | os.PathLike[str], format: Optional[str] = None, *, strict: bool = True, blk_action: str = "D", batch: int = BATCH  # noqa: A002
) -> Iterator[pa.RecordBatch]:
    """The trace as Arrow record batches of the canonical schema, streaming (times from the
    first record; see :func:`read` for the origin). The arguments are checked at the call."""
    p, f, b = _reader_args(path, format, blk_action, strict)
    n = _int_arg(batch, "batch", 1, 1 << 26)
    return _from_reader(_core.TraceBatches(p, f, strict, b), {}, n or BATCH)


def schema(meta: Optional[dict[str, Any]] = None) -> pa.Schema:
    """The canonical record: ns from the first record, op (read/write/trim/flush), byte offset
    and length, and the device's name; ``meta`` goes into the schema's ``ssdlab.trace``."""
    import pyarrow as pa

    s = pa.schema([
        pa.field("time_ns", pa.int64(), nullable=False),
        pa.field("op", pa.dictionary(pa.uint8(), pa.string()), nullable=False),
        pa.field("offset", pa.uint64(), nullable=False),
        pa.field("len", pa.uint64(), nullable=False),
        pa.field("dev", pa.dictionary(pa.uint32(), pa.string()), nullable=False),
    ])
    return s.with_metadata({"ssdlab.trace": json.dumps(meta)}) if meta is not None else s


def read(path: str | os.PathLike[str], format: Optional[str] = None, *, strict: bool = True, blk_action: str = "D") -> pa.Table:  # noqa: A002
    """The whole trace as one Arrow table (``.to_pandas()`` for a DataFrame). The schema's
    ``ssdlab.trace`` metadata holds ``time_origin_ns``: add it to ``time_ns`` for the trace's
    own clock."""
    import pyarrow as pa

    p, f, b = _reader_args(path, format, blk_action, strict)
    reader = _core.TraceBatches(p, f, strict, b)
    state: dict[str, Any] = {}
    table = pa.Table.from_batches(list(_from_reader(reader, state)), schema=schema())
    return table.replace_schema_metadata(schema(_meta(reader, state, table.num_rows)).metadata)


def _meta(reader: Any, state: dict[str, Any], records: int) -> dict[str, Any]:
    """The ``ssdlab.trace`` metadata: ``devices`` lists the device names by id, or with
    ``device_ids`` the ids the `dev` column's text stands for."""
    ids = state.get("device_ids", False)
    return {
        "schema_version": SCHEMA_VERSION, "format": reader.format, "time_origin_ns": state.get("origin") or 0,
        "devices": [str(i) for i in sorted(state.get("ids", ()))] if ids else state.get("devices", []), "device_ids": ids,
        "counts": json.loads(reader.counts()), "records": records,
    }


def convert(
    path: str | os.PathLike[str],
    out: str | os.PathLike[str],
    format: Optional[str] = None,  # noqa: A002
    *,
    strict: bool = True,
    blk_action: str = "D",
    progress: Optional[Callable[[int], Any]] = None,
) -> dict[str, Any]:
    """Streams a trace into Parquet (one row group per million records), with the source
    format, device names and reader counts in the file's metadata. Returns the counts."""
    import pyarrow.parquet as pq

    p, f, b = _reader_args(path, format, blk_action, strict)
    _callable_arg(progress, "progress")
    tmp = _path_arg(out, "out") + ".partial"
    reader = _core.TraceBatches(p, f, strict, b)
    records = 0
    state: dict[str, Any] = {}
    try:
        # Without the serialized Arrow schema (written before the metadata is known), readers
        # take the schema's metadata from the footer's key-value pairs: ``ssdlab.trace`` shows
        # in ``pq.read_table(...).schema.metadata``, and in pandas' ``DataFrame.attrs``.
        with pq.ParquetWriter(tmp, schema(), compression="zstd", store_schema=False) as w:
            for b in _from_reader(reader, state):
                w.write_batch(b)
                records += b.num_rows
                if progress:
                    progress(records)
            meta = _meta(reader, state, records)
            w.add_key_value_metadata({"ssdlab.trace": json.dumps(meta), "PANDAS_ATTRS": json.dumps({"ssdlab.trace": meta})})
        os.replace(tmp, out)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return meta


def _from_reader(reader: Any, state: dict[str, Any], batch: int = BATCH) -> Iterator[pa.RecordBatch]:
    """Batches of the canonical schema; ``state`` gets the first record's time (``origin``) and
    the device names by id (``devices``)."""
    import numpy as np
    import pyarrow as pa

    ops = pa.array(OPS, pa.string())
    while (cols := reader.next_batch(batch)) is not None:
        t = np.frombuffer(cols["time_ns"], "<u8")
        if state.get("origin") is None and len(t):
            state["origin"] = int(t[0])
        # Times from the first record, in int64 (exact: differences of u64 times in range).
        rel = (t - np.uint64(state.get("origin") or 0)).view("<i8")
        dev = np.frombuffer(cols["dev"], "<u4")
        names = list(reader.device_names())
        if names:
            state["devices"] = names
            devs = pa.DictionaryArray.from_arrays(pa.array(dev), pa.array(names, pa.string()))
        else:
            # A format without device names (ids only, such as a dev_t): the id, as text.
            uniq, idx = np.unique(dev, return_inverse=True)
            state["device_ids"] = True
            seen = state.setdefault("ids", set())
            seen.update(int(u) for u in uniq)
            devs = pa.DictionaryArray.from_arrays(pa.array(idx.astype("<u4")), pa.array([str(u) for u in uniq], pa.string()))
        yield pa.RecordBatch.from_arrays(
            [
                pa.array(rel),
                pa.DictionaryArray.from_arrays(pa.array(np.frombuffer(cols["op"], "u1")), ops),
                pa.array(np.frombuffer(cols["offset"], "<u8")),
                pa.array(np.frombuffer(cols["len"], "<u8")),
                devs,
            ],
            schema=schema(),
        )


def print_stats(out: Console, path: str, s: dict[str, Any]) -> None:
    """The tables ``ssdlab trace stats`` prints of :func:`stats`' dict (with ``wall_s``)."""
    from rich.table import Table

    gib = 1024**3
    out.print(f"[bold]{path}[/bold]  ({s['format']})  {s['lines']:,} lines, {s['ios']:,} I/Os in {s['wall_s']:.2f} s wall")
    t = Table(show_header=False, box=None)
    rows = [
        ("reads / writes / trims / flushes", f"{s['reads']:,} / {s['writes']:,} / {s['trims']:,} / {s['flushes']:,}  (read ratio {s['read_ratio']:.3f})"),
        ("bytes read / written", f"{s['bytes_read'] / gib:,.3f} / {s['bytes_written'] / gib:,.3f} GiB  (mean size {s['mean_size'] / 1024:,.1f} KiB)"),
        ("footprint", f"{s['footprint_bytes'] / gib:,.3f} GiB in 4 KiB pages"),
        ("sequential", f"{s['sequential_ratio']:.3f} of requests start where their device's previous one ended"),
        ("span", f"{s['duration_s']:,.3f} s of trace time, {s['iops']:,.0f} IOPS"),
        ("inter-arrival (us)", "mean {mean:,.2f}  p50 {p50:,.2f}  p90 {p90:,.2f}  p99 {p99:,.2f}  max {max:,.2f}".format(**s["interarrival_us"])),
        ("out of order", f"{s['out_of_order']:,} records earlier than the one before"),
        ("skipped", f"{s['bad_lines']:,} malformed lines, {s['zero_length']:,} zero-length requests" + (f"; first: {s['first_bad']}" if s["first_bad"] else "")),
    ]
    for k, v in rows:
        t.add_row(k, v)
    out.print(t)
    h = Table(title="Request sizes", title_justify="left")
    h.add_column("up to", justify="right")
    h.add_column("requests", justify="right")
    h.add_column("%", justify="right")
    for b in s["size_histogram"]:
        h.add_row(format_bytes(b["le_bytes"]), f"{b['count']:,}", f"{100 * b['count'] / max(s['ios'], 1):.1f}")
    out.print(h)
    if s["per_device"]:
        d = Table(title=f"Devices ({s['devices']:,} in all; busiest first)", title_justify="left")
        for c in ("device", "I/Os", "read ratio", "GiB", "footprint GiB", "highest byte"):
            d.add_column(c, justify="right")
        for x in s["per_device"]:
            d.add_row(x["name"] or str(x["id"]), f"{x['ios']:,}", f"{x['read_ratio']:.3f}", f"{x['bytes'] / gib:,.3f}", f"{x['footprint_bytes'] / gib:,.3f}", format_bytes(x["max_offset"]))
        out.print(d)
