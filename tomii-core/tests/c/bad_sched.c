/*
 * Scheduler tables the loader must reject, one per macro, for tests/c_plugins.rs:
 *
 *   -DBAD_MAJOR      abi_major is 2
 *   -DBAD_SIZE=N     struct_size is N (smaller than the v1 table)
 *   -DNULL_PUSH      push is NULL
 *   -DNULL_NAME      the name is NULL
 *
 * Without a macro the table is valid, a control that loads. The callbacks are stubs: no test runs
 * a frame with this scheduler.
 */

#include <stddef.h>

#include "tomii/tomii.h"

#ifdef BAD_MAJOR
#define ABI_MAJOR 2
#else
#define ABI_MAJOR TOMII_SCHED_ABI_MAJOR
#endif

#ifdef BAD_SIZE
#define STRUCT_SIZE BAD_SIZE
#else
#define STRUCT_SIZE sizeof(TomiiSchedulerVtable)
#endif

#ifdef NULL_NAME
#define NAME NULL
#else
#define NAME "bad"
#endif

static int state_storage;

static int32_t stub_create(const TomiiSchedInit *init, void **state, TomiiErrorBuf err) {
    (void)init;
    (void)err;
    *state = &state_storage;
    return TOMII_OK;
}

static void stub_destroy(void *state) {
    (void)state;
}

#ifdef NULL_PUSH
#define PUSH NULL
#else
static int32_t stub_push(void *state, uint32_t worker, const TomiiTask *tasks, size_t n) {
    (void)state;
    (void)worker;
    (void)tasks;
    (void)n;
    return TOMII_ERR;
}
#define PUSH stub_push
#endif

static int32_t stub_pop(void *state, uint32_t worker, TomiiTask *out, size_t max, size_t *n_out) {
    (void)state;
    (void)worker;
    (void)out;
    (void)max;
    *n_out = 0;
    return TOMII_OK;
}

static const TomiiSchedulerVtable VTABLE = {
    .header = {ABI_MAJOR, TOMII_SCHED_ABI_MINOR, STRUCT_SIZE, 0, NAME},
    .create = stub_create,
    .destroy = stub_destroy,
    .push = PUSH,
    .pop = stub_pop,
};

const TomiiSchedulerVtable *tomii_scheduler_v1(void) {
    return &VTABLE;
}
