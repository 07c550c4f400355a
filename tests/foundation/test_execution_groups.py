"""Joining consecutive partitions into blocks of at most a number of records (Executor.map_fold)."""

from pipeline.evaluation.execution import _consecutive_groups


def test_consecutive_groups_never_split_a_partition_and_keep_the_order():
    assert _consecutive_groups([3, 3, 3], None) == [[0], [1], [2]]
    assert _consecutive_groups([3, 3, 3], 6) == [[0, 1], [2]]
    assert _consecutive_groups([3, 3, 3], 100) == [[0, 1, 2]]
    assert _consecutive_groups([10, 2, 2, 10], 5) == [[0], [1, 2], [3]]
    assert _consecutive_groups([0, 4, 0], 4) == [[0, 1, 2]]
    assert _consecutive_groups([], 5) == []
