// radix_16.cu: CUB's radix sorts of 16-bit keys (radix_cub.h, JMP_RADIX_CUB_INSTANCES); one
// translation unit a width (CUB's headers take most of its compile time; the widths build in
// parallel).
#include "../radix_cub.cuh"

namespace jax_mergepath {

JMP_RADIX_CUB_INSTANCES(16)

}  // namespace jax_mergepath
