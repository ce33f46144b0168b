/*
 * What the C test schedulers (fifo_sched.c, serial_sched.c, broken_runtime.c, crash_sched.c)
 * share: their checks of the host's init block, and their queue of ready tasks, a ring buffer in
 * push order sized from init->max_ready, from which a worker gets the oldest tasks whose worker
 * range contains it. The ring has no lock: a scheduler serialises its calls its own way, most with
 * the mutex of a LockedRing.
 */

#ifndef TOMII_TEST_TASK_RING_H
#define TOMII_TEST_TASK_RING_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "tomii/tomii.h"

typedef struct TaskRing {
    TomiiTask *tasks;
    size_t cap;  /* init->max_ready */
    size_t head; /* index of the oldest task */
    size_t len;  /* tasks held */
} TaskRing;

/* Writes `what` then `detail` to the host's error buffer, if it lent one. */
static inline void write_error(TomiiErrorBuf err, const char *what, const char *detail) {
    if (err.ptr != NULL && err.cap > 0) {
        snprintf(err.ptr, err.cap, "%s%s", what, detail);
    }
}

/* TOMII_OK when the init block is one this scheduler can use: as large as the one it knows, with
 * a max_ready that one queue can hold and (with `no_options`) no scheduler option, this
 * scheduler having none. Else TOMII_ERR, with the reason in `err`. */
static inline int32_t check_init(const TomiiSchedInit *init, int no_options, TomiiErrorBuf err) {
    if (init->struct_size < sizeof(TomiiSchedInit)) {
        write_error(err, "the host's init block is smaller than this scheduler's", "");
        return TOMII_ERR;
    }
    if (no_options && init->knob_count > 0) {
        write_error(err, "bad option ", init->knobs[0].key);
        return TOMII_ERR;
    }
    if (init->max_ready == 0 || init->max_ready > SIZE_MAX / sizeof(TomiiTask)) {
        write_error(err, "max_ready is 0 or too large for one queue", "");
        return TOMII_ERR;
    }
    return TOMII_OK;
}

/* An empty ring for init->max_ready tasks (not 0): TOMII_OK, or TOMII_ERR when out of memory. */
static inline int32_t ring_init(TaskRing *ring, const TomiiSchedInit *init) {
    *ring = (TaskRing){.tasks = malloc((size_t)init->max_ready * sizeof(TomiiTask)), .cap = (size_t)init->max_ready};
    return ring->tasks == NULL ? TOMII_ERR : TOMII_OK;
}

static inline void ring_free(TaskRing *ring) {
    free(ring->tasks);
}

/* The task at position `index` (0 = oldest). */
static inline TomiiTask *ring_at(TaskRing *ring, size_t index) {
    return &ring->tasks[(ring->head + index) % ring->cap];
}

/* Appends the `n` tasks: TOMII_OK, or TOMII_ERR (and appends none) when they do not fit. */
static inline int32_t ring_push(TaskRing *ring, const TomiiTask *tasks, size_t n) {
    if (n > ring->cap - ring->len) {
        return TOMII_ERR;
    }
    for (size_t i = 0; i < n; i++) {
        *ring_at(ring, ring->len) = tasks[i];
        ring->len++;
    }
    return TOMII_OK;
}

/* Removes the task at position `index` (0 = oldest), keeping the others in order. */
static inline void ring_remove_at(TaskRing *ring, size_t index) {
    if (index == 0) {
        ring->head = (ring->head + 1) % ring->cap;
    } else {
        for (size_t j = index; j + 1 < ring->len; j++) {
            *ring_at(ring, j) = *ring_at(ring, j + 1);
        }
    }
    ring->len--;
}

/* Whether `worker` may run `task`. */
static inline int task_allowed(const TomiiTask *task, uint32_t worker) {
    return task->worker_lo <= worker && worker < task->worker_hi;
}

/* Moves the oldest tasks `worker` may run, `max` at the most, to `out`: how many it moved. */
static inline size_t ring_pop(TaskRing *ring, uint32_t worker, TomiiTask *out, size_t max) {
    size_t count = 0;
    for (size_t index = 0; index < ring->len && count < max;) {
        if (task_allowed(ring_at(ring, index), worker)) {
            out[count++] = *ring_at(ring, index);
            ring_remove_at(ring, index);
        } else {
            index++;
        }
    }
    return count;
}

/* A ring behind a pthread mutex: the first member of the state of a scheduler that locks. */
typedef struct LockedRing {
    pthread_mutex_t lock;
    TaskRing ring;
} LockedRing;

/* `create` of a locking scheduler: checks the init block (see check_init), then allocates its
 * state, `size` zeroed bytes that start with a LockedRing, and sets up the ring and the mutex. */
static inline int32_t locked_ring_create(size_t size, int no_options, const TomiiSchedInit *init, void **state,
                                         TomiiErrorBuf err) {
    if (check_init(init, no_options, err) != TOMII_OK) {
        return TOMII_ERR;
    }
    LockedRing *queue = calloc(1, size);
    if (queue == NULL || ring_init(&queue->ring, init) != TOMII_OK || pthread_mutex_init(&queue->lock, NULL) != 0) {
        if (queue != NULL) {
            ring_free(&queue->ring);
        }
        free(queue);
        write_error(err, "out of memory", "");
        return TOMII_ERR;
    }
    *state = queue;
    return TOMII_OK;
}

/* `destroy` of a locking scheduler whose state locked_ring_create made. */
static inline void locked_ring_destroy(void *state) {
    LockedRing *queue = state;
    pthread_mutex_destroy(&queue->lock);
    ring_free(&queue->ring);
    free(queue);
}

#endif
