"""Regenerate examples/profiles/*.json from the PipeDream profiles in the shared data folder.

Usage: python examples/make_profiles.py [DATA_DIR]   (default: ../shared/data from the repo root)
"""
from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))  # runs from a checkout without installing the package

from sgdsim.profile.io import save_profile  # noqa: E402
from sgdsim.profile.pipedream import import_pipedream  # noqa: E402

# Batch sizes PipeDream profiled with (shared/data/README.md).
BATCH_SIZES = {"resnet50": 128, "vgg16": 128, "inception_v3": 128, "alexnet": 256}


def main(argv: list[str]) -> int:
    data_dir = Path(argv[1]) if len(argv) > 1 else REPO.parent / "shared" / "data"
    out_dir = REPO / "examples" / "profiles"
    out_dir.mkdir(parents=True, exist_ok=True)
    for model, batch_size in BATCH_SIZES.items():
        graph = data_dir / "pipedream_profiles" / f"{model}.graph.txt"
        for overlap, suffix in ((True, ""), (False, "-nooverlap")):
            profile = import_pipedream(graph, batch_size, overlap=overlap, update_s_per_mb=0.0)
            target = out_dir / f"{model}{suffix}.json"
            save_profile(profile, target, overwrite=True)
            print(f"{target.relative_to(REPO)}: {profile.n_ops} ops, "
                  f"{profile.model_bytes() / 1e6:.1f} MB of parameters")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
