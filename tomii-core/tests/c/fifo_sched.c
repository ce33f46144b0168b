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
 * With -DHUGE_STATS, stats claims its text needs 2^40 bytes.
 * With -DPOP_HANDLES, the table sets TOMII_SCHED_POP_HANDLES and pop writes each descriptor's
 * handle and fills the rest of it with 0xA5 bytes: the host must read nothing but handles.
 */

#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tomii/tomii.h"

typedef struct Fifo {
    pthread_mutex_t lock;
    TomiiTask *ring;
    size_t cap;  /* init->max_ready */
    size_t head; /* index of the oldest task */
    size_t len;  /* tasks held */
    uint64_t pushed;
    uint64_t popped;
    const char *error; /* static message of the last failed push */
} Fifo;

static void write_error(TomiiErrorBuf err, const char *what, const char *detail) {
    if (err.ptr != NULL && err.cap > 0) {
        snprintf(err.ptr, err.cap, "%s%s", what, detail);
    }
}

static int32_t fifo_create(const TomiiSchedInit *init, void **state, TomiiErrorBuf err) {
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
    Fifo *fifo = calloc(1, sizeof *fifo);
    TomiiTask *ring = malloc((size_t)init->max_ready * sizeof(TomiiTask));
    if (fifo == NULL || ring == NULL || pthread_mutex_init(&fifo->lock, NULL) != 0) {
        free(fifo);
        free(ring);
        write_error(err, "out of memory", "");
        return TOMII_ERR;
    }
    fifo->ring = ring;
    fifo->cap = (size_t)init->max_ready;
    *state = fifo;
    return TOMII_OK;
}

static void fifo_destroy(void *state) {
    Fifo *fifo = state;
    pthread_mutex_destroy(&fifo->lock);
    free(fifo->ring);
    free(fifo);
}

static int32_t fifo_push(void *state, uint32_t worker, const TomiiTask *tasks, size_t n) {
    (void)worker;
    Fifo *fifo = state;
    pthread_mutex_lock(&fifo->lock);
    if (n > fifo->cap - fifo->len) {
        fifo->error = "queue full: more tasks pushed and not popped than init->max_ready";
        pthread_mutex_unlock(&fifo->lock);
        return TOMII_ERR;
    }
    for (size_t i = 0; i < n; i++) {
        fifo->ring[(fifo->head + fifo->len) % fifo->cap] = tasks[i];
        fifo->len++;
    }
    fifo->pushed += n;
    pthread_mutex_unlock(&fifo->lock);
    return TOMII_OK;
}

/* Removes the task at position `at` (0 = oldest), keeping the others in order. */
static void remove_at(Fifo *fifo, size_t at) {
    if (at == 0) {
        fifo->head = (fifo->head + 1) % fifo->cap;
    } else {
        for (size_t j = at; j + 1 < fifo->len; j++) {
            fifo->ring[(fifo->head + j) % fifo->cap] = fifo->ring[(fifo->head + j + 1) % fifo->cap];
        }
    }
    fifo->len--;
}

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
    size_t count = 0;
    pthread_mutex_lock(&fifo->lock);
    for (size_t at = 0; at < fifo->len && count < max;) {
        const TomiiTask *task = &fifo->ring[(fifo->head + at) % fifo->cap];
        if (task->worker_lo <= worker && worker < task->worker_hi) {
#ifdef POP_HANDLES
            memset(&out[count], 0xA5, sizeof out[count]);
            out[count++].handle = task->handle;
#else
            out[count++] = *task;
#endif
            remove_at(fifo, at);
        } else {
            at++;
        }
    }
    fifo->popped += count;
    pthread_mutex_unlock(&fifo->lock);
    *n_out = count;
    return TOMII_OK;
}

static size_t fifo_stats(void *state, char *buf, size_t cap) {
    Fifo *fifo = state;
    pthread_mutex_lock(&fifo->lock);
    int needed = snprintf(buf, cap, "{\"pushed\":%llu,\"popped\":%llu,\"held\":%llu}",
                          (unsigned long long)fifo->pushed, (unsigned long long)fifo->popped,
                          (unsigned long long)fifo->len);
    pthread_mutex_unlock(&fifo->lock);
#ifdef HUGE_STATS
    return (size_t)1 << 40;
#endif
    return needed < 0 ? 0 : (size_t)needed;
}

static const char *fifo_last_error(void *state) {
    Fifo *fifo = state;
    pthread_mutex_lock(&fifo->lock);
    const char *error = fifo->error;
    pthread_mutex_unlock(&fifo->lock);
    return error;
}

#ifdef POP_HANDLES
#define FLAGS TOMII_SCHED_POP_HANDLES
#else
#define FLAGS 0
#endif

static const TomiiSchedulerVtable VTABLE = {
    .header = {TOMII_SCHED_ABI_MAJOR, TOMII_SCHED_ABI_MINOR, sizeof(TomiiSchedulerVtable), FLAGS, "c-fifo"},
    .create = fifo_create,
    .destroy = fifo_destroy,
    .push = fifo_push,
    .pop = fifo_pop,
    .stats = fifo_stats,
    .last_error = fifo_last_error,
};

const TomiiSchedulerVtable *tomii_scheduler_v1(void) {
    return &VTABLE;
}
