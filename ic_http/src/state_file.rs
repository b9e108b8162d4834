//! The directory a network's state is saved in: one file whose header
//! names the format that wrote it and checks its body, replaced whole (write,
//! fsync, rename), so that a crash leaves the last state, never half of one.

use sha2::{Digest, Sha256};
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

const MAGIC: &[u8; 8] = b"ICNETST\0";
const STATE: &str = "state";
const PARTIAL: &str = "state.tmp";
const LOCK: &str = "lock";

/// A state directory this process owns: no other process may write it
/// while this one runs (the lock is released when the process ends, even
/// by `kill -9`).
pub(crate) struct StateDir {
    dir: PathBuf,
    _lock: File,
}

impl StateDir {
    /// Creates `dir` if need be, takes its lock and removes a state that a
    /// crash left half-written.
    pub fn open(dir: &Path) -> Result<Self, String> {
        let shown = dir.display();
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create the state directory {shown}: {e}"))?;
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(dir.join(LOCK))
            .map_err(|e| format!("cannot open {}: {e}", dir.join(LOCK).display()))?;
        lock.try_lock().map_err(|e| match e {
            std::fs::TryLockError::WouldBlock => {
                format!("another process uses the state directory {shown}: stop it or use another")
            }
            std::fs::TryLockError::Error(e) => format!("cannot lock {}: {e}", dir.join(LOCK).display()),
        })?;
        match std::fs::remove_file(dir.join(PARTIAL)) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => {
                return Err(format!("cannot remove {}: {e}", dir.join(PARTIAL).display()));
            }
            _ => {}
        }
        Ok(Self { dir: dir.to_path_buf(), _lock: lock })
    }

    pub fn path(&self) -> PathBuf {
        self.dir.join(STATE)
    }

    /// The body of the saved state, if there is one. A state that `writer`
    /// did not write, or whose body does not match its checksum, is refused
    /// with one line: it would be misread.
    /// A writer's name too long for the header is refused here, before
    /// anything runs that would then not be saved.
    pub fn read(&self, writer: &str) -> Result<Option<Vec<u8>>, String> {
        writer_len(writer)?;
        let path = self.path();
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
        };
        decode(bytes, writer).map(Some).map_err(|why| format!("{}: {why}", path.display()))
    }

    /// Replaces the saved state with a body of `parts`, one after another,
    /// as `writer` wrote it.
    pub fn write(&self, writer: &str, parts: &[&[u8]]) -> io::Result<()> {
        let partial = self.dir.join(PARTIAL);
        let written = (|| {
            let mut file = File::create(&partial)?;
            file.write_all(&encode_header(writer, parts).map_err(io::Error::other)?)?;
            for part in parts {
                file.write_all(part)?;
            }
            file.sync_all()?;
            std::fs::rename(&partial, self.path())
        })();
        if written.is_err() {
            // A full disk keeps no half-written copy of a large state.
            let _ = std::fs::remove_file(&partial);
        }
        written?;
        // The rename itself is durable once the directory is.
        File::open(&self.dir)?.sync_all()
    }
}

/// Magic, writer (u16 length, UTF-8), body length (u64), body's sha256; all little-endian.
fn encode_header(writer: &str, parts: &[&[u8]]) -> Result<Vec<u8>, String> {
    let mut header = MAGIC.to_vec();
    header.extend_from_slice(&writer_len(writer)?.to_le_bytes());
    header.extend_from_slice(writer.as_bytes());
    let length: usize = parts.iter().map(|part| part.len()).sum();
    header.extend_from_slice(&(length as u64).to_le_bytes());
    let digest = parts.iter().fold(Sha256::new(), |digest, part| digest.chain_update(part));
    header.extend_from_slice(&digest.finalize());
    Ok(header)
}

/// The length of `writer`'s name as the header holds it: at most 64 KiB.
fn writer_len(writer: &str) -> Result<u16, String> {
    u16::try_from(writer.len()).map_err(|_| {
        format!("a state file's writer is named in at most {} bytes; this one has {}", u16::MAX, writer.len())
    })
}

/// The body of a state file's `bytes`, kept in place (a state may be GiBs).
fn decode(mut bytes: Vec<u8>, writer: &str) -> Result<Vec<u8>, String> {
    let not_ours = || "not a network's state file".to_string();
    let rest = bytes.strip_prefix(MAGIC).ok_or_else(not_ours)?;
    let (writer_len, rest) = rest.split_first_chunk::<2>().ok_or_else(not_ours)?;
    let (written_by, rest) =
        rest.split_at_checked(u16::from_le_bytes(*writer_len).into()).ok_or_else(not_ours)?;
    let written_by = String::from_utf8_lossy(written_by);
    if written_by != writer {
        return Err(format!(
            "written by {written_by}; this is {writer}, which cannot read it: use another state directory, or the version that wrote it"
        ));
    }
    let (length, rest) = rest.split_first_chunk::<8>().ok_or_else(not_ours)?;
    let (digest, body) = rest.split_first_chunk::<32>().ok_or_else(not_ours)?;
    if body.len() as u64 != u64::from_le_bytes(*length) || Sha256::digest(body).as_slice() != digest {
        return Err("damaged: its body does not match its checksum".into());
    }
    let header = bytes.len() - body.len();
    bytes.drain(..header);
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("ic_http-state-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn a_state_is_read_back_by_its_writer_only() {
        let dir = scratch("writer");
        let state = StateDir::open(&dir).unwrap();
        assert_eq!(state.read("w 1").unwrap(), None);
        state.write("w 1", &[b"bo", b"dy"]).unwrap();
        assert_eq!(state.read("w 1").unwrap().as_deref(), Some(&b"body"[..]));
        let refused = state.read("w 2").unwrap_err();
        assert!(refused.contains("written by w 1; this is w 2"), "{refused}");
        assert!(!refused.contains('\n'));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_damaged_or_foreign_file_is_refused_and_a_partial_one_removed() {
        let dir = scratch("damaged");
        let state = StateDir::open(&dir).unwrap();
        state.write("w", &[b"a longer body"]).unwrap();
        let mut bytes = std::fs::read(state.path()).unwrap();
        *bytes.last_mut().unwrap() ^= 1;
        std::fs::write(state.path(), &bytes).unwrap();
        assert!(state.read("w").unwrap_err().contains("does not match its checksum"));
        bytes.truncate(12);
        std::fs::write(state.path(), &bytes).unwrap();
        assert!(state.read("w").unwrap_err().contains("not a network's state file"));
        std::fs::write(state.path(), b"{\"json\": true}").unwrap();
        assert!(state.read("w").unwrap_err().contains("not a network's state file"));
        drop(state);

        std::fs::write(dir.join(PARTIAL), b"half").unwrap();
        let _state = StateDir::open(&dir).unwrap();
        assert!(!dir.join(PARTIAL).exists());
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_writer_too_long_to_name_in_the_header_is_refused_before_it_runs() {
        let dir = scratch("long-writer");
        let state = StateDir::open(&dir).unwrap();
        let writer = "w".repeat(70_000);
        let refused = state.read(&writer).unwrap_err();
        assert!(refused.contains("at most 65535 bytes; this one has 70000"), "{refused}");
        assert!(state.write(&writer, &[b"body"]).is_err());
        assert_eq!(state.read("short").unwrap(), None, "nothing was written");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_directory_has_one_owner_at_a_time() {
        let dir = scratch("lock");
        let first = StateDir::open(&dir).unwrap();
        let second = StateDir::open(&dir).err().unwrap();
        assert!(second.contains("another process uses the state directory"), "{second}");
        drop(first);
        StateDir::open(&dir).unwrap();
        std::fs::remove_dir_all(dir).unwrap();
    }
}
