"""The operator database's tables (SQLAlchemy Core), one definition for SQLite and PostgreSQL."""
from __future__ import annotations

VALUES = ("fwd_s", "bwd_s", "samples", "fwd_spread", "bwd_spread", "measured_at", "fwd_bound", "bwd_bound",
          "fwd_ref_s", "bwd_ref_s")
INTEGERS = ("samples", "fwd_bound", "bwd_bound")
RETEST = ("rows", "fwd_median", "fwd_p90", "bwd_median", "bwd_p90", "retested_at")
STEP = ("step_s", "calls_s", "measured_at")  # a model's step timed whole, and its calls' sum
MODEL_CHARS = 512  # a timed step's model spec, at most


def tables(sa):
    md = sa.MetaData()

    def text(name, size=256):
        return sa.Column(name, sa.String(size), nullable=False)

    meta = sa.Table("meta", md, sa.Column("key", sa.String(64), primary_key=True),
                    text("value"))
    devices = sa.Table("devices", md, sa.Column("id", sa.Integer, primary_key=True),
                       sa.Column("name", sa.String(512), nullable=False, unique=True),
                       text("kind", 32), text("framework"), text("driver"))

    def device_id():
        return sa.Column("device_id", sa.Integer, sa.ForeignKey("devices.id"), nullable=False)

    ops = sa.Table(
        "op_times", md, device_id(), text("op", 64),
        sa.Column("params", sa.Text, nullable=False), text("dtype", 32),
        *(sa.Column(c, sa.Integer if c in INTEGERS else sa.Float, nullable=False)
          for c in VALUES),
        # In this column order the key's own index serves lookups by (device, op, dtype) too:
        # a second index would cost every insert a third B-tree update for nothing.
        sa.UniqueConstraint("device_id", "op", "dtype", "params", name="op_times_key"))
    estimators = sa.Table(
        "estimators", md, device_id(), text("op", 64), text("dtype", 32),
        sa.Column("payload", sa.Text, nullable=False),
        sa.Column("trained_at", sa.Float, nullable=False),
        sa.UniqueConstraint("device_id", "op", "dtype", name="estimators_key"))
    # per type: a sample of its rows timed again, |again / stored - 1| (ops retest)
    retests = sa.Table(
        "retests", md, device_id(), text("op", 64), text("dtype", 32),
        *(sa.Column(c, sa.Integer if c == "rows" else sa.Float, nullable=False) for c in RETEST),
        sa.UniqueConstraint("device_id", "op", "dtype", name="retests_key"))
    # per model and batch: its training step timed whole beside the sum of its calls' rows
    # (ops measure --model): what a step costs beyond its calls on this device (step_factor.py)
    steps = sa.Table(
        "steps", md, device_id(), text("model", MODEL_CHARS), sa.Column("batch_size", sa.Integer, nullable=False),
        text("dtype", 32), *(sa.Column(c, sa.Float, nullable=False) for c in STEP),
        sa.UniqueConstraint("device_id", "model", "batch_size", "dtype", name="steps_key"))
    return md, meta, devices, ops, estimators, retests, steps
