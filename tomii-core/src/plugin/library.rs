//! Opening a shared library and resolving its entry symbol, once, for the life of the process.
//!
//! Libraries are leaked on purpose: tables, names and values they hand out are static data of the
//! library, so unloading would leave dangling pointers. Never call `dlclose` here.

use std::mem::ManuallyDrop;
use std::path::Path;

use libloading::Library;

use super::PluginError;

/// `path` made absolute against the working directory. A bare file name handed to the dynamic
/// loader would be looked up on the system's library path instead of where the user pointed.
pub fn absolute(path: &Path) -> std::path::PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_owned())
}

/// A library that is never unloaded: the handle is never dropped, so `dlclose` never runs, and
/// nothing is allocated to hold it.
pub struct OpenLibrary {
    library: ManuallyDrop<Library>,
}

impl OpenLibrary {
    pub fn open(path: &Path) -> Result<Self, PluginError> {
        if !path.is_file() {
            let reason = if path.exists() { "not a regular file" } else { "no such file" };
            return Err(PluginError::Open { path: path.to_owned(), reason: reason.to_owned() });
        }
        let absolute = absolute(path);
        // SAFETY: loading runs the library's initialisers. Plugins are trusted code by design (the
        // user names them); what we can check, we check before calling anything else.
        let library = unsafe { Library::new(&absolute) }
            .map_err(|e| PluginError::Open { path: path.to_owned(), reason: e.to_string() })?;
        Ok(OpenLibrary { library: ManuallyDrop::new(library) })
    }

    /// Calls the entry function `symbol` (NUL-terminated), which takes nothing and returns a
    /// pointer to the library's static table.
    ///
    /// # Safety
    /// `symbol`, if present, must have the signature `extern "C" fn() -> *const T`.
    pub unsafe fn entry_table<T>(
        &self,
        path: &Path,
        symbol: &'static [u8],
        hint: &'static str,
    ) -> Result<*const T, PluginError> {
        let name = std::str::from_utf8(&symbol[..symbol.len() - 1]).unwrap_or("?");
        // SAFETY: the signature is the caller's guarantee.
        let entry = unsafe { self.library.get::<unsafe extern "C" fn() -> *const T>(symbol) }
            .map_err(|_| PluginError::MissingSymbol { path: path.to_owned(), symbol: name, hint })?;
        // SAFETY: as above; the entry takes no argument.
        let table = unsafe { entry() };
        if table.is_null() {
            return Err(PluginError::Invalid { path: path.to_owned(), what: format!("`{name}` returned NULL") });
        }
        Ok(table)
    }

    /// Whether the library exports `symbol` (NUL-terminated).
    pub fn has_symbol(&self, symbol: &[u8]) -> bool {
        // SAFETY: only the address is looked up; nothing is called or read through it.
        unsafe { self.library.get::<*const u8>(symbol) }.is_ok()
    }
}

/// Reads a NUL-terminated UTF-8 string from a plugin, or explains what is wrong with it.
///
/// # Safety
/// `ptr` must be NULL or point at a NUL-terminated string that lives for the process.
pub unsafe fn static_text(ptr: *const std::ffi::c_char, what: &str) -> Result<&'static str, String> {
    if ptr.is_null() {
        return Err(format!("{what} is NULL"));
    }
    // SAFETY: guaranteed by the caller.
    unsafe { std::ffi::CStr::from_ptr(ptr) }.to_str().map_err(|_| format!("{what} is not valid UTF-8"))
}
