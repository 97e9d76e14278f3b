"""pytest fixture: ``from tests.k8sdouble.fixtures import k8s_double`` in a conftest.py."""
from __future__ import annotations

from collections.abc import Iterator

import pytest

from .double import K8sDouble


@pytest.fixture
def k8s_double() -> Iterator[K8sDouble]:
    """A started double (default namespaces only), stopped after the test."""
    with K8sDouble() as double:
        yield double
