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

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "tomii/tomii.h"

#ifndef AFTER
#define AFTER 5
#endif

typedef struct Broken {
    pthread_mutex_t lock;
    TomiiTask *ring;
    size_t cap;          /* init->max_ready */
    size_t head;         /* index of the oldest task */
    size_t len;          /* tasks held */
    uint64_t handed_out; /* tasks handed out correctly */
    int fired;           /* a one-shot fault happened */
    const char *error;   /* static message of the last failed call */
} Broken;

static void write_error(TomiiErrorBuf err, const char *what, const char *detail) {
    if (err.ptr != NULL && err.cap > 0) {
        snprintf(err.ptr, err.cap, "%s%s", what, detail);
    }
}

static int32_t broken_create(const TomiiSchedInit *init, void **state, TomiiErrorBuf err) {
    if (init->struct_size < sizeof(TomiiSchedInit)) {
        write_error(err, "the host's init block is smaller than this scheduler's", "");
        return TOMII_ERR;
    }
    if (init->knob_count > 0) {
        write_error(err, "bad option ", init->knobs[0].key);
        return TOMII_ERR;
    }
    if (init->max_ready == 0 || init->max_ready > SIZE_MAX / sizeof(TomiiTask)) {
        write_error(err, "max_ready is 0 or too large for one queue", "");
        return TOMII_ERR;
    }
    Broken *broken = calloc(1, sizeof *broken);
    TomiiTask *ring = malloc((size_t)init->max_ready * sizeof(TomiiTask));
    if (broken == NULL || ring == NULL || pthread_mutex_init(&broken->lock, NULL) != 0) {
        free(broken);
        free(ring);
        write_error(err, "out of memory", "");
        return TOMII_ERR;
    }
    broken->ring = ring;
    broken->cap = (size_t)init->max_ready;
    *state = broken;
    return TOMII_OK;
}

static void broken_destroy(void *state) {
    Broken *broken = state;
    pthread_mutex_destroy(&broken->lock);
    free(broken->ring);
    free(broken);
}

/* Whether the fault is due: AFTER tasks were handed out and a one-shot fault has not happened. */
static int due(const Broken *broken) {
    return broken->handed_out >= AFTER && !broken->fired;
}

static int32_t broken_push(void *state, uint32_t worker, const TomiiTask *tasks, size_t n) {
    (void)worker;
    Broken *broken = state;
    pthread_mutex_lock(&broken->lock);
    size_t first = 0;
#ifdef FAULT_DROP
    if (due(broken) && n > 0) {
        broken->fired = 1;
        first = 1;
    }
#endif
    if (n - first > broken->cap - broken->len) {
        broken->error = "queue full: more tasks pushed and not popped than init->max_ready";
        pthread_mutex_unlock(&broken->lock);
        return TOMII_ERR;
    }
    for (size_t i = first; i < n; i++) {
        broken->ring[(broken->head + broken->len) % broken->cap] = tasks[i];
        broken->len++;
    }
    pthread_mutex_unlock(&broken->lock);
    return TOMII_OK;
}

static TomiiTask *at(Broken *broken, size_t index) {
    return &broken->ring[(broken->head + index) % broken->cap];
}

/* Removes the task at position `index` (0 = oldest), keeping the others in order. */
static void remove_at(Broken *broken, size_t index) {
    if (index == 0) {
        broken->head = (broken->head + 1) % broken->cap;
    } else {
        for (size_t j = index; j + 1 < broken->len; j++) {
            *at(broken, j) = *at(broken, j + 1);
        }
    }
    broken->len--;
}

static int allowed(const TomiiTask *task, uint32_t worker) {
    return task->worker_lo <= worker && worker < task->worker_hi;
}

/* The misbehaving pop when the fault is due: its status, or -1 to pop normally. */
static int32_t misbehave(Broken *broken, uint32_t worker, TomiiTask *out, size_t max, size_t *n_out) {
    (void)broken, (void)worker, (void)out, (void)max, (void)n_out; /* each fault uses some */
#if defined(FAULT_DUPLICATE)
    for (size_t i = 0; i < broken->len; i++) {
        if (allowed(at(broken, i), worker) && at(broken, i)->rank > 1) {
            /* Handed out and kept: it is the oldest task for this worker, so it goes out again. */
            out[0] = *at(broken, i);
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
    size_t count = 0;
    pthread_mutex_lock(&broken->lock);
    if (max > 0 && due(broken)) {
        int32_t status = misbehave(broken, worker, out, max, n_out);
        if (status >= 0) {
            pthread_mutex_unlock(&broken->lock);
            return status;
        }
    }
    for (size_t index = 0; index < broken->len && count < max;) {
        if (allowed(at(broken, index), worker)) {
            out[count++] = *at(broken, index);
            remove_at(broken, index);
        } else {
            index++;
        }
    }
    broken->handed_out += count;
    pthread_mutex_unlock(&broken->lock);
    *n_out = count;
    return TOMII_OK;
}

static const char *broken_last_error(void *state) {
    Broken *broken = state;
    pthread_mutex_lock(&broken->lock);
    const char *error = broken->error;
    pthread_mutex_unlock(&broken->lock);
    return error;
}

static const TomiiSchedulerVtable VTABLE = {
    .header = {TOMII_SCHED_ABI_MAJOR, TOMII_SCHED_ABI_MINOR, sizeof(TomiiSchedulerVtable), 0, "c-broken"},
    .create = broken_create,
    .destroy = broken_destroy,
    .push = broken_push,
    .pop = broken_pop,
    .last_error = broken_last_error,
};

const TomiiSchedulerVtable *tomii_scheduler_v1(void) {
    return &VTABLE;
}
