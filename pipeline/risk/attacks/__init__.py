"""anonymeter's linkability and inference attacks (main on the training records, control on the
holdout, baseline by random guessing), on the executor with the exact nearest-neighbour search."""
