// queries.cu (level: instances): the query kernels of every key traits (co_rank, is_sorted,
// searchsorted's binary search): explicit instances of launch/query_launch.cuh's launchers
// (declared in launch/per_traits.h), in one translation unit: they are small. (The sort's row
// flags run their own kernel, kernels/sorted_copy.cuh, on is_sorted's chunk check.)
#include "../launch/query_launch.cuh"

namespace jax_mergepath {

#define JMP_QUERIES(TRAITS)                                                                  \
  template cudaError_t co_rank_for_traits<TRAITS>(const CoRankCall&, cudaStream_t);          \
  template cudaError_t is_sorted_for_traits<TRAITS>(const IsSortedCall&, cudaStream_t);      \
  template cudaError_t searchsorted_for_traits<TRAITS>(const SearchCall&, int32_t*,          \
                                                       cudaStream_t);

JMP_QUERIES(U8Key)
JMP_QUERIES(U16Key)
JMP_QUERIES(F16Key)
JMP_QUERIES(BF16Key)
JMP_QUERIES(U32Key)
JMP_QUERIES(F32Key)
JMP_QUERIES(U64Key)
JMP_QUERIES(F64Key)

#undef JMP_QUERIES

}  // namespace jax_mergepath
