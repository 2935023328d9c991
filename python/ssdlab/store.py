"""A sweep's store: a directory of Parquet files that plain readers read at every moment.

Layout::

    X.store/sweep.json              the spec (rewritten when the spec changes) and its point ids
    X.store/points/<id>.parquet     one point's row, written when the point finishes
    X.store/series/<id>.parquet     its time series (stats.interval) or hit-rate curve
    X.store/set-aside/...           files the store found torn or foreign, moved here, never deleted
    X.store/set-aside/other-specs/  points of other specs (back in the tables when a spec names them)

``pd.read_parquet("X.store/points")``, ``pq.read_table`` and duckdb's ``read_parquet`` read a
table directory as it is, also while a sweep writes it and after ``kill -9``:

* every file is written whole under a dot-name (``.tmp-*``, which those readers skip) and renamed
  into place, so a reader sees a complete file or none;
* all files of a table share one schema. Those readers take a directory's schema from one file,
  so when a point brings a new column, or a value a column's type cannot hold (1.5 in a column of
  whole numbers), the files already there are rewritten with the wider schema first and the new
  point's file comes last. Types only widen: null, then bool, int64 or string; int64 to float64;
  anything else that meets is text.

Each column carries its unit and description in the Arrow field metadata (``unit``,
``description``), from the metric registry for ``metrics.*`` and from :func:`describe` otherwise.

A point's id hashes everything that decides its result, so a file's name says whether its point is
done. Before a sweep runs, :meth:`Store.clean` checks every file: a temporary file is removed (a
killed writer's), a file that does not read, has no rows, or holds rows of another id than its
name, and anything that is not ours, is moved to ``set-aside/`` with a :class:`StoreWarning`
naming it, and its point runs again. The points of an earlier spec move aside too, so a table
holds exactly the points of the spec that last ran; they come back when a spec names them again.
Stores written by ssdlab 0.x before this layout (JSON point
files and ``batch-*.parquet``) are converted in place.

Leaves out: two sweeps writing one store at once (the second is refused while the first holds
the store's lock); files damaged in ways Parquet's footer and decoding do not notice.
"""

from __future__ import annotations

import fcntl
import functools
import json
import os
import re
import uuid
import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Optional

from ssdlab.exceptions import InputError, StoreWarning

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

TABLES = ("points", "series")
ASIDE = "set-aside"
OTHER = "other-specs"
_ID = re.compile(r"^[0-9a-f]{20}$")


# ---------------------------------------------------------------------------------------------
# Column descriptions.

_FIXED: dict[str, tuple[str, str]] = {
    "point_id": ("", "the point's id: a hash of its base config, settings, repeat and seed"),
    "kind": ("", "what ran at the point: run, probe or atc"),
    "repeat": ("", "the repeat's index (0 runs at the spec's seed)"),
    "seed": ("", "workload.randseed of the point"),
    "version": ("", "the ssdlab version that ran the point"),
    "wall_s": ("s", "wall-clock time the point took (the one column that differs between runs)"),
    "config_hash": ("", "hash of the point's resolved config"),
    "ios": ("I/Os", "I/Os counted in the measurement window"),
    "sim_time_s": ("s", "simulated time at the end of the run"),
    "window_s": ("s", "the measurement window"),
    "iops": ("IO/s", "I/Os per second over the window"),
    "bandwidth_mib_s": ("MiB/s", "bandwidth over the window"),
    "events": ("events", "discrete events simulated"),
    "flash.waf": ("", "write amplification: flash pages programmed per page the host wrote"),
    "accesses": ("addresses", "translations the ATC study replayed"),
    "hit_rate": ("fraction", "hit rate at the largest cache size"),
    "interleave.degree": ("units", "parallel units the probe counted"),
    "interleave.chunk_bytes": ("B", "the stripe unit the probe found"),
    "interleave.confidence": ("fraction", "the probe's confidence in the unit count"),
    "interleave.stripe": ("chunks", "chunks per stripe the probe found"),
    "interleave.period": ("chunks", "the strided-read period the probe found"),
    "interleave.period_confidence": ("fraction", "the probe's confidence in the period"),
    # The series table.
    "start_s": ("s", "start of the interval"),
    "end_s": ("s", "end of the interval"),
    "tenant": ("", "the tenant the row counts (all: the whole device)"),
    "read_ios": ("I/Os", "reads completed in the interval"),
    "write_ios": ("I/Os", "writes completed in the interval"),
    "lat_mean_us": ("us", "mean latency of the interval's I/Os"),
    "lat_p99_us": ("us", "99th percentile latency of the interval's I/Os"),
    "lines": ("lines", "ATC size of the curve's point"),
    "hits": ("translations", "ATC hits at that size"),
}

_PATTERNS: tuple[tuple[str, str, str], ...] = (
    (r"^(read|write|trim)\.ios$", "I/Os", "{0} I/Os counted"),
    (r"^(read|write|trim)\.iops$", "IO/s", "{0} I/Os per second"),
    (r"^(read|write|trim)\.bandwidth_mib_s$", "MiB/s", "{0} bandwidth"),
    (r"^(read|write|trim)\.latency_us\.(\w+)$", "us", "{0} latency, {1}"),
    (r"^breakdown_us\.(.+)$", "us", "mean time an I/O spent in {0}"),
    (r"^utilisation\.(.+)$", "fraction", "busy fraction of {0} over the window"),
    (r"^tenant\.(.+)\.(iops)$", "IO/s", "tenant {0}: I/Os per second over its own active time"),
    (r"^tenant\.(.+)\.(bandwidth_mib_s)$", "MiB/s", "tenant {0}: bandwidth over its own active time"),
    (r"^tenant\.(.+)\.(weight|weight_ratio|proportionality)$", "", "tenant {0}: {1}"),
    (r"^tenant\.(.+)\.flash\.(waf|own_fraction)$", "", "tenant {0}: flash {1}"),
    (r"^job\.(.+)\.iops$", "IO/s", "job {0}: I/Os per second over its own runtime"),
    (r"^job\.(.+)\.bandwidth_mib_s$", "MiB/s", "job {0}: bandwidth over its own runtime"),
    (r"^hit_rate@(\d+)$", "fraction", "ATC hit rate at {0} lines"),
    (r"^lines_(\d+)$", "lines", "smallest ATC size reaching a {0} % hit rate"),
    (r"^rule\.(.+)\.verdict$", "", "the probe's verdict on rule {0}"),
    (r"^rule\.(.+)\.value$", "", "the probe's measured value for rule {0}"),
)


def describe(column: str, axes: Optional[Mapping[str, Any]] = None) -> tuple[str, str]:
    """A store column's ``(unit, description)``; ``metrics.*`` columns are described by the
    metric registry at write time (:func:`ssdlab.metrics`)."""
    if axes is None:
        return _described(column)
    if column in _FIXED:
        return _FIXED[column]
    if axes is not None and column in axes or column == "base":
        return ("as the config takes it", f"sweep axis: config key {column}" if column != "base" else "sweep axis: the base device")
    for pattern, unit, text in _PATTERNS:
        m = re.match(pattern, column)
        if m:
            return unit, text.format(*m.groups())
    if column.startswith("metrics."):
        return "", f"the run's metric {column[8:]} (see ssdlab.metrics())"
    return "", f"sweep setting or axis {column}"


# ---------------------------------------------------------------------------------------------
# Types that only widen.


@functools.lru_cache(maxsize=8192)
def _described(column: str) -> tuple[str, str]:
    return describe(column, {})


def _arrow_type(v: Any) -> pa.DataType:
    import pyarrow as pa

    if v is None:
        return pa.null()
    if isinstance(v, bool):
        return pa.bool_()
    if isinstance(v, int):
        return pa.int64() if -(1 << 63) <= v < 1 << 63 else pa.string()
    if isinstance(v, float):
        return pa.float64()
    if isinstance(v, str):
        return pa.string()
    raise TypeError(f"a sweep row holds {type(v).__name__}, which the store cannot keep")


def _wider(a: pa.DataType, b: pa.DataType) -> pa.DataType:
    import pyarrow as pa

    if a == b or pa.types.is_null(b):
        return a
    if pa.types.is_null(a):
        return b
    if {a, b} == {pa.int64(), pa.float64()}:
        return pa.float64()
    return pa.string()


def _plain(v: Any) -> Any:
    """A numpy scalar as its Python value; a whole number too large for int64 as text."""
    if hasattr(v, "item") and not isinstance(v, (str, bytes)):
        v = v.item()
    if isinstance(v, int) and not isinstance(v, bool) and not -(1 << 63) <= v < 1 << 63:
        return str(v)
    return v


def _table(rows: list[dict[str, Any]], meta: Mapping[str, tuple[str, str]]) -> pa.Table:
    """Rows as a table whose column types follow :func:`_arrow_type` and :func:`_wider`."""
    import pyarrow as pa

    keys = list(dict.fromkeys(k for r in rows for k in r))
    try:  # every column at once (pyarrow infers as _wider does), when nothing needs more care
        fast = pa.Table.from_pydict({k: [r.get(k) for r in rows] for k in keys})
        if all(str(t) in _PLAIN for t in fast.schema.types):
            fields = [pa.field(k, t, metadata=dict(zip(("unit", "description"), meta.get(k) or describe(k)))) for k, t in zip(keys, fast.schema.types)]
            return pa.Table.from_arrays(fast.columns, schema=pa.schema(fields))
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        pass
    arrays, fields = [], []  # a column of mixed kinds, numpy scalars or huge ints: value by value
    for k in keys:
        vals = [_plain(r.get(k)) for r in rows]
        t = pa.null()
        for v in vals:
            t = _wider(t, _arrow_type(v))
        if t == pa.string():
            vals = [None if v is None else v if isinstance(v, str) else json.dumps(v) for v in vals]
        arr = pa.array(vals, type=t)
        unit, text = meta.get(k) or describe(k)
        arrays.append(arr)
        fields.append(pa.field(k, arr.type, metadata={"unit": unit, "description": text}))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


# The Arrow types _arrow_type gives, by name: a table pyarrow infers with only these needs no care.
_PLAIN = {"null", "bool", "int64", "double", "string"}


def _union(a: Optional[pa.Schema], b: pa.Schema) -> pa.Schema:
    import pyarrow as pa

    if a is None:
        return b
    fields = [a.field(i) for i in range(len(a))]
    index = {f.name: i for i, f in enumerate(fields)}
    for f in b:
        if f.name in index:
            old = fields[index[f.name]]
            fields[index[f.name]] = old.with_type(_wider(old.type, f.type))
        else:
            index[f.name] = len(fields)
            fields.append(f)
    return pa.schema(fields, metadata=a.metadata)


def _conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table`` with every column of ``schema``, in its order and types (missing ones null)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if table.schema.equals(schema):
        return table.replace_schema_metadata(schema.metadata)
    have = {name: i for i, name in enumerate(table.column_names)}
    cols = []
    for f in schema:
        if f.name in have:
            c = table.column(have[f.name])
            if c.type != f.type:
                c = pc.cast(c, f.type)
            cols.append(c)
        else:
            cols.append(pa.nulls(len(table), f.type))
    return pa.Table.from_arrays(cols, schema=schema)


# ---------------------------------------------------------------------------------------------
# The store.


class Store:
    """A sweep's results directory (see the module's doc). One writer at a time: the process
    that runs the sweep (workers hand their rows to it)."""

    def __init__(self, path: str) -> None:
        self.path = os.path.abspath(path)
        self.points = os.path.join(self.path, "points")
        self.series = os.path.join(self.path, "series")
        self._schemas: dict[str, Optional[pa.Schema]] = {}
        self._lock: Optional[int] = None

    def dir(self, table: str) -> str:
        if table not in TABLES:
            raise InputError(f"table = {table!r}: points or series")
        return os.path.join(self.path, table)

    # -- opening ---------------------------------------------------------------------------

    def create(self, doc: Mapping[str, Any]) -> None:
        """Makes the directories, takes the store's lock and writes ``sweep.json`` (the spec as
        it is now: a store follows its spec when it changes)."""
        if os.path.exists(self.path) and not os.path.isdir(self.path):
            raise InputError(f"store {self.path}: exists and is not a directory")
        for d in (self.points, self.series):
            os.makedirs(d, exist_ok=True)
        self.lock()
        self._atomic(os.path.join(self.path, "sweep.json"), json.dumps(doc, indent=1, default=str).encode())

    def lock(self) -> None:
        fd = os.open(os.path.join(self.path, ".lock"), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise InputError(f"store {self.path}: another sweep is writing it (wait for it, or give another --store)") from None
        self._lock = fd  # held until this process ends or close()

    def close(self) -> None:
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None

    def _names(self, d: str) -> list[str]:
        return sorted(os.listdir(d)) if os.path.isdir(d) else []

    def _check(self, d: str, name: str) -> Optional[str]:
        """Why the file ``name`` of table ``d`` is not a good one of ours (None: it is)."""
        import pyarrow.parquet as pq

        pid = name[: -len(".parquet")] if name.endswith(".parquet") else ""
        if not _ID.match(pid):
            return "not a point file of this store"
        try:
            t = pq.read_table(os.path.join(d, name))
        except Exception as e:  # noqa: BLE001 - whatever the reader says, the file is damaged
            return f"does not read as Parquet ({str(e).splitlines()[0][:120] or type(e).__name__})"
        if "point_id" not in t.column_names:
            return "has no point_id column"
        if t.num_rows == 0 or (d == self.points and t.num_rows != 1):
            return f"holds {t.num_rows} rows (a point file holds one)" if d == self.points else "holds no rows"
        ids = set(t.column("point_id").to_pylist())
        if ids != {pid}:
            return f"holds rows of point(s) {', '.join(sorted(map(str, ids))[:3])}, not of {pid}"
        return None

    def _set_aside(self, d: str, name: str, why: str) -> None:
        where = os.path.join(self.path, ASIDE, os.path.basename(d))
        os.makedirs(where, exist_ok=True)
        target = os.path.join(where, name)
        if os.path.exists(target):
            target += f".{uuid.uuid4().hex[:8]}"
        os.replace(os.path.join(d, name), target)
        warnings.warn(StoreWarning(f"{os.path.join(d, name)} {why}: set aside as {target}; its point runs again"), stacklevel=3)

    def clean(self, keep: Optional[set[str]] = None) -> None:
        """Checks every file (see the module's doc): removes temporary files, converts the
        layout of earlier versions, sets aside what is damaged or foreign. With ``keep`` (the
        spec's point ids), the points of other specs move to ``set-aside/other-specs/``, and
        those there that ``keep`` names come back (so the tables hold the spec's points)."""
        for d in (self.points, self.series):
            for name in self._names(d):
                path = os.path.join(d, name)
                if name.startswith(".tmp-"):
                    _unlink(path)
                elif name.startswith(".") or os.path.isdir(path) and name.startswith("_"):
                    continue
                elif name.endswith(".json") or name.startswith("batch-") and name.endswith(".parquet"):
                    self._convert(d, name)
                elif (why := self._check(d, name)) is not None:
                    self._set_aside(d, name, why)
        self._schemas.clear()
        if keep is not None:
            self._follow_spec(keep)

    def _follow_spec(self, keep: set[str]) -> None:
        import pyarrow.parquet as pq

        moved = back = 0
        for table in TABLES:  # the points first: a point without its row is not done
            d, other = self.dir(table), os.path.join(self.path, ASIDE, OTHER, table)
            for name in self._names(d):
                pid = name[: -len(".parquet")]
                if name.endswith(".parquet") and _ID.match(pid) and pid not in keep:
                    os.makedirs(other, exist_ok=True)
                    os.replace(os.path.join(d, name), os.path.join(other, name))
                    moved += table == "points"
        self._schemas.clear()
        for table in reversed(TABLES):  # the series first: a point's row marks it done
            d, other = self.dir(table), os.path.join(self.path, ASIDE, OTHER, table)
            for name in self._names(other):
                pid = name[: -len(".parquet")]
                if name.endswith(".parquet") and pid in keep and not os.path.exists(os.path.join(d, name)):
                    try:
                        self._put(d, pid, pq.read_table(os.path.join(other, name)))  # widened to the table's schema
                    except Exception:  # noqa: BLE001 - damaged while aside: its point runs again
                        continue
                    _unlink(os.path.join(other, name))
                    back += table == "points"
        if moved:
            warnings.warn(StoreWarning(f"{moved} point(s) of another spec moved to {os.path.join(self.path, ASIDE, OTHER)} (a spec that names them brings them back)"), stacklevel=3)
        if back:
            warnings.warn(StoreWarning(f"{back} point(s) this spec names came back from {os.path.join(self.path, ASIDE, OTHER)}"), stacklevel=3)

    def _convert(self, d: str, name: str) -> None:
        """A point file (JSON) or batch of an earlier layout, as one file per point."""
        import pyarrow.parquet as pq

        path = os.path.join(d, name)
        try:
            if name.endswith(".json"):
                with open(path, encoding="utf-8") as f:
                    rows = json.load(f)
                if not isinstance(rows, list) or not rows or not all(isinstance(r, dict) and isinstance(r.get("point_id"), str) for r in rows):
                    raise ValueError("not a list of rows with point ids")
            else:
                rows = pq.read_table(path).to_pylist()
        except Exception as e:  # noqa: BLE001 - damaged: set aside
            self._set_aside(d, name, f"does not read ({str(e).splitlines()[0][:120] if str(e) else type(e).__name__})")
            return
        by_id: dict[str, list[dict[str, Any]]] = {}
        for r in rows:
            by_id.setdefault(str(r.get("point_id")), []).append(r)
        for pid, group in by_id.items():
            if _ID.match(pid) and (d == self.series or len(group) == 1):
                self._put(d, pid, _table(group, {}))
        _unlink(path)

    # -- writing ---------------------------------------------------------------------------

    @staticmethod
    def _atomic(path: str, data: bytes) -> None:
        # Written whole under a dot-name (which readers skip), then renamed: a killed process
        # leaves the complete file or none. (No fsync: the kernel keeps a killed process's
        # writes; after a power loss a file may be torn, and `clean` sets it aside.)
        tmp = os.path.join(os.path.dirname(path), f".tmp-{uuid.uuid4().hex}")
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)

    def _write_table(self, path: str, table: pa.Table) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        sink = pa.BufferOutputStream()
        pq.write_table(table, sink)
        self._atomic(path, bytes(sink.getvalue()))

    def schema(self, table: str = "points") -> Optional[pa.Schema]:
        """The schema every file of ``table`` has (None while it has none)."""
        import pyarrow.parquet as pq

        d = self.dir(table)
        if d not in self._schemas:
            s = None
            for name in self._names(d):
                if _ID.match(name[: -len(".parquet")]) and name.endswith(".parquet"):
                    try:
                        s = _union(s, pq.read_schema(os.path.join(d, name)))
                    except Exception:  # noqa: BLE001 - damaged: clean() sets it aside
                        continue
            self._schemas[d] = s
        return self._schemas[d]

    def _put(self, d: str, pid: str, table: pa.Table) -> None:
        """Writes ``d/<pid>.parquet``, first widening every other file of ``d`` if needed."""
        import pyarrow.parquet as pq

        old = self.schema(os.path.basename(d))
        new = _union(old, table.schema)
        if old is not None and not new.equals(old):
            for name in self._names(d):
                if name.endswith(".parquet") and _ID.match(name[: -len(".parquet")]) and name != f"{pid}.parquet":
                    path = os.path.join(d, name)
                    try:
                        self._write_table(path, _conform(pq.read_table(path), new))
                    except Exception:  # noqa: BLE001 - damaged: clean() sets it aside
                        continue
        self._schemas[d] = new
        self._write_table(os.path.join(d, f"{pid}.parquet"), _conform(table, new))

    def write(self, row: dict[str, Any], series: list[dict[str, Any]], meta: Optional[Mapping[str, tuple[str, str]]] = None) -> None:
        """Stores one point: its series first, then its row (once the row is there the point,
        with its series, is done)."""
        pid = row["point_id"]
        meta = meta or {}
        if series:
            self._put(self.series, pid, _table(series, meta))
        self._put(self.points, pid, _table([row], meta))

    # -- reading ---------------------------------------------------------------------------

    def done(self, cleaned: bool = False) -> set[str]:
        """The ids of the points stored whole, without moving anything: each file read and
        checked, or, right after :meth:`clean` (``cleaned``), by the names of its files."""
        names = [n for n in self._names(self.points) if n.endswith(".parquet") and _ID.match(n[: -len(".parquet")])]
        return {n[: -len(".parquet")] for n in names if cleaned or self._check(self.points, n) is None}

    def read(self, table: str = "points") -> pd.DataFrame:
        """A table's rows (``points``: one per point id, by id), skipping damaged files."""
        import pandas as pd
        import pyarrow as pa
        import pyarrow.parquet as pq

        d = self.dir(table)
        if not os.path.isdir(d):
            raise InputError(f"{self.path}: not a sweep store (no {table}/ directory)")
        names = self._names(d)
        files = [os.path.join(d, n) for n in names if not n.startswith(".") and n.endswith(".parquet")]
        tables = []
        try:  # one dataset of files that share a schema (the store keeps them so): read at once
            import pyarrow.dataset as ds

            if files:
                # The union of the files' schemas: a file a widening has not reached yet (a
                # writer killed midway) is cast up, and no column is dropped.
                self._schemas.pop(d, None)
                tables.append(ds.dataset(files, format="parquet", schema=self.schema(table)).to_table())
        except Exception:  # noqa: BLE001 - a damaged or foreign file: read file by file, skipping it
            tables = []
            for path in files:
                try:
                    tables.append(pq.read_table(path))
                except Exception:  # noqa: BLE001 - damaged: clean() sets it aside
                    continue
        for name in names:
            if name.endswith(".json") and not name.startswith("."):
                try:
                    with open(os.path.join(d, name), encoding="utf-8") as f:
                        tables.append(_table(json.load(f), {}))
                except Exception:  # noqa: BLE001 - an earlier layout's damaged file
                    continue
        if not tables:
            return pd.DataFrame()
        df = pa.concat_tables(tables, promote_options="permissive").to_pandas()
        if table == "points" and "point_id" in df.columns:
            df = df.drop_duplicates("point_id").sort_values(["point_id"]).reset_index(drop=True)
        return df


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


__all__ = ["ASIDE", "OTHER", "Store", "StoreWarning", "describe"]
