"""R's ``rpart``, ported: regression (``anova``) and classification (``class``, any number of classes) trees.

Why a port: synthpop's ``syn.cart`` and its CART pMSE (``utility.gen``, ``utility.synds``)
depend on the precise tree rpart grows, and no Python library grows that tree.
scikit-learn prunes on weighted impurity (``ccp_alpha``), one-hot or ordinal-encodes factors
and breaks ties differently; rpart instead (a) chooses splits by Gini (``class``) or by the
between-groups sum of squares (``anova``), searching the best binary grouping of a factor's
levels, (b) keeps a split only through its cost-complexity rule on the node risk,
``alpha = cp * R(root)``, evaluated while growing (``partition.c``), and (c) stops on
``minsplit`` / ``minbucket`` / ``maxdepth``.

This module is a literal port of rpart 4.1's ``rpart.c``, ``partition.c``, ``bsplit.c``,
``anova.c`` (the split maximising ``w_l (mean_l - mean)^2 + w_r (mean_r - mean)^2``, factor
levels ordered by their mean response), ``gini.c`` (with more than two classes a factor's
level groupings are enumerated by rpart's Gray code, ``graycode.c``), ``nodesplit.c``,
``mysort.c`` and the class-probability formula of ``rpart.R``, with the same floating-point
operation order, so that the trees equal R's node for node (see
``tests/synth/test_partial_rpart.py`` and the CART references of ``tests/utility``).  The
split search is in numba, the recursion in Python (a tree has at most a few thousand nodes).

Surrogate splits are ported (``surrogate.c``, ``choose_surg.c``, ``nodesplit.c`` and the
prediction of ``pred_rpart.c`` with ``usesurrogate = 2``, ``surrogatestyle = 0``): a record whose
split variable is missing, or whose factor level did not occur in the node, follows the first
usable surrogate, else the majority.  Not ported, because they do not change the tree:
cross-validation (``xval``), competitor splits and variable importance.  Case weights are all 1.

Two entry points: :func:`fit_tree` (the whole tree, used by the partial synthesiser's
``cart``) and :func:`fit_rpart` (a two-class tree's fitted class-1 probabilities and size, the
propensity model of the utility measures).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numba as nb
import numpy as np

LEFT = -1
RIGHT = 1
TreeMethod = Literal["anova", "class"]


# ---------------------------------------------------------------------------------------------
# numba kernels
# ---------------------------------------------------------------------------------------------
@nb.njit(cache=True)
def _mysort(x: np.ndarray, cvec: np.ndarray) -> None:  # pragma: no cover - compiled
    """rpart's quicksort (``mysort.c``), carrying ``cvec`` along; ranges on an explicit stack."""
    stack = np.empty((128, 2), dtype=np.int64)
    top = 0
    stack[0, 0] = 0
    stack[0, 1] = len(x) - 1
    top = 1
    while top > 0:
        top -= 1
        start = stack[top, 0]
        stop = stack[top, 1]
        while start < stop:
            if stop - start < 11:
                for i in range(start + 1, stop + 1):
                    temp = x[i]
                    tempd = cvec[i]
                    j = i - 1
                    while j >= start and x[j] > temp:
                        x[j + 1] = x[j]
                        cvec[j + 1] = cvec[j]
                        j -= 1
                    x[j + 1] = temp
                    cvec[j + 1] = tempd
                break
            i = start
            j = stop
            k = (start + stop) // 2
            median = x[k]
            if x[i] >= x[k]:
                if x[j] > x[k]:  # k is smallest
                    median = x[j] if x[i] > x[j] else x[i]
            elif x[j] < x[k]:
                median = x[i] if x[i] > x[j] else x[j]
            while i < j:
                while x[i] < median:
                    i += 1
                while x[j] > median:
                    j -= 1
                if i < j:
                    if x[i] > x[j]:
                        temp = x[i]
                        x[i] = x[j]
                        x[j] = temp
                        tempd = cvec[i]
                        cvec[i] = cvec[j]
                        cvec[j] = tempd
                    i += 1
                    j -= 1
            while x[i] >= median and i > start:
                i -= 1
            while x[j] <= median and j < stop:
                j += 1
            if (i - start) < (stop - j):
                if (i - start) > 0:
                    stack[top, 0] = start
                    stack[top, 1] = i
                    top += 1
                start = j
            else:
                if (stop - j) > 0:
                    stack[top, 0] = j
                    stack[top, 1] = stop
                    top += 1
                stop = i


@nb.njit(cache=True)
def _graycode_init2(numcat, count, val, gray):  # pragma: no cover - compiled
    """Empty categories first, then the others ordered by ``val`` (stable insertion sort)."""
    gray[0] = 0
    k = 1 if count[0] == 0 else 0
    for i in range(1, numcat):
        if count[i] == 0:
            for j in range(i - 1, k - 1, -1):
                gray[j + 1] = gray[j]
                val[j + 1] = val[j]
            gray[k] = i
            k += 1
        else:
            temp = val[i]
            j = i - 1
            while j >= k and val[j] > temp:
                gray[j + 1] = gray[j]
                val[j + 1] = val[j]
                j -= 1
            val[j + 1] = temp
            gray[j + 1] = i
    return k - 1


@nb.njit(cache=True)
def _graycode_next(gray, numcat, gsave):  # pragma: no cover - compiled
    """The next category to change sides (``graycode()``), ``numcat`` when done; and ``gsave``.

    ``gsave > -2`` walks the ordered categories, ``-2`` the classic Gray code over all subsets
    (``graycode_init1``)."""
    if gsave > -2:
        gsave += 1
        if gsave < numcat:
            return gray[gsave], gsave
        return numcat, gsave
    for i in range(numcat - 1):
        if gray[i] == 1:
            gray[i] = 2
            return i, gsave
        elif gray[i] == 2:
            gray[i] = 1
    return numcat, gsave


@nb.njit(cache=True)
def _anova(n, y, x, nclass, edge, myrisk, csplit):  # pragma: no cover - compiled
    """``anova.c``'s split search over one predictor; returns (improve, split point)."""
    right_wt = 0.0
    right_n = n
    right_sum = 0.0
    for i in range(n):
        right_sum += y[i] * 1.0
        right_wt += 1.0
    grandmean = right_sum / right_wt
    split = 0.0
    if nclass == 0:
        left_sum = 0.0
        left_wt = 0.0
        left_n = 0
        right_sum = 0.0
        best = 0.0
        where = 0
        direction = LEFT
        i = 0
        while right_n > edge:
            left_wt += 1.0
            right_wt -= 1.0
            left_n += 1
            right_n -= 1
            temp = (y[i] - grandmean) * 1.0
            left_sum += temp
            right_sum -= temp
            if x[i + 1] != x[i] and left_n >= edge:
                temp = left_sum * left_sum / left_wt + right_sum * right_sum / right_wt
                if temp > best:
                    best = temp
                    where = i
                    direction = LEFT if left_sum < right_sum else RIGHT
            i += 1
        if best > 0:
            csplit[0] = direction
            split = (x[where] + x[where + 1]) / 2
        return best / myrisk, split
    sums = np.zeros(nclass)
    countn = np.zeros(nclass, dtype=np.int64)
    wts = np.zeros(nclass)
    mean = np.zeros(nclass)
    tsplit = np.zeros(nclass, dtype=np.int64)
    for i in range(n):
        j = int(x[i]) - 1
        countn[j] += 1
        wts[j] += 1.0
        sums[j] += (y[i] - grandmean) * 1.0
    for i in range(nclass):
        if countn[i] > 0:
            tsplit[i] = RIGHT
            mean[i] = sums[i] / wts[i]
    gray = np.zeros(nclass, dtype=np.int64)
    gsave = _graycode_init2(nclass, countn, mean, gray)
    left_wt = 0.0
    left_sum = 0.0
    right_sum = 0.0
    left_n = 0
    best = 0.0
    while True:
        j, gsave = _graycode_next(gray, nclass, gsave)
        if j >= nclass:
            break
        tsplit[j] = LEFT
        left_n += countn[j]
        right_n -= countn[j]
        left_wt += wts[j]
        right_wt -= wts[j]
        left_sum += sums[j]
        right_sum -= sums[j]
        if left_n >= edge and right_n >= edge:
            temp = left_sum * left_sum / left_wt + right_sum * right_sum / right_wt
            if temp > best:
                best = temp
                flip = (left_sum / left_wt) > (right_sum / right_wt)
                for i in range(nclass):
                    csplit[i] = -tsplit[i] if flip else tsplit[i]
    return best / myrisk, split


@nb.njit(cache=True)
def _gini_impurity(left, lwt, right, rwt, aprior, nk):  # pragma: no cover - compiled
    temp = 0.0
    lmean = 0.0
    rmean = 0.0
    for j in range(nk):
        p = aprior[j] * left[j] / lwt
        temp += lwt * (p * (1.0 - p))
        lmean += p * j
        p = aprior[j] * right[j] / rwt
        temp += rwt * (p * (1.0 - p))
        rmean += p * j
    return temp, lmean, rmean


@nb.njit(cache=True, inline="always")
def _gini(n, y, x, numcat, edge, aprior, nk, csplit):  # pragma: no cover - compiled
    """``gini.c``'s split search over one predictor for ``nk`` classes; (improve, split)."""
    left = np.zeros(nk)
    right = np.zeros(nk)
    lwt = 0.0
    rwt = 0.0
    rtot = 0
    ltot = 0
    for i in range(n):
        j = int(y[i])
        rwt += aprior[j] * 1.0
        right[j] += 1.0
        rtot += 1
    total_ss = 0.0
    for i in range(nk):
        temp = aprior[i] * right[i] / rwt
        total_ss += rwt * (temp * (1.0 - temp))
    best = total_ss
    split = 0.0
    if numcat == 0:
        where = 0
        direction = LEFT
        i = 0
        while rtot > edge:
            j = int(y[i])
            rwt -= aprior[j] * 1.0
            lwt += aprior[j] * 1.0
            rtot -= 1
            ltot += 1
            right[j] -= 1.0
            left[j] += 1.0
            if ltot >= edge and x[i + 1] != x[i]:
                if nk == 2:  # a constant class count: the sums unrolled, the same operations (faster)
                    temp, lmean, rmean = _gini_impurity(left, lwt, right, rwt, aprior, 2)
                else:
                    temp, lmean, rmean = _gini_impurity(left, lwt, right, rwt, aprior, nk)
                if temp < best:
                    best = temp
                    where = i
                    direction = LEFT if lmean < rmean else RIGHT
            i += 1
        improve = total_ss - best
        if improve > 0:
            csplit[0] = direction
            split = (x[where] + x[where + 1]) / 2
        return improve, split
    awt = np.zeros(numcat)
    countn = np.zeros(numcat, dtype=np.int64)
    ccnt = np.zeros((nk, numcat))
    for i in range(n):
        j = int(y[i])
        k = int(x[i]) - 1
        awt[k] += aprior[j] * 1.0
        countn[k] += 1
        ccnt[j, k] += 1.0
    tsplit = np.zeros(numcat, dtype=np.int64)
    rate = np.zeros(numcat)
    for i in range(numcat):
        if awt[i] != 0:
            rate[i] = ccnt[0, i] / awt[i]
            tsplit[i] = RIGHT
    gray = np.zeros(numcat, dtype=np.int64)
    gsave = -2
    if nk == 2:
        gsave = _graycode_init2(numcat, countn, rate, gray)
    else:
        for i in range(numcat):
            gray[i] = 1 if countn[i] else 0
    while True:
        i, gsave = _graycode_next(gray, numcat, gsave)
        if i >= numcat:
            break
        if tsplit[i] == LEFT:
            tsplit[i] = RIGHT
            rwt += awt[i]
            lwt -= awt[i]
            rtot += countn[i]
            ltot -= countn[i]
            for j in range(nk):
                right[j] += ccnt[j, i]
                left[j] -= ccnt[j, i]
        else:
            tsplit[i] = LEFT
            rwt -= awt[i]
            lwt += awt[i]
            rtot -= countn[i]
            ltot += countn[i]
            for j in range(nk):
                right[j] -= ccnt[j, i]
                left[j] += ccnt[j, i]
        if ltot >= edge and rtot >= edge:
            if nk == 2:
                temp, lmean, rmean = _gini_impurity(left, lwt, right, rwt, aprior, 2)
            else:
                temp, lmean, rmean = _gini_impurity(left, lwt, right, rwt, aprior, nk)
            if temp < best:
                best = temp
                for j in range(numcat):
                    csplit[j] = tsplit[j] if lmean < rmean else -tsplit[j]
    return total_ss - best, split


@nb.njit(cache=True)
def _bsplit(is_anova, xdata, ncat, sorts, y, n1, n2, edge, myrisk, aprior, nk, iscale, maxcat):  # pragma: no cover
    """Best primary split of a node (``bsplit.c`` + ``insert_split``'s ordering of the head)."""
    nvar = xdata.shape[0]
    xtemp = np.empty(n2 - n1)
    ytemp = np.empty(n2 - n1, dtype=y.dtype)
    csplit = np.zeros(max(maxcat, 1), dtype=np.int64)
    best_csplit = np.zeros(max(maxcat, 1), dtype=np.int64)
    best_var = -1
    best_improve = 0.0
    best_split = 0.0
    for i in range(nvar):
        nc = ncat[i]
        k = 0
        for j in range(n1, n2):
            kk = sorts[i, j]
            if kk >= 0:
                xtemp[k] = xdata[i, kk]
                ytemp[k] = y[kk]
                k += 1
        if k == 0 or (nc == 0 and xtemp[0] == xtemp[k - 1]):
            continue
        for jj in range(max(nc, 1)):
            csplit[jj] = 0
        if is_anova:
            improve, split = _anova(k, ytemp, xtemp, nc, edge, myrisk, csplit)
        elif nk == 2:  # _gini inlined with a constant class count: unrolled class loops (faster)
            improve, split = _gini(k, ytemp, xtemp, nc, edge, aprior, 2, csplit)
        else:
            improve, split = _gini(k, ytemp, xtemp, nc, edge, aprior, nk, csplit)
        if improve > iscale:
            iscale = improve
        if improve > iscale * 1e-10 and (best_var < 0 or improve > best_improve):
            best_var = i
            best_improve = improve
            best_split = split
            for jj in range(max(nc, 1)):
                best_csplit[jj] = csplit[jj]
    return best_var, best_improve, best_split, best_csplit, iscale


@nb.njit(cache=True)
def _choose_surg(n1, n2, y, x, order, ncat, csplit, tleft, tright):  # pragma: no cover - compiled
    """``choose_surg.c``: the split of ``x`` agreeing most with the primary directions ``y``
    (-1 left, +1 right, 0 missing); returns (agreement, adjusted agreement, split point)."""
    split = 0.0
    success = False
    if ncat == 0:
        lastx = 0.0
        ll = 0
        rl = 0
        llwt = 0.0
        rlwt = 0.0
        for i in range(n2 - 1, n1 - 1, -1):
            j = order[i]
            if j >= 0:
                lastx = x[j]
                if y[j] == LEFT:
                    ll += 1
                    llwt += 1.0
                elif y[j] == RIGHT:
                    rl += 1
                    rlwt += 1.0
        agree = llwt if llwt > rlwt else rlwt
        lr = 0
        rr = 0
        lrwt = 0.0
        rrwt = 0.0
        csplit[0] = LEFT
        split = lastx
        i = n1
        while (ll + rl) >= 2:
            j = order[i]
            if j >= 0:
                if (lr + rr) >= 2 and x[j] != lastx:
                    if (llwt + rrwt) > agree:
                        success = True
                        agree = llwt + rrwt
                        csplit[0] = RIGHT
                        split = (x[j] + lastx) / 2
                    elif (lrwt + rlwt) > agree:
                        success = True
                        agree = lrwt + rlwt
                        csplit[0] = LEFT
                        split = (x[j] + lastx) / 2
                if y[j] == LEFT:
                    ll -= 1
                    lr += 1
                    llwt -= 1.0
                    lrwt += 1.0
                elif y[j] == RIGHT:
                    rl -= 1
                    rr += 1
                    rlwt -= 1.0
                    rrwt += 1.0
                lastx = x[j]
            i += 1
    else:
        left = np.zeros(ncat)
        right = np.zeros(ncat)
        for i in range(n1, n2):
            j = order[i]
            if j >= 0:
                k = int(x[j]) - 1
                if y[j] == LEFT:
                    left[k] += 1.0
                elif y[j] == RIGHT:
                    right[k] += 1.0
        llwt = 0.0
        rrwt = 0.0
        for i in range(ncat):
            llwt += left[i]
            rrwt += right[i]
        defdir = LEFT if llwt > rrwt else RIGHT
        agree = 0.0
        lcount = 0
        rcount = 0
        for i in range(ncat):
            if left[i] == 0 and right[i] == 0:
                csplit[i] = 0
            elif left[i] < right[i] or (left[i] == right[i] and defdir == RIGHT):
                agree += right[i]
                csplit[i] = RIGHT
                lcount += int(left[i])
                rcount += int(right[i])
            else:
                agree += left[i]
                csplit[i] = LEFT
                lcount += int(right[i])
                rcount += int(left[i])
        success = lcount > 1 and rcount > 1
    if not success:
        return 0.0, 0.0, split
    total = tleft + tright  # surrogatestyle = 0: the whole node is the denominator
    majority = (tleft if tleft > tright else tright) / total
    agreement = agree / total
    return agreement, (agreement - majority) / (1.0 - majority), split


@nb.njit(cache=True)
def _primary_directions(xdata, ncat, sorts, var, spoint, csplit, n1, n2, tempy):  # pragma: no cover
    """Direction the primary split sends each record of the node (0: missing); (nleft, nright)."""
    lcount = 0.0
    rcount = 0.0
    for i in range(n1, n2):
        j = sorts[var, i]
        if j < 0:
            tempy[-(j + 1)] = 0
            continue
        if ncat[var] > 0:
            d = csplit[int(xdata[var, j]) - 1]
        elif xdata[var, j] < spoint:
            d = csplit[0]
        else:
            d = -csplit[0]
        tempy[j] = d
        if d == LEFT:
            lcount += 1.0
        elif d == RIGHT:
            rcount += 1.0
    return lcount, rcount


@nb.njit(cache=True)
def _surrogates(xdata, ncat, sorts, var, spoint, csplit, n1, n2, tempy, maxcat):  # pragma: no cover
    """``surrogate.c``: every other variable's best surrogate split of the node's primary split.

    Returns the agreement, adjusted agreement, split point and directions of each variable
    (agreement 0 for the primary and for variables with no useful surrogate) and the node's
    majority direction (``lastsurrogate``)."""
    nvar = xdata.shape[0]
    tleft, tright = _primary_directions(xdata, ncat, sorts, var, spoint, csplit, n1, n2, tempy)
    last = RIGHT if tleft < tright else (LEFT if tleft > tright else 0)
    agreement = np.zeros(nvar)
    adj = np.zeros(nvar)
    split = np.zeros(nvar)
    dirs = np.zeros((nvar, max(maxcat, 1)), dtype=np.int64)
    for i in range(nvar):
        if i == var:
            continue
        agreement[i], adj[i], split[i] = _choose_surg(
            n1, n2, tempy, xdata[i], sorts[i], ncat[i], dirs[i], tleft, tright
        )
    return agreement, adj, split, dirs, last


@nb.njit(cache=True)
def _surrogate_side(xdata, ncat, jj, svar, ssplit, sdirs, last):  # pragma: no cover - compiled
    """Direction of record ``jj``, missing the primary split variable: its first usable
    surrogate's, else the majority direction ``last``."""
    for s in range(len(svar)):
        v = svar[s]
        if np.isnan(xdata[v, jj]):
            continue
        if ncat[v] > 0:
            d = sdirs[s, int(xdata[v, jj]) - 1]
            if d == 0:
                continue
            return d
        d = sdirs[s, 0] if xdata[v, jj] < ssplit[s] else -sdirs[s, 0]
        return d if d != 0 else last
    return last


@nb.njit(cache=True)
def _nodesplit(  # pragma: no cover - compiled
    xdata, ncat, sorts, which, var, spoint, csplit, n1, n2, nodenum, tempvec, svar, ssplit, sdirs, last
):
    """``nodesplit.c``: send the node's records left or right — by the primary split, a record
    missing it by the first usable surrogate, then by the majority direction (``usesurrogate =
    2``); records none of these place stay in the node.  Every ``sorts`` row is reordered stably
    into left, right, unplaced.  Returns (nleft, nright)."""
    leftson = 2 * nodenum
    rightson = leftson + 1
    nleft = 0
    nright = 0
    for i in range(n1, n2):
        j = sorts[var, i]
        if j < 0:
            jj = -(j + 1)
            side = _surrogate_side(xdata, ncat, jj, svar, ssplit, sdirs, last)
            if side == LEFT:
                which[jj] = leftson
                nleft += 1
            elif side == RIGHT:
                which[jj] = rightson
                nright += 1
            continue
        if ncat[var] > 0:
            side = csplit[int(xdata[var, j]) - 1]
        elif xdata[var, j] < spoint:
            side = csplit[0]
        else:
            side = -csplit[0]
        if side == LEFT:
            which[j] = leftson
            nleft += 1
        else:
            which[j] = rightson
            nright += 1
    nvar = xdata.shape[0]
    all_placed = nleft + nright == n2 - n1
    for k in range(nvar):
        i1 = n1
        i2 = n1 + nleft
        i3 = i2 + nright
        if all_placed:  # the common case as a two-way partition (a measurably faster loop)
            for i in range(n1, n2):
                j = sorts[k, i]
                if which[j if j >= 0 else -(j + 1)] == leftson:
                    sorts[k, i1] = j
                    i1 += 1
                else:
                    tempvec[i2] = j
                    i2 += 1
        else:
            for i in range(n1, n2):
                j = sorts[k, i]
                w = which[j if j >= 0 else -(j + 1)]
                if w == leftson:
                    sorts[k, i1] = j
                    i1 += 1
                elif w == rightson:
                    tempvec[i2] = j
                    i2 += 1
                else:
                    tempvec[i3] = j
                    i3 += 1
        for i in range(n1 + nleft, n2):
            sorts[k, i] = tempvec[i]
    return nleft, nright


@nb.njit(cache=True)
def _node_eval(is_anova, sorts0, y, n1, n2, prior, nk, counts):  # pragma: no cover - compiled
    """``anovass`` / ``ginidev`` over the node's records in ``sorts[0]`` order: (yval, risk); a
    class node's class counts are added to ``counts`` (zeros, length ``nk``)."""
    if is_anova:
        temp = 0.0
        twt = 0.0
        for i in range(n1, n2):
            j = sorts0[i]
            if j < 0:
                j = -(j + 1)
            temp += y[j] * 1.0
            twt += 1.0
        mean = temp / twt
        ss = 0.0
        for i in range(n1, n2):
            j = sorts0[i]
            if j < 0:
                j = -(j + 1)
            temp = y[j] - mean
            ss += temp * temp * 1.0
        return mean, ss
    for i in range(n1, n2):
        j = sorts0[i]
        if j < 0:
            j = -(j + 1)
        counts[int(y[j])] += 1.0
    best = 0
    dev = 0.0
    for i in range(nk):
        temp = 0.0
        for j in range(nk):
            temp += counts[j] * (0.0 if i == j else 1.0) * prior[j]
        if i == 0 or temp < dev:
            best = i
            dev = temp
    return float(best + 1), dev


# ---------------------------------------------------------------------------------------------
# the tree
# ---------------------------------------------------------------------------------------------
def _padded(csplit: np.ndarray, maxcat: int) -> np.ndarray:
    out = np.zeros(max(maxcat, 1), dtype=np.int64)
    out[: len(csplit)] = csplit
    return out


_EMPTY_FLOAT = np.zeros(0)  # a node's counts / csplit until it is evaluated / split (never written to)
_EMPTY_INT = np.zeros(0, dtype=np.int64)


class _Node:
    __slots__ = ("complexity", "counts", "csplit", "left", "n", "right", "risk", "split", "surrogates", "var", "yval")

    def __init__(self, complexity: float = 0.0) -> None:
        self.complexity = complexity
        self.risk = 0.0
        self.yval = 0.0
        self.n = 0
        self.counts = _EMPTY_FLOAT
        self.var = -1
        self.split = 0.0
        self.csplit = _EMPTY_INT
        #: (variable, split point, directions) of the surrogate splits, best first
        self.surrogates: Sequence[tuple[int, float, np.ndarray]] = ()
        self.left: _Node | None = None
        self.right: _Node | None = None


@dataclass(frozen=True)
class Tree:
    """A fitted tree, one entry per node in ascending node number (root 1, children 2k, 2k+1).

    Attributes
    ----------
    method : {"anova", "class"}
    node : ndarray of int
    var : ndarray of int
        Index of the split variable (-1 for a leaf).
    ncat : ndarray of int
        Levels of each predictor (0 for numeric ones).
    split : ndarray of float
        Split point of a numeric split.
    csplit : ndarray of int (n_nodes, max(1, max ncat))
        Direction of a numeric split (column 0: -1 when ``x < split`` goes left, +1 when it
        goes right), or per factor level -1 left, +1 right, 0 not present in the node.
    n : ndarray of int
        Training records in the node.
    dev, yval : ndarray of float
        Node risk (sum of squares, or misclassification count) and fitted value (mean, or
        1-based class).
    complexity : ndarray of float
        rpart's complexity of the node, scaled by the root's risk (``frame$complexity``).
    counts : ndarray (n_nodes, n_classes)
        Class counts of a class tree's nodes (empty for anova).
    prob_scale : ndarray
        rpart's factor ``prior / max(1, counts)`` turning counts into class probabilities.
    where : ndarray of int
        Leaf node of every training record (``fit$where`` as node numbers).
    sur_var : ndarray of int (n_nodes, maxsurrogate)
        Surrogate split variables of each node, best first (-1 pads).
    sur_split : ndarray of float (n_nodes, maxsurrogate)
    sur_dirs : ndarray of int (n_nodes, maxsurrogate, max(1, max ncat))
        As ``split`` / ``csplit`` for the surrogates.
    """

    method: TreeMethod
    node: np.ndarray
    var: np.ndarray
    ncat: np.ndarray
    split: np.ndarray
    csplit: np.ndarray
    n: np.ndarray
    dev: np.ndarray
    yval: np.ndarray
    complexity: np.ndarray
    counts: np.ndarray
    prob_scale: np.ndarray
    where: np.ndarray
    sur_var: np.ndarray
    sur_split: np.ndarray
    sur_dirs: np.ndarray

    @property
    def is_leaf(self) -> np.ndarray:
        return self.var < 0

    def leaves(self, x: np.ndarray) -> np.ndarray:
        """The node each row of ``x`` (same columns and coding as the fit) descends to.

        As rpart's prediction (``usesurrogate = 2``): a row whose split value is missing, or
        whose factor level did not occur in the node, follows the first surrogate split it can
        use, else goes to the larger child (more training records); with equal children it
        stops at the internal node.
        """
        x = np.asarray(x, dtype=float)
        pos = np.zeros(len(x), dtype=np.int64)  # position in self.node
        active = np.flatnonzero(~self.is_leaf[pos])
        index = {int(k): i for i, k in enumerate(self.node)}
        left_pos = np.array([index.get(2 * int(k), -1) for k in self.node])
        right_pos = np.array([index.get(2 * int(k) + 1, -1) for k in self.node])
        while active.size:
            p = pos[active]
            var = self.var[p]
            value = x[active, var]
            numeric = self.ncat[var] == 0
            side = np.zeros(active.size, dtype=np.int64)
            num_dir = self.csplit[p, 0]
            side[numeric] = np.where(value[numeric] < self.split[p[numeric]], num_dir[numeric], -num_dir[numeric])
            fac = ~numeric & ~np.isnan(value)
            code = np.where(fac, np.nan_to_num(value, nan=1.0), 1.0).astype(np.int64) - 1
            ok = fac & (code >= 0) & (code < self.csplit.shape[1])
            side[ok] = self.csplit[p[ok], code[ok]]
            side[numeric & np.isnan(value)] = 0
            for j in range(self.sur_var.shape[1]):  # rpart's prediction: surrogates in order
                lost = np.flatnonzero(side == 0)
                sv = self.sur_var[p[lost], j]
                usable = sv >= 0
                lost, sv = lost[usable], sv[usable]
                if lost.size == 0:
                    continue
                sval = x[active[lost], sv]
                ok = ~np.isnan(sval)
                lost, sv, sval = lost[ok], sv[ok], sval[ok]
                num = self.ncat[sv] == 0
                d = np.zeros(lost.size, dtype=np.int64)
                sdir0 = self.sur_dirs[p[lost], j, 0]
                d[num] = np.where(sval[num] < self.sur_split[p[lost[num]], j], sdir0[num], -sdir0[num])
                code = sval[~num].astype(np.int64) - 1
                inside = (code >= 0) & (code < self.sur_dirs.shape[2])
                dd = np.zeros(code.size, dtype=np.int64)
                dd[inside] = self.sur_dirs[p[lost[~num]][inside], j, code[inside]]
                d[~num] = dd
                side[lost] = d
            lost = side == 0
            nl, nr = self.n[left_pos[p]], self.n[right_pos[p]]
            side[lost] = np.where(nl[lost] > nr[lost], LEFT, np.where(nl[lost] < nr[lost], RIGHT, 0))
            moved = side != 0
            pos[active[moved]] = np.where(side[moved] == LEFT, left_pos[p[moved]], right_pos[p[moved]])
            nxt = active[moved]
            active = nxt[~self.is_leaf[pos[nxt]]]
        return self.node[pos]

    def class_prob(self, nodes: np.ndarray) -> np.ndarray:
        """Class probabilities of the given nodes (``predict(type = "prob")``)."""
        pos = np.searchsorted(self.node, nodes)
        t = self.counts[pos] * self.prob_scale
        return t / t.sum(axis=1, keepdims=True)


class _Grower:
    def __init__(self, method, xdata, ncat, y, nk, minsplit, minbucket, cp, maxdepth, maxsurrogate):
        self.maxsurrogate = int(maxsurrogate)
        self.is_anova = method == "anova"
        self.method = method
        self.xdata, self.ncat, self.y, self.nk = xdata, ncat, y, nk
        n = xdata.shape[1]
        self.minsplit, self.edge = int(minsplit), int(minbucket)
        self.maxnode = int(2.0**maxdepth) - 1
        self.maxcat = int(ncat.max()) if len(ncat) else 0
        self.sorts = np.empty((xdata.shape[0], n), dtype=np.int64)
        for i in range(xdata.shape[0]):
            idx = np.arange(n, dtype=np.int64)
            miss = np.isnan(xdata[i])
            idx[miss] = -(idx[miss] + 1)
            if ncat[i] == 0:
                xt = np.where(miss, 0.0, xdata[i]).copy()
                _mysort(xt, idx)
            self.sorts[i] = idx
        self.sorts0 = self.sorts[0] if len(self.sorts) else self.which  # a view: the node evaluation's order
        self.width = [max(int(c), 1) for c in ncat]  # length of a split's directions per variable
        self.which = np.ones(n, dtype=np.int64)
        self.tempvec = np.empty(n, dtype=np.int64)
        self.prior = np.zeros(1)
        self.aprior = np.zeros(1)
        self.class_counts = np.zeros(0)
        if not self.is_anova:
            counts = np.bincount(y.astype(np.int64), minlength=nk).astype(float)
            freq = counts / float(n)
            parm_prior = counts / counts.sum()  # rpart's default prior: observed class shares
            temp = 0.0
            aprior = np.zeros(nk)
            for i in range(nk):
                for j in range(nk):
                    loss = 0.0 if i == j else 1.0
                    temp += loss * parm_prior[i]
                    aprior[i] += loss * parm_prior[i]
            self.prior = np.where(freq > 0, parm_prior / np.where(freq > 0, freq, 1.0), parm_prior)
            self.aprior = np.where(freq > 0, aprior / (temp * np.where(freq > 0, freq, 1.0)), aprior)
            self.class_counts = counts
        width = max(self.maxcat, 1)
        self.no_surrogates = (np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros((0, width), dtype=np.int64))
        self.iscale = 0.0
        root = _Node()
        # the root is evaluated over the records in data order (rpart.c)
        order = np.arange(n, dtype=np.int64)
        root.counts = _EMPTY_FLOAT if self.is_anova else np.zeros(nk)
        root.yval, root.risk = _node_eval(self.is_anova, order, y, 0, n, self.prior, nk, root.counts)
        root.n = n
        root.complexity = root.risk
        self.alpha = cp * root.risk
        self.root = root
        self._partition(1, root, 0, n)

    def _surrogates(self, me: _Node, n1: int, n2: int) -> int:
        """Up to ``maxsurrogate`` surrogate splits of the node, kept in ``insert_split``'s order
        (by agreement, earlier variables first among ties); returns the majority direction."""
        agreement, adj, split, dirs, last = _surrogates(
            self.xdata, self.ncat, self.sorts, me.var, me.split, _padded(me.csplit, self.maxcat), n1, n2,
            self.tempvec, self.maxcat,
        )  # fmt: skip
        kept: list[tuple[float, int]] = []
        for i in range(len(agreement)):
            if i == me.var or adj[i] <= 1e-10:
                continue
            pos = next((k for k, (a, _) in enumerate(kept) if agreement[i] > a), len(kept))
            if len(kept) == self.maxsurrogate and pos == len(kept):
                continue
            kept.insert(pos, (agreement[i], i))
            del kept[self.maxsurrogate :]
        me.surrogates = [(i, float(split[i]), dirs[i, : max(int(self.ncat[i]), 1)].copy()) for _, i in kept]
        return int(last)

    def _partition(self, nodenum: int, me: _Node, n1: int, n2: int) -> tuple[int, float]:
        alpha = self.alpha
        if nodenum > 1:
            me.counts = _EMPTY_FLOAT if self.is_anova else np.zeros(self.nk)
            me.yval, me.risk = _node_eval(self.is_anova, self.sorts0, self.y, n1, n2, self.prior, self.nk, me.counts)
            me.n = n2 - n1
            tempcp = me.risk
            if tempcp > me.complexity:
                tempcp = me.complexity
        else:
            tempcp = me.risk
        if (n2 - n1) < self.minsplit or tempcp <= alpha or nodenum > self.maxnode:
            me.complexity = alpha
            return 0, me.risk
        var, _, spoint, csplit, self.iscale = _bsplit(
            self.is_anova,
            self.xdata,
            self.ncat,
            self.sorts,
            self.y,
            n1,
            n2,
            self.edge,
            me.risk,
            self.aprior,
            self.nk,
            self.iscale,
            self.maxcat,
        )
        if var < 0:
            me.complexity = alpha
            return 0, me.risk
        me.var, me.split, me.csplit = var, spoint, csplit[: self.width[var]]  # csplit: fresh from _bsplit
        if self.maxsurrogate == 0:
            last, (svar, ssplit, sdirs) = 0, self.no_surrogates
        else:
            last = self._surrogates(me, n1, n2)
            svar = np.array([v for v, _, _ in me.surrogates], dtype=np.int64)
            ssplit = np.array([sp for _, sp, _ in me.surrogates], dtype=float)
            sdirs = np.zeros((len(me.surrogates), max(self.maxcat, 1)), dtype=np.int64)
            for k, (_, _, d) in enumerate(me.surrogates):
                sdirs[k, : len(d)] = d
        nleft, nright = _nodesplit(
            self.xdata, self.ncat, self.sorts, self.which, var, spoint, csplit, n1, n2, nodenum, self.tempvec,
            svar, ssplit, sdirs, last,
        )  # fmt: skip
        me.left = _Node(tempcp - alpha)
        left_split, left_risk = self._partition(2 * nodenum, me.left, n1, n1 + nleft)
        tempcp = (me.risk - left_risk) / (left_split + 1)
        tempcp2 = me.risk - me.left.risk
        if tempcp < tempcp2:
            tempcp = tempcp2
        if tempcp > me.complexity:
            tempcp = me.complexity
        me.right = _Node(tempcp - alpha)
        right_split, right_risk = self._partition(2 * nodenum + 1, me.right, n1 + nleft, n1 + nleft + nright)
        tempcp = (me.risk - (left_risk + right_risk)) / (left_split + right_split + 1)
        if me.right.complexity > me.left.complexity:
            if tempcp > me.left.complexity:
                left_risk = me.left.risk
                left_split = 0
                tempcp = (me.risk - (left_risk + right_risk)) / (left_split + right_split + 1)
                if tempcp > me.right.complexity:
                    right_risk = me.right.risk
                    right_split = 0
        elif tempcp > me.right.complexity:
            right_split = 0
            right_risk = me.right.risk
            tempcp = (me.risk - (left_risk + right_risk)) / (left_split + right_split + 1)
            if tempcp > me.left.complexity:
                left_risk = me.left.risk
                left_split = 0
        me.complexity = (me.risk - (left_risk + right_risk)) / (left_split + right_split + 1)
        if me.complexity <= alpha:
            me.left = None
            me.right = None
            me.var = -1
            idx = self.sorts[0, n1:n2]
            idx = np.where(idx < 0, -(idx + 1), idx)
            self.which[idx] = nodenum
            return 0, me.risk
        return left_split + right_split + 1, left_risk + right_risk

    def result(self) -> Tree:
        nodes: dict[int, _Node] = {}
        stack = [(1, self.root)]
        while stack:
            num, node = stack.pop()
            nodes[num] = node
            if node.left is not None and node.right is not None:
                stack.append((2 * num, node.left))
                stack.append((2 * num + 1, node.right))
        keys = sorted(nodes)
        ordered = [nodes[k] for k in keys]
        nums = np.array(keys, dtype=np.int64)
        where = self.which.copy()
        known = np.isin(where, nums)
        while not known.all():  # rpart.c: a record of a trimmed node belongs to its nearest kept ancestor
            where[~known] //= 2
            known = np.isin(where, nums)
        width = max(1, self.maxcat)
        csplit = np.zeros((len(nums), width), dtype=np.int64)
        for i, nd in enumerate(ordered):
            if len(nd.csplit):
                csplit[i, : len(nd.csplit)] = nd.csplit
        root_risk = self.root.risk
        k_sur = max(1, self.maxsurrogate)
        sur_var = np.full((len(nums), k_sur), -1, dtype=np.int64)
        sur_split = np.zeros((len(nums), k_sur))
        sur_dirs = np.zeros((len(nums), k_sur, width), dtype=np.int64)
        for i, nd in enumerate(ordered if self.maxsurrogate else ()):
            for j, (v, sp, d) in enumerate(nd.surrogates if nd.var >= 0 else ()):
                sur_var[i, j], sur_split[i, j] = v, sp
                sur_dirs[i, j, : len(d)] = d
        # rpart.c's fix_cp: no node's complexity exceeds its parent's (parents come first in nums)
        for k in keys[1:]:
            node, parent = nodes[k], nodes[k // 2]
            node.complexity = min(node.complexity, parent.complexity)
        if self.is_anova:
            counts, scale = np.zeros((len(nums), 0)), np.zeros(0)
        else:
            counts = np.array([nd.counts for nd in ordered])
            # rpart.R: temp = counts %*% diag(prior / pmax(1, counts)); yprob = temp / rowSums(temp)
            scale = (self.class_counts / self.class_counts.sum()) / np.maximum(1.0, self.class_counts)
        return Tree(
            method=self.method,
            node=nums,
            var=np.array([nd.var for nd in ordered], dtype=np.int64),
            ncat=self.ncat.copy(),
            split=np.array([nd.split for nd in ordered]),
            csplit=csplit,
            n=np.array([nd.n for nd in ordered], dtype=np.int64),
            dev=np.array([nd.risk for nd in ordered]),
            yval=np.array([nd.yval for nd in ordered]),
            complexity=np.array([nd.complexity for nd in ordered]) / root_risk,
            counts=counts,
            prob_scale=scale,
            where=where,
            sur_var=sur_var,
            sur_split=sur_split,
            sur_dirs=sur_dirs,
        )


def fit_tree(
    x: np.ndarray,
    ncat: np.ndarray,
    y: np.ndarray,
    method: TreeMethod,
    *,
    n_classes: int = 0,
    cp: float = 0.01,
    minbucket: int | None = None,
    minsplit: int | None = None,
    maxdepth: int = 30,
    maxsurrogate: int = 5,
) -> Tree:
    """Grow rpart's ``anova`` or ``class`` tree.

    Parameters
    ----------
    x : ndarray (n_records, n_variables)
        Predictors: numeric values (NaN missing), or factor codes ``1..ncat`` for factors.
    ncat : ndarray of int
        Levels of each factor column, 0 for numeric columns.
    y : ndarray
        Numeric response (``anova``) or class codes ``0..n_classes-1`` (``class``), no missing.
    method : {"anova", "class"}
    n_classes : int
        Number of classes of a class tree (every class should occur in ``y``).
    cp, minbucket, minsplit, maxdepth, maxsurrogate
        ``rpart.control`` (surrogatestyle 0, usesurrogate 2); ``minsplit`` defaults to
        ``3 * minbucket`` when only ``minbucket`` is given, ``minbucket`` to
        ``round(minsplit / 3)``, and both to 20/7.
    """
    if minbucket is None and minsplit is None:
        minsplit, minbucket = 20, 7
    elif minsplit is None:
        minsplit = 3 * int(minbucket)
    elif minbucket is None:
        minbucket = max(1, round(minsplit / 3))
    minbucket = max(1, int(minbucket))
    if not 1 <= maxdepth <= 30:
        raise ValueError("maxdepth must be between 1 and 30 (rpart's limit)")
    xdata = np.ascontiguousarray(np.asarray(x, dtype=float).T)
    yy = np.ascontiguousarray(np.asarray(y, dtype=np.int64 if method == "class" else float))
    nk = int(n_classes) if method == "class" else 0
    if maxsurrogate < 0:
        raise ValueError("maxsurrogate must be >= 0")
    grower = _Grower(
        method, xdata, np.asarray(ncat, dtype=np.int64), yy, nk, minsplit, minbucket, cp, maxdepth, maxsurrogate
    )
    return grower.result()


@dataclass(frozen=True)
class TreeFit:
    """A two-class tree's fit on its training records (what a propensity score needs).

    Attributes
    ----------
    leaf : ndarray
        Node number (root 1, children 2k and 2k+1) of each record's leaf.
    prob : ndarray
        Predicted probability of class 1 for each record (rpart's ``predict(fit)[, 2]``).
    n_nodes, n_leaves : int
        Size of the tree (``nrow(fit$frame)`` and its number of leaves).
    """

    leaf: np.ndarray
    prob: np.ndarray
    n_nodes: int
    n_leaves: int


def fit_rpart(
    x: np.ndarray,
    ncat: np.ndarray,
    y: np.ndarray,
    *,
    cp: float = 0.01,
    minbucket: int | None = None,
    minsplit: int | None = None,
    maxdepth: int = 30,
) -> TreeFit:
    """Grow rpart's classification tree on ``x`` for the 0/1 response ``y``: :func:`fit_tree`
    with ``method = "class"``, two classes and no surrogate splits.

    Surrogates only route records whose split variable is missing; the utility measures'
    prepared data have none (their missing values become NA levels and indicators), so they
    are not computed.  Arguments as :func:`fit_tree` (``x`` without missing values, ``y`` 0 or 1).
    """
    tree = fit_tree(
        x, ncat, y, "class", n_classes=2, cp=cp, minbucket=minbucket, minsplit=minsplit, maxdepth=maxdepth,
        maxsurrogate=0,
    )  # fmt: skip
    prob = tree.class_prob(tree.node)[:, 1][np.searchsorted(tree.node, tree.where)]
    return TreeFit(leaf=tree.where, prob=prob, n_nodes=len(tree.node), n_leaves=int(tree.is_leaf.sum()))
