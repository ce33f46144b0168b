//! The plugin files this process has already loaded and checked, so that each is checked once
//! (version, size, callbacks and, for Rust schedulers, the `abi_stable` layout) however many runs
//! load it.
//!
//! A file is known by its identity on disk (device, inode, size, mtime), recorded under its
//! canonical path: a file that changed since it was checked is never taken for the checked one,
//! but checked again.
//! Only a passed check is remembered; a failing file is checked (and reported) again on every load.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::PluginError;

/// What identifies a file's contents on disk, short of reading it: a rebuilt library is another
/// file (another inode, size or mtime).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileId {
    dev: u64,
    ino: u64,
    size: u64,
    mtime_s: i64,
    mtime_ns: i64,
}

impl FileId {
    /// The identity of the file `path` names now (one `stat`); None when there is none.
    pub fn of(path: &Path) -> Option<FileId> {
        let meta = std::fs::metadata(path).ok()?;
        Some(FileId {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mtime_s: meta.mtime(),
            mtime_ns: meta.mtime_nsec(),
        })
    }
}

/// The checked files of one kind of plugin, by canonical path, with what their check produced.
pub(super) struct Checked<T> {
    files: Mutex<Option<HashMap<PathBuf, (FileId, T)>>>,
}

impl<T: Clone> Checked<T> {
    pub const fn new() -> Self {
        Checked { files: Mutex::new(None) }
    }

    /// What `check` gave for the file at `path` when it was checked, or `check`'s result now,
    /// remembered if it passed. The lock is held while `check` runs, so two threads loading the
    /// same file check it once.
    ///
    /// A file that changed on disk since its check is checked again, as every load was before
    /// this record existed. (The dynamic loader may still hand back the library it loaded under
    /// that path before, since a library is never unloaded: that was so before too.)
    pub fn get_or_check(&self, path: &Path, check: impl FnOnce() -> Result<T, PluginError>) -> Result<T, PluginError> {
        // The file the path names now (one `stat`), if it is one checked already under any path:
        // the same device and inode with the same size and mtime is the same file, so a repeated
        // load costs no canonicalization (a `readlink` per path component).
        if let Some(id) = FileId::of(path) {
            let files = self.files.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            if let Some((_, checked)) = files.as_ref().and_then(|files| files.values().find(|(known, _)| *known == id))
            {
                return Ok(checked.clone());
            }
        }
        let Some((canonical, id)) = std::fs::canonicalize(path).ok().and_then(|c| FileId::of(&c).map(|id| (c, id)))
        else {
            // Missing or unreadable: the check reports it as it always has.
            return check();
        };
        let mut files = self.files.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let files = files.get_or_insert_with(HashMap::new);
        if let Some((known, checked)) = files.get(&canonical)
            && *known == id
        {
            return Ok(checked.clone());
        }
        let checked = check()?;
        // A file replaced while it was being checked is not remembered: which one was loaded is
        // unknown, and the next load checks again.
        if FileId::of(&canonical) == Some(id) {
            files.insert(canonical, (id, checked.clone()));
        } else {
            files.remove(&canonical);
        }
        Ok(checked)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn a_passed_check_runs_once_and_a_failed_one_every_time() {
        let dir = tempfile::tempdir().unwrap();
        let (good, bad) = (dir.path().join("good.so"), dir.path().join("bad.so"));
        write(&good, "good");
        write(&bad, "bad");
        let checked = Checked::<u32>::new();
        let mut calls = 0;
        for _ in 0..3 {
            let got = checked.get_or_check(&good, || {
                calls += 1;
                Ok(7)
            });
            assert_eq!(got.unwrap(), 7);
        }
        assert_eq!(calls, 1);
        for _ in 0..2 {
            let got = checked.get_or_check(&bad, || {
                calls += 1;
                Err(PluginError::Invalid { path: bad.clone(), what: "no".into() })
            });
            assert!(got.is_err());
        }
        assert_eq!(calls, 3);
    }

    #[test]
    fn the_same_file_by_another_path_is_the_same_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("lib.so");
        write(&file, "lib");
        let link = dir.path().join("link.so");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        let checked = Checked::<u32>::new();
        assert_eq!(checked.get_or_check(&file, || Ok(1)).unwrap(), 1);
        assert_eq!(checked.get_or_check(&link, || Ok(2)).unwrap(), 1);
        let dotted = dir.path().join(".").join("lib.so");
        assert_eq!(checked.get_or_check(&dotted, || Ok(3)).unwrap(), 1);
    }

    #[test]
    fn a_file_changed_after_its_check_is_checked_again() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("lib.so");
        write(&file, "old");
        let checked = Checked::<u32>::new();
        assert_eq!(checked.get_or_check(&file, || Ok(1)).unwrap(), 1);
        // A rebuild writes a new file in its place: another inode, size or mtime.
        std::fs::remove_file(&file).unwrap();
        write(&file, "new build");
        assert_eq!(checked.get_or_check(&file, || Ok(2)).unwrap(), 2);
        assert_eq!(checked.get_or_check(&file, || Ok(3)).unwrap(), 2);
        // A changed file that now fails its check fails, and is not taken for the last good one.
        std::fs::remove_file(&file).unwrap();
        write(&file, "broken build");
        let broken = || Err(PluginError::Invalid { path: file.clone(), what: "broken".into() });
        assert!(checked.get_or_check(&file, broken).is_err());
        assert!(checked.get_or_check(&file, broken).is_err());
    }
}
