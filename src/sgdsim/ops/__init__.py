"""Operators measured ahead of time, stored in a shareable database, estimated where unseen
(Tianshu, docs/ops.md).

* ``records``: what one measurement is (the one type every part below exchanges);
* ``optypes/``: the operator types (one file each, one registry line): their parameters, how to
  build and run one for timing, and how to read one from a traced aten call;
* ``measure``: the differential timer (N and M copies, the difference cancels fixed costs);
* ``db``: the database (SQLite file or PostgreSQL URL, SQLAlchemy Core);
* ``estimator/``: the principal-component search and the MLP per operator type;
* ``graph`` and ``estimate``: one training step's operators without the hardware, and a profile
  built from the database and the estimator.
"""
