"""NumPy arrays and PyTorch CPU tensors as the runtime's row blocks, without
copies: the runtime reads and writes the array's own memory (its data
pointer), so every array is checked first -- kind, device, dtype, rank,
C-contiguity, shape -- and rejected with TypeError / ValueError naming the
argument.

Data types: float32 (numpy.float32, torch.float32) and bf16 (torch.bfloat16;
NumPy has no bf16, so NumPy users pass bf16 rows as numpy.uint16 arrays
holding the bf16 bits, e.g. `(x_f32.view(numpy.uint32) >> 16).astype(numpy.uint16)`
for truncation, and get uint16 arrays back). Index arrays are int32 or int64,
weights float32.
"""

import numpy

from .native import ffi, lib

try:
    import torch
except ImportError:  # NumPy-only use; tensors are then never passed
    torch = None

_ROW_TYPES = {
    numpy.dtype(numpy.float32): lib.moecommFloat32,
    numpy.dtype(numpy.uint16): lib.moecommBfloat16,
}
_INDEX_TYPES = {
    numpy.dtype(numpy.int32): lib.moecommInt32,
    numpy.dtype(numpy.int64): lib.moecommInt64,
}
if torch is not None:
    _ROW_TYPES.update({torch.float32: lib.moecommFloat32, torch.bfloat16: lib.moecommBfloat16})
    _INDEX_TYPES.update({torch.int32: lib.moecommInt32, torch.int64: lib.moecommInt64})


def is_torch(array):
    return torch is not None and isinstance(array, torch.Tensor)


def checked(name, array, dtypes, ndim, shape=None):
    """Checks `array` (a numpy.ndarray or a CPU torch.Tensor) and returns its
    data pointer as `void *`. `dtypes` maps the accepted dtypes; `shape`
    entries of None are free."""
    if is_torch(array):
        if array.device.type != "cpu":
            raise ValueError(f"{name} must be a CPU tensor, got device {array.device}")
        contiguous = array.is_contiguous()
        pointer = array.data_ptr()
    elif isinstance(array, numpy.ndarray):
        contiguous = array.flags["C_CONTIGUOUS"]
        pointer = array.__array_interface__["data"][0]
    else:
        raise TypeError(f"{name} must be a numpy.ndarray or torch.Tensor, got {type(array).__name__}")
    if array.dtype not in dtypes:
        accepted = ", ".join(str(d) for d in dtypes)
        raise TypeError(f"{name} has dtype {array.dtype}, expected one of {accepted}")
    if array.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimensions, got shape {tuple(array.shape)}")
    if shape is not None and any(
        want is not None and want != got for want, got in zip(shape, array.shape)
    ):
        want = ", ".join("*" if d is None else str(d) for d in shape)
        raise ValueError(f"{name} has shape {tuple(array.shape)}, expected ({want})")
    if not contiguous:
        raise ValueError(f"{name} must be C-contiguous (row-major, no strides)")
    return ffi.cast("void *", pointer)


def row_type(array):
    return _ROW_TYPES[array.dtype]


def rows(name, array, hidden=None, num_rows=None):
    """A moecommRows_t over `array` [rows][H] (float32 or bf16). The returned
    struct points into `array`: keep the array alive while it is used."""
    data = checked(name, array, _ROW_TYPES, 2, (num_rows, hidden))
    block = ffi.new("moecommRows_t *")
    block.data = data
    block.rows = array.shape[0]
    block.hidden = array.shape[1]
    block.type = row_type(array)
    return block


def indices(name, array):
    """(moecommDataType_t, data pointer) of an index array [rows][K] of
    int32 or int64, checked once."""
    data = checked(name, array, _INDEX_TYPES, 2)
    return _INDEX_TYPES[array.dtype], data


def new_like(like, shape):
    """An uninitialized array of `like`'s kind (NumPy or torch) and dtype."""
    if is_torch(like):
        return torch.empty(shape, dtype=like.dtype)
    return numpy.empty(shape, dtype=like.dtype)
