"""The operator-time estimator (Tianshu §3.2): one MLP per operator type and dtype, with the
*principal component* (the operator's complexity function, found by search) as an extra input.

* ``features``: parameter kinds (the pruning rules) and the candidate complexity functions;
* ``search``: the principal-component search and the architecture search;
* ``model``: ``OpEstimator`` (numpy prediction, JSON in and out), ``train``, ``evaluate``.
"""
