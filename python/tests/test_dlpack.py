"""Arrays from psflow reach torch without a copy, through NumPy's DLPack
(`torch.from_dlpack`) as through `torch.from_numpy`."""

import numpy as np
import pytest

import psflow

torch = pytest.importorskip("torch")


def test_torch_shares_the_buffer_through_dlpack():
    array = psflow._psflow._round_trip(np.arange(4, dtype=np.float32))
    tensor = torch.from_dlpack(array)
    tensor[0] = 7.0
    assert array[0] == 7.0
    shared = torch.from_numpy(array)
    assert shared.data_ptr() == tensor.data_ptr()
