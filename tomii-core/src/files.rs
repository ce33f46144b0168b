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
/// symbolic link to it), or when it cannot be opened for writing. Creates the file if it does not
/// exist. A character device such as /dev/null is written as it is.
pub fn check_writable(path: &Path, option: &str, input: Option<(&str, &Path)>) -> Result<(), String> {
    let at = |what: String| format!("{option} {}: {what}", path.display());
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
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map(drop)
        .map_err(|error| at(format!("cannot write here: {error}")))
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
}
