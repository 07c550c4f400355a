"""Reading data sets into Dask DataFrames that carry their :class:`Schema`.

Supported formats, chosen by file extension:

=========================  ==========================================================
``.csv`` (``.csv.gz``)      ``dask.dataframe.read_csv``; empty field and ``NA`` = missing; checked first
                            (bad bytes for the encoding, rows with more or fewer fields than the
                            header: an error naming the line)
``.parquet`` / directory    ``dask.dataframe.read_parquet``
``.dta``                    Stata, ``pandas.read_stata`` (value labels -> factor levels)
``.sav`` / ``.zsav``        SPSS, ``pyreadstat`` (value labels -> factor levels)
``.sas7bdat`` / ``.xpt``    SAS, ``pyreadstat`` (data set or transport file)
``.rds`` / ``.rdata``       R, ``pyreadr`` (factor levels kept in order)
=========================  ==========================================================

The schema comes from (in order of precedence) the ``schema`` argument, a sibling file
``<stem>.schema.json``, the typed format itself (Stata/SPSS/R/Parquet categoricals), or
inference (:meth:`Schema.infer`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, BinaryIO

import dask.dataframe as dd
import pandas as pd

from pipeline.data.schema import Schema, as_label, finite_numbers
from pipeline.errors import DataError, PipelineError, SchemaError

NA_VALUES = ["", "NA"]
EMPTY = "the data set is empty (no records)"
#: text encoding of CSV files unless the task's dataset entry or the schema says otherwise
DEFAULT_ENCODING = "utf-8"
#: bytes read at a time by the CSV checks
CHECK_CHUNK = 1 << 24
CSV_SUFFIXES = (".csv", ".csv.gz", ".csv.bz2", ".txt")
_TYPED_READERS = (".dta", ".sav", ".zsav", ".sas7bdat", ".xpt", ".rds", ".rdata", ".rda")


@dataclass(frozen=True)
class Dataset:
    """A data set: a Dask DataFrame in the schema's in-memory form, its schema and source.

    Attributes
    ----------
    name : str
        Short name used in results (e.g. ``"sd2011"`` or ``"syn1"``).
    frame : dask.dataframe.DataFrame
        The records, columns in schema order, dtypes as documented in :mod:`pipeline.data.schema`.
    schema : Schema
    source : str
        Where the data came from (a path, or ``"memory"``).
    """

    name: str
    frame: dd.DataFrame
    schema: Schema
    source: str = "memory"

    def to_pandas(self) -> pd.DataFrame:
        return self.frame.compute()

    def select(self, names: Sequence[str]) -> Dataset:
        self.schema.require(names, where=self.source)
        return replace(self, frame=self.frame[list(names)], schema=self.schema.select(names))

    def with_schema(self, schema: Schema) -> Dataset:
        """The same records cast to another schema (e.g. after aligning factor levels)."""
        frame = self.frame.map_partitions(schema.apply, self.source, meta=_meta(schema))
        return replace(self, frame=frame, schema=schema)

    @classmethod
    def from_pandas(
        cls, frame: pd.DataFrame, schema: Schema | None = None, name: str = "data", npartitions: int = 1
    ) -> Dataset:
        schema = schema or Schema.infer(frame)
        cast = schema.apply(frame, name)
        return cls(name, dd.from_pandas(cast, npartitions=npartitions, sort=False), schema, "memory")


def _meta(schema: Schema) -> pd.DataFrame:
    return pd.DataFrame({v.name: pd.Series(dtype=v.dtype) for v in schema})


def _suffix(path: Path) -> str:
    name = path.name.lower()
    for s in (".csv.gz", ".csv.bz2"):
        if name.endswith(s):
            return s
    return path.suffix.lower()


def read_raw(path: str | Path, encoding: str = DEFAULT_ENCODING) -> tuple[dd.DataFrame, Schema | None]:
    """Read a file as it is, returning the frame and the schema its format carries (if any).

    ``encoding`` is the text encoding of a CSV file (other formats carry their own).
    """
    p = Path(path)
    if not p.exists():
        raise DataError(f"data file not found: {p}")
    suffix = _suffix(p)
    if p.is_file() and p.stat().st_size == 0:
        raise DataError(f"{p}: the file is empty (0 bytes): no header line and no records")
    try:
        if suffix in CSV_SUFFIXES:
            encoding = _without_bom(p, encoding)
            _check_csv(p, encoding)
            # every column as text first: the schema decides kinds, so "15" stays the level "15"
            frame = dd.read_csv(
                str(p), dtype=str, keep_default_na=False, na_values=NA_VALUES, blocksize="64MB", encoding=encoding
            )
            return frame, None
        if suffix == ".parquet" or p.is_dir():
            frame = dd.read_parquet(str(p))
            if not _has_categoricals(frame):
                return frame, None
            return frame, _parquet_schema(p, frame)
        if suffix in _TYPED_READERS:
            pdf = _read_typed(p, suffix)
            if len(pdf) == 0:
                raise DataError(f"{p}: {EMPTY}")
            return dd.from_pandas(pdf, npartitions=1, sort=False), _typed_schema(pdf)
    except PipelineError:
        raise
    except Exception as e:  # a parser failure: name the file and the format, not the contents
        raise DataError(f"{p}: cannot read as {suffix or 'unknown'} file ({type(e).__name__})") from None
    raise DataError(
        f"{p}: unsupported format {suffix!r}; expected one of .csv, .parquet, .dta, .sav, .sas7bdat, .rds, .RData"
    )


def _without_bom(p: Path, encoding: str) -> str:
    """``utf-8-sig`` for a UTF-8 file that starts with a byte-order mark (as spreadsheet programs
    write them), so that the mark is not read into the first column's name."""
    import codecs

    try:
        utf8 = codecs.lookup(encoding).name == "utf-8"
    except LookupError:
        return encoding  # _check_encoding names the unknown encoding
    if utf8:
        with _open_binary(p) as f:
            if f.read(3) == codecs.BOM_UTF8:
                return "utf-8-sig"
    return encoding


def _open_binary(p: Path) -> BinaryIO:
    import bz2
    import gzip

    name = p.name.lower()
    if name.endswith(".gz"):
        return gzip.open(p, "rb")
    if name.endswith(".bz2"):
        return bz2.open(p, "rb")
    return open(p, "rb")


def _check_encoding(p: Path, encoding: str) -> None:
    """Decode the whole file (in chunks, at C speed); a bad byte is reported by line and byte."""
    import codecs

    try:
        decoder = codecs.getincrementaldecoder(encoding)()
    except LookupError:
        raise DataError(f"{p}: unknown encoding {encoding!r}") from None
    line, offset = 1, 0  # line number and file offset at the start of the current chunk
    line_start = 0  # file offset of the current line's first byte
    with _open_binary(p) as f:
        while chunk := f.read(CHECK_CHUNK):
            try:
                decoder.decode(chunk)
            except UnicodeDecodeError as e:
                bad = offset + e.start
                before = chunk[: e.start]
                nl = before.rfind(b"\n")
                line += before.count(b"\n")
                start = offset + nl + 1 if nl >= 0 else line_start
                raise DataError(
                    f"{p}: line {line}, byte {bad - start + 1}: not valid {encoding} text; give the file's "
                    "encoding (e.g. 'encoding: latin-1' in the task's dataset entry or the schema, or "
                    "`sdc-pipeline schema FILE --encoding latin-1`)"
                ) from None
            nl = chunk.rfind(b"\n")
            if nl >= 0:
                line_start = offset + nl + 1
            line += chunk.count(b"\n")
            offset += len(chunk)
        try:
            decoder.decode(b"", final=True)
        except UnicodeDecodeError:
            raise DataError(f"{p}: line {line}: the file ends inside a {encoding} character") from None


def _check_csv(p: Path, encoding: str) -> None:
    """Fail on what the CSV reader would misread, naming the line: bad bytes for ``encoding``,
    duplicated header names (pandas would rename them a, a.1), and rows with more or fewer
    fields than the header (pandas would fail without a line, or pad with missing values)."""
    import csv
    import io

    import pyarrow as pa
    import pyarrow.csv as pcsv

    _check_encoding(p, encoding)
    with io.TextIOWrapper(_open_binary(p), encoding=encoding, newline="") as f:
        header = next(csv.reader(f), [])
    dupes = sorted({c for c in header if header.count(c) > 1})
    if dupes:
        raise DataError(f"{p}: duplicated column(s) {', '.join(dupes)}")
    bad: list[tuple[int | None, int]] = []

    def invalid(row: Any) -> str:
        bad.append((row.number, row.actual_columns))
        return "skip"

    reader = pcsv.open_csv(
        str(p),
        read_options=pcsv.ReadOptions(use_threads=False, block_size=CHECK_CHUNK, encoding=encoding),
        parse_options=pcsv.ParseOptions(invalid_row_handler=invalid),
        convert_options=pcsv.ConvertOptions(column_types={c: pa.string() for c in header}, include_columns=header[:1]),
    )
    records = 0
    for batch in reader:  # parsing is what finds the invalid rows (and counts the records)
        records += batch.num_rows
        if bad:
            break
    if bad:
        number, fields = bad[0]
        where = f"line {number}" if number is not None else "a row"
        what = (
            f"has {fields} fields, the header has {len(header)} (first missing column: {header[fields]!r})"
            if fields < len(header)
            else f"has {fields} fields, the header has {len(header)} (extra field(s) after column {header[-1]!r})"
        )
        raise DataError(f"{p}: {where} {what}")
    if records == 0:
        raise DataError(f"{p}: {EMPTY}")


def _has_categoricals(frame: dd.DataFrame) -> bool:
    return any(isinstance(t, pd.CategoricalDtype) for t in frame.dtypes)


def _parquet_schema(p: Path, frame: dd.DataFrame) -> Schema:
    """Schema of a Parquet data set; categories (in their stored order) from a row group's dictionary."""
    import pyarrow.parquet as pq

    first = next(iter(sorted(p.rglob("*.parquet")))) if p.is_dir() else p
    cats = [c for c, t in frame.dtypes.items() if isinstance(t, pd.CategoricalDtype)]
    table = pq.ParquetFile(first).read_row_group(0, columns=cats)
    meta = frame._meta.copy()
    for c in cats:
        col = table.column(c)
        levels = col.chunk(0).dictionary.to_pylist() if col.num_chunks else []
        meta[c] = pd.Categorical([], categories=levels, ordered=bool(frame._meta[c].cat.ordered))
    return Schema.infer(meta)


def _typed_schema(pdf: pd.DataFrame) -> Schema:
    return Schema.infer(pdf)


def _read_typed(p: Path, suffix: str) -> pd.DataFrame:
    if suffix == ".dta":
        return pd.read_stata(p, convert_categoricals=True)
    if suffix in (".sav", ".zsav"):
        import pyreadstat

        pdf, meta = pyreadstat.read_sav(str(p))
        # value labels -> factor levels in the order of their codes (as SPSS and R's haven do)
        for col, labels in meta.variable_value_labels.items():
            codes = sorted(labels)
            pdf[col] = pd.Categorical(pdf[col].map(labels), categories=[labels[c] for c in codes])
        return pdf
    if suffix in (".sas7bdat", ".xpt"):
        import pyreadstat

        reader = pyreadstat.read_sas7bdat if suffix == ".sas7bdat" else pyreadstat.read_xport
        pdf, _ = reader(str(p))
        return pdf
    import pyreadr

    result = pyreadr.read_r(str(p))
    frames = [v for v in result.values() if isinstance(v, pd.DataFrame)]
    if len(frames) != 1:
        raise DataError(f"{p}: expected exactly one data frame in the R file, found {len(frames)}")
    return frames[0].reset_index(drop=True)


def _sibling_schema(p: Path) -> Path | None:
    stem = p.name
    for s in (".csv.gz", ".csv.bz2", *CSV_SUFFIXES, ".parquet", *_TYPED_READERS):
        if stem.lower().endswith(s):
            stem = stem[: -len(s)]
            break
    cand = p.with_name(stem + ".schema.json")
    return cand if cand.exists() else None


def read_dataset(
    path: str | Path,
    schema: Schema | str | Path | None = None,
    name: str | None = None,
    missing_codes: Mapping[str, float | Sequence[float]] | None = None,
    columns: Sequence[str] | None = None,
    encoding: str | None = None,
    new_levels: bool = False,
) -> Dataset:
    """Read one data set and cast it to its schema.

    Parameters
    ----------
    path : path
        The data file (see the module docstring for formats).
    schema : Schema or path, optional
        The schema; otherwise a sibling ``<stem>.schema.json``, the typed format, or inference.
    name : str, optional
        Name used in results (default: the file stem).
    missing_codes : mapping, optional
        Special missing codes to add to the schema (synthpop ``cont.na``), e.g. ``{"income": -8}``.
    columns : sequence of str, optional
        Keep only these columns (in this order).
    encoding : str, optional
        Text encoding of a CSV file (default: the schema's ``encoding``, else UTF-8).
    new_levels : bool
        Add the factor levels the file holds that the schema lacks (after the schema's, in
        byte order) instead of refusing them: a synthetic set read with its original's schema
        to be aligned to it (``compatibility: align``; one more pass over the factor columns).

    Raises
    ------
    DataError
        Missing or unreadable file, empty data set, duplicated columns, a CSV row with more or
        fewer fields than the header or bytes that are not valid in the encoding (by line), values
        that do not fit the schema (the message names the file and the variable, never a value).
    """
    p = Path(path)
    if isinstance(schema, (str, Path)):
        schema = Schema.from_json(schema)
    if schema is None:
        sib = _sibling_schema(p)
        schema = Schema.from_json(sib) if sib is not None else None
    raw, typed = read_raw(p, encoding or (schema.encoding if schema is not None else None) or DEFAULT_ENCODING)
    cols = [str(c) for c in raw.columns]
    dupes = sorted({c for c in cols if cols.count(c) > 1})
    if dupes:
        raise DataError(f"{p}: duplicated column(s) {', '.join(dupes)}")
    if schema is None:
        schema = typed if typed is not None else Schema.infer(_typed_sample(raw))
    try:
        if columns is not None:
            schema = schema.select(list(columns))
        else:
            schema = schema.select([n for n in schema.names if n in cols]) if set(cols) != set(schema.names) else schema
        if missing_codes:
            schema = schema.with_missing_codes(missing_codes)
    except SchemaError as e:
        raise DataError(f"{p}: {e}") from None
    extra_needed = [n for n in schema.names if n not in cols]
    if extra_needed:
        raise DataError(f"{p}: column(s) {', '.join(extra_needed)} required by the schema are missing")
    if new_levels:
        schema = _with_levels_found(raw, schema)
    frame = raw[schema.names].map_partitions(schema.apply, str(p), meta=_meta(schema))
    # CSV and typed files were counted while read; of Parquet, one record is enough to know it is not
    # empty (reads only the first non-empty block: one computation, about 0.1-0.2 s on a cluster)
    if _suffix(p) not in (*CSV_SUFFIXES, *_TYPED_READERS) and len(frame.head(1, npartitions=-1, compute=True)) == 0:
        raise DataError(f"{p}: {EMPTY}")
    return Dataset(name or p.name.split(".")[0], frame, schema, str(p))


def _distinct_labels(part: pd.DataFrame) -> dict[str, set[str]]:
    return {str(c): set(as_label(part[c]).dropna().tolist()) - {""} for c in part.columns}


def _with_levels_found(raw: dd.DataFrame, schema: Schema) -> Schema:
    """``schema`` with every level the file's factor columns hold added after its own."""
    factors = [v.name for v in schema if v.is_factor]
    if not factors:
        return schema
    import dask

    found = dask.compute(*[dask.delayed(_distinct_labels)(p) for p in raw[factors].to_delayed()])
    widened = []
    for v in schema:
        new = set().union(*(f[v.name] for f in found)) - set(v.levels or ()) if v.is_factor else set()
        levels = (*(v.levels or ()), *sorted(new, key=lambda s: s.encode("utf-8")))
        widened.append(replace(v, levels=levels) if new else v)
    return replace(schema, variables=tuple(widened))


def _typed_sample(raw: dd.DataFrame) -> pd.DataFrame:
    """A whole-file pandas view with numbers parsed, for schema inference of CSV files."""
    pdf = raw.compute()
    out = {}
    for c in pdf.columns:
        num = finite_numbers(pdf[c])
        out[c] = num if num.notna().sum() == pdf[c].notna().sum() else pdf[c]
    return pd.DataFrame(out)


def write_dataset(dataset: Dataset | pd.DataFrame, path: str | Path, schema: Schema | None = None) -> None:
    """Write a data set as CSV or Parquet (by extension) plus ``<stem>.schema.json`` beside it.

    Written atomically: to a temporary name first, then renamed.
    """
    p = Path(path)
    pdf = dataset.to_pandas() if isinstance(dataset, Dataset) else dataset
    schema = dataset.schema if isinstance(dataset, Dataset) else (schema or Schema.infer(pdf))
    tmp = p.with_name(p.name + ".tmp")
    if _suffix(p) in CSV_SUFFIXES:
        pdf.to_csv(tmp, index=False, na_rep="")
    elif _suffix(p) == ".parquet":
        pdf.to_parquet(tmp, index=False)
    else:
        raise DataError(f"{p}: can only write .csv or .parquet")
    stem = p.name.split(".")[0]
    replace(schema, encoding=None).to_json(p.with_name(stem + ".schema.json"))  # written as UTF-8
    tmp.replace(p)
