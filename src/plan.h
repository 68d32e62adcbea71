/* The batch planner's internals (DESIGN section 4), shared by plan.c, plan_build.c, the
 * CUDA plan code (src/cuda/plan/) and the tests.
 *
 * A build computes on the host, from the host query_start_loc, everything that depends
 * only on query lengths; per segment it keeps the request and the offset
 *   seq_offset = segment end within the request - request query length   (<= 0)
 * so that segment sequence length = seq_lens[request] + seq_offset. Applying that
 * formula to the batch's seq_lens is the "refresh": on the host for a host plan, by a
 * small kernel on the caller's stream for a device plan. */
#ifndef SMLA_PLAN_H
#define SMLA_PLAN_H

#include "internal.h"

/* Host arrays of the host-computed parts, sized by capacity. For a host plan they are
 * also the plan's outputs (seq lens included); for a device plan they are the host_*
 * copies, and seq_lens arrays are NULL here (the device computes them). */
typedef struct smla_plan_host_arrays {
    int32_t *decode_query_starts;  /* [max_requests + 1] */
    int32_t *decode_seq_lens;      /* [max_requests], host plan only */
    int32_t *segment_query_starts; /* [max_segments + 1] */
    int32_t *segment_seq_lens;     /* [max_segments], host plan only */
    int32_t *segment_requests;     /* [max_segments] */
    int32_t *segment_seq_offsets;  /* [max_segments] */
} smla_plan_host_arrays;

typedef struct smla_plan_device smla_plan_device; /* src/cuda/plan/ */

struct smla_plan {
    smla_context *ctx;
    smla_memory memory;
    smla_plan_capacity capacity;   /* max_segments resolved */
    smla_plan_view view;           /* counts of the last build, fixed array pointers */
    smla_plan_host_arrays host;
    void *host_block;              /* the one allocation behind host */
    const int32_t *seq_lens;       /* the last build's batch seq_lens */
    int32_t host_counts[2];        /* num_decodes, num_segments: a host plan's view.counts */
    smla_plan_device *device;      /* device plans only */
    int built;                     /* 1 once a build has succeeded */
};

/* Recomputes segment and decode sequence lengths (and a device plan's decode token
 * positions) from the seq_lens remembered from the last build. Device plans: only
 * launches the refresh kernel on stream (a cudaStream_t), so it can be captured in a CUDA
 * graph; the graph keeps that seq_lens pointer. Host plans: computes them now. */
smla_status smla_plan_refresh(const smla_plan *plan, void *stream);

#endif
