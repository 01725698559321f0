"""Shared fixtures: one real local cluster per test module."""

import pytest

import psflow


@pytest.fixture(scope="module")
def cluster():
    """2 ps + 2 workers of the psflow binary ($PSFLOW_BINARY: the build's
    psflow_testing, whose workers run the testing/* probes)."""
    with psflow.LocalCluster(num_ps=2, num_workers=2) as c:
        yield c


@pytest.fixture(scope="module")
def strategy(cluster):
    return psflow.distribute.ParameterServerStrategy(cluster.cluster_resolver())


@pytest.fixture(scope="module")
def coordinator(strategy):
    return psflow.distribute.coordinator.ClusterCoordinator(strategy)
