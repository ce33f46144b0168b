//! The scheduler the checker wraps: the library named by `$TOMII_HOOK_CHECKER_INNER`, loaded
//! once per process and never unloaded (as the host's loader does), its table checked as the host
//! checks one (major version, size, name, required callbacks), but without the layout check.

use std::ffi::CStr;
use std::path::Path;

use tomii_types::abi::{SCHEDULER_ENTRY_SYMBOL, TOMII_SCHED_ABI_MAJOR, TomiiSchedulerEntryFn, TomiiSchedulerVtable};

/// The environment variable naming the library of the scheduler to wrap.
pub const INNER_VAR: &str = "TOMII_HOOK_CHECKER_INNER";

/// A loaded scheduler whose table passed the checks.
pub struct Inner {
    pub name: String,
    /// A copy of its table: the functions it points at stay loaded for the process.
    pub table: TomiiSchedulerVtable,
}

// SAFETY: the table holds function pointers and a pointer to the library's static name, all of
// them immutable and valid for the process (the library is never unloaded).
unsafe impl Send for Inner {}
// SAFETY: as above.
unsafe impl Sync for Inner {}

impl Inner {
    /// Loads the scheduler `$TOMII_HOOK_CHECKER_INNER` names. `own_entry` is the checker's own
    /// entry symbol, so that wrapping the checker in itself is refused.
    pub fn from_env(own_entry: TomiiSchedulerEntryFn) -> Result<Inner, String> {
        let path = std::env::var_os(INNER_VAR).ok_or_else(|| {
            format!("${INNER_VAR} is not set: set it to the path of the scheduler library the hook checker wraps")
        })?;
        Inner::load(Path::new(&path), own_entry)
    }

    fn load(path: &Path, own_entry: TomiiSchedulerEntryFn) -> Result<Inner, String> {
        let shown = path.display();
        // SAFETY: loading a scheduler library runs its initialisers, as the host's loader does.
        let library = unsafe { libloading::Library::new(path) }
            .map_err(|e| format!("cannot load the scheduler to wrap, {shown} (${INNER_VAR}): {e}"))?;
        // SAFETY: the entry symbol has this signature by the ABI.
        let entry: TomiiSchedulerEntryFn = *unsafe { library.get::<TomiiSchedulerEntryFn>(SCHEDULER_ENTRY_SYMBOL) }
            .map_err(|e| format!("{shown} is not a Tomii scheduler: {e}"))?;
        if std::ptr::fn_addr_eq(entry, own_entry) {
            return Err(format!("${INNER_VAR} names the hook checker itself ({shown}); name the scheduler to wrap"));
        }
        // SAFETY: the entry takes no argument and returns a static table or NULL.
        let table = unsafe { entry() };
        let table = check(table).map_err(|what| format!("{shown}: {what}"))?;
        // Never unloaded: the copied table points into the library.
        std::mem::forget(library);
        // SAFETY: `check` found the name non-NULL; it is a static NUL-terminated string.
        let name = unsafe { CStr::from_ptr(table.header.name) }.to_string_lossy().into_owned();
        Ok(Inner { name, table })
    }
}

/// A copy of the table at `table`, if it is one this checker can forward to.
fn check(table: *const TomiiSchedulerVtable) -> Result<TomiiSchedulerVtable, String> {
    if table.is_null() {
        return Err("tomii_scheduler_v1 returned NULL".to_owned());
    }
    // SAFETY: non-NULL; every version's table starts with the fixed header.
    let header = unsafe { (*table).header };
    if header.abi_major != TOMII_SCHED_ABI_MAJOR {
        return Err(format!("scheduler ABI {} (the hook checker speaks {TOMII_SCHED_ABI_MAJOR})", header.abi_major));
    }
    let size = size_of::<TomiiSchedulerVtable>();
    if (header.struct_size as usize) < size {
        return Err(format!("a table of {} bytes, smaller than the {size} bytes forwarded", header.struct_size));
    }
    // SAFETY: the table is at least `size` bytes of static data (checked above).
    let table = unsafe { *table };
    if header.name.is_null() {
        return Err("a scheduler without a name".to_owned());
    }
    if table.create.is_none() || table.destroy.is_none() || table.push.is_none() || table.pop.is_none() {
        return Err("a NULL create, destroy, push or pop, which are required".to_owned());
    }
    Ok(table)
}
