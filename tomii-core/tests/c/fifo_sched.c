/*
 * A minimal FIFO scheduler written in C against tomii/tomii.h, for tests/c_plugins.rs: it proves
 * the scheduler ABI works from C through the real loader.
 *
 * One ring buffer of ready tasks behind a pthread mutex, sized from init->max_ready (the most
 * tasks that can be pushed and not yet popped). The table does not set TOMII_SCHED_SERIAL: the host
 * calls push and pop concurrently from every worker and the mutex serialises them. A worker gets
 * the oldest tasks whose worker range contains it. Every scheduler option is rejected with
 * "bad option KEY" (this scheduler has none), which the tests use to make `create` fail.
 *
 * With -DHANG_POP_AFTER=N, pop number N (counting from 0) never returns: a scheduler stuck in a
 * callback, for the watchdog's tests; with -DHANG_MARK='"PATH"' as well, the first stuck pop
 * creates the file PATH, so that a test knows the run is stuck without guessing how long it takes.
 * With -DDROP_ONCE_MARK='"PATH"', the first pop that finds a task (with -DDROP_WHEN_READY=N: N
 * tasks ready or more) while the file PATH does not exist creates PATH and loses what it popped (a
 * failure that does not repeat: every later pop, in any process, is right), for tomii.check's
 * report of a flaky failure.
 * With -DLIFO_AS_FIFO, it calls itself "fifo" and hands out the newest task first: every run is
 * right but for the FIFO order tomii.check holds a scheduler named fifo to.
 * With -DHUGE_STATS, stats claims its text needs 2^40 bytes.
 * With -DPOP_HANDLES, the table sets TOMII_SCHED_POP_HANDLES and pop writes each descriptor's
 * handle and fills the rest of it with 0xA5 bytes: the host must read nothing but handles.
 */

#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "task_ring.h"

typedef struct Fifo {
    LockedRing queue; /* first: the state is made by locked_ring_create */
    uint64_t pushed;
    uint64_t popped;
    const char *error; /* static message of the last failed push */
} Fifo;

static int32_t fifo_create(const TomiiSchedInit *init, void **state, TomiiErrorBuf err) {
    return locked_ring_create(sizeof(Fifo), 1, init, state, err);
}

static int32_t fifo_push(void *state, uint32_t worker, const TomiiTask *tasks, size_t n) {
    (void)worker;
    Fifo *fifo = state;
    pthread_mutex_lock(&fifo->queue.lock);
    if (ring_push(&fifo->queue.ring, tasks, n) != TOMII_OK) {
        fifo->error = "queue full: more tasks pushed and not popped than init->max_ready";
        pthread_mutex_unlock(&fifo->queue.lock);
        return TOMII_ERR;
    }
    fifo->pushed += n;
    pthread_mutex_unlock(&fifo->queue.lock);
    return TOMII_OK;
}

#ifdef LIFO_AS_FIFO
/* ring_pop, newest first. */
static size_t pop_newest(TaskRing *ring, uint32_t worker, TomiiTask *out, size_t max) {
    size_t count = 0;
    for (size_t index = ring->len; index > 0 && count < max; index--) {
        if (task_allowed(ring_at(ring, index - 1), worker)) {
            out[count++] = *ring_at(ring, index - 1);
            ring_remove_at(ring, index - 1);
        }
    }
    return count;
}
#define ring_pop pop_newest
#define SCHEDULER_NAME "fifo"
#else
#define SCHEDULER_NAME "c-fifo"
#endif

static int32_t fifo_pop(void *state, uint32_t worker, TomiiTask *out, size_t max, size_t *n_out) {
    Fifo *fifo = state;
#ifdef HANG_POP_AFTER
    static _Atomic unsigned long pops;
    unsigned long pop = pops++;
    if (pop >= HANG_POP_AFTER) {
#ifdef HANG_MARK
        if (pop == HANG_POP_AFTER) {
            FILE *mark = fopen(HANG_MARK, "w");
            if (mark != NULL) {
                fclose(mark);
            }
        }
#endif
        for (;;) {
        }
    }
#endif
    pthread_mutex_lock(&fifo->queue.lock);
    size_t count = ring_pop(&fifo->queue.ring, worker, out, max);
#ifdef POP_HANDLES
    for (size_t i = 0; i < count; i++) {
        uint64_t handle = out[i].handle;
        memset(&out[i], 0xA5, sizeof out[i]);
        out[i].handle = handle;
    }
#endif
#ifdef DROP_ONCE_MARK
#ifndef DROP_WHEN_READY
#define DROP_WHEN_READY 1
#endif
    if (count > 0 && count + fifo->queue.ring.len >= DROP_WHEN_READY) {
        FILE *mark = fopen(DROP_ONCE_MARK, "wx"); /* fails once the file exists */
        if (mark != NULL) {
            fclose(mark);
            count = 0; /* the popped tasks are lost */
        }
    }
#endif
    fifo->popped += count;
    pthread_mutex_unlock(&fifo->queue.lock);
    *n_out = count;
    return TOMII_OK;
}

static size_t fifo_stats(void *state, char *buf, size_t cap) {
    Fifo *fifo = state;
    pthread_mutex_lock(&fifo->queue.lock);
    int needed = snprintf(buf, cap, "{\"pushed\":%llu,\"popped\":%llu,\"held\":%llu}",
                          (unsigned long long)fifo->pushed, (unsigned long long)fifo->popped,
                          (unsigned long long)fifo->queue.ring.len);
    pthread_mutex_unlock(&fifo->queue.lock);
#ifdef HUGE_STATS
    return (size_t)1 << 40;
#endif
    return needed < 0 ? 0 : (size_t)needed;
}

static const char *fifo_last_error(void *state) {
    Fifo *fifo = state;
    pthread_mutex_lock(&fifo->queue.lock);
    const char *error = fifo->error;
    pthread_mutex_unlock(&fifo->queue.lock);
    return error;
}

#ifdef POP_HANDLES
#define FLAGS TOMII_SCHED_POP_HANDLES
#else
#define FLAGS 0
#endif

static const TomiiSchedulerVtable VTABLE = {
    .header = {TOMII_SCHED_ABI_MAJOR, TOMII_SCHED_ABI_MINOR, sizeof(TomiiSchedulerVtable), FLAGS, SCHEDULER_NAME},
    .create = fifo_create,
    .destroy = locked_ring_destroy,
    .push = fifo_push,
    .pop = fifo_pop,
    .stats = fifo_stats,
    .last_error = fifo_last_error,
};

const TomiiSchedulerVtable *tomii_scheduler_v1(void) {
    return &VTABLE;
}
