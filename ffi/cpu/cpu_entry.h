// cpu_entry.h (level: CPU backend): the CPU backend's entry points. They run the shared core
// (merge_path.h, batch_geometry.h, sort_network.h) with the GPU's tile decomposition
// (tuning/merge.h, tuning/sort.h), spread over host threads. Never throw; inputs are assumed
// validated by the FFI handler.
#pragma once

#include "jax_mergepath/call_args.h"

namespace jax_mergepath {

void merge_cpu(const MergeCall& call);       // merge_cpu.cc
void ragged_merge_cpu(const RaggedMergeCall& call);  // merge_cpu.cc
void sort_cpu(const SortCall& call);         // sort_cpu.cc
void co_rank_cpu(const CoRankCall& call);    // search_cpu.cc
void is_sorted_cpu(const IsSortedCall& call);
void searchsorted_cpu(const SearchCall& call);

}  // namespace jax_mergepath
