// Probing the current CUDA device for the context.
#include <cuda_runtime.h>

extern "C" {
#include "cuda_device.h"
}

extern "C" int smla_cuda_probe(int *device, int *sm_count)
{
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
        cudaGetLastError(); // clear the sticky "no device" error
        return 0;
    }
    if (cudaGetDevice(device) != cudaSuccess)
        return 0;
    if (cudaDeviceGetAttribute(sm_count, cudaDevAttrMultiProcessorCount, *device) != cudaSuccess)
        return 0;
    return 1;
}
