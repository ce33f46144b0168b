// The kernel DAG file of the head-to-head suite (bench/peers/README.md, "The kernel DAG file"):
// the tasks of a real workload, each calling a C kernel of the workload's library, found by name
// in its tomii_kernels_v1() registry (tomii-types/include/tomii/kernel.h), with constants,
// initialization handles and its predecessors' results. `Kernels` keeps each slot's results and
// releases them per the kernel ABI. Bad input and failing kernels throw, naming the line or node.

#ifndef TOMII_PEER_TBB_KERNELS_H
#define TOMII_PEER_TBB_KERNELS_H

#include <dlfcn.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "tomii/kernel.h"

namespace kernels {

// Frees a value per the ABI (its buffer's release, when set) and leaves NONE.
inline void release(TomiiValue& value) {
    if (value.tag >= TOMII_TAG_STR && value.tag <= TOMII_TAG_OBJECT && value.payload.buf.release) {
        value.payload.buf.release(value.payload.buf.data, value.payload.buf.len, value.payload.buf.ctx);
    }
    value = TomiiValue{};
}

inline bool is_signed(std::uint32_t tag) {
    return (tag >= TOMII_TAG_I8 && tag <= TOMII_TAG_I64) || tag == TOMII_TAG_ISIZE;
}

inline bool is_unsigned(std::uint32_t tag) {
    return (tag >= TOMII_TAG_U8 && tag <= TOMII_TAG_U64) || tag == TOMII_TAG_USIZE;
}

inline std::string float_json(double x) {
    char text[32];
    std::snprintf(text, sizeof text, "%.16e", x);
    return text;
}

// One element of an ARRAY of scalars of `tag` as JSON.
inline std::string element_json(std::uint32_t tag, const void* data, std::size_t k) {
    switch (tag) {
        case TOMII_TAG_I8: return std::to_string(static_cast<const std::int8_t*>(data)[k]);
        case TOMII_TAG_I16: return std::to_string(static_cast<const std::int16_t*>(data)[k]);
        case TOMII_TAG_I32: return std::to_string(static_cast<const std::int32_t*>(data)[k]);
        case TOMII_TAG_I64:
        case TOMII_TAG_ISIZE: return std::to_string(static_cast<const std::int64_t*>(data)[k]);
        case TOMII_TAG_U8: return std::to_string(static_cast<const std::uint8_t*>(data)[k]);
        case TOMII_TAG_U16: return std::to_string(static_cast<const std::uint16_t*>(data)[k]);
        case TOMII_TAG_U32: return std::to_string(static_cast<const std::uint32_t*>(data)[k]);
        case TOMII_TAG_U64:
        case TOMII_TAG_USIZE: return std::to_string(static_cast<const std::uint64_t*>(data)[k]);
        case TOMII_TAG_F32: return float_json(static_cast<const float*>(data)[k]);
        case TOMII_TAG_F64: return float_json(static_cast<const double*>(data)[k]);
        default: throw std::runtime_error("an array of tag " + std::to_string(tag) + ", which the peer does not print");
    }
}

// The value as JSON: null, a bool, a number (floats to 17 digits) or an array of numbers.
inline std::string to_json(const TomiiValue& v) {
    if (v.tag == TOMII_TAG_NONE) return "null";
    if (v.tag == TOMII_TAG_BOOL) return v.payload.b ? "true" : "false";
    if (is_signed(v.tag)) return std::to_string(v.payload.i);
    if (is_unsigned(v.tag)) return std::to_string(v.payload.u);
    if (v.tag == TOMII_TAG_F32) return float_json(v.payload.f32);
    if (v.tag == TOMII_TAG_F64) return float_json(v.payload.f64);
    if (v.tag == TOMII_TAG_ARRAY) {
        std::string text = "[";
        for (std::size_t k = 0; k < v.payload.buf.len; ++k) {
            text += (k ? ", " : "") + element_json(v.elem, v.payload.buf.data, k);
        }
        return text + "]";
    }
    throw std::runtime_error("a value of tag " + std::to_string(v.tag) + ", which the peer does not print");
}

// A kernel of the library: its registry entry.
struct Kernel {
    const TomiiKernelEntry* entry;

    bool variadic() const { return (entry->flags & TOMII_KERNEL_VARIADIC) != 0; }

    // Calls the kernel with `args`; its result, or throws with the message it wrote to ctx->err.
    TomiiValue call(const std::vector<TomiiValue>& args, std::uint32_t worker, std::uint64_t frame,
                    std::uint32_t slot, std::uint32_t instance, const std::string& node) const {
        char message[1024] = {};
        TomiiCallCtx ctx{};
        ctx.struct_size = sizeof ctx;
        ctx.worker = worker;
        ctx.frame = frame;
        ctx.slot = slot;
        ctx.instance = instance;
        ctx.node = node.c_str();
        ctx.err = TomiiErrorBuf{message, sizeof message};
        ctx.data = entry->data;
        TomiiValue out{};
        const std::int32_t status = entry->func(args.data(), args.size(), &out, &ctx);
        if (status != TOMII_OK) {
            release(out);
            throw std::runtime_error("node " + node + " instance " + std::to_string(instance) + ": status " +
                                     std::to_string(status) + ": " + (message[0] ? message : "(no message)"));
        }
        return out;
    }
};

// The kernels of the library at `path` by name (the library stays loaded for the process).
inline std::map<std::string, Kernel> load(const std::string& path) {
    void* handle = dlopen(path.c_str(), RTLD_NOW);
    if (!handle) throw std::runtime_error("dlopen " + path + ": " + dlerror());
    auto entry = reinterpret_cast<TomiiKernelsEntryFn>(dlsym(handle, "tomii_kernels_v1"));
    if (!entry) throw std::runtime_error(path + ": no tomii_kernels_v1");
    const TomiiKernelRegistry* registry = entry();
    if (!registry) throw std::runtime_error(path + ": tomii_kernels_v1() returned NULL");
    if (registry->abi_major != TOMII_KERNEL_ABI_MAJOR || registry->entry_size < sizeof(TomiiKernelEntry)) {
        throw std::runtime_error(path + ": kernel ABI " + std::to_string(registry->abi_major) + "." +
                                 std::to_string(registry->abi_minor) +
                                 ", not 1.1 or later; rebuild it with tomii.build");
    }
    std::map<std::string, Kernel> kernels;
    const auto* bytes = reinterpret_cast<const unsigned char*>(registry->entries);
    for (std::size_t k = 0; k < registry->count; ++k) {
        const auto* e = reinterpret_cast<const TomiiKernelEntry*>(bytes + k * registry->entry_size);
        kernels[e->name] = Kernel{e};
    }
    return kernels;
}

// One argument of a call: a constant (a string's bytes in `bytes`), initialization K or task J's
// result.
struct Arg {
    enum Kind { Constant, Init, Result } kind = Constant;
    TomiiValue value{};
    std::size_t index = 0;
    std::string bytes;

    // The constant, a string borrowing `bytes` where it is now.
    TomiiValue constant() const {
        TomiiValue v = value;
        if (v.tag == TOMII_TAG_STR) v.payload.buf = TomiiBuffer{const_cast<char*>(bytes.data()), bytes.size(), nullptr, nullptr};
        return v;
    }
};

struct Task {
    std::string node;
    std::uint32_t instance;
    Kernel kernel;
    std::vector<Arg> args;
};

inline Arg parse_arg(const std::string& word, std::size_t inits, std::size_t task) {
    const auto eq = word.find('=');
    if (eq == std::string::npos) throw std::runtime_error("argument " + word + " is not TYPE=VALUE");
    const std::string kind = word.substr(0, eq), text = word.substr(eq + 1);
    const auto bad = [&](const std::string& why) { return std::runtime_error("argument " + word + ": " + why); };
    std::size_t used = 0;
    const auto whole = [&] {
        if (used != text.size()) throw bad("not a number");
    };
    Arg arg;
    try {
        if (kind == "init" || kind == "res") {
            arg.kind = kind == "init" ? Arg::Init : Arg::Result;
            arg.index = std::stoull(text, &used);
            whole();
            if (arg.index >= (kind == "init" ? inits : task)) throw bad("no such initialization or earlier task");
            return arg;
        }
        static const std::map<std::string, std::uint32_t> tags = {
            {"bool", TOMII_TAG_BOOL}, {"i8", TOMII_TAG_I8},   {"i16", TOMII_TAG_I16},     {"i32", TOMII_TAG_I32},
            {"i64", TOMII_TAG_I64},   {"isize", TOMII_TAG_ISIZE}, {"u8", TOMII_TAG_U8},   {"u16", TOMII_TAG_U16},
            {"u32", TOMII_TAG_U32},   {"u64", TOMII_TAG_U64}, {"usize", TOMII_TAG_USIZE}, {"f32", TOMII_TAG_F32},
            {"f64", TOMII_TAG_F64},   {"str", TOMII_TAG_STR},
        };
        const auto tag = tags.find(kind);
        if (tag == tags.end()) throw bad("unknown type");
        arg.value.tag = tag->second;
        if (tag->second == TOMII_TAG_BOOL) {
            if (text != "0" && text != "1") throw bad("not 0 or 1");
            arg.value.payload.b = text == "1";
        } else if (is_signed(tag->second)) {
            arg.value.payload.i = std::stoll(text, &used);
            whole();
        } else if (is_unsigned(tag->second)) {
            if (!text.empty() && text[0] == '-') throw bad("negative");
            arg.value.payload.u = std::stoull(text, &used);
            whole();
        } else if (tag->second == TOMII_TAG_F32) {
            arg.value.payload.f32 = std::stof(text, &used);
            whole();
        } else if (tag->second == TOMII_TAG_F64) {
            arg.value.payload.f64 = std::stod(text, &used);
            whole();
        } else {  // str: hexadecimal UTF-8
            if (text.size() % 2 != 0) throw bad("not hexadecimal");
            for (std::size_t k = 0; k < text.size(); k += 2) {
                arg.bytes.push_back(static_cast<char>(std::stoi(text.substr(k, 2), &used, 16)));
                if (used != 2) throw bad("not hexadecimal");
            }
        }
    } catch (const std::invalid_argument&) {
        throw bad("not a number");
    } catch (const std::out_of_range&) {
        throw bad("out of range");
    }
    return arg;
}

// A workload's tasks, their initializations' values and, per slot, their results (with the frame
// each was computed for). A task's cell is written only by that task and read by its successors,
// which the flow graph's edges order after the write.
class Kernels {
public:
    // Reads the file, loads its library and computes its initializations; `preds` gets each
    // task's predecessors.
    Kernels(const std::string& path, std::size_t slots, std::vector<std::vector<std::uint32_t>>& preds) {
        std::ifstream in(path);
        std::string line;
        std::size_t at_line = 0;
        const auto next = [&](const std::string& what) {
            if (!std::getline(in, line)) throw std::runtime_error(path + ": the file ends before " + what);
            ++at_line;
            return std::istringstream(line);
        };
        std::string magic, version;
        std::size_t tasks = 0, inits = 0;
        if (!(next("the header") >> magic >> version >> tasks) || magic != "tomii-suite-kernels" || version != "1") {
            throw std::runtime_error(path + ": line 1 is not `tomii-suite-kernels 1 N`");
        }
        next("the library");
        if (line.rfind("library ", 0) != 0) throw std::runtime_error(path + ": line 2 is not `library PATH`");
        const auto library = load(line.substr(8));
        std::string word;
        if (!(next("the initializations") >> word >> inits) || word != "inits") {
            throw std::runtime_error(path + ": line 3 is not `inits K`");
        }
        const auto lookup = [&](const std::string& name) {
            const auto found = library.find(name);
            if (found == library.end()) throw std::runtime_error("the library has no kernel " + name);
            return found->second;
        };
        const auto where = [&] { return path + ": line " + std::to_string(at_line) + ": "; };
        for (std::size_t k = 0; k < inits; ++k) {
            auto words = next("an initialization");
            try {
                Task init{"", 0, Kernel{nullptr}, {}};
                if (!(words >> init.node >> word)) throw std::runtime_error("fields are missing");
                init.kernel = lookup(word);
                read_args(words, init, k, 0);
                std::vector<TomiiValue> values;
                for (const Arg& arg : init.args) {
                    if (arg.kind != Arg::Constant) throw std::runtime_error("an initialization takes constants only");
                    values.push_back(arg.constant());
                }
                inits_.push_back(init.kernel.call(values, 0, 0, 0, 0, init.node));
            } catch (const std::exception& error) {
                throw std::runtime_error(where() + error.what());
            }
        }
        preds.assign(tasks, {});
        for (std::size_t t = 0; t < tasks; ++t) {
            auto words = next("task " + std::to_string(t));
            try {
                Task task{"", 0, Kernel{nullptr}, {}};
                std::size_t npreds = 0;
                if (!(words >> task.node >> task.instance >> word >> npreds)) {
                    throw std::runtime_error("fields are missing");
                }
                task.kernel = lookup(word);
                preds[t].resize(npreds);
                for (auto& p : preds[t]) {
                    if (!(words >> p) || p >= t) throw std::runtime_error("a predecessor is missing or not earlier");
                }
                read_args(words, task, inits_.size(), t);
                for (const Arg& arg : task.args) {
                    if (arg.kind == Arg::Result &&
                        std::find(preds[t].begin(), preds[t].end(), arg.index) == preds[t].end()) {
                        throw std::runtime_error("a result argument of a task it does not wait for");
                    }
                }
                tasks_.push_back(std::move(task));
            } catch (const std::exception& error) {
                const std::string at = path + ": line " + std::to_string(at_line) + " (task " + std::to_string(t) + "): ";
                throw std::runtime_error(at + error.what());
            }
        }
        cells_.assign(slots, std::vector<Cell>(tasks));
    }

    Kernels(const Kernels&) = delete;
    Kernels& operator=(const Kernels&) = delete;

    // Releases every result, then the initializations (the handles results may point into).
    ~Kernels() {
        for (auto& slot : cells_) {
            for (auto& cell : slot) release(cell.value);
        }
        for (auto& value : inits_) release(value);
    }

    // Runs `task` of `frame` in `slot`; throws (and keeps the first message) when it fails.
    void run(std::size_t slot, std::uint64_t frame, std::size_t task, std::uint32_t worker) {
        const Task& spec = tasks_[task];
        std::vector<Cell>& cells = cells_[slot];
        std::vector<TomiiValue> args;
        args.reserve(spec.args.size() + 1);
        for (const Arg& arg : spec.args) {
            args.push_back(arg.kind == Arg::Constant ? arg.constant()
                           : arg.kind == Arg::Init   ? inits_[arg.index]
                                                     : cells[arg.index].value);
        }
        std::vector<TomiiValue> list;
        if (spec.kernel.variadic()) {
            std::size_t trailing = 0;
            while (trailing < spec.args.size() && spec.args[spec.args.size() - 1 - trailing].kind == Arg::Result) {
                ++trailing;
            }
            list.assign(args.end() - static_cast<std::ptrdiff_t>(trailing), args.end());
            args.resize(args.size() - trailing);
            TomiiValue packed{};
            packed.tag = TOMII_TAG_LIST;
            packed.payload.buf = TomiiBuffer{list.data(), list.size(), nullptr, nullptr};
            args.push_back(packed);
        }
        Cell& cell = cells[task];
        release(cell.value);
        try {
            cell.value = spec.kernel.call(args, worker, frame, static_cast<std::uint32_t>(slot), spec.instance, spec.node);
            cell.frame = frame;
        } catch (const std::exception& error) {
            std::lock_guard<std::mutex> lock(error_lock_);
            if (error_.empty()) error_ = error.what();
            throw;
        }
    }

    // The first failure of the run ("" when none).
    std::string error() {
        std::lock_guard<std::mutex> lock(error_lock_);
        return error_;
    }

    // `[[node, instance, value], ...]` for every task in `sinks`, from the slot that ran `frame`.
    std::string sink_json(const std::vector<std::size_t>& sinks, std::uint64_t frame) const {
        std::string text = "[";
        for (std::size_t t : sinks) {
            const Cell* found = nullptr;
            for (const auto& slot : cells_) {
                if (slot[t].frame == frame) found = &slot[t];
            }
            if (!found) throw std::runtime_error("no slot holds frame " + std::to_string(frame) + " of task " + std::to_string(t));
            text += (text.size() > 1 ? ", [\"" : "[\"") + tasks_[t].node + "\", " + std::to_string(tasks_[t].instance) +
                    ", " + to_json(found->value) + "]";
        }
        return text + "]";
    }

private:
    struct Cell {
        std::uint64_t frame = UINT64_MAX;
        TomiiValue value{};
    };

    // `NARGS ARG...` to the end of the line.
    static void read_args(std::istringstream& words, Task& task, std::size_t inits, std::size_t index) {
        std::size_t count = 0;
        if (!(words >> count)) throw std::runtime_error("the argument count is missing");
        std::string word;
        for (std::size_t k = 0; k < count; ++k) {
            if (!(words >> word)) throw std::runtime_error("an argument is missing");
            task.args.push_back(parse_arg(word, inits, index));
        }
        if (words >> word) throw std::runtime_error("more fields than the counts announce");
    }

    std::vector<TomiiValue> inits_;
    std::vector<Task> tasks_;
    std::vector<std::vector<Cell>> cells_;
    std::mutex error_lock_;
    std::string error_;
};

}  // namespace kernels

#endif  // TOMII_PEER_TBB_KERNELS_H
