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
