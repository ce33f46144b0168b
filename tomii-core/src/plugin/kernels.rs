//! Kernel libraries: loading a registry, checking it, and resolving the graph's function names.
//!
//! Resolution happens once per run, before any frame starts; the engine then calls kernels through
//! plain function pointers.

use std::collections::HashMap;
use std::ffi::c_void;
use std::path::{Path, PathBuf};

use tomii_types::abi::{
    KERNELS_ENTRY_SYMBOL, TOMII_KERNEL_ABI_MAJOR, TomiiKernelEntry, TomiiKernelFn, TomiiKernelRegistry,
};

use super::PluginError;
use super::checked::Checked;
use super::library::{OpenLibrary, static_text};

/// A resolved kernel: what the engine needs to call it.
#[derive(Clone, Copy, Debug)]
pub struct Kernel {
    pub func: TomiiKernelFn,
    /// The registry entry's `data`, passed back in `TomiiCallCtx::data` (NULL before ABI v1.1).
    pub data: *mut c_void,
    /// `TOMII_KERNEL_*` flags.
    pub flags: u32,
}

// SAFETY: `data` is opaque to the host; the kernel ABI requires a kernel (and so its data) to accept
// calls from any worker thread.
unsafe impl Send for Kernel {}
// SAFETY: as above; the host never dereferences `data`.
unsafe impl Sync for Kernel {}

/// One kernel library: loaded from a file, or made by the embedding program (the Python binding
/// registers Python functions this way).
pub struct KernelLibrary {
    /// The file, or a label in angle brackets (`<python>`) for a library made in-process.
    pub path: PathBuf,
    pub name: String,
    /// (kernel name, kernel), in registry order.
    pub kernels: Vec<(String, Kernel)>,
}

impl KernelLibrary {
    /// Loads the kernel library at `path` and checks its registry, once per process for each file
    /// (`checked.rs`): a later load of the same file is a look-up.
    pub fn load(path: &Path) -> Result<KernelLibrary, PluginError> {
        static CHECKED: Checked<Registry> = Checked::new();
        let (name, kernels) = CHECKED.get_or_check(path, || Self::load_and_check(path))?;
        Ok(KernelLibrary { path: path.to_owned(), name: name.to_owned(), kernels })
    }

    /// Loads the kernel library at `path` and checks its registry, every check every time: the
    /// library's name (static text of the library) and its kernels.
    fn load_and_check(path: &Path) -> Result<Registry, PluginError> {
        let library = OpenLibrary::open(path)?;
        if !library.has_symbol(KERNELS_ENTRY_SYMBOL) && library.has_symbol(V12_ABI_SYMBOL) {
            return Err(PluginError::Invalid { path: path.to_owned(), what: built_for_v12(path) });
        }
        let hint = "is it a Tomii kernel library? Rust ones call tomii_types::export_kernels!, C ones define it; a plain C library (one make builds) is loaded through the glue of its annotated header: tomii.build.build(func_path=HEADER, library=THIS_FILE) makes it, and Graph.build(func_path=HEADER) then run(dylib=THIS_FILE) uses it";
        // SAFETY: `tomii_kernels_v1` has the signature `fn() -> *const TomiiKernelRegistry` by the ABI.
        let table = unsafe { library.entry_table::<TomiiKernelRegistry>(path, KERNELS_ENTRY_SYMBOL, hint)? };
        // SAFETY: the first three fields are the fixed prefix of every version; the table is static.
        let (major, size) = unsafe { ((*table).abi_major, (*table).struct_size) };
        if major != TOMII_KERNEL_ABI_MAJOR {
            return Err(PluginError::Version {
                path: path.to_owned(),
                abi: "kernel",
                found: major,
                expected: TOMII_KERNEL_ABI_MAJOR,
            });
        }
        let invalid = |what: String| PluginError::Invalid { path: path.to_owned(), what };
        if (size as usize) < size_of::<TomiiKernelRegistry>() {
            return Err(invalid(format!("kernel registry is {size} bytes, smaller than ABI v1.0's")));
        }
        // SAFETY: the size covers the v1 registry.
        let registry: &'static TomiiKernelRegistry = unsafe { &*table };
        // SAFETY: the library name is a static string of the library.
        let name = unsafe { static_text(registry.library, "the registry's library name") }.map_err(invalid)?;
        let kernels = read_entries(registry).map_err(invalid)?;
        Ok((name, kernels))
    }

    /// A library of kernels that live in this process, named `label` in messages.
    pub fn in_process(label: &str, kernels: Vec<(String, Kernel)>) -> KernelLibrary {
        KernelLibrary { path: PathBuf::from(format!("<{label}>")), name: label.to_owned(), kernels }
    }
}

/// The symbol every library built against Tomii 1.2's own `tomii-types` exports.
const V12_ABI_SYMBOL: &[u8] = b"tomii_abi_version\0";

/// Why a library built against Tomii 1.2's crates does not load, and the command that builds its
/// crate for this runtime (the crate found by walking up from the library to the manifest that
/// names its `[lib]`).
fn built_for_v12(path: &Path) -> String {
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    let lib = stem.strip_prefix("lib").unwrap_or(stem);
    let quoted = format!("\"{lib}\"");
    let manifest = path.ancestors().skip(1).map(|dir| dir.join("Cargo.toml")).find(|manifest| {
        std::fs::read_to_string(manifest)
            .is_ok_and(|text| text.contains(&quoted) || text.contains(&lib.replace('_', "-")))
    });
    let manifest = manifest.map_or_else(|| "<crate>/Cargo.toml".to_owned(), |m| m.display().to_string());
    format!(
        "a Tomii 1.2 plugin library (it exports 1.2's `tomii_abi_version`, not this runtime's kernel registry); \
         build its crate, unchanged, against this runtime's compat SDK: `tomii build --manifest-path {manifest}` \
         (or `Graph.build(plugin_manifest=...)`), then pass the library that prints"
    )
}

/// What a library's checked registry gives: its name (static text of the library) and its kernels.
type Registry = (&'static str, Vec<(String, Kernel)>);

fn read_entries(registry: &'static TomiiKernelRegistry) -> Result<Vec<(String, Kernel)>, String> {
    let stride = registry.entry_size as usize;
    if registry.count > 0 && (registry.entries.is_null() || stride < V1_0_ENTRY_SIZE) {
        return Err(format!(
            "kernel registry has {} entries but a NULL array or an entry size of {stride}",
            registry.count
        ));
    }
    (0..registry.count)
        .map(|i| {
            // SAFETY: `count` entries of `entry_size` bytes each, static data of the library; the
            // v1.0 entry is the prefix of every later entry; fields past it are read only when
            // `stride` covers them.
            let entry = unsafe { &*registry.entries.cast::<u8>().add(i * stride).cast::<TomiiKernelEntry>() };
            // SAFETY: the name is a static string of the library.
            let name = unsafe { static_text(entry.name, &format!("the name of kernel #{i}")) }?;
            let func = entry.func.ok_or_else(|| format!("kernel {name:?} has a NULL function pointer"))?;
            // A v1.0 entry ends before `data`: reading it would overrun the library's array.
            let data = if stride >= size_of::<TomiiKernelEntry>() { entry.data } else { std::ptr::null_mut() };
            Ok((name.to_owned(), Kernel { func, data, flags: entry.flags }))
        })
        .collect()
}

/// The size of a v1.0 registry entry: everything before `data`.
const V1_0_ENTRY_SIZE: usize = std::mem::offset_of!(TomiiKernelEntry, data);

/// Kernel libraries loaded for one run, with an index from name to kernel.
#[derive(Default)]
pub struct KernelSet {
    libraries: Vec<KernelLibrary>,
    index: HashMap<String, (usize, Kernel)>,
}

impl KernelSet {
    pub fn new() -> Self {
        Self::default()
    }

    /// Loads every library in `paths`.
    pub fn load(paths: &[PathBuf]) -> Result<KernelSet, PluginError> {
        let mut set = KernelSet::new();
        for path in paths {
            set.add(KernelLibrary::load(path)?)?;
        }
        Ok(set)
    }

    /// Adds a library; a kernel name exported by two libraries is an error.
    pub fn add(&mut self, library: KernelLibrary) -> Result<(), PluginError> {
        let position = self.libraries.len();
        for (name, kernel) in &library.kernels {
            if let Some(&(other, _)) = self.index.get(name) {
                return Err(PluginError::DuplicateKernel {
                    kernel: name.clone(),
                    first: self.libraries[other].path.clone(),
                    second: library.path.clone(),
                });
            }
            self.index.insert(name.clone(), (position, *kernel));
        }
        self.libraries.push(library);
        Ok(())
    }

    /// The function and flags registered as `kernel`, or an error naming its user (e.g.
    /// `node "gen"`) and what was searched.
    /// `user` describes the kernel's user for the error message; it is called only on error.
    pub fn resolve(&self, user: impl FnOnce() -> String, kernel: &str) -> Result<Kernel, PluginError> {
        if let Some(&(_, found)) = self.index.get(kernel) {
            return Ok(found);
        }
        let searched = if self.libraries.is_empty() {
            "no kernel library was loaded".to_owned()
        } else {
            self.libraries
                .iter()
                .map(|lib| {
                    let names: Vec<&str> = lib.kernels.iter().map(|k| k.0.as_str()).collect();
                    format!("{} exports {}", lib.path.display(), names.join(", "))
                })
                .collect::<Vec<_>>()
                .join("; ")
        };
        let hint = if self.libraries.is_empty() {
            "pass the library with --dylib PATH"
        } else {
            "check the name, or add the library that defines it with --dylib"
        };
        Err(PluginError::KernelNotFound { user: user(), kernel: kernel.to_owned(), searched, hint: hint.to_owned() })
    }

    pub fn libraries(&self) -> &[KernelLibrary] {
        &self.libraries
    }
}
