"""The self-contained HTML report of a run (tables and embedded plots)."""
