//! The one rule for the files a command is given, whatever the command and the option: an input
//! is read only when it is a regular file, and at most a limit of it (a FIFO would block the read,
//! a device such as /dev/zero never end it); an output is refused when writing there would block
//! (a FIFO, a socket, a block device), when it is a directory, when it is the file the command
//! reads (the same path or the same inode), or when it cannot be opened for writing. Graph files
//! (`tomii run`, `simulate`, `convert`, `send --graph`), cost models and decisions files are read
//! through [`open_input`], and every output path of a command is checked by [`check_writable`].

use std::fs::{File, Metadata};
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::Path;

/// Why an input file was not read. Its message follows the file's path (`PATH: is a FIFO, ...`).
#[derive(Debug, thiserror::Error)]
pub enum Unreadable {
    /// Not a regular file; what it is instead ("a FIFO", "a character device", ...).
    #[error("is {0}, not a regular file; give a regular file")]
    Special(&'static str),
    /// Larger than the reader's limit.
    #[error("has {size} bytes, more than the {limit} read at most; give a smaller file")]
    TooLarge { size: u64, limit: u64 },
    #[error("cannot be read: {0}")]
    Io(#[source] std::io::Error),
}

/// The input file at `path`, open for reading at most `limit` bytes: refused unless it is a regular
/// file of at most `limit` bytes. A device is refused before it is opened (opening some has effects);
/// the file is then opened without blocking and checked again through its handle, so that a FIFO put
/// in its place meanwhile is refused too, never waited on.
pub fn open_input(path: &Path, limit: u64) -> Result<std::io::Take<File>, Unreadable> {
    let check = |metadata: Metadata| match special_kind(&metadata) {
        Some(kind) => Err(Unreadable::Special(kind)),
        None if metadata.len() > limit => Err(Unreadable::TooLarge { size: metadata.len(), limit }),
        None => Ok(()),
    };
    check(std::fs::metadata(path).map_err(Unreadable::Io)?)?;
    let file =
        std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path).map_err(Unreadable::Io)?;
    check(file.metadata().map_err(Unreadable::Io)?)?;
    Ok(file.take(limit))
}

/// The bytes of the input file at `path`, read as [`open_input`] opens it.
pub fn read_input(path: &Path, limit: u64) -> Result<Vec<u8>, Unreadable> {
    let mut bytes = Vec::new();
    open_input(path, limit)?.read_to_end(&mut bytes).map_err(Unreadable::Io)?;
    Ok(bytes)
}

/// What a file that is not a regular one is, as a message says it; `None` for a regular file.
fn special_kind(metadata: &Metadata) -> Option<&'static str> {
    let kind = metadata.file_type();
    let what = if kind.is_file() {
        return None;
    } else if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else {
        "a special file"
    };
    Some(what)
}

/// Refuses the output `path`, given as `option` (`--report`), when writing there would block (a
/// FIFO, a socket, a block device), when it is a directory, when it is `input` (the file the
/// command reads, and how messages name it: "the graph file"), by path or by inode (a hard or
/// symbolic link to it), or when it cannot be opened for writing. A file that does not exist is
/// created to see that it can be, then removed again: a file is left only by what writes it, so a
/// run that ends before writing its report (refused, crashed, killed) leaves no empty file that
/// looks like one. A character device such as /dev/null is written as it is.
pub fn check_writable(path: &Path, option: &str, input: Option<(&str, &Path)>) -> Result<(), String> {
    let at = |what: String| format!("{option} {}: {what}", path.display());
    let existed = std::fs::symlink_metadata(path).is_ok();
    if let Ok(metadata) = std::fs::metadata(path) {
        let kind = metadata.file_type();
        if kind.is_dir() {
            return Err(at("is a directory; give a file name".to_owned()));
        }
        if kind.is_fifo() || kind.is_socket() || kind.is_block_device() {
            let what = special_kind(&metadata).unwrap_or("a special file");
            return Err(at(format!("is {what}, not a regular file (writing it would block); give a regular file")));
        }
        if let Some((name, input)) = input
            && std::fs::metadata(input).is_ok_and(|read| (read.dev(), read.ino()) == (metadata.dev(), metadata.ino()))
        {
            return Err(at(format!("is {name} itself; writing there would destroy it, give another path")));
        }
    }
    if !existed {
        match std::fs::OpenOptions::new().write(true).create_new(true).open(path) {
            Ok(_) => return std::fs::remove_file(path).map_err(|error| at(format!("cannot write here: {error}"))),
            // Made meanwhile by someone else: checked as an existing file below.
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(error) => return Err(at(format!("cannot write here: {error}"))),
        }
    }
    std::fs::OpenOptions::new()
        .append(true)
        .open(path)
        .map(drop)
        .map_err(|error| at(format!("cannot write here: {error}")))
}

/// Writes `bytes` to the file at `path` whole or not at all: a regular file (or one that does not
/// exist yet) is written to a temporary file beside it (`.NAME.PID.partial`, with the permissions
/// of the file it replaces) that is then renamed over it, so that the path never holds a partial
/// or empty file, even when the process dies while writing (it then keeps what it held before).
/// A symbolic link is followed: the file it points at is replaced. Anything else (/dev/stdout, a
/// character device), or a file in a directory where no other file can be made, is written in
/// place.
pub fn write_whole(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;
    let target = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned());
    let mode = match std::fs::metadata(&target) {
        Ok(metadata) if !metadata.is_file() => return std::fs::write(&target, bytes),
        Ok(metadata) => metadata.permissions().mode() & 0o7777,
        Err(_) => 0o666,
    };
    let (Some(dir), Some(name)) = (target.parent(), target.file_name()) else { return std::fs::write(&target, bytes) };
    let dir = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
    let mut temporary_name = std::ffi::OsString::from(".");
    temporary_name.push(name);
    temporary_name.push(format!(".{}.partial", std::process::id()));
    let temporary = dir.join(temporary_name);
    let created = std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(mode).open(&temporary);
    let Ok(mut file) = created else { return std::fs::write(&target, bytes) };
    let written = file.write_all(bytes).and_then(|()| file.flush());
    drop(file);
    let renamed = written.and_then(|()| std::fs::rename(&temporary, &target));
    if renamed.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    renamed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_regular_file_within_the_limit_is_read() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let file = dir.path().join("f");
        std::fs::write(&file, "12345").expect("a file");
        assert_eq!(read_input(&file, 5).expect("read"), b"12345");
        assert!(matches!(read_input(&file, 4), Err(Unreadable::TooLarge { size: 5, limit: 4 })));
        assert!(matches!(read_input(dir.path(), 5), Err(Unreadable::Special("a directory"))));
        assert!(matches!(read_input(Path::new("/dev/zero"), 5), Err(Unreadable::Special("a character device"))));
        assert!(matches!(read_input(&dir.path().join("absent"), 5), Err(Unreadable::Io(_))));
    }

    #[test]
    fn an_output_is_never_the_input_under_another_name() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let (input, link) = (dir.path().join("graph.json"), dir.path().join("link.json"));
        std::fs::write(&input, "{}").expect("a file");
        std::fs::hard_link(&input, &link).expect("a hard link");
        let error = check_writable(&link, "--report", Some(("the graph file", &input))).expect_err("refused");
        assert!(error.starts_with("--report ") && error.contains("is the graph file itself"), "{error}");
        assert!(check_writable(&dir.path().join("other.json"), "--report", Some(("the graph file", &input))).is_ok());
        assert!(check_writable(Path::new("/dev/null"), "--report", None).is_ok());
    }

    #[test]
    fn checking_an_output_leaves_no_file_behind() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let report = dir.path().join("report.json");
        assert!(check_writable(&report, "--report", None).is_ok());
        assert!(!report.exists(), "the check left an empty file that looks like a report");
        std::fs::write(&report, "kept").expect("a file");
        assert!(check_writable(&report, "--report", None).is_ok());
        assert_eq!(std::fs::read_to_string(&report).expect("read"), "kept", "an existing file is left as it is");
    }

    #[test]
    fn a_file_written_whole_replaces_the_old_one_and_keeps_its_permissions() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("a temporary directory");
        let report = dir.path().join("report.json");
        write_whole(&report, b"first").expect("written");
        assert_eq!(std::fs::read(&report).expect("read"), b"first");
        std::fs::set_permissions(&report, std::fs::Permissions::from_mode(0o640)).expect("chmod");
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(&report, &link).expect("a link");
        write_whole(&link, b"second").expect("written through the link");
        assert_eq!(std::fs::read(&report).expect("read"), b"second");
        assert!(std::fs::symlink_metadata(&link).expect("the link").file_type().is_symlink(), "the link stays");
        assert_eq!(std::fs::metadata(&report).expect("metadata").permissions().mode() & 0o777, 0o640);
        let left: Vec<_> = std::fs::read_dir(dir.path()).expect("listing").flatten().map(|e| e.file_name()).collect();
        assert_eq!(left.len(), 2, "no temporary file is left: {left:?}");
        write_whole(Path::new("/dev/null"), b"into a device").expect("a device is written in place");
    }
}
