// topk_hooks.h (level: FFI handlers): the _cpu module's top_k hooks (topk_cpu_handler.cc), added by
// cpu_module.cc.
#pragma once

#include <nanobind/nanobind.h>

void add_topk_hooks(nanobind::module_& m);
