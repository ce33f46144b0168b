/*
 * c-fifo: first-in, first-out scheduling, written in C against the generated header tomii/tomii.h.
 *
 * One ring buffer of queued tasks (each its handle and allowed workers, 16 bytes) behind one
 * mutex; pop writes only handles (TOMII_SCHED_POP_HANDLES). A worker takes the oldest tasks it
 * is allowed to run; the others keep their order. A worker pushing into an empty queue keeps the
 * first task it may run, which it would pop next anyway (push_keep, ABI v1.2); its counters of
 * pushes and pops let the host apply that rule without the call (keep_gate, ABI v1.4). A pop takes
 * at most a fair share of what is queued, the queue's length divided among the workers and rounded
 * up, so the host may give it room for several tasks (TOMII_SCHED_BATCH_POPS, ABI v1.3). Callbacks never
 * block on anything but that mutex, never allocate after create and never longjmp. See README.md
 * for the policy and its costs.
 */

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <tomii/tomii.h>

/* A queued task: what pop needs of its descriptor. */
typedef struct Queued {
    uint64_t handle;
    uint32_t worker_lo;
    uint32_t worker_hi;
} Queued;

/* The scheduler's state: a ring of `cap` queued tasks, `len` of them from `head` on. */
typedef struct CFifo {
    pthread_mutex_t lock;
    Queued *ring;
    size_t cap;
    size_t head;
    size_t len;
    size_t workers;  /* the run's workers, among whom a pop shares what is queued */
    uint64_t pushes; /* tasks queued over the run; stored atomically, for the keep gate */
    uint64_t pops;   /* tasks popped over the run; stored atomically, for the keep gate */
    uint64_t kept;   /* tasks kept by their pushing worker over the run */
} CFifo;

/* The message of this thread's last failing push or pop, returned by `last_error`. */
static _Thread_local char last_message[256];

/* Formats a message into a caller's buffer, if it gave one (NUL-terminated, truncated to cap). */
static void write_message(char *buf, size_t cap, const char *fmt, va_list args) {
    if (buf != NULL && cap > 0) {
        vsnprintf(buf, cap, fmt, args);
    }
}

/* Writes a message into the host's error buffer of `create`. */
static void set_create_error(TomiiErrorBuf err, const char *fmt, ...) {
    va_list args;
    va_start(args, fmt);
    write_message(err.ptr, err.cap, fmt, args);
    va_end(args);
}

/* Records the message of a failing push or pop and returns `status`. */
static int32_t fail(int32_t status, const char *fmt, ...) {
    va_list args;
    va_start(args, fmt);
    write_message(last_message, sizeof last_message, fmt, args);
    va_end(args);
    return status;
}

/* The task `i` places after the head of the queue. */
static Queued *task_at(CFifo *q, size_t i) {
    return &q->ring[(q->head + i) % q->cap];
}

/* Whether `worker` may run `task`: worker_lo <= worker < worker_hi. */
static bool allowed(const Queued *task, uint32_t worker) {
    return task->worker_lo <= worker && worker < task->worker_hi;
}

/* Builds the state: a ring sized for the most tasks that can be ready at once. Takes no options. */
static int32_t c_fifo_create(const TomiiSchedInit *init, void **state, TomiiErrorBuf err) {
    if (init == NULL || state == NULL) {
        set_create_error(err, "c-fifo: create was given a NULL init or state pointer");
        return TOMII_ERR_INVALID;
    }
    if (init->knob_count > 0) {
        set_create_error(err, "it takes no options, but \"%s\" was given", init->knobs[0].key);
        return TOMII_ERR;
    }
    if (init->max_ready > SIZE_MAX / sizeof(Queued)) {
        set_create_error(err, "c-fifo: a queue of %llu tasks does not fit in memory",
                         (unsigned long long)init->max_ready);
        return TOMII_ERR;
    }
    size_t cap = init->max_ready > 0 ? (size_t)init->max_ready : 1;
    CFifo *q = calloc(1, sizeof *q);
    Queued *ring = malloc(cap * sizeof *ring);
    if (q == NULL || ring == NULL) {
        free(q);
        free(ring);
        set_create_error(err, "c-fifo: out of memory allocating a queue of %zu tasks", cap);
        return TOMII_ERR;
    }
    if (pthread_mutex_init(&q->lock, NULL) != 0) {
        free(q);
        free(ring);
        set_create_error(err, "c-fifo: pthread_mutex_init failed");
        return TOMII_ERR;
    }
    q->ring = ring;
    q->cap = cap;
    q->workers = init->workers > 0 ? init->workers : 1;
    *state = q;
    return TOMII_OK;
}

/* Frees everything create allocated. The host calls it once, after every other call returned. */
static void c_fifo_destroy(void *state) {
    CFifo *q = state;
    if (q == NULL) {
        return;
    }
    pthread_mutex_destroy(&q->lock);
    free(q->ring);
    free(q);
}

/*
 * Appends the `n` tasks but the one at `skip` (TOMII_KEEP_NONE: none) at the tail, all or none:
 * fails if the ring cannot hold them. Called with the lock held; leaves it held.
 */
static int32_t append(CFifo *q, const TomiiTask *tasks, size_t n, size_t skip) {
    size_t count = n - (skip < n ? 1 : 0);
    if (count > q->cap - q->len) {
        return fail(TOMII_ERR, "c-fifo queue is full: %zu tasks pushed onto %zu of capacity %zu "
                               "(more tasks than can be ready at once)", count, q->len, q->cap);
    }
    for (size_t i = 0; i < n; i++) {
        if (i != skip) {
            *task_at(q, q->len++) = (Queued){tasks[i].handle, tasks[i].worker_lo, tasks[i].worker_hi};
        }
    }
    __atomic_store_n(&q->pushes, q->pushes + count, __ATOMIC_RELEASE);
    return TOMII_OK;
}

/* Appends `n` tasks at the tail, all or none: fails if the ring cannot hold them all. */
static int32_t c_fifo_push(void *state, uint32_t worker, const TomiiTask *tasks, size_t n) {
    (void)worker;
    CFifo *q = state;
    if (q == NULL || (tasks == NULL && n > 0)) {
        return fail(TOMII_ERR_INVALID, "c-fifo: push was given a NULL state or task pointer");
    }
    pthread_mutex_lock(&q->lock);
    int32_t status = append(q, tasks, n, TOMII_KEEP_NONE);
    pthread_mutex_unlock(&q->lock);
    return status;
}

/*
 * Like push, by a worker that asks for work right after: when the queue is empty, the first task
 * it may run is the one its pop would take, so it keeps that one (`*kept`) instead of queueing it.
 */
static int32_t c_fifo_push_keep(void *state, uint32_t worker, const TomiiTask *tasks, size_t n, size_t *kept) {
    CFifo *q = state;
    if (q == NULL || kept == NULL || (tasks == NULL && n > 0)) {
        return fail(TOMII_ERR_INVALID, "c-fifo: push_keep was given a NULL state, task or kept pointer");
    }
    pthread_mutex_lock(&q->lock);
    size_t keep = TOMII_KEEP_NONE;
    for (size_t i = 0; q->len == 0 && i < n && keep == TOMII_KEEP_NONE; i++) {
        if (tasks[i].worker_lo <= worker && worker < tasks[i].worker_hi) {
            keep = i;
        }
    }
    int32_t status = append(q, tasks, n, keep);
    if (status == TOMII_OK && keep != TOMII_KEEP_NONE) {
        q->kept++;
    }
    pthread_mutex_unlock(&q->lock);
    *kept = status == TOMII_OK ? keep : TOMII_KEEP_NONE;
    return status;
}

/*
 * push_keep's rule is "keep the first task the worker may run when the queue is empty" for every
 * worker: the host reads the counters of pushes and pops (equal: empty) instead of calling it.
 */
static void c_fifo_keep_gate(void *state, uint32_t worker, TomiiKeepGate *gate) {
    (void)worker;
    CFifo *q = state;
    if (q != NULL && gate != NULL) {
        gate->queued = &q->pushes;
        gate->taken = &q->pops;
    }
}

/*
 * Hands `worker` the oldest tasks it may run, at most `max` and at most a fair share of the queue
 * (its length divided among the workers, rounded up, at least one). Scans from the head; the tasks it
 * skips (other workers') are moved up behind the taken ones, in order, so only a head the worker
 * may not run costs more than O(taken).
 */
static int32_t c_fifo_pop(void *state, uint32_t worker, TomiiTask *out, size_t max, size_t *n_out) {
    CFifo *q = state;
    if (q == NULL || n_out == NULL || (out == NULL && max > 0)) {
        return fail(TOMII_ERR_INVALID, "c-fifo: pop was given a NULL state or output pointer");
    }
    pthread_mutex_lock(&q->lock);
    size_t share = (q->len + q->workers - 1) / q->workers;
    if (max > share) {
        max = share > 0 ? share : 1;
    }
    size_t taken = 0;
    size_t end = 0; /* one past the last task taken */
    for (size_t i = 0; i < q->len && taken < max; i++) {
        if (allowed(task_at(q, i), worker)) {
            out[taken++].handle = task_at(q, i)->handle;
            end = i + 1;
        }
    }
    /* Close the gaps: shift the skipped tasks before `end` towards the tail, keeping their order. */
    size_t to = end;
    for (size_t i = end; i-- > 0;) {
        if (!allowed(task_at(q, i), worker)) {
            *task_at(q, --to) = *task_at(q, i);
        }
    }
    q->head = (q->head + taken) % q->cap;
    q->len -= taken;
    __atomic_store_n(&q->pops, q->pops + taken, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&q->lock);
    *n_out = taken;
    return TOMII_OK;
}

/* No parameters: an empty (but non-NULL) static array. */
static const TomiiKnobDesc *c_fifo_describe_knobs(size_t *n) {
    static const TomiiKnobDesc none[1];
    if (n != NULL) {
        *n = 0;
    }
    return none;
}

/* Writes {"pushes":N,"pops":M,"kept":K} (tasks) and returns the length the full text needs. */
static size_t c_fifo_stats(void *state, char *buf, size_t cap) {
    CFifo *q = state;
    if (q == NULL) {
        return 0;
    }
    pthread_mutex_lock(&q->lock);
    unsigned long long pushes = q->pushes, pops = q->pops, kept = q->kept;
    pthread_mutex_unlock(&q->lock);
    int needed = snprintf(cap > 0 ? buf : NULL, cap, "{\"pushes\":%llu,\"pops\":%llu,\"kept\":%llu}", pushes,
                          pops, kept);
    return needed > 0 ? (size_t)needed : 0;
}

/* The message of this thread's last failing push or pop. */
static const char *c_fifo_last_error(void *state) {
    (void)state;
    return last_message[0] != '\0' ? last_message : NULL;
}

static const TomiiSchedulerVtable VTABLE = {
    .header = {TOMII_SCHED_ABI_MAJOR, TOMII_SCHED_ABI_MINOR, sizeof(TomiiSchedulerVtable),
               TOMII_SCHED_POP_HANDLES | TOMII_SCHED_BATCH_POPS, "c-fifo"},
    .create = c_fifo_create,
    .destroy = c_fifo_destroy,
    .push = c_fifo_push,
    .pop = c_fifo_pop,
    .describe_knobs = c_fifo_describe_knobs,
    .stats = c_fifo_stats,
    .last_error = c_fifo_last_error,
    .push_keep = c_fifo_push_keep,
    .keep_gate = c_fifo_keep_gate,
};

/* The table, for the Rust shim (src/lib.rs) to export as tomii_scheduler_v1: a rustc cdylib does
 * not export the symbols of the C objects it links. */
const TomiiSchedulerVtable *tomii_c_fifo_vtable(void);
const TomiiSchedulerVtable *tomii_c_fifo_vtable(void) {
    return &VTABLE;
}
