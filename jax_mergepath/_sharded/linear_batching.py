"""A vmap rule for jax's `linear_call`, which the sharded calls' derivatives use (derivatives.py,
auto.py: the tangents' move with its own transpose) and which jax (0.10-0.12) cannot batch, so
that `jax.vmap(jax.grad(...))` of a sharded call (or of any jitted call on a host of several
devices, which runs the auto-axis way) raised "Batching rule for 'linear_call' not implemented".

Contract: a batched linear_call is a linear_call of the batched callee, every operand mapped
along axis 0 (unmapped ones broadcast), whose transpose is the batched transpose (its constants
unmapped, the residuals and cotangents mapped); every output is mapped along axis 0. Registered
once at import, only where jax has no rule of its own and has the internals it uses.
"""

from __future__ import annotations

import functools

try:  # (jax internals: a jax without them keeps its own behaviour, the package still imports)
    from jax._src.custom_derivatives import linear_call_p
    from jax._src.interpreters import batching
except ImportError:  # pragma: no cover - a jax that moved them
    linear_call_p = batching = None


def _batched_linear_call(axis_data, args, dims, *, callee, transpose_thunk, num_callee_consts,
                         num_res):
    args = [batching.bdim_at_front(x, d, axis_data.size) for x, d in zip(args, dims, strict=True)]
    batched_callee, _ = batching.batch_jaxpr(callee, axis_data, [True] * len(args), True)

    @functools.cache
    def batched_transpose():
        transpose, t_consts = transpose_thunk()
        mapped = [False] * len(t_consts) + [True] * (len(transpose.in_avals) - len(t_consts))
        return batching.batch_jaxpr(transpose, axis_data, mapped, True)[0], t_consts

    out = linear_call_p.bind(*args, callee=batched_callee, transpose_thunk=batched_transpose,
                             num_callee_consts=num_callee_consts, num_res=num_res)
    return out, [0] * len(out)


_rules = getattr(batching, "fancy_primitive_batchers", None)
if _rules is not None and hasattr(batching, "bdim_at_front") and linear_call_p not in _rules:
    _rules[linear_call_p] = _batched_linear_call
