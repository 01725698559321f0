"""Conversions, errors, partitioners, reduce and cluster specs: no cluster."""

import json
import math

import numpy as np
import pytest

import psflow
from psflow import _psflow, errors
from psflow.distribute import PerReplica, ReduceOp
from psflow.distribute.cluster_resolver import SimpleClusterResolver, TFConfigClusterResolver
from psflow.distribute.experimental.partitioners import (FixedShardsPartitioner,
                                                         MaxSizePartitioner, MinSizePartitioner)


CODES = {
    1: errors.CancelledError, 2: errors.UnknownError, 3: errors.InvalidArgumentError,
    4: errors.DeadlineExceededError, 5: errors.NotFoundError, 6: errors.AlreadyExistsError,
    7: errors.PermissionDeniedError, 8: errors.ResourceExhaustedError,
    9: errors.FailedPreconditionError, 10: errors.AbortedError, 11: errors.OutOfRangeError,
    12: errors.UnimplementedError, 13: errors.InternalError, 14: errors.UnavailableError,
    15: errors.DataLossError, 16: errors.UnauthenticatedError,
}


@pytest.mark.parametrize("code,cls", sorted(CODES.items()))
def test_every_status_code_raises_the_tf_named_exception(code, cls):
    with pytest.raises(cls) as info:
        _psflow._raise_status(code, "message %d" % code)
    assert isinstance(info.value, errors.OpError)
    assert info.value.error_code == code
    assert info.value.message == "message %d" % code
    assert str(info.value) == "message %d" % code
    assert errors.error_code_from_exception_type(cls) == code


def test_ok_is_not_an_error():
    with pytest.raises(ValueError, match="code"):
        _psflow._raise_status(0, "fine")


def test_structures_round_trip():
    value = (2, (3, 4.5), [True, None, "text", b"\xff\xfe"], {"b": 1, "a": [np.int64(7)]})
    out = _psflow._round_trip(value)
    assert out[0] == 2 and type(out[0]) is int
    assert out[1] == (3, 4.5)
    assert out[2][:4] == [True, None, "text", b"\xff\xfe"]
    assert list(out[3]) == ["a", "b"]  # sorted, as TF's nest
    assert out[3]["a"][0].dtype == np.int64 and out[3]["a"][0] == 7
    assert _psflow._debug_string((1, [2.0], {"k": "v"})) == "(1, [2.0], {'k': 'v'})"


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.uint8, np.bool_])
def test_arrays_round_trip_every_dtype(dtype):
    a = (np.arange(12) % 3).astype(dtype).reshape(3, 4)
    out = _psflow._round_trip(a)
    assert out.dtype == a.dtype and out.shape == (3, 4)
    np.testing.assert_array_equal(out, a)


def test_non_contiguous_and_string_arrays():
    a = np.arange(20, dtype=np.float32).reshape(4, 5)[:, 1::2]
    np.testing.assert_array_equal(_psflow._round_trip(a), a)
    s = np.array([["ab", "c"], ["", "déf"]])
    out = _psflow._round_trip(s)
    assert out.shape == (2, 2) and out[1, 1] == "déf".encode()


def test_bad_values_raise_type_and_value_errors_naming_the_place():
    with pytest.raises(TypeError, match=r"value\[1\]\['k'\].*object"):
        _psflow._round_trip((1, {"k": object()}))
    with pytest.raises(TypeError, match="dict keys must be str"):
        _psflow._round_trip({1: 2})
    with pytest.raises(TypeError, match="complex128"):
        _psflow._round_trip(np.zeros(2, np.complex128))
    with pytest.raises(ValueError, match="int64"):
        _psflow._round_trip(2 ** 70)
    nest = []
    nest.append(nest)
    with pytest.raises(ValueError, match="levels deep"):
        _psflow._round_trip(nest)


def test_partitioners_follow_tf():
    assert FixedShardsPartitioner(3)((10, 4), np.float32) == [3, 1]
    assert FixedShardsPartitioner(3)((2,), np.float32) == [2]
    # 1000 x 4 float32 = 16000 bytes; shards of >= 4000 bytes, at most 3.
    assert MinSizePartitioner(min_shard_bytes=4000, max_shards=3)((1000, 4), "float32") == [3, 1]
    assert MaxSizePartitioner(max_shard_bytes=4000)((1000, 4), np.float32) == [4, 1]
    with pytest.raises(ValueError, match="num_shards"):
        FixedShardsPartitioner(0)
    with pytest.raises(TypeError, match="num_shards"):
        FixedShardsPartitioner("2")
    with pytest.raises(ValueError, match="max_shards"):
        MinSizePartitioner(max_shards=0)


def test_reduce_and_gather_of_per_replica_values():
    strategy_reduce = psflow.distribute.ParameterServerStrategy.reduce
    gather = psflow.distribute.ParameterServerStrategy.gather
    pr = PerReplica([np.array([1.0, 2.0], np.float32), np.array([3.0, 5.0], np.float32)])
    np.testing.assert_allclose(strategy_reduce(None, ReduceOp.SUM, pr), [4.0, 7.0])
    np.testing.assert_allclose(strategy_reduce(None, "MEAN", pr), [2.0, 3.5])
    assert math.isclose(float(strategy_reduce(None, "SUM", pr, axis=0)), 11.0)
    nested = strategy_reduce(None, "SUM", {"a": pr, "b": 3})
    np.testing.assert_allclose(nested["a"], [4.0, 7.0])
    assert nested["b"] == 3
    np.testing.assert_array_equal(gather(None, pr, 0), [1, 2, 3, 5])
    with pytest.raises(errors.InvalidArgumentError, match="SUMM"):
        strategy_reduce(None, "SUMM", pr)
    with pytest.raises(TypeError, match="reduce_op"):
        strategy_reduce(None, 3, pr)


def test_cluster_spec_as_tf():
    spec = psflow.train.ClusterSpec({"ps": ["a:1", "b:2"], "worker": {1: "c:3"}})
    assert spec.jobs == ["ps", "worker"]
    assert spec.num_tasks("ps") == 2 and spec.task_indices("worker") == [1]
    assert spec.task_address("worker", 1) == "c:3"
    assert spec.as_dict() == {"ps": ["a:1", "b:2"], "worker": {1: "c:3"}}
    assert spec.job_tasks("worker") == [None, "c:3"]
    assert psflow.train.ClusterSpec(spec) == spec
    assert json.loads(_psflow._cluster_spec_json(spec._to_json())) == {
        "ps": ["a:1", "b:2"], "worker": {"1": "c:3"}}
    with pytest.raises(ValueError, match="No such job"):
        spec.num_tasks("chief")
    with pytest.raises(TypeError, match="tasks of job"):
        psflow.train.ClusterSpec({"ps": "a:1"})


def test_tf_config_resolver_reads_tf_config(monkeypatch):
    monkeypatch.setenv("TF_CONFIG", json.dumps({
        "cluster": {"chief": ["h:0"], "ps": ["h:1"], "worker": ["h:2", "h:3"]},
        "task": {"type": "worker", "index": "1"}, "rpc_layer": "grpc"}))
    r = TFConfigClusterResolver()
    assert r.cluster_spec().as_dict() == {"chief": ["h:0"], "ps": ["h:1"],
                                          "worker": ["h:2", "h:3"]}
    assert (r.task_type, r.task_id, r.rpc_layer) == ("worker", 1, "grpc")
    assert r.master() == "grpc://h:3"
    assert TFConfigClusterResolver(task_type="ps", task_id=0).master() == "grpc://h:1"
    monkeypatch.setenv("TF_CONFIG", "{not json")
    with pytest.raises(errors.InvalidArgumentError, match="TF_CONFIG"):
        TFConfigClusterResolver().cluster_spec()


def test_strategy_refuses_a_cluster_without_ps():
    spec = psflow.train.ClusterSpec({"chief": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"]})
    with pytest.raises(errors.InvalidArgumentError, match="ps"):
        psflow.distribute.ParameterServerStrategy(
            SimpleClusterResolver(spec, task_type="chief", task_id=0))
    with pytest.raises(TypeError, match="cluster_resolver"):
        psflow.distribute.ParameterServerStrategy(spec)


def test_local_cluster_without_a_binary_says_where_it_looked(monkeypatch, tmp_path):
    monkeypatch.setenv("PSFLOW_BINARY", str(tmp_path / "missing"))
    with pytest.raises(FileNotFoundError, match="PSFLOW_BINARY"):
        psflow.LocalCluster(num_ps=1, num_workers=1).start()
    with pytest.raises(FileNotFoundError, match="not an executable"):
        psflow.LocalCluster(binary=str(tmp_path / "nothing")).start()
    with pytest.raises(ValueError, match="num_ps"):
        psflow.LocalCluster(num_ps=0)
    with pytest.raises(TypeError, match="num_workers"):
        psflow.LocalCluster(num_workers="2")
