"""A classification tree that follows R's ``rpart`` (``method = "class"``, two classes) exactly.

Why a port: synthpop's CART pMSE depends on the precise tree rpart grows, and no Python
library grows that tree.  scikit-learn prunes on weighted impurity (``ccp_alpha``), one-hot or
ordinal-encodes factors and breaks ties differently; rpart instead (a) chooses splits by
Gini, searching the best binary grouping of a factor's levels by ordering them by their class
share, (b) keeps a split only through its cost-complexity rule on the *misclassification*
risk, ``alpha = cp * R(root)``, evaluated while growing (``partition.c``), and (c) stops on
``minsplit`` / ``minbucket`` / ``maxdepth``.  This module is a literal port of rpart 4.1's
``rpart.c``, ``partition.c``, ``bsplit.c``, ``gini.c``, ``graycode.c``, ``nodesplit.c``,
``mysort.c`` and the class-probability formula of ``rpart.R``, with the same floating-point
operation order (so ties are broken the same way), the split search in numba and the
recursion in Python (a tree has at most a few thousand nodes).

Not ported, because they do not change the tree or the fitted probabilities of complete
data: cross-validation (``xval``), competitor and surrogate splits (used only to route
records whose split variable is missing; the prepared propensity data have no missing
values), variable importance.  Case weights are all 1.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba as nb
import numpy as np

LEFT = -1
RIGHT = 1


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
def _all_right(n, y, aprior):  # pragma: no cover - compiled
    """rpart's start of a split search: every record on the right; the node's Gini risk."""
    right = np.zeros(2)
    rwt = 0.0
    rtot = 0
    for i in range(n):
        j = y[i]
        rwt += aprior[j] * 1.0
        right[j] += 1.0
        rtot += 1
    total_ss = 0.0
    for i in range(2):
        temp = aprior[i] * right[i] / rwt
        total_ss += rwt * (temp * (1.0 - temp))
    return right, rwt, rtot, total_ss


@nb.njit(cache=True)
def _split_gini(left, lwt, right, rwt, aprior):  # pragma: no cover - compiled
    """Gini risk of a left/right split and both sides' class-1 rates (gini.c's order of sums)."""
    temp = 0.0
    lmean = 0.0
    rmean = 0.0
    for jj in range(2):
        p = aprior[jj] * left[jj] / lwt
        temp += lwt * (p * (1.0 - p))
        lmean += p * jj
        p = aprior[jj] * right[jj] / rwt
        temp += rwt * (p * (1.0 - p))
        rmean += p * jj
    return temp, lmean, rmean


@nb.njit(cache=True)
def _gini_continuous(n, y, x, edge, aprior):  # pragma: no cover - compiled
    left = np.zeros(2)
    lwt = 0.0
    ltot = 0
    right, rwt, rtot, total_ss = _all_right(n, y, aprior)
    best = total_ss
    where = 0
    direction = LEFT
    i = 0
    while rtot > edge:
        j = y[i]
        rwt -= aprior[j] * 1.0
        lwt += aprior[j] * 1.0
        rtot -= 1
        ltot += 1
        right[j] -= 1.0
        left[j] += 1.0
        if ltot >= edge and x[i + 1] != x[i]:
            temp, lmean, rmean = _split_gini(left, lwt, right, rwt, aprior)
            if temp < best:
                best = temp
                where = i
                direction = LEFT if lmean < rmean else RIGHT
        i += 1
    improve = total_ss - best
    split = 0.0
    if improve > 0:
        split = (x[where] + x[where + 1]) / 2
    return improve, split, direction


@nb.njit(cache=True)
def _gini_categorical(n, y, x, numcat, edge, aprior, csplit):  # pragma: no cover - compiled
    left = np.zeros(2)
    lwt = 0.0
    ltot = 0
    right, rwt, rtot, total_ss = _all_right(n, y, aprior)
    best = total_ss
    awt = np.zeros(numcat)
    countn = np.zeros(numcat, dtype=np.int64)
    ccnt0 = np.zeros(numcat)
    ccnt1 = np.zeros(numcat)
    for i in range(n):
        j = y[i]
        k = int(x[i]) - 1
        awt[k] += aprior[j] * 1.0
        countn[k] += 1
        if j == 0:
            ccnt0[k] += 1.0
        else:
            ccnt1[k] += 1.0
    tsplit = np.zeros(numcat, dtype=np.int64)
    rate = np.zeros(numcat)
    for i in range(numcat):
        if awt[i] == 0:
            tsplit[i] = 0
        else:
            rate[i] = ccnt0[i] / awt[i]
            tsplit[i] = RIGHT
    # graycode_init2: empty categories first, then by rate (insertion sort, stable)
    gray = np.zeros(numcat, dtype=np.int64)
    gray[0] = 0
    k = 1 if countn[0] == 0 else 0
    for i in range(1, numcat):
        if countn[i] == 0:
            for jj in range(i - 1, k - 1, -1):
                gray[jj + 1] = gray[jj]
                rate[jj + 1] = rate[jj]
            gray[k] = i
            k += 1
        else:
            temp = rate[i]
            jj = i - 1
            while jj >= k and rate[jj] > temp:
                gray[jj + 1] = gray[jj]
                rate[jj + 1] = rate[jj]
                jj -= 1
            rate[jj + 1] = temp
            gray[jj + 1] = i
    gsave = k - 1
    while True:
        gsave += 1
        if gsave >= numcat:
            break
        i = gray[gsave]
        if tsplit[i] == LEFT:
            tsplit[i] = RIGHT
            rwt += awt[i]
            lwt -= awt[i]
            rtot += countn[i]
            ltot -= countn[i]
            right[0] += ccnt0[i]
            left[0] -= ccnt0[i]
            right[1] += ccnt1[i]
            left[1] -= ccnt1[i]
        else:
            tsplit[i] = LEFT
            rwt -= awt[i]
            lwt += awt[i]
            rtot -= countn[i]
            ltot += countn[i]
            right[0] -= ccnt0[i]
            left[0] += ccnt0[i]
            right[1] -= ccnt1[i]
            left[1] += ccnt1[i]
        if ltot >= edge and rtot >= edge:
            temp, lmean, rmean = _split_gini(left, lwt, right, rwt, aprior)
            if temp < best:
                best = temp
                if lmean < rmean:
                    for jj in range(numcat):
                        csplit[jj] = tsplit[jj]
                else:
                    for jj in range(numcat):
                        csplit[jj] = -tsplit[jj]
    return total_ss - best


@nb.njit(cache=True)
def _bsplit(xdata, ncat, sorts, y, n1, n2, edge, aprior, iscale, maxcat):  # pragma: no cover - compiled
    """Best primary split of the node (``bsplit.c`` with ``insert_split``'s ordering)."""
    nvar = xdata.shape[0]
    xtemp = np.empty(n2 - n1)
    ytemp = np.empty(n2 - n1, dtype=np.int64)
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
        if nc == 0:
            improve, split, direction = _gini_continuous(k, ytemp, xtemp, edge, aprior)
            csplit[0] = direction
        else:
            for jj in range(nc):
                csplit[jj] = 0
            improve = _gini_categorical(k, ytemp, xtemp, nc, edge, aprior, csplit)
            split = 0.0
        if improve > iscale:
            iscale = improve
        # insert_split keeps the list sorted; its head changes only for a strictly better split
        if improve > iscale * 1e-10 and (best_var < 0 or improve > best_improve):
            best_var = i
            best_improve = improve
            best_split = split
            for jj in range(max(nc, 1)):
                best_csplit[jj] = csplit[jj]
    return best_var, best_improve, best_split, best_csplit, iscale


@nb.njit(cache=True)
def _nodesplit(xdata, ncat, sorts, which, var, spoint, csplit, n1, n2, nodenum, tempvec):  # pragma: no cover
    """Send the node's records left or right and reorder every ``sorts`` row stably."""
    leftson = 2 * nodenum
    rightson = leftson + 1
    nleft = 0
    nright = 0
    for i in range(n1, n2):
        j = sorts[var, i]
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
    for k in range(nvar):
        i1 = n1
        i2 = n1 + nleft
        for i in range(n1, n2):
            j = sorts[k, i]
            jj = j if j >= 0 else -(j + 1)
            if which[jj] == leftson:
                sorts[k, i1] = j
                i1 += 1
            else:
                tempvec[i2] = j
                i2 += 1
        for i in range(n1 + nleft, n2):
            sorts[k, i] = tempvec[i]
    return nleft, nright


@nb.njit(cache=True)
def _class_counts(sorts0, y, n1, n2):  # pragma: no cover - compiled
    c0 = 0.0
    c1 = 0.0
    for i in range(n1, n2):
        j = sorts0[i]
        if j < 0:
            j = -(j + 1)
        if y[j] == 0:
            c0 += 1.0
        else:
            c1 += 1.0
    return c0, c1


# ---------------------------------------------------------------------------------------------
# the tree
# ---------------------------------------------------------------------------------------------
class _Node:
    __slots__ = ("c0", "c1", "complexity", "left", "right", "risk")

    def __init__(self, complexity: float = 0.0) -> None:
        self.complexity = complexity
        self.risk = 0.0
        self.c0 = 0.0
        self.c1 = 0.0
        self.left: _Node | None = None
        self.right: _Node | None = None


@dataclass(frozen=True)
class TreeFit:
    """A fitted rpart tree on its training records.

    Attributes
    ----------
    leaf : ndarray
        Node number (rpart numbering: root 1, children 2k and 2k+1) of each record's leaf.
    prob : ndarray
        Predicted probability of class 1 for each record (rpart's ``predict(fit)[, 2]``).
    n_nodes, n_leaves : int
        Size of the tree (``nrow(fit$frame)`` and its number of leaves).
    """

    leaf: np.ndarray
    prob: np.ndarray
    n_nodes: int
    n_leaves: int


class _Grower:
    def __init__(self, xdata, ncat, y, minsplit, minbucket, cp, maxdepth):
        self.xdata = xdata
        self.ncat = ncat
        self.y = y
        n = xdata.shape[1]
        self.n = n
        self.minsplit = int(minsplit)
        self.edge = int(minbucket)
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
        self.which = np.ones(n, dtype=np.int64)
        self.tempvec = np.empty(n, dtype=np.int64)
        counts = np.array([np.sum(y == 0), np.sum(y == 1)], dtype=float)
        freq = counts / float(n)
        prior = counts / counts.sum()  # rpart's default prior: observed class shares
        temp = 0.0
        temp += 0.0 * prior[0]
        temp += 1.0 * prior[0]
        temp += 1.0 * prior[1]
        temp += 0.0 * prior[1]
        self.aprior = np.where(freq > 0, prior / (temp * np.where(freq > 0, freq, 1.0)), prior)
        self.prior = np.where(freq > 0, prior / np.where(freq > 0, freq, 1.0), prior)
        self.counts = counts
        self.iscale = 0.0
        root = _Node()
        root.c0, root.c1 = counts
        root.risk = self._risk(root.c0, root.c1)
        root.complexity = root.risk
        self.alpha = cp * root.risk
        self.root = root
        self._partition(1, root, 0, n)

    def _risk(self, c0: float, c1: float) -> float:
        dev0 = 0.0 + c1 * 1.0 * self.prior[1]  # predict class 0
        dev1 = c0 * 1.0 * self.prior[0] + 0.0  # predict class 1
        return dev1 if dev1 < dev0 else dev0

    def _partition(self, nodenum: int, me: _Node, n1: int, n2: int) -> tuple[int, float]:
        alpha = self.alpha
        if nodenum > 1:
            me.c0, me.c1 = _class_counts(self.sorts[0], self.y, n1, n2)
            me.risk = self._risk(me.c0, me.c1)
            tempcp = me.risk
            if tempcp > me.complexity:
                tempcp = me.complexity
        else:
            tempcp = me.risk
        if (n2 - n1) < self.minsplit or tempcp <= alpha or nodenum > self.maxnode:
            me.complexity = alpha
            return 0, me.risk
        var, _, spoint, csplit, self.iscale = _bsplit(
            self.xdata, self.ncat, self.sorts, self.y, n1, n2, self.edge, self.aprior, self.iscale, self.maxcat
        )
        if var < 0:
            me.complexity = alpha
            return 0, me.risk
        nleft, nright = _nodesplit(
            self.xdata, self.ncat, self.sorts, self.which, var, spoint, csplit, n1, n2, nodenum, self.tempvec
        )
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
            idx = self.sorts[0, n1:n2]
            idx = np.where(idx < 0, -(idx + 1), idx)
            self.which[idx] = nodenum
            return 0, me.risk
        return left_split + right_split + 1, left_risk + right_risk

    def result(self) -> TreeFit:
        nodes: dict[int, _Node] = {}
        stack = [(1, self.root)]
        while stack:
            num, node = stack.pop()
            nodes[num] = node
            if node.left is not None and node.right is not None:
                stack.append((2 * num, node.left))
                stack.append((2 * num + 1, node.right))
        leaf = self.which.copy()
        # rpart.c's fix-up: a record in a trimmed node belongs to its nearest kept ancestor
        unknown = ~np.isin(leaf, np.fromiter(nodes, dtype=np.int64))
        while unknown.any():
            leaf[unknown] //= 2
            unknown = ~np.isin(leaf, np.fromiter(nodes, dtype=np.int64))
        nums = np.array(sorted(nodes), dtype=np.int64)
        # rpart.R: temp = counts %*% diag(prior / pmax(1, counts)); yprob = temp / rowSums(temp)
        a = (self.counts / self.counts.sum()) / np.maximum(1.0, self.counts)
        c0 = np.array([nodes[k].c0 for k in nums])
        c1 = np.array([nodes[k].c1 for k in nums])
        t0, t1 = c0 * a[0], c1 * a[1]
        p1 = t1 / (t0 + t1)
        prob = p1[np.searchsorted(nums, leaf)]
        n_leaves = sum(1 for nd in nodes.values() if nd.left is None)
        return TreeFit(leaf=leaf, prob=prob, n_nodes=len(nodes), n_leaves=n_leaves)


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
    """Grow rpart's classification tree on ``x`` for the 0/1 response ``y``.

    Parameters
    ----------
    x : ndarray (n_records, n_variables)
        Predictors: numeric values, or factor codes ``1..ncat`` for categorical columns.
    ncat : ndarray of int
        Number of levels of each categorical column, 0 for numeric (and ordered) columns.
    y : ndarray of int
        Response, 0 or 1.
    cp, minbucket, minsplit, maxdepth
        ``rpart.control``; as in R, ``minsplit`` defaults to ``3 * minbucket`` when only
        ``minbucket`` is given, ``minbucket`` to ``round(minsplit / 3)``, and both to 20/7.
    """
    if minbucket is None and minsplit is None:
        minsplit, minbucket = 20, 7
    elif minsplit is None:
        minsplit = 3 * int(minbucket)
    elif minbucket is None:
        minbucket = max(1, round(minsplit / 3))
    if int(minbucket) < 1:
        minbucket = 1
    if not 1 <= maxdepth <= 30:
        raise ValueError("maxdepth must be between 1 and 30 (rpart's limit)")
    xdata = np.ascontiguousarray(np.asarray(x, dtype=float).T)
    yy = np.asarray(y, dtype=np.int64)
    grower = _Grower(xdata, np.asarray(ncat, dtype=np.int64), yy, minsplit, minbucket, cp, maxdepth)
    return grower.result()
