"""The CLI fuzzer's parts: ``inputs`` (values and file mutators), ``cases`` (the generators);
``tools/fuzz_cli.py`` runs them."""
