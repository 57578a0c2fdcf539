"""The generator of fixtures/bundles (tools/gen-bundle-fixtures.py), one module per kind of fixture."""
