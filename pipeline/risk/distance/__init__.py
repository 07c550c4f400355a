"""Distance to the closest record (DCR) and the nearest-neighbour distance ratio (NNDR), with
SDMetrics' DCROverfittingProtection (training vs holdout) and DCRBaselineProtection (vs random data)."""
