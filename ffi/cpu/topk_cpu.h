// topk_cpu.h (level: CPU backend): the CPU backend's top_k entry point (topk_cpu.cc). Never throws;
// inputs are validated by the FFI handler. Returns false when its candidate buffers cannot be
// allocated.
#pragma once

#include "jax_mergepath/topk.h"

namespace jax_mergepath {

bool topk_cpu(const TopkCall& call);

}  // namespace jax_mergepath
