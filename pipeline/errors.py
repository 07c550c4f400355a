"""Exceptions with messages that name the file, the variable and what was expected.

The CLI turns any :class:`PipelineError` into a one-line message and a non-zero exit.
Messages never contain confidential record values, only names and counts.
"""


class PipelineError(Exception):
    """Base class of every error the pipeline reports to users."""


class SchemaError(PipelineError):
    """A schema is malformed or does not contain a requested variable."""


class DataError(PipelineError):
    """A data file is missing, unreadable or inconsistent with its schema."""


class CompatibilityError(DataError):
    """Original and synthetic data sets disagree (variables, kinds or levels)."""


class ParameterError(PipelineError, ValueError):
    """A measure was called with invalid parameters."""


class TaskError(PipelineError):
    """A task or cluster file is invalid."""


#: the documented kinds of error, the most specific first: :func:`located` keeps an error's kind
KINDS: tuple[type[PipelineError], ...] = (
    CompatibilityError,
    ParameterError,
    SchemaError,
    DataError,
    TaskError,
    PipelineError,
)


def located(where: str, error: PipelineError) -> PipelineError:
    """``error``'s message after ``where`` (the task file, a unit), as an error of the same
    documented kind (the first of :data:`KINDS` it is an instance of): a caller that catches
    ``ParameterError`` or ``DataError`` still does. Raise it ``from error``."""
    kind = next(k for k in KINDS if isinstance(error, k))
    return kind(f"{where}: {error}")


#: characters of a library's own message an error line quotes at most
BRIEF_CHARACTERS = 300


def brief(error: BaseException) -> str:
    """A library's exception as one short line for an ``error:`` message: an operating-system
    error as its reason and code (``No space left on device (ENOSPC)``), anything else as its
    type and the first line of its message, cut at :data:`BRIEF_CHARACTERS` (a failure deep in a
    library can carry pages of text, a disk-full one the list of every file it held)."""
    import errno
    import os

    if isinstance(error, OSError) and error.errno:
        code = f" ({errno.errorcode[error.errno]})" if error.errno in errno.errorcode else ""
        return f"{os.strerror(error.errno)}{code}"
    text = (str(error).strip().splitlines() or [""])[0]
    if len(text) > BRIEF_CHARACTERS:
        text = text[: BRIEF_CHARACTERS - 1] + "…"
    return f"{type(error).__name__}: {text}" if text else type(error).__name__
