"""Reading YAML settings files and turning pydantic validation errors into one-line messages.

A message names where the setting is as a user sees the file: the line, the path of settings with
list entries counted from 1, and — for a misspelt setting — the closest allowed name.
"""

from __future__ import annotations

import difflib
import types
import typing
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import BaseModel, Field, ValidationError
from pydantic_core import ErrorDetails

from pipeline.errors import TaskError

#: a random seed as every setting takes it: a whole number >= 0 (numpy refuses negative seeds)
Seed = Annotated[int, Field(ge=0)]


def read_yaml(path: str | Path, what: str) -> Any:
    """The parsed contents of a YAML file; a missing file or a syntax error is a :class:`TaskError`."""
    p = Path(path)
    if not p.exists():
        raise TaskError(f"{what} not found: {p}")
    if p.is_dir():
        raise TaskError(f"{p}: is a directory, expected a {what} (YAML)")
    try:
        return yaml.safe_load(p.read_text(encoding="utf-8"))
    except UnicodeDecodeError as e:
        line = p.read_bytes()[: e.start].count(b"\n") + 1
        raise TaskError(f"{p}: not UTF-8 text (line {line}); save the {what} as UTF-8") from None
    except OSError as e:
        raise TaskError(f"{p}: cannot read the {what} ({e.strerror})") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise TaskError(f"{p}: not valid YAML{where}") from None


class YamlLines:
    """Line numbers of the settings of a YAML file, looked up by a validation error's location."""

    def __init__(self, path: str | Path) -> None:
        try:
            self._root = yaml.compose(Path(path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, yaml.YAMLError):
            self._root = None

    def line(self, loc: Sequence[str | int]) -> int | None:
        """The 1-based line of the deepest node on ``loc`` (a mapping key's own line for a key)."""
        node, line = self._root, None
        for part in loc:
            if isinstance(node, yaml.MappingNode):
                match = next(((k, v) for k, v in node.value if getattr(k, "value", None) == str(part)), None)
                if match is None:
                    break
                line, node = match[0].start_mark.line + 1, match[1]
            elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
                node = node.value[part]
                line = node.start_mark.line + 1
            else:
                break
        return line


def validation_message(
    e: ValidationError,
    skip_loc: tuple[str, ...] = (),
    model: type[BaseModel] | None = None,
    lines: YamlLines | None = None,
    prefix: Sequence[str | int] = (),
) -> str:
    """``loc: message; loc: message`` for every error.

    ``skip_loc``: location parts to leave out (tags of tagged unions); ``model``: the model that was
    validated, to suggest the allowed name for an unknown setting; ``lines``: the file's lines, to
    say where the setting is; ``prefix``: where the validated mapping sits in that file.
    """
    return "; ".join(error_message(err, skip_loc, model, lines, prefix) for err in e.errors())


def error_message(
    err: ErrorDetails,
    skip_loc: tuple[str, ...] = (),
    model: type[BaseModel] | None = None,
    lines: YamlLines | None = None,
    prefix: Sequence[str | int] = (),
    context: str | None = None,
) -> str:
    """One error of :func:`validation_message` (``line N: loc: message``); ``context`` names the
    validated mapping before its location (e.g. ``dataset 'd' source 's': synthesise``)."""
    loc = [x for x in err["loc"] if str(x) not in skip_loc]
    where = _display_loc(loc)
    if context:
        where = f"{context}: {where}" if where else context
    unknown = err["type"] == "extra_forbidden"
    msg = _unknown_setting(model, loc) if unknown else err["msg"].removeprefix("Value error, ")
    line = lines.line([*prefix, *loc]) if lines is not None else None
    text = f"{where}: {msg}" if where else msg
    return f"line {line}: {text}" if line else text


def _display_loc(loc: Sequence[str | int]) -> str:
    """``measures[6].params`` with list entries counted from 1, as a reader of the file counts them."""
    out = ""
    for part in loc:
        out += f"[{part + 1}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _unknown_setting(model: type[BaseModel] | None, loc: Sequence[str | int]) -> str:
    allowed = _allowed_names(model, loc[:-1]) if model is not None and loc else None
    if not allowed:
        return "unknown setting"
    close = difflib.get_close_matches(str(loc[-1]), allowed, n=1, cutoff=0.6)
    if close:
        return f"unknown setting; did you mean {close[0]!r}?"
    return f"unknown setting; expected one of: {', '.join(allowed)}"


def _allowed_names(model: type[BaseModel], loc: Sequence[str | int]) -> list[str] | None:
    """Names a mapping at ``loc`` inside ``model`` accepts (fields and their aliases)."""
    annotation: Any = model
    for part in loc:
        annotation = _step(annotation, part)
        if annotation is None:
            return None
    target = _model_of(annotation)
    if target is None:
        return None
    names: list[str] = []
    for name, field in target.model_fields.items():
        names.append(field.alias or name)
        if field.alias and field.alias != name:
            names.append(name)
    return list(dict.fromkeys(names))


def _step(annotation: Any, part: str | int) -> Any:
    """The annotation one location part further in (a field, a list entry, a dict value)."""
    target = _model_of(annotation)
    if target is not None:
        for name, field in target.model_fields.items():
            if part in (name, field.alias):
                return field.annotation
        return None
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (list, tuple, set, frozenset) and args and isinstance(part, int):
        return args[0]
    if origin is dict and len(args) == 2:
        return args[1]
    return None


def _model_of(annotation: Any) -> type[BaseModel] | None:
    """The one pydantic model an annotation stands for (``M``, ``M | None``, ``Annotated[M, ...]``)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _model_of(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        models = [m for m in map(_model_of, typing.get_args(annotation)) if m is not None]
        return models[0] if len(models) == 1 else None
    return None
