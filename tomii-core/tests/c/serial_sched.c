/*
 * A FIFO scheduler that declares TOMII_SCHED_SERIAL and relies on it: no lock of its own, every
 * callback (push, pop and the four hooks) counted, and any two callbacks found running at once
 * counted in `tomii_test_overlaps`, which tests/c_plugins.rs reads. Each callback holds its
 * "inside" mark across a short spin, so a host that let two in at once would be seen.
 */

#define _POSIX_C_SOURCE 200809L

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "task_ring.h"

_Static_assert(sizeof(atomic_ulong) == 8, "the test reads these counters as 64-bit atomics");

atomic_ulong tomii_test_overlaps;
atomic_ulong tomii_test_task_hooks;
atomic_ulong tomii_test_frame_hooks;

static atomic_int inside;

static void enter(void) {
    if (atomic_fetch_add(&inside, 1) != 0) {
        atomic_fetch_add(&tomii_test_overlaps, 1);
    }
    for (volatile int spin = 0; spin < 200; spin++) {
    }
}

static void leave(void) {
    atomic_fetch_sub(&inside, 1);
}

static int32_t serial_create(const TomiiSchedInit *init, void **state, TomiiErrorBuf err) {
    (void)err;
    TaskRing *ring = calloc(1, sizeof *ring);
    if (ring == NULL || init->max_ready == 0 || ring_init(ring, init) != TOMII_OK) {
        free(ring);
        return TOMII_ERR;
    }
    *state = ring;
    return TOMII_OK;
}

static void serial_destroy(void *state) {
    ring_free(state);
    free(state);
}

static int32_t serial_push(void *state, uint32_t worker, const TomiiTask *tasks, size_t n) {
    (void)worker;
    enter();
    int32_t status = ring_push(state, tasks, n);
    leave();
    return status;
}

static int32_t serial_pop(void *state, uint32_t worker, TomiiTask *out, size_t max, size_t *n_out) {
    enter();
    size_t count = ring_pop(state, worker, out, max);
    leave();
    *n_out = count;
    return TOMII_OK;
}

static void task_hook(void *state, uint32_t worker, const TomiiTask *task) {
    (void)state, (void)worker, (void)task;
    enter();
    atomic_fetch_add(&tomii_test_task_hooks, 1);
    leave();
}

static void task_done_hook(void *state, uint32_t worker, const TomiiTask *task, uint64_t ns) {
    (void)ns;
    task_hook(state, worker, task);
}

static void frame_hook(void *state, uint64_t frame, uint32_t slot) {
    (void)state, (void)frame, (void)slot;
    enter();
    atomic_fetch_add(&tomii_test_frame_hooks, 1);
    leave();
}

static void frame_done_hook(void *state, uint64_t frame, uint32_t slot, uint64_t latency_ns) {
    (void)latency_ns;
    frame_hook(state, frame, slot);
}

static const TomiiSchedulerVtable VTABLE = {
    .header = {TOMII_SCHED_ABI_MAJOR, TOMII_SCHED_ABI_MINOR, sizeof(TomiiSchedulerVtable), TOMII_SCHED_SERIAL,
               "c-serial"},
    .create = serial_create,
    .destroy = serial_destroy,
    .push = serial_push,
    .pop = serial_pop,
    .task_started = task_hook,
    .task_completed = task_done_hook,
    .frame_started = frame_hook,
    .frame_completed = frame_done_hook,
};

const TomiiSchedulerVtable *tomii_scheduler_v1(void) {
    return &VTABLE;
}
