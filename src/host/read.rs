//! Reading the host's files behind a root directory (`/`, or a recorded tree for `--root`). Every file is
//! hostile: missing, unreadable, a FIFO that would block, huge, not text, not a number. Each read is bounded
//! and says what went wrong instead of failing.
use std::fmt;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use super::HostError;

/// The most a sysfs or procfs value may hold (an attribute is at most a page; a table such as
/// /proc/net/arp is more): beyond it the file is not what it claims to be.
pub const MAX_VALUE: u64 = 64 << 10;
/// The most read of a table or a log.
pub const MAX_TABLE: u64 = 8 << 20;
/// The most entries taken from one directory (a GID table has at most a few thousand).
pub const MAX_ENTRIES: usize = 8192;

/// Why a file gave no value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadError {
    Missing,
    /// Read failed (the kernel's EINVAL of an empty GID entry, permission denied, a directory, a FIFO).
    Unreadable(String),
    /// Larger than the bound for its kind.
    TooLarge(u64),
    /// Text where a number belongs.
    NotANumber(String),
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::Missing => write!(f, "missing"),
            ReadError::Unreadable(why) => write!(f, "unreadable: {why}"),
            ReadError::TooLarge(n) => write!(f, "too large ({n} bytes)"),
            ReadError::NotANumber(s) => write!(f, "not a number: {s:?}"),
        }
    }
}

/// Where the host's files are: `/` or a recorded tree (`DIR/sys`, `DIR/proc`, ...).
#[derive(Debug, Clone)]
pub struct Root {
    dir: PathBuf,
    /// The running system, not a recorded tree: system calls (netlink, ioctl, verbs) may be asked too.
    pub live: bool,
}

impl Root {
    pub fn live() -> Root {
        Root {
            dir: PathBuf::from("/"),
            live: true,
        }
    }

    /// A recorded tree; an error line when `dir` is not a directory or records no `sys/class` (a tree
    /// without it holds nothing doctor or counters could examine: most likely the wrong directory).
    pub fn recorded(dir: &Path) -> Result<Root, HostError> {
        let dir_ = || dir.to_path_buf();
        match fs::metadata(dir) {
            Ok(m) if m.is_dir() && !dir.join("sys/class").is_dir() => {
                Err(HostError::NotHostTree { dir: dir_() })
            }
            Ok(m) if m.is_dir() => Ok(Root {
                dir: dir.to_path_buf(),
                live: false,
            }),
            Ok(_) => Err(HostError::NotDirectory { dir: dir_() }),
            Err(source) => Err(HostError::Root {
                dir: dir_(),
                source,
            }),
        }
    }

    /// The file `rel` (a path without the leading `/`, e.g. `sys/class/net`) under the root.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.join(rel.trim_start_matches('/'))
    }

    /// The root itself: `/` or the tree's directory.
    pub fn name(&self) -> String {
        self.dir.display().to_string()
    }

    /// How evidence names `rel`: the path on the host (`/sys/...`), under DIR for a recorded tree.
    pub fn show(&self, rel: &str) -> String {
        self.path(rel).display().to_string()
    }

    pub fn exists(&self, rel: &str) -> bool {
        fs::symlink_metadata(self.path(rel)).is_ok()
    }

    /// What `rel` is (symbolic links followed): a loop or a denied search is `Unreadable`.
    pub fn metadata(&self, rel: &str) -> Result<fs::Metadata, ReadError> {
        fs::metadata(self.path(rel)).map_err(|e| io_error(&e))
    }

    /// The path `rel` leads to, every symbolic link followed (two names of one device or port lead to the
    /// same place): a loop or a dangling link is `Unreadable` or `Missing`.
    pub fn canonical(&self, rel: &str) -> Result<PathBuf, ReadError> {
        fs::canonicalize(self.path(rel)).map_err(|e| io_error(&e))
    }

    pub fn is_dir(&self, rel: &str) -> bool {
        fs::metadata(self.path(rel)).is_ok_and(|m| m.is_dir())
    }

    /// The bytes of a regular file, at most `limit`.
    pub fn bytes(&self, rel: &str, limit: u64) -> Result<Vec<u8>, ReadError> {
        read_bounded(&self.path(rel), limit)
    }

    /// A value file, whitespace trimmed (invalid UTF-8 replaced).
    pub fn text(&self, rel: &str) -> Result<String, ReadError> {
        let b = self.bytes(rel, MAX_VALUE)?;
        Ok(String::from_utf8_lossy(&b).trim().to_string())
    }

    /// A table or a log, at most [`MAX_TABLE`] bytes.
    pub fn table(&self, rel: &str) -> Result<String, ReadError> {
        let b = self.bytes(rel, MAX_TABLE)?;
        Ok(String::from_utf8_lossy(&b).into_owned())
    }

    /// An unsigned decimal value.
    pub fn number(&self, rel: &str) -> Result<u64, ReadError> {
        let t = self.text(rel)?;
        t.parse().map_err(|_| ReadError::NotANumber(clip(&t)))
    }

    /// A signed decimal value (a netdev's speed is -1 when unknown).
    pub fn signed(&self, rel: &str) -> Result<i64, ReadError> {
        let t = self.text(rel)?;
        t.parse().map_err(|_| ReadError::NotANumber(clip(&t)))
    }

    /// The names in directory `rel`, sorted (at most [`MAX_ENTRIES`]).
    pub fn list(&self, rel: &str) -> Result<Vec<String>, ReadError> {
        let rd = fs::read_dir(self.path(rel)).map_err(|e| io_error(&e))?;
        let mut names: Vec<String> = rd
            .flatten()
            .take(MAX_ENTRIES)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort_by(|a, b| natural(a).cmp(&natural(b)).then_with(|| a.cmp(b)));
        Ok(names)
    }

    /// The last component of the symbolic link `rel` (a driver's name), not followed.
    pub fn link_name(&self, rel: &str) -> Option<String> {
        let target = fs::read_link(self.path(rel)).ok()?;
        Some(target.file_name()?.to_string_lossy().into_owned())
    }
}

/// A numeric name sorts by its number (GID index 10 after 9).
fn natural(s: &str) -> (u64, usize) {
    (s.parse().unwrap_or(u64::MAX), s.len())
}

/// At most 40 characters of a value, for evidence.
pub fn clip(s: &str) -> String {
    if s.chars().count() > 40 {
        format!("{}...", s.chars().take(40).collect::<String>())
    } else {
        s.to_string()
    }
}

fn io_error(e: &std::io::Error) -> ReadError {
    if e.kind() == std::io::ErrorKind::NotFound {
        ReadError::Missing
    } else {
        ReadError::Unreadable(e.to_string())
    }
}

/// Reads a regular file (following symbolic links), refusing what is not one (a FIFO would block) and
/// stopping past `limit` bytes. sysfs attributes report a size of 4096 whatever they hold: the size is
/// not trusted, the read is bounded.
fn read_bounded(path: &Path, limit: u64) -> Result<Vec<u8>, ReadError> {
    let meta = fs::metadata(path).map_err(|e| io_error(&e))?;
    if !meta.is_file() {
        return Err(ReadError::Unreadable(if meta.is_dir() {
            "a directory".to_string()
        } else {
            "not a regular file".to_string()
        }));
    }
    let f = fs::File::open(path).map_err(|e| io_error(&e))?;
    let mut buf = Vec::new();
    f.take(limit + 1)
        .read_to_end(&mut buf)
        .map_err(|e| io_error(&e))?;
    if buf.len() as u64 > limit {
        return Err(ReadError::TooLarge(meta.len().max(buf.len() as u64)));
    }
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_sort_by_number_then_text() {
        let mut v = vec!["10", "9", "a", "1", "b"];
        v.sort_by(|a, b| natural(a).cmp(&natural(b)).then_with(|| a.cmp(b)));
        assert_eq!(v, ["1", "9", "10", "a", "b"]);
    }

    #[test]
    fn clip_keeps_short_values() {
        assert_eq!(clip("abc"), "abc");
        assert_eq!(clip(&"x".repeat(50)), format!("{}...", "x".repeat(40)));
    }
}
