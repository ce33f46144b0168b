/*
 * Scheduler tables the loader must reject, one per macro, for tests/c_plugins.rs:
 *
 *   -DBAD_MAJOR      abi_major is 2
 *   -DBAD_SIZE=N     struct_size is N (smaller than the v1 table)
 *   -DNULL_PUSH      push is NULL
 *   -DNULL_NAME      the name is NULL
 *   -DPOP_HANDLES_WITH_HOOKS  TOMII_SCHED_POP_HANDLES together with a task_started hook
 *   -DV1_1_TABLE     a valid table of minor 1, whose struct_size ends before v1.2's push_keep; the
 *                    field after it is set, and the loader must not read it
 *   -DGATE_WITHOUT_PUSH_KEEP  keep_gate (v1.4) without push_keep, which the host calls while the
 *                    gate is closed
 *   -DMISALIGNED_GATE a valid table whose keep_gate points worker 0 at a misaligned counter: the
 *                    host refuses it when the run creates the scheduler
 *   -DNEWER_MINOR    a valid table from a later minor version: abi_minor 3 above this header's,
 *                    and two fields appended after the v1.0 table (the loader must accept it and
 *                    ignore what it does not know)
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
#elif defined(V1_1_TABLE)
#define STRUCT_SIZE offsetof(TomiiSchedulerVtable, push_keep)
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

#ifdef NEWER_MINOR
/* The table as a later minor version would lay it out: the v1.0 table, then appended fields. */
typedef struct {
    TomiiSchedulerVtable v1;
    void (*appended_hook)(void *state);
    uint64_t appended_flags;
} LaterVtable;

static const LaterVtable LATER = {
    .v1 = {
        .header = {ABI_MAJOR, TOMII_SCHED_ABI_MINOR + 3, sizeof(LaterVtable), 0, NAME},
        .create = stub_create,
        .destroy = stub_destroy,
        .push = PUSH,
        .pop = stub_pop,
    },
    .appended_hook = NULL,
    .appended_flags = 0,
};

const TomiiSchedulerVtable *tomii_scheduler_v1(void) {
    return &LATER.v1;
}
#else
#ifdef POP_HANDLES_WITH_HOOKS
static void stub_task_started(void *state, uint32_t worker, const TomiiTask *task) {
    (void)state;
    (void)worker;
    (void)task;
}
#define FLAGS TOMII_SCHED_POP_HANDLES
#define TASK_STARTED stub_task_started
#else
#define FLAGS 0
#define TASK_STARTED NULL
#endif

#ifdef V1_1_TABLE
#define MINOR 1
#else
#define MINOR TOMII_SCHED_ABI_MINOR
#endif

#if defined(V1_1_TABLE) || defined(MISALIGNED_GATE)
/* Never called: V1_1_TABLE's size says it has no push_keep; MISALIGNED_GATE's run stops first. */
static int32_t stub_push_keep(void *state, uint32_t worker, const TomiiTask *tasks, size_t n, size_t *kept) {
    (void)state;
    (void)worker;
    (void)tasks;
    (void)n;
    (void)kept;
    return TOMII_ERR;
}
#define PUSH_KEEP stub_push_keep
#else
#define PUSH_KEEP NULL
#endif

#if defined(GATE_WITHOUT_PUSH_KEEP) || defined(MISALIGNED_GATE)
static uint64_t counters[3];
static void stub_keep_gate(void *state, uint32_t worker, TomiiKeepGate *gate) {
    (void)state;
    (void)worker;
    gate->queued = &counters[0];
    gate->taken = (const uint64_t *)((const char *)&counters[1] + 4);
}
#define KEEP_GATE stub_keep_gate
#else
#define KEEP_GATE NULL
#endif

static const TomiiSchedulerVtable VTABLE = {
    .header = {ABI_MAJOR, MINOR, STRUCT_SIZE, FLAGS, NAME},
    .create = stub_create,
    .destroy = stub_destroy,
    .push = PUSH,
    .pop = stub_pop,
    .task_started = TASK_STARTED,
    .push_keep = PUSH_KEEP,
    .keep_gate = KEEP_GATE,
};

const TomiiSchedulerVtable *tomii_scheduler_v1(void) {
    return &VTABLE;
}
#endif
