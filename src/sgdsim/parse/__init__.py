"""Parsers at the edges: each turns one outside form into the spec objects (``sgdsim.spec``).

- ``keywords.py``: the Python keyword form of ``sgdsim.predict`` (human units accepted);
- ``hardware.py``: the hardware file that ``netbench`` and ``calibrate`` write, as keywords;
- ``options.py``: the command line's options, through the hardware file and the keywords.

Human units are parsed here (``units.py``) and nowhere below.
"""
