/* What the host code needs to know about the CUDA runtime, without including it. */
#ifndef SMLA_CUDA_DEVICE_H
#define SMLA_CUDA_DEVICE_H

#ifdef SMLA_WITH_CUDA
/* Returns 1 and fills device and SM count when a GPU is usable, else 0. */
int smla_cuda_probe(int *device, int *sm_count);
#endif

#endif
