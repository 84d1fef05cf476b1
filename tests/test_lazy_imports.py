"""A prediction's process imports what it runs, and the lazily exported names are the same
objects as before (``sgdsim/lazy.py``)."""
import importlib
import subprocess
import sys
import textwrap

import pytest

import sgdsim
import sgdsim.llm
import sgdsim.profiler
from sgdsim.llm import devices, step
from sgdsim.profile import pipedream
from sgdsim.profiler import api

memory_module = importlib.import_module("sgdsim.llm.memory")  # the package's `memory` is its function
LAZY = ("sgdsim.llm.devices", "sgdsim.llm.step", "sgdsim.profiler.api", "sgdsim.profile.pipedream")


def test_a_prediction_does_not_import_what_it_does_not_run():
    code = textwrap.dedent("""
        import sys
        from sgdsim.cli import main
        main(["predict", "examples/profiles/resnet50.json", "--workers", "2", "--steps", "3",
              "--replications", "1", "--quiet"])
        print(" ".join(sorted(m for m in sys.modules if m.startswith("sgdsim"))))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(out.stdout.split())
    assert "sgdsim.sim.simulate" in loaded  # it did predict
    assert "sgdsim.llm.model" in loaded  # it asked whether the argument is a transformer
    assert not loaded & set(LAZY)


@pytest.mark.parametrize("package, name, module", [
    (sgdsim.llm, "device", devices), (sgdsim.llm, "load_catalogue", devices),
    (sgdsim.llm, "Device", devices), (sgdsim.llm, "predict_step", step),
    (sgdsim.llm, "StepPrediction", step), (sgdsim.profiler, "profile_model", api),
    (sgdsim.profiler, "NEEDS_TORCH", api), (sgdsim, "import_pipedream", pipedream),
])
def test_a_lazy_name_is_its_module_object(package, name, module):
    assert getattr(package, name) is getattr(module, name)


def test_a_name_shared_with_its_submodule_stays_the_function():
    # step imports the memory submodule; the package's `memory` must still be the function
    assert sgdsim.llm.memory is memory_module.memory and callable(sgdsim.llm.memory)
    from sgdsim.llm import memory
    assert memory is memory_module.memory


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        sgdsim.llm.nope  # noqa: B018
    assert not hasattr(sgdsim.profiler, "nope")
