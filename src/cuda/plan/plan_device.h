/* The device half of a device plan (plan_device.cu), callable from the C host code.
 * Device buffers, pinned staging and an event are allocated once at create; their
 * addresses never change. */
#ifndef SMLA_PLAN_DEVICE_H
#define SMLA_PLAN_DEVICE_H

#include "plan.h"

#ifdef SMLA_WITH_CUDA
/* Allocates plan->device for plan->capacity and points plan->view's arrays at it. */
smla_status smla_plan_device_create(smla_plan *plan);
void smla_plan_device_destroy(smla_plan_device *device);
/* SMLA_OK when seq_lens is readable by the plan's device (device, managed or mapped
 * host memory) and the plan's device is current. */
smla_status smla_plan_device_check_batch(const smla_plan *plan, const int32_t *seq_lens);
/* Packs the host arrays of the last build into the pinned staging (after the previous
 * staging copy has completed), copies it to the device on stream and launches the
 * refresh. No host synchronisation beyond that guard. */
smla_status smla_plan_device_upload(smla_plan *plan, void *stream);
/* Launches the refresh kernel only (graph-capturable). */
smla_status smla_plan_device_refresh(const smla_plan *plan, void *stream);
#endif

#endif
