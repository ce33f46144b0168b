//! The kernel libraries a run was made ready with, as they were on disk when it loaded them, so
//! that a front end launching the same ready run again (`run_graph` in a loop) can tell that a
//! library was rebuilt since, and make the run ready again instead of launching it on the old one.
//! It never opens or loads anything: one `stat` per library.

use std::path::PathBuf;

use crate::plugin::FileId;

/// Each library's path with its identity on disk when it was stamped (None: it had none then).
#[derive(Clone, Debug)]
pub struct LibraryStamps {
    libraries: Vec<(PathBuf, Option<FileId>)>,
}

impl LibraryStamps {
    /// Stamps `paths` now: call it before loading them, so that a library replaced while it
    /// loads is seen as changed.
    pub fn of(paths: &[PathBuf]) -> LibraryStamps {
        LibraryStamps { libraries: paths.iter().map(|path| (path.clone(), FileId::of(path))).collect() }
    }

    /// Whether every library is still the file it was when stamped.
    pub fn unchanged(&self) -> bool {
        self.libraries.iter().all(|(path, stamp)| stamp.is_some() && FileId::of(path) == *stamp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rebuilt_or_removed_library_is_a_change() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a.so"), dir.path().join("b.so"));
        std::fs::write(&a, "a").unwrap();
        std::fs::write(&b, "b").unwrap();
        let stamps = LibraryStamps::of(&[a.clone(), b.clone()]);
        assert!(stamps.unchanged());
        std::fs::remove_file(&b).unwrap();
        std::fs::write(&b, "b rebuilt").unwrap();
        assert!(!stamps.unchanged(), "a rebuilt library");
        let stamps = LibraryStamps::of(std::slice::from_ref(&a));
        std::fs::remove_file(&a).unwrap();
        assert!(!stamps.unchanged(), "a removed library");
        assert!(!LibraryStamps::of(&[a]).unchanged(), "a library missing when stamped");
    }
}
