// topk_regs.cu (level: instances): the CUDA top_k's registers strategy (kernels/topk_regs.cuh:
// seven group shapes a key width), instantiated for the four key widths in a translation unit of
// their own, compiled beside entry/topk_cuda.cu (which declares them: launch/topk_launch.cuh).
#include "../kernels/topk_regs.cuh"

namespace jax_mergepath {
namespace topk {

template cudaError_t topk_regs_launch<uint8_t>(const TopkCall&, TopkOrder<uint8_t>, cudaStream_t);
template cudaError_t topk_regs_launch<uint16_t>(const TopkCall&, TopkOrder<uint16_t>,
                                                cudaStream_t);
template cudaError_t topk_regs_launch<uint32_t>(const TopkCall&, TopkOrder<uint32_t>,
                                                cudaStream_t);
template cudaError_t topk_regs_launch<uint64_t>(const TopkCall&, TopkOrder<uint64_t>,
                                                cudaStream_t);

}  // namespace topk
}  // namespace jax_mergepath
