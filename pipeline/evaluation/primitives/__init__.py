"""The executor's primitives, one module per kind of work (docs/contributing.md, "Which executor
primitive when"); :class:`~pipeline.evaluation.execution.Executor` composes them with its policy."""
