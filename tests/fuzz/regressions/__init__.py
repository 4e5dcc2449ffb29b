"""Programs the fuzzer found and minimised (tests/fuzz/minimise.py --write); each runs in make test."""
