"""The evaluation layer: ``evaluate(job, strategy, cluster, workers)``, typed and pure."""
from ..spec import Cluster, Control, Job, JobClass, Strategy
from .core import FineTask, evaluate, evaluate_analytic, evaluate_fine, run_fine, sim_config
from .executors import DaskExecutor, LocalPool, Serial, make_executor

__all__ = ["Cluster", "Control", "DaskExecutor", "FineTask", "Job", "JobClass", "LocalPool",
           "Serial", "Strategy", "evaluate", "evaluate_analytic", "evaluate_fine",
           "make_executor", "run_fine", "sim_config"]
