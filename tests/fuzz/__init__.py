"""ptgo's differential fuzzer (issue 8): random PyTorch programs run eagerly and through every
ptgo backend, compared on everything eager defines. See tests/fuzz/README.md."""
