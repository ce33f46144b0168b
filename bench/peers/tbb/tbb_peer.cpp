// tomii-peer-tbb (--dag FILE | --kernels FILE) [--workers N] [--frames F] [--slots S]: the oneTBB
// peer of the head-to-head suite (bench/suite). Builds the DAG (spin kernels) or the kernel DAG (C
// kernels of a library, kernels.h) as a oneTBB flow graph of continue_nodes, one copy per slot, in
// a task_arena of N threads (global_control caps TBB at N), then times one run of F frames, at
// most S in flight, and prints one JSON line:
// {"runtime": "onetbb", "threads": N, "frames": F, "tasks": T, "wall_time_s": S}, with "sinks"
// (the last frame's sink values) for a kernel DAG. Only the run is timed: never reading the file,
// loading the library, the initializations, building the graph or starting the threads.
// The frame mapping is described in bench/peers/README.md, "oneTBB".

#include <oneapi/tbb/flow_graph.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/version.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels.h"

namespace {

namespace flow = tbb::flow;
using Msg = flow::continue_msg;
using TaskNode = flow::continue_node<Msg>;
using Clock = std::chrono::steady_clock;

// Busy-waits until the monotonic clock has advanced `us` microseconds: the loop of
// plugins/synthetic's `spin` (Rust's Instant is CLOCK_MONOTONIC, as steady_clock is here).
void spin(std::uint64_t us) {
    const auto duration = std::chrono::microseconds(us);
    const auto start = Clock::now();
    while (Clock::now() - start < duration) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#elif defined(__aarch64__)
        asm volatile("yield");
#endif
    }
}

// The suite's DAG file (bench/peers/README.md): per task its kernel µs and its predecessors.
struct Dag {
    std::vector<std::uint64_t> costs;
    std::vector<std::vector<std::uint32_t>> preds;
    std::vector<bool> has_successors;
};

Dag read_dag(const std::string& path) {
    std::ifstream in(path);
    std::string magic;
    int version = 0;
    std::size_t tasks = 0;
    if (!(in >> magic >> version >> tasks) || magic != "tomii-suite-dag" || version != 1) {
        throw std::runtime_error(path + ": line 1 is not `tomii-suite-dag 1 N`");
    }
    Dag dag{std::vector<std::uint64_t>(tasks), std::vector<std::vector<std::uint32_t>>(tasks),
            std::vector<bool>(tasks, false)};
    for (std::size_t t = 0; t < tasks; ++t) {
        std::size_t count = 0;
        if (!(in >> dag.costs[t] >> count)) {
            throw std::runtime_error(path + ": task " + std::to_string(t) + " is missing");
        }
        dag.preds[t].resize(count);
        for (auto& p : dag.preds[t]) {
            if (!(in >> p) || p >= t) {
                throw std::runtime_error(path + ": task " + std::to_string(t) +
                                         ": a predecessor is missing or not an earlier task");
            }
            dag.has_successors[p] = true;
        }
    }
    return dag;
}

// What running a task means: spinning its µs, or calling its kernel (which throws on failure).
struct Body {
    const Dag& dag;
    kernels::Kernels* kernels;

    void run(std::size_t slot, std::uint64_t frame, std::size_t task) const {
        if (kernels) {
            const int worker = tbb::this_task_arena::current_thread_index();
            kernels->run(slot, frame, task, static_cast<std::uint32_t>(worker));
        } else if (dag.costs[task] > 0) {
            spin(dag.costs[task]);
        }
    }
};

// How many frames the run has started and completed (frame completions only, never per task).
struct Frames {
    std::size_t total;
    std::atomic<std::size_t> next;
    std::atomic<std::size_t> completed{0};
};

// One slot: a copy of the frame's tasks. `start_` feeds the roots; `done_` waits for every sink,
// then claims the next frame number and, if one is left, restarts this copy (continue_nodes re-arm
// after firing, so the same nodes run the next frame). `frame_` is the frame the copy runs: stored
// before the copy starts, so the spawn of its roots publishes it to every task of the frame.
class SlotGraph {
public:
    SlotGraph(flow::graph& g, const Body& body, std::size_t slot, Frames& frames)
        : start_(g), frame_(slot), done_(g, [this, &frames](const Msg&) {
              frames.completed.fetch_add(1, std::memory_order_relaxed);
              const std::size_t frame = frames.next.fetch_add(1, std::memory_order_relaxed);
              if (frame < frames.total) {
                  frame_.store(frame, std::memory_order_relaxed);
                  start_.try_put(Msg());
              }
              return Msg();
          }) {
        const Dag& dag = body.dag;
        for (std::size_t t = 0; t < dag.costs.size(); ++t) {
            tasks_.emplace_back(g, [this, &body, slot, t](const Msg&) {
                body.run(slot, frame_.load(std::memory_order_relaxed), t);
                return Msg();
            });
        }
        for (std::size_t t = 0; t < dag.costs.size(); ++t) {
            if (dag.preds[t].empty()) {
                flow::make_edge(start_, tasks_[t]);
            }
            for (std::uint32_t p : dag.preds[t]) {
                flow::make_edge(tasks_[p], tasks_[t]);
            }
            if (!dag.has_successors[t]) {
                flow::make_edge(tasks_[t], done_);
            }
        }
    }

    void start() { start_.try_put(Msg()); }

private:
    flow::broadcast_node<Msg> start_;
    std::atomic<std::uint64_t> frame_;
    std::deque<TaskNode> tasks_;
    TaskNode done_;
};

// Runs until every thread of the arena has joined (or 100 ms passed), so that the clock never
// includes starting TBB's worker threads.
void start_threads(int threads) {
    std::atomic<int> arrived{0};
    tbb::parallel_for(0, threads, [&](int) {
        arrived.fetch_add(1);
        const auto deadline = Clock::now() + std::chrono::milliseconds(100);
        while (arrived.load() < threads && Clock::now() < deadline) {
        }
    });
}

struct Options {
    std::string dag;
    bool kernels = false;
    int workers = 2;
    std::size_t frames = 1;
    std::size_t slots = 1;
};

Options parse_options(int argc, char** argv) {
    Options options;
    for (int i = 1; i < argc; i += 2) {
        const std::string flag = argv[i];
        if (i + 1 >= argc) {
            throw std::runtime_error(flag + " needs a value");
        }
        const std::string value = argv[i + 1];
        const auto count = [&] {
            const long long n = std::atoll(value.c_str());
            if (n <= 0) {
                throw std::runtime_error(flag + ": " + value + " is not a positive integer");
            }
            return static_cast<std::size_t>(n);
        };
        if (flag == "--dag" || flag == "--kernels") {
            options.dag = value;
            options.kernels = flag == "--kernels";
        } else if (flag == "--workers") {
            options.workers = static_cast<int>(count());
        } else if (flag == "--frames") {
            options.frames = count();
        } else if (flag == "--slots") {
            options.slots = count();
        } else {
            throw std::runtime_error("unknown option " + flag + "; see the top of tbb_peer.cpp");
        }
    }
    if (options.dag.empty()) {
        throw std::runtime_error("--dag FILE or --kernels FILE is required");
    }
    return options;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        const Options options = parse_options(argc, argv);
        const std::size_t in_flight = std::min(options.slots, options.frames);
        Dag dag;
        std::unique_ptr<kernels::Kernels> calls;
        if (options.kernels) {
            calls = std::make_unique<kernels::Kernels>(options.dag, in_flight, dag.preds);
            dag.costs.assign(dag.preds.size(), 0);
            dag.has_successors.assign(dag.preds.size(), false);
            for (const auto& preds : dag.preds) {
                for (std::uint32_t p : preds) dag.has_successors[p] = true;
            }
        } else {
            dag = read_dag(options.dag);
        }
        const Body body{dag, calls.get()};
        tbb::global_control cap(tbb::global_control::max_allowed_parallelism,
                                static_cast<std::size_t>(options.workers));
        tbb::task_arena arena(options.workers);
        double wall = 0;
        int threads = 0;
        Frames frames{options.frames, in_flight};
        bool failed = false;
        arena.execute([&] {
            threads = tbb::this_task_arena::max_concurrency();
            start_threads(threads);
            flow::graph g;
            std::vector<std::unique_ptr<SlotGraph>> slots;
            for (std::size_t s = 0; s < frames.next; ++s) {
                slots.push_back(std::make_unique<SlotGraph>(g, body, s, frames));
            }
            const auto start = Clock::now();
            for (auto& slot : slots) {
                slot->start();
            }
            try {
                g.wait_for_all();
            } catch (const std::exception&) {
                failed = true;  // a kernel threw: the graph is cancelled, its message kept
            }
            wall = std::chrono::duration<double>(Clock::now() - start).count();
        });
        if (calls && !calls->error().empty()) {
            throw std::runtime_error(calls->error());
        }
        if (failed) {
            throw std::runtime_error("a task failed without a message");
        }
        const std::size_t completed = frames.completed.load();
        if (completed != options.frames) {
            throw std::runtime_error("completed " + std::to_string(completed) + " frames of " +
                                     std::to_string(options.frames));
        }
        std::string sinks;
        if (calls) {
            std::vector<std::size_t> tasks;
            for (std::size_t t = 0; t < dag.costs.size(); ++t) {
                if (!dag.has_successors[t]) tasks.push_back(t);
            }
            sinks = ", \"sinks\": " + calls->sink_json(tasks, options.frames - 1);
        }
        std::printf(
            "{\"runtime\": \"onetbb\", \"version\": \"%s\", \"threads\": %d, \"frames\": %zu, "
            "\"tasks\": %zu, \"wall_time_s\": %.9f%s}\n",
            TBB_VERSION_STRING, threads, completed, completed * dag.costs.size(), wall, sinks.c_str());
        return 0;
    } catch (const std::exception& error) {
        std::fprintf(stderr, "error: %s\n", error.what());
        return 1;
    }
}
