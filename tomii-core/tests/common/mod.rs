//! Helpers shared by the integration tests: where the built plugins and fixture graphs are, and an
//! independent reference implementation of the synthetic `checksum` kernel.
//!
//! tomii-core never depends on a plugin crate, not even for tests: plugins are found at run time in
//! `target/<profile>/`, so `cargo build --workspace` must run before `cargo test`. The checksum
//! here is rewritten from plugins/synthetic/README.md, never linked from the plugin.

// Each test binary uses a different subset of these helpers.
#![allow(dead_code)]

use std::path::PathBuf;

/// `target/<profile>/`: the parent of the directory holding the test executable (`deps/`).
pub fn plugin_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test executable's path");
    let deps = exe.parent().expect("the test executable has a directory");
    deps.parent().expect("the test executable's directory has a parent").to_path_buf()
}

/// A built plugin in `plugin_dir()`; panics with what to do when it is missing.
pub fn plugin(file: &str) -> PathBuf {
    let path = plugin_dir().join(file);
    assert!(
        path.is_file(),
        "{} is missing: run `cargo build --workspace` first (the tests load the plugins built there)",
        path.display()
    );
    path
}

/// The synthetic kernel library (noop, spin, touch, checksum, fail, panic).
pub fn synthetic_lib() -> PathBuf {
    plugin("libtomii_synthetic.so")
}

/// The fifo scheduler.
pub fn fifo_lib() -> PathBuf {
    plugin("libtomii_sched_fifo.so")
}

/// A fixture graph in tests/graphs/.
pub fn graph_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/graphs").join(name)
}

/// The text of a fixture graph.
pub fn graph_text(name: &str) -> String {
    let path = graph_path(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The reference checksum (plugins/synthetic/README.md, "checksum").
pub mod checksum {
    const PRIME: u64 = 0x100000001b3;
    const BASIS: u64 = 0xcbf29ce484222325;

    /// `mix(h, w) = g ^ (g >> 29)` with `g = (h ^ w) * PRIME mod 2^64`.
    pub fn mix(hash: u64, word: u64) -> u64 {
        let g = (hash ^ word).wrapping_mul(PRIME);
        g ^ (g >> 29)
    }

    /// 64-bit FNV-1a.
    pub fn fnv1a(bytes: &[u8]) -> u64 {
        let mut hash = BASIS;
        for &byte in bytes {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(PRIME);
        }
        hash
    }

    /// The word of a signed integer argument: its two's-complement bits.
    pub fn int(value: i64) -> u64 {
        value as u64
    }

    /// The word of a string argument.
    pub fn text(value: &str) -> u64 {
        fnv1a(value.as_bytes())
    }

    /// What `checksum` returns for instance `instance` of node `node` in frame `frame`, given the
    /// words of its arguments in order.
    pub fn expected(node: &str, instance: u32, frame: u64, words: &[u64]) -> u64 {
        let seed = mix(mix(fnv1a(node.as_bytes()), u64::from(instance)), frame);
        words.iter().fold(seed, |hash, &word| mix(hash, word))
    }
}
