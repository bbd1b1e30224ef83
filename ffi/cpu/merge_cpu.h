// merge_cpu.h: the CPU backend's entry points. They run the shared merge-path core (merge_path.h)
// with the GPU's tile decomposition (tuning.h): every row is cut into MergePolicy tiles at
// co_rank boundaries, and tiles are merged serially, spread over host threads.
// Never throw; inputs are assumed validated by the FFI handler.
#pragma once

#include "jax_mergepath/merge_args.h"

namespace jax_mergepath {

void merge_cpu(const MergeCall& call);
void co_rank_cpu(const CoRankCall& call);
void is_sorted_cpu(const IsSortedCall& call);

}  // namespace jax_mergepath
