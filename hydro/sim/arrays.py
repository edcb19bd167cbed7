"""Sensor buffers that read as NumPy arrays and as torch tensors (``.torch``), like Isaac Lab's.

A sensor allocates each of its buffers once, as an :class:`ArrayView`, and writes every new
sample into it in place: ``sensor.data.net_forces_w`` is the same object at every step, and so
is the tensor its ``.torch`` returns. An :class:`ArrayView` *is* a NumPy array (a subclass of
``numpy.ndarray``), so every NumPy read works on it as on any array (indexing, ``np.asarray``,
arithmetic, whose results are plain arrays); :meth:`ArrayView.numpy` gives a plain view.

``.torch`` (zero-copy, on the simulation's device)
    - CPU: ``torch.from_numpy`` of the buffer, which shares its memory.
    - CUDA: the sensors compute on the host (the solver is NumPy), so the first ``.torch`` gives
      the buffer a device mirror (a Numba device array), and from then on the sensor copies the
      buffer into it after every update (:meth:`ArrayView.sync`, one host-to-device copy per
      buffer that has a tensor). The tensor aliases the mirror through
      ``__cuda_array_interface__``: reading it copies nothing.

    torch is an optional extra (``pip install 'hydro[torch]'``); without it ``.torch`` raises an
    ImportError that says so. The tensor is the sensor's buffer: writing into it changes what
    the sensor reports (on CUDA, only the tensor's side) until the next update.

    ``.torch`` of a slice (``view[0].torch``) works on the CPU; on CUDA take the tensor of the
    whole buffer and index that.
"""

from __future__ import annotations

import numpy as np

from ..errors import InputError

__all__ = ["ArrayView", "TORCH_EXTRA_HINT", "device_name", "import_torch", "to_torch"]

#: What to install for ``.torch`` and torch reports.
TORCH_EXTRA_HINT = "pip install 'hydro[torch]' (or pip install torch)"


def import_torch():
    """The ``torch`` module, or an ImportError naming the extra that provides it."""
    try:
        import torch
    except ImportError as exc:
        raise ImportError(f"torch tensors need PyTorch, which is not installed: {TORCH_EXTRA_HINT}; "
                          f"the NumPy arrays are available without it") from exc
    return torch


def torch_available() -> bool:
    """Whether torch can be imported."""
    try:
        import_torch()
    except ImportError:
        return False
    return True


def device_name(device) -> str:
    """``"cpu"`` or ``"cuda:N"`` for a device given as a string, a :class:`~hydro.backend.Device`
    or anything whose ``str`` is one of those (a ``torch.device``)."""
    if device is None:
        return "cpu"
    is_cuda = getattr(device, "is_cuda", None)
    if isinstance(is_cuda, bool) and not isinstance(device, str):
        if not is_cuda:
            return "cpu"
        index = getattr(device, "index", None)
        return f"cuda:{0 if index is None else int(index)}"
    name = str(device)
    if name == "cpu":
        return "cpu"
    if name == "cuda":
        return "cuda:0"
    if name.startswith("cuda:") and name[5:].isdigit():
        return name
    raise InputError(f"device must be 'cpu', 'cuda' or 'cuda:N', got {device!r}")


def to_torch(array, device: str = "cpu"):
    """A torch tensor with ``array``'s values on ``device`` (shares memory on the CPU)."""
    torch = import_torch()
    a = np.ascontiguousarray(array)
    t = torch.from_numpy(a)
    return t if device == "cpu" else t.to(device)


class ArrayView(np.ndarray):
    """A sensor buffer: a NumPy array updated in place, with a zero-copy ``.torch`` view.

    Make one with :meth:`allocate`; the sensor writes into it and calls :meth:`sync` after each
    update. See the module docstring.
    """

    @classmethod
    def allocate(cls, shape, dtype, *, device: str = "cpu", fill=0) -> "ArrayView":
        """A new buffer of ``shape`` and ``dtype`` filled with ``fill``, for ``device``."""
        view = np.full(shape, fill, dtype=dtype).view(cls)
        view._device = device_name(device)
        view._owner = True
        view._mirror = None
        view._tensor = None
        return view

    def __array_finalize__(self, obj):
        # views and copies know the device; only the buffer allocate() made owns a mirror
        self._device = getattr(obj, "_device", "cpu")
        self._owner = False
        self._mirror = None
        self._tensor = None

    def __array_wrap__(self, obj, context=None, return_scalar=False):
        # results of arithmetic and reductions are plain arrays (only the buffer has a tensor)
        if return_scalar:
            return obj[()]
        return obj.view(np.ndarray) if isinstance(obj, np.ndarray) else obj

    def __reduce__(self):
        # pickled (np.save, multiprocessing) as the plain array it holds
        return self.numpy().copy().__reduce__()

    @property
    def device(self) -> str:
        """Where ``.torch`` lives: ``"cpu"`` or ``"cuda:N"``."""
        return self._device

    def numpy(self) -> np.ndarray:
        """The values as a plain NumPy array (a view: no copy)."""
        return self.view(np.ndarray)

    @property
    def torch(self):
        """The buffer as a torch tensor on :attr:`device`, without a copy (the same tensor at
        every read; see the module docstring)."""
        if self._tensor is not None:
            return self._tensor
        torch = import_torch()
        if self._device == "cpu":
            tensor = torch.from_numpy(self.numpy())
        else:
            if not self._owner:
                raise InputError("on CUDA, take .torch of the whole sensor buffer and index the tensor "
                                 "(a slice of the NumPy buffer has no device mirror)")
            from numba import cuda

            self._mirror = cuda.to_device(self.numpy())
            tensor = torch.as_tensor(self._mirror, device=self._device)
        self._tensor = tensor
        return tensor

    def sync(self) -> None:
        """After an update: copy the buffer into its device mirror, if it has one (CUDA)."""
        if self._mirror is not None:
            self._mirror.copy_to_device(self.numpy())

    def __repr__(self) -> str:
        return f"ArrayView({np.array2string(self.numpy(), threshold=20)}, device={self._device!r})"
