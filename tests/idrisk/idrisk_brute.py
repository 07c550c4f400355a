"""Independent brute-force implementation of the package's matching rules (O(n²), small data)."""

from __future__ import annotations

import numpy as np
import pandas as pd


def brute_force(orig, syn, known, syn_vars, radius, percentage=True, euclidean=False, closed=False):
    """c and T (logical) by comparing every target with every synthetic record, written
    directly from the package's C++ loop (categorical: !=, continuous: x* >= x+rho or x* <= x-rho
    rejects).  ``radius``: None or {variable: r} for the continuous variables."""
    n = len(orig)
    c = np.zeros(n, dtype=np.int64)
    t = np.zeros(n, dtype=bool)
    cont = [] if radius is None else [v for v in known + syn_vars if v in radius]
    cat = [v for v in known + syn_vars if v not in cont]
    so = {v: syn[v].astype(object).to_numpy() for v in cat}
    oo = {v: orig[v].astype(object).to_numpy() for v in cat}
    for i in range(n):
        m = np.ones(n, dtype=bool)
        for v in cat:
            m &= np.array([(a == oo[v][i]) and not pd.isna(a) for a in so[v]], dtype=bool)
        rho = {v: (radius[v] * orig[v].iloc[i] if percentage else radius[v]) for v in cont}
        half = dict(rho)
        if euclidean:
            rk = 0.0
            for v in (v for v in known if v in cont):
                rk += rho[v] * rho[v]
            rk = np.sqrt(rk)
            rs = rk
            for v in (v for v in syn_vars if v in cont):
                rs += rho[v] * rho[v]
            rs = np.sqrt(rs)
            half = {v: (rk if v in known else rs) for v in cont}
        for v in cont:
            x = orig[v].iloc[i]
            y = syn[v].to_numpy(dtype=float)
            if closed:
                m &= (y >= x - half[v]) & (y <= x + half[v])
            else:
                m &= ~((y >= x + half[v]) | (y <= x - half[v])) & ~np.isnan(y)
        c[i] = m.sum()
        t[i] = m[i]
    return c, t
