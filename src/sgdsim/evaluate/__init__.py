"""The evaluation layer: ``evaluate(job, strategy, cluster, workers)``, typed and pure."""
from .core import FineTask, evaluate, evaluate_analytic, evaluate_fine, run_fine
from .executors import DaskExecutor, LocalPool, Serial, make_executor
from .inputs import Cluster, Control, Job, JobClass, Strategy, sim_config

__all__ = ["Cluster", "Control", "DaskExecutor", "FineTask", "Job", "JobClass", "LocalPool",
           "Serial", "Strategy", "evaluate", "evaluate_analytic", "evaluate_fine",
           "make_executor", "run_fine", "sim_config"]
