"""The README's Python API block runs as written (up to the PipeDream import, whose graph file
a user brings), and its hardware-file call answers what ``sgdsim predict --hardware`` does."""
import re


def _api_block() -> str:
    text = open("README.md", encoding="utf-8").read()
    section = text[text.index("## Python API"):]
    block = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    return block[:block.index("prof = sgdsim.import_pipedream")]


def test_the_readmes_api_block_runs_and_its_answers_are_plain_numbers(capsys):
    scope: dict = {}
    exec(compile(_api_block(), "README.md", "exec"), scope)
    out = capsys.readouterr().out.splitlines()
    assert [int(line.split()[0]) for line in out] == list(range(1, 17))  # the for loop's lines
    points, coarse = scope["points"], scope["coarse"]
    assert [p.workers for p in points] == [1, 2, 3, 4]  # the hardware file's sync sweep
    assert all(p.ci_low <= p.throughput <= p.ci_high for p in points)
    assert len(coarse) == 1024 and coarse[0].model == "coarse"
