"""anonymeter's singling-out, linkability and inference attacks (main on the training records,
control on the holdout, baseline by random guessing), on the executor: predicates counted on
sorted columns, nearest neighbours by the exact search."""
