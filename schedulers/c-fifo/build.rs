//! Compiles `c_fifo.c` against the generated headers into a static library linked into the cdylib.
//!
//! Strict C11 with every warning an error, so the C scheduler stays as clean as the Rust ones. It
//! must never generate or copy the headers: they are tomii-types' and checked there.

fn main() {
    let include = "../../tomii-types/include";
    println!("cargo::rerun-if-changed=c_fifo.c");
    println!("cargo::rerun-if-changed={include}/tomii");
    cc::Build::new()
        .file("c_fifo.c")
        .include(include)
        .flag("-std=c11")
        .flag("-Wall")
        .flag("-Wextra")
        .flag("-Werror")
        .compile("tomii_c_fifo");
    println!("cargo::rustc-link-lib=pthread");
}
