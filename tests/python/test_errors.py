"""Errors in traced code name the user's file and line; Python that needs a tensor's
value while tracing says what to use instead."""

import re

import numpy as np
import pytest

import unitile as tl

HERE = __file__


def line_of(marker):
    with open(HERE, encoding="utf-8") as f:
        for n, text in enumerate(f, 1):
            if text.rstrip().endswith("# " + marker):
                return n
    raise AssertionError(marker)


def located(marker):
    return re.escape(f"{HERE}:{line_of(marker)}: error:")


def test_shape_mismatch_points_at_the_line():
    @tl.kernel
    def f(a, b):
        c = a * 2
        return c + b  # SHAPE

    with pytest.raises(tl.Error, match=located("SHAPE") + r".*op:add.*\[3, 4\].*\[5\]"):
        f(np.ones((3, 4), np.float32), np.ones(5, np.float32))


def test_matmul_mismatch_points_at_the_line():
    @tl.kernel
    def f(a, b):
        return tl.matmul(a, b)  # MATMUL

    with pytest.raises(tl.Error, match=located("MATMUL") + r".*op:matmul"):
        f(np.ones((3, 4), np.float32), np.ones((5, 2), np.float32))


def test_dtype_mismatch_points_at_the_line():
    @tl.kernel
    def f(x, a):
        return tl.where(x, a, a)  # DTYPE

    with pytest.raises(tl.Error, match=located("DTYPE") + r".*op:where.*Cond.*bool"):
        f(np.ones(3, np.float32), np.ones(3, np.float32))


def test_float_only_op_on_integers_points_at_the_line():
    @tl.kernel
    def f(x):
        return tl.exp(x)  # EXP

    with pytest.raises(tl.Error, match=located("EXP") + r".*op:exp"):
        f(np.ones(3, np.int32))


def test_if_on_a_tensor_says_use_where():
    @tl.kernel
    def f(x):
        if x.sum() > 0:  # IF
            return x
        return -x

    with pytest.raises(tl.Error, match=located("IF") + r".*tl\.where\(condition, a, b\)"):
        f(np.ones(3, np.float32))


def test_bool_of_a_tensor_says_use_where():
    @tl.kernel
    def f(x):
        return x if bool(x) else -x  # BOOL

    with pytest.raises(tl.Error, match=located("BOOL") + r".*tl\.where"):
        f(np.ones(3, np.float32))


def test_iterating_a_tensor_says_index_or_reduce():
    @tl.kernel
    def f(x):
        total = 0
        for row in x:  # ITER
            total = total + row
        return total

    with pytest.raises(tl.Error, match=located("ITER") + r".*index it.*reduce it"):
        f(np.ones((2, 3), np.float32))


def test_python_number_of_a_tensor_is_refused():
    @tl.kernel
    def f(x):
        return x * float(x[0])  # FLOAT

    with pytest.raises(tl.Error, match=located("FLOAT") + r".*no value"):
        f(np.ones(3, np.float32))


def test_numpy_functions_on_traced_tensors_name_the_tl_function():
    @tl.kernel
    def f(x):
        return np.sin(x)  # NUMPY

    with pytest.raises(tl.Error, match=located("NUMPY") + r".*numpy\.sin.*tl function"):
        f(np.ones(3, np.float32))


def test_boolean_mask_index_is_refused_with_a_reason():
    @tl.kernel
    def f(x, m):
        return x[m]  # MASK

    with pytest.raises(tl.Error, match=located("MASK") + r".*boolean mask.*known only from the data.*tl\.where"):
        f(np.ones(3, np.float32), np.zeros(3, np.bool_))


def test_index_out_of_range_points_at_the_line():
    @tl.kernel
    def f(x):
        return x[:, 7]  # RANGE

    with pytest.raises(tl.Error, match=located("RANGE") + r".*index 7 is out of range.*extent 4"):
        f(np.ones((3, 4), np.float32))


def test_unknown_op_suggests_close_names():
    with pytest.raises(AttributeError, match="tl.ops"):
        tl.rleu  # noqa: B018
