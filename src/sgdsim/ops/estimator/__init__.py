"""The operator-time estimator (Tianshu §3.2): one MLP per operator type and dtype, with the
*principal component* (PC: the operator's complexity function, found by search) as an input.

* ``features``: the pruning rules (parameter kinds), input encoding, candidate functions;
* ``search``: the PC screen and judgement, the architecture search, the budget's plan;
* ``model``: ``OpEstimator`` (numpy prediction, JSON in and out), ``train``, ``evaluate``;
* ``report``: the paper's Table 3 (held-out error with and without the PC).

Inputs and targets are logs (log parameters, log PC, log time). That makes the loss a relative
error, but it also takes most of the PC's job: a product of powers is a sum of the log inputs,
which the first layer forms by itself. On a synthetic conv (9 numeric parameters, 300 rows, 2 %
noise) the search finds the true function, and the PC alone explains the time (2.2 % error
versus 28-70 % for the next candidates), yet full models with and without it are equally good
(5 seeds: 2.2-3.6 % and 2.0-2.6 %; beyond the trained shapes 1.9-9.8 % and 1.1-7.9 %). The
paper's 4x gain (Table 3) is for inputs that are not logs.
"""
