import pytest


def pytest_collection_modifyitems(items):
    """Every IR-level pass test runs on Triton 3.6 too (``make test-oldest`` runs the tests marked
    ``version``): the passes meet each release's own canonicalizer and layout passes, in seconds."""
    for item in items:
        if item.path.parent.name == "passes":
            item.add_marker(pytest.mark.version)
