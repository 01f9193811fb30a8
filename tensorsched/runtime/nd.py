"""``ts.nd``: TVM's n-dimensional arrays on a device (``ts.nd.array(x, dev)``, ``ts.nd.empty``).

An array on ``ts.cpu(0)`` is a numpy array in host memory (as TVM's CPU arrays are); one on
``ts.opencl(i)`` is a ``pyopencl.array.Array`` on that device's queue. A built module takes
either (results land in the output array, as in TVM) beside plain numpy and pyopencl arrays.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import RuntimeCallError, TensorschedError
from .device import Device
from .tvm_api import DeviceHandle, TargetError, cpu


class NDArray:
    """An array on a device: ``.numpy()``, ``.shape``, ``.dtype`` (a string, as TVM's),
    ``.device``, ``copyfrom`` / ``copyto``, ``arr[:] = x``."""

    def __init__(self, data: Any, device: DeviceHandle) -> None:
        self._data, self.device = data, device

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(int(n) for n in self._data.shape)

    @property
    def dtype(self) -> str:
        return str(np.dtype(self._data.dtype))

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def data(self) -> Any:
        """What holds the elements: a numpy array (host) or a ``pyopencl.array.Array``."""
        return self._data

    def numpy(self) -> np.ndarray:
        """A numpy copy of the array."""
        if isinstance(self._data, np.ndarray):
            return self._data.copy()
        return np.asarray(self._data.get())

    asnumpy = numpy  # TVM's older name

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        out = self._data if isinstance(self._data, np.ndarray) else self._data.get()
        return out if dtype is None else out.astype(dtype)

    def copyfrom(self, source: Any) -> NDArray:
        """Fill this array from a numpy array (or anything ``np.asarray`` takes, another
        ``NDArray`` included) of the same shape; returns ``self``."""
        values = np.asarray(source)
        if values.shape != self.shape:
            raise RuntimeCallError(
                f"copyfrom: the source has shape {values.shape} but this array has "
                f"{self.shape}; give one of shape {self.shape}"
            )
        values = np.asarray(values, dtype=self.dtype, order="C")  # (rank 0 stays rank 0)
        if isinstance(self._data, np.ndarray):
            self._data[...] = values
        else:
            self._data.set(values)
        return self

    def copyto(self, target: NDArray | DeviceHandle) -> NDArray:
        """Copy into the array ``target``, or into a new array on the device ``target``."""
        if isinstance(target, DeviceHandle):
            return array(self.numpy(), target)
        return target.copyfrom(self.numpy())

    def __setitem__(self, key: Any, value: Any) -> None:
        if key is not Ellipsis and key != slice(None):
            raise TensorschedError(
                f"NDArray: only arr[:] = x (the whole array) can be assigned, got arr[{key!r}]; "
                "change a numpy copy (arr.numpy()) and copy it back with arr.copyfrom(x)"
            )
        self.copyfrom(value)

    def __repr__(self) -> str:
        return f"<tensorsched.nd.NDArray shape={self.shape}, {self.device}>\n{self.numpy()!r}"


def _storage(device: DeviceHandle | None) -> tuple[DeviceHandle, Device | None]:
    """The device handle (default ``cpu(0)``, as in TVM) and its OpenCL device, None for the
    host."""
    dev = cpu(0) if device is None else device
    if not isinstance(dev, DeviceHandle):
        raise TargetError(f"nd: expected a device such as ts.opencl(0) or ts.cpu(0), got {dev!r}")
    return dev, None if dev.kind == "cpu" else dev.opencl_device


def array(arr: Any, device: DeviceHandle | None = None) -> NDArray:
    """A copy of ``arr`` (a numpy array, anything ``np.asarray`` takes, or an ``NDArray``) on
    ``device`` (default ``ts.cpu(0)``)."""
    values = np.asarray(arr, order="C")  # (not ascontiguousarray: it makes rank 0 rank 1)
    dev, cl_dev = _storage(device)
    if cl_dev is None:
        return NDArray(values.copy(), dev)
    import pyopencl.array as cla

    return NDArray(cla.to_device(cl_dev.queue, values), dev)


def empty(
    shape: Sequence[int] | int, dtype: str = "float32", device: DeviceHandle | None = None
) -> NDArray:
    """An uninitialised array of ``shape`` and ``dtype`` on ``device`` (default ``ts.cpu(0)``)."""
    dims = (shape,) if isinstance(shape, int) else tuple(int(n) for n in shape)
    dev, cl_dev = _storage(device)
    if cl_dev is None:
        return NDArray(np.empty(dims, np.dtype(dtype)), dev)
    import pyopencl.array as cla

    return NDArray(cla.empty(cl_dev.queue, dims, np.dtype(dtype)), dev)


def unwrap(arrays: Sequence[Any], device: Device, func_name: str, names: Sequence[str]) -> list:
    """The call's arrays with every ``NDArray`` replaced by what holds its elements: a host
    array as it is, a device array when it lives on ``device`` (the module's); an array on
    another OpenCL device is a ``RuntimeCallError`` saying where to build."""
    out = []
    for a, name in zip(arrays, list(names) + ["?"] * len(arrays)):
        if isinstance(a, NDArray):
            if not isinstance(a.data, np.ndarray) and a.data.context != device.context:
                raise RuntimeCallError(
                    f"{func_name}: argument '{name}' lives on {a.device} "
                    f"('{a.device.device_name}'), but the module was built for '{device.name}'; "
                    "create the arrays on the module's device, or build for theirs "
                    "(TS_DEVICE=P:D, or tensorsched.runtime.device.set_device before ts.build)"
                )
            a = a.data
        out.append(a)
    return out
