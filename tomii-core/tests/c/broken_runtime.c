/*
 * A C scheduler that breaks its contract at run time, for tests/faults.rs: the host must stop the
 * run naming the scheduler and the violation, or eject it and finish on its own FIFO.
 *
 * The structure of fifo_sched.c: one ring buffer behind a pthread mutex, sized from
 * init->max_ready; a worker gets the oldest tasks whose range contains it. After AFTER tasks
 * (default 5) were handed out correctly, it misbehaves as one `-D` macro says:
 *
 *   (none)           behaves: the control
 *   -DFAULT_DUPLICATE hands out a task with successors (rank > 1) and keeps it queued, so it is
 *                     handed out again by the next pop (once)
 *   -DFAULT_DROP      silently discards the first task of one push (once): the stall watchdog
 *   -DFAULT_GARBAGE   hands out a handle the host never issued, UINT64_MAX (once)
 *   -DFAULT_OVERFLOW  pop writes n_out = max + 1 (it writes no more than max descriptors)
 *   -DFAULT_ERROR     pop returns TOMII_ERR; last_error says "injected C error"
 */

#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "task_ring.h"

#ifndef AFTER
#define AFTER 5
#endif

typedef struct Broken {
    LockedRing queue;    /* first: the state is made by locked_ring_create */
    uint64_t handed_out; /* tasks handed out correctly */
    int fired;           /* a one-shot fault happened */
    const char *error;   /* static message of the last failed call */
} Broken;

static int32_t broken_create(const TomiiSchedInit *init, void **state, TomiiErrorBuf err) {
    return locked_ring_create(sizeof(Broken), 1, init, state, err);
}

/* Whether the fault is due: AFTER tasks were handed out and a one-shot fault has not happened. */
static int due(const Broken *broken) {
    return broken->handed_out >= AFTER && !broken->fired;
}

static int32_t broken_push(void *state, uint32_t worker, const TomiiTask *tasks, size_t n) {
    (void)worker;
    Broken *broken = state;
    pthread_mutex_lock(&broken->queue.lock);
    size_t first = 0;
#ifdef FAULT_DROP
    if (due(broken) && n > 0) {
        broken->fired = 1;
        first = 1;
    }
#endif
    if (ring_push(&broken->queue.ring, tasks + first, n - first) != TOMII_OK) {
        broken->error = "queue full: more tasks pushed and not popped than init->max_ready";
        pthread_mutex_unlock(&broken->queue.lock);
        return TOMII_ERR;
    }
    pthread_mutex_unlock(&broken->queue.lock);
    return TOMII_OK;
}

/* The misbehaving pop when the fault is due: its status, or -1 to pop normally. */
static int32_t misbehave(Broken *broken, uint32_t worker, TomiiTask *out, size_t max, size_t *n_out) {
    (void)broken, (void)worker, (void)out, (void)max, (void)n_out; /* each fault uses some */
#if defined(FAULT_DUPLICATE)
    for (size_t i = 0; i < broken->queue.ring.len; i++) {
        const TomiiTask *task = ring_at(&broken->queue.ring, i);
        if (task_allowed(task, worker) && task->rank > 1) {
            /* Handed out and kept: it is the oldest task for this worker, so it goes out again. */
            out[0] = *task;
            *n_out = 1;
            broken->handed_out++;
            broken->fired = 1;
            return TOMII_OK;
        }
    }
#elif defined(FAULT_GARBAGE)
    out[0] = (TomiiTask){.handle = UINT64_MAX};
    *n_out = 1;
    broken->fired = 1;
    return TOMII_OK;
#elif defined(FAULT_OVERFLOW)
    *n_out = max + 1;
    return TOMII_OK;
#elif defined(FAULT_ERROR)
    broken->error = "injected C error";
    *n_out = 0;
    return TOMII_ERR;
#endif
    return -1;
}

static int32_t broken_pop(void *state, uint32_t worker, TomiiTask *out, size_t max, size_t *n_out) {
    Broken *broken = state;
    pthread_mutex_lock(&broken->queue.lock);
    if (max > 0 && due(broken)) {
        int32_t status = misbehave(broken, worker, out, max, n_out);
        if (status >= 0) {
            pthread_mutex_unlock(&broken->queue.lock);
            return status;
        }
    }
    size_t count = ring_pop(&broken->queue.ring, worker, out, max);
    broken->handed_out += count;
    pthread_mutex_unlock(&broken->queue.lock);
    *n_out = count;
    return TOMII_OK;
}

static const char *broken_last_error(void *state) {
    Broken *broken = state;
    pthread_mutex_lock(&broken->queue.lock);
    const char *error = broken->error;
    pthread_mutex_unlock(&broken->queue.lock);
    return error;
}

static const TomiiSchedulerVtable VTABLE = {
    .header = {TOMII_SCHED_ABI_MAJOR, TOMII_SCHED_ABI_MINOR, sizeof(TomiiSchedulerVtable), 0, "c-broken"},
    .create = broken_create,
    .destroy = locked_ring_destroy,
    .push = broken_push,
    .pop = broken_pop,
    .last_error = broken_last_error,
};

const TomiiSchedulerVtable *tomii_scheduler_v1(void) {
    return &VTABLE;
}
