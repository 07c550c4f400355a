"""Ports of R model fitters that reproduce R's numbers: ``glm.fit`` (binomial IRLS), ``model.matrix``
designs, ``rpart`` (CART) and polspline's ``polyclass``.

They are pure numpy/numba, import nothing else of the package but each other, and are shared by
the families (utility) and synthesis (synth/partial).
"""
