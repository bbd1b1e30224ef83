"""The dtype rules of the package, one place each: the table of the kernels' key dtypes (what
they sort and merge, and how its bits order), the 2**31 limit of int32 positions (which axes are
long, the check that their positions have int64, the dtypes of positions: jnp's rules), and jnp's
promotion and weak types.

Adding a kernel key dtype on the Python side is one entry in KEY_DTYPES (the native side has its
own table in ffi/include/jax_mergepath/key_types.h and ffi/handlers/decode.h); key dtypes the
kernels do not take are mapped onto these in _keys.py.
"""

from __future__ import annotations

import enum
import warnings
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

try:  # jax's own weak-type-aware cast (what jnp's promotion uses)
    from jax._src.lax.lax import _convert_element_type
except ImportError:  # pragma: no cover - a jax without it: casts come out strongly typed
    _convert_element_type = None
try:  # jax's own check of a dtype the user asks for (what jnp.argsort's dtype= goes through)
    from jax._src.dtypes import check_and_canonicalize_user_dtype as _user_dtype
except ImportError:  # pragma: no cover - a jax without it: requested_dtype's own warning
    _user_dtype = None


class KeyKind(enum.Enum):
    UNSIGNED = "unsigned"  # bool and unsigned integers: the bits are the order
    SIGNED = "signed"  # two's complement: flip the sign bit
    FLOAT = "float"  # IEEE: NaN last, -0.0 == +0.0 (ordering.h)


class KeyInfo(NamedTuple):
    kind: KeyKind
    bits: int  # storage bits: the width of the order key


KEY_DTYPES: dict[np.dtype, KeyInfo] = {
    np.dtype(np.bool_): KeyInfo(KeyKind.UNSIGNED, 8),
    np.dtype(np.uint8): KeyInfo(KeyKind.UNSIGNED, 8),
    np.dtype(np.uint16): KeyInfo(KeyKind.UNSIGNED, 16),
    np.dtype(np.uint32): KeyInfo(KeyKind.UNSIGNED, 32),
    np.dtype(np.uint64): KeyInfo(KeyKind.UNSIGNED, 64),
    np.dtype(np.int8): KeyInfo(KeyKind.SIGNED, 8),
    np.dtype(np.int16): KeyInfo(KeyKind.SIGNED, 16),
    np.dtype(np.int32): KeyInfo(KeyKind.SIGNED, 32),
    np.dtype(np.int64): KeyInfo(KeyKind.SIGNED, 64),
    np.dtype(jnp.float16): KeyInfo(KeyKind.FLOAT, 16),
    np.dtype(jnp.bfloat16): KeyInfo(KeyKind.FLOAT, 16),
    np.dtype(np.float32): KeyInfo(KeyKind.FLOAT, 32),
    np.dtype(np.float64): KeyInfo(KeyKind.FLOAT, 64),
}


def key_info(dtype) -> KeyInfo | None:
    """The table's entry for dtype, or None when it is not a key dtype."""
    try:
        return KEY_DTYPES.get(np.dtype(dtype))
    except TypeError:
        return None


# ---------------------------------------------------------------- positions

INT32_LIMIT = 2**31  # positions along an axis this long or longer need int64 (the kernels' int32
#                     positions cannot hold them: such axes run the order-key way, _dispatch.py)

DimSize = Any  # an int, or a symbolic dimension of jax.export


def definitely(decide: Callable[[], bool]) -> bool:
    """decide(), or False when it compares symbolic dimensions it cannot decide for all their
    values (jax.export shape polymorphism)."""
    try:
        return bool(decide())
    except jax.errors.InconclusiveDimensionOperation:
        return False


def is_long(length: DimSize) -> bool:
    """Whether positions along an axis of `length` elements need int64 (INT32_LIMIT or more). A
    symbolic length counts as long only when it is for every value of its dimensions; otherwise
    it is assumed to fit, and the kernels check it at run time."""
    return definitely(lambda: length >= INT32_LIMIT)


def check_x64_length(length: DimSize, op: str, axis: str = "the axis", *,
                     overflow: bool = False) -> None:
    """A ValueError for an axis (`axis` says which, in the message) whose positions need int64
    (is_long) while jax_enable_x64 is off: the one check of that rule. overflow: what
    jnp.searchsorted does instead, its warning that int64 is not available, then its
    OverflowError, jnp's message first (JAX's tests match it)."""
    if jax.config.jax_enable_x64 or not is_long(length):
        return
    what = (f"jax_mergepath.{op}: {axis} has {length} elements; positions past "
            f"{INT32_LIMIT - 1} need int64: turn on jax_enable_x64")
    if overflow:
        requested_dtype(np.int64, op)
        raise OverflowError(f"Python integer {length} out of bounds for int32. {what} "
                            f"(jnp.{op} raises this OverflowError too)")
    raise ValueError(what)


def default_int() -> np.dtype:
    """jnp's default integer: int64 with jax_enable_x64 on, else int32."""
    return np.dtype(np.int64 if jax.config.jax_enable_x64 else np.int32)


def index_dtype(length: DimSize) -> np.dtype:
    """The dtype of positions along an axis of `length` elements, as jnp.argsort returns them
    (and merge's indices, co_rank, merge_runs' indices): jnp's default integer, int64 for a long
    axis (x64 off: jax canonicalizes that to int32, as for jnp.argsort)."""
    return np.dtype(np.int64) if is_long(length) else default_int()


def search_index_dtype(length: DimSize) -> np.dtype:
    """The dtype jnp.searchsorted returns for a sorted axis of `length` elements: int32, int64
    for a long axis."""
    return np.dtype(np.int64) if is_long(length) else np.dtype(np.int32)


def position_dtype(length: DimSize) -> np.dtype:
    """The dtype of lengths, splits and k along an axis of `length` elements, and of the
    positions computed in jnp along it: int32, int64 for a long axis (check_x64_length has made
    sure x64 is on)."""
    return np.dtype(np.int64) if is_long(length) else np.dtype(np.int32)


def requested_dtype(dtype: Any, op: str) -> np.dtype:
    """A dtype the user asks for (argsort's dtype=), as jnp takes it: its canonical form, a
    64-bit dtype without jax_enable_x64 its 32-bit twin with jnp's warning naming `op` (jnp's
    own check where jax has it), and jnp's errors for what is no dtype."""
    if _user_dtype is not None:
        return np.dtype(_user_dtype(dtype, op))
    asked, canonical = np.dtype(dtype), np.dtype(jax.dtypes.canonicalize_dtype(dtype))
    if canonical != asked:
        warnings.warn(
            f"Explicitly requested dtype {asked} requested in {op} is not available, and will "
            f"be truncated to dtype {canonical}. To enable more dtypes, set the jax_enable_x64 "
            "configuration option or the JAX_ENABLE_X64 shell environment variable.",
            UserWarning, stacklevel=3,
        )
    return canonical


def as_index(positions: jax.Array, dtype: Any) -> jax.Array:
    """Positions (the kernels write int32) in the dtype the caller returns: the one conversion
    of positions in the package."""
    return positions if positions.dtype == np.dtype(dtype) else positions.astype(dtype)


# ---------------------------------------------------------------- promotion and weak types


def with_weak_type(x: jax.Array, weak: bool) -> jax.Array:
    """x, weakly typed when `weak` (jnp's weak types: a Python scalar's dtype, which gives way in
    promotion), strongly typed otherwise; bits unchanged."""
    if bool(getattr(x, "weak_type", False)) == bool(weak) or _convert_element_type is None:
        return x
    return _convert_element_type(x, x.dtype, weak_type=bool(weak))


def promote(*arrays: jax.Array) -> list[jax.Array]:
    """The arrays in their common dtype as jnp.concatenate promotes them (weak types included);
    raises jax's TypePromotionError (a ValueError) where jnp.concatenate raises it."""
    dtype, weak = jax.dtypes.result_type(*arrays, return_weak_type_flag=True)
    out = []
    for x in arrays:
        if x.dtype != dtype:
            x = x.astype(dtype)
        out.append(with_weak_type(x, weak))
    return out
