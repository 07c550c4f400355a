"""Exact nearest neighbours with a mixed distance: the kernel over one block (:mod:`.kernel`) and
the search over the executor's partitions (:mod:`.compute`), shared by the DCR measures and the
attacks."""
