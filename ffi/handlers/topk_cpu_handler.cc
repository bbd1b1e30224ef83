// topk_cpu_handler.cc (level: FFI handlers): the CPU handler of jmp_top_k (topk_ffi.h) and the _cpu
// module's top_k hooks: the tuning table (tuning/topk.h, tuning/workspace.h) that the lowering
// sizes the CUDA workspace and picks the route with, and the tests check (add_topk_hooks, called by
// cpu_module.cc).
#include <nanobind/nanobind.h>

#include <new>

#include "../cpu/topk_cpu.h"
#include "jax_mergepath/tuning/topk.h"
#include "jax_mergepath/tuning/workspace.h"
#include "topk_ffi.h"
#include "topk_hooks.h"

namespace jax_mergepath {
namespace {

ffi::Error TopkCpuImpl(ffi::AnyBuffer keys, ffi::Result<ffi::AnyBuffer> values,
                       ffi::Result<ffi::AnyBuffer> indices, ffi::RemainingRets extra, int64_t k,
                       bool largest, int64_t key_class, int64_t strategy) {
  // (strategy: the CUDA kernels'; the CPU's one way ignores it)
  auto call = decode_top_k(keys, values, indices, k, largest, key_class, strategy);
  if (!call.has_value()) return call.error();
  if (!extra.empty()) return invalid("top_k", "unexpected extra results");
  bool done = false;
  try {
    done = topk_cpu(*call);
  } catch (...) {  // (the entry reserves its buffers before any thread starts)
    done = false;
  }
  if (!done) return ffi::Error::Internal("jax_mergepath.top_k: out of host memory");
  return ffi::Error::Success();
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(jmp_top_k_cpu, TopkCpuImpl, bind_top_k(ffi::Ffi::Bind()));

}  // namespace jax_mergepath

namespace nb = nanobind;

void add_topk_hooks(nb::module_& m) {
  namespace jmp = jax_mergepath;
  m.def(
      "topk_workspace_per_row",
      [](int key_bytes, int64_t k, int64_t length, int64_t strategy) {
        return jmp::topk_workspace_per_row(key_bytes, k, length, strategy);
      },
      nb::arg("key_bytes"), nb::arg("k"), nb::arg("length"), nb::arg("strategy") = -1,
      "int32 elements a row of the CUDA top_k's workspace for rows of `length` keys, whatever "
      "the number of rows, under `strategy` (-1: tuning's; tuning/workspace.h)");
  m.def(
      "topk_workspace_bound",
      [](int key_bytes, int64_t k) {
        const jmp::WorkspaceBound bound = jmp::topk_workspace_bound(key_bytes, k);
        nb::list terms;
        for (int i = 0; i < bound.count; ++i) {
          const jmp::WorkspaceTerm& term = bound.terms[i];
          terms.append(nb::make_tuple(term.multiplier, term.divisor, term.at_most_one));
        }
        return terms;
      },
      "[(multiplier, divisor, at_most_one), ...]: the same as a bound for any length L (a "
      "symbolic axis), as tuning.h's workspace bounds");
  m.def(
      "topk_workspace_bytes",
      [](int key_bytes, int64_t k, int64_t rows, int64_t length, int64_t strategy) {
        return jmp::topk_layout(key_bytes, k, rows, length, strategy).bytes;
      },
      nb::arg("key_bytes"), nb::arg("k"), nb::arg("rows"), nb::arg("length"),
      nb::arg("strategy") = -1,
      "bytes of the CUDA top_k's workspace a call of rows x length keys lays out under "
      "`strategy` (test hook of the exact size)");
  m.def(
      "topk_strategy",
      [](int64_t k, int64_t length) { return static_cast<int>(jmp::topk_strategy(k, length)); },
      "the CUDA top_k's strategy for rows of `length` keys (tuning/topk.h TopkStrategy): 0 none, "
      "1 a block a row, 2 the grid then a block, 3 the grid then the merge sort of the "
      "candidates, 4 a row in registers, 5 a block a row vectorized, 6 / 7 the stream "
      "strategy then a block / the merge sort");
  m.def(
      "topk_resolve_strategy",
      [](int64_t forced, int64_t k, int64_t length) {
        return static_cast<int>(jmp::topk_resolve_strategy(forced, k, length));
      },
      "the strategy a call runs with `forced` (-1: tuning's; a grid or stream variant stands "
      "for both): -1 where the forced one cannot run it");
  m.def(
      "topk_regs_shape",
      [](int64_t k, int64_t length) {
        const jmp::TopkRegsShape shape = jmp::topk_regs_shape(k, length);
        return nb::make_tuple(shape.group, shape.items);
      },
      "(threads a row, keys a thread) of the registers strategy, (0, 0) where it cannot run");
  m.def("topk_grid_capacity", &jmp::topk_grid_capacity,
        "candidates a grid row of the CUDA top_k keeps");
  m.def("topk_block_cap", &jmp::topk_block_cap,
        "candidates a block of the CUDA top_k's rows kernel holds in shared memory");
  m.def("topk_sample_rank", &jmp::topk_sample_rank,
        "the rank of the sample taken as the threshold (k, length, samples)");
  m.def(
      "topk_route",
      [](bool cuda, int key_bytes, int64_t rows, int64_t length, int64_t k) {
        return static_cast<int>(jmp::topk_route(cuda, key_bytes, rows, length, k));
      },
      "how a top_k call runs on a platform (cuda or not): 0 the kernels, 1 the sort of the "
      "order keys, 2 XLA's top_k of the order keys (tuning/topk.h)");
}
