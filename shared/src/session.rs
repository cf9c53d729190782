//! Session references: the shapes every runtime's grammar is built from, and fresh ids.
//!
//! Each runtime decides which shapes it accepts (in its own module); this module only knows what
//! a UUID and a `fresh:` reference look like, and how to mint a random version-4 UUID.

use std::fs::File;
use std::io::{self, Read};

/// What a session reference asks the runtime to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionUse {
    /// Start a new session: the reference was empty or `fresh:<suffix>`.
    Start,
    /// Resume the session with this id (or thread name).
    Resume(String),
    /// Resume the runtime's most recent session (`last`).
    Last,
}

impl SessionUse {
    /// The grammar claude and pi share: empty or `fresh:<suffix>` starts, `last` or a UUID
    /// resumes. `None` for anything else, which the runtime refuses in its own words.
    pub fn uuid_or_last(reference: &str) -> Option<SessionUse> {
        if reference.is_empty() || is_fresh(reference) {
            Some(SessionUse::Start)
        } else if reference == LAST {
            Some(SessionUse::Last)
        } else if is_uuid(reference) {
            Some(SessionUse::Resume(reference.to_string()))
        } else {
            None
        }
    }
}

/// The reference that asks for the most recent session, in the grammars that accept it.
pub const LAST: &str = "last";

/// A UUID in its canonical text form: 36 characters, hyphens at 8, 13, 18 and 23, hex elsewhere
/// (either case). Version and variant bits are not checked: the CLIs do not check them either.
pub fn is_uuid(s: &str) -> bool {
    s.len() == 36
        && s.bytes().enumerate().all(|(i, b)| match i {
            8 | 13 | 18 | 23 => b == b'-',
            _ => b.is_ascii_hexdigit(),
        })
}

/// `fresh:<suffix>`: a placeholder an orchestrator stores before a session exists. The suffix is
/// the orchestrator's own (e.g. `fresh:job:<hash>`) and is not interpreted.
pub fn is_fresh(s: &str) -> bool {
    s.starts_with("fresh:")
}

/// `n` bytes from the kernel's random source.
pub fn random_bytes<const N: usize>() -> io::Result<[u8; N]> {
    let mut bytes = [0u8; N];
    File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes)
}

/// `N` random bytes from the kernel, in hex: names and tokens no other job can guess.
pub fn random_hex<const N: usize>() -> anyhow::Result<String> {
    let bytes: [u8; N] =
        random_bytes().map_err(|e| anyhow::anyhow!("reading /dev/urandom: {e}"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Formats 16 random bytes as a version-4 (random) UUID, lower case.
pub fn uuid_v4(mut bytes: [u8; 16]) -> String {
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuid_shape() {
        for (id, uuid) in [
            ("0f8c1c3e-9a4b-4c1d-8e2f-123456789abc", true),
            ("0F8C1C3E-9A4B-4C1D-8E2F-123456789ABC", true),
            ("0f8c1c3e-9a4b-4c1d-8e2f-123456789ab", false),
            ("0f8c1c3e_9a4b-4c1d-8e2f-123456789abc", false),
            ("0f8c1c3e-9a4b-4c1d-8e2f-123456789abg", false),
            ("last", false),
            ("", false),
        ] {
            assert_eq!(is_uuid(id), uuid, "{id:?}");
        }
    }

    #[test]
    fn minted_uuid_is_version_4() {
        let id = uuid_v4([0xff; 16]);
        assert_eq!(id, "ffffffff-ffff-4fff-bfff-ffffffffffff");
        let id = uuid_v4([0; 16]);
        assert_eq!(id, "00000000-0000-4000-8000-000000000000");
        assert!(is_uuid(&uuid_v4(random_bytes().unwrap())));
    }

    #[test]
    fn fresh_is_a_prefix() {
        for (id, fresh) in [
            ("fresh:job:0123456789abcdef", true),
            ("fresh:", true),
            ("Fresh:x", false),
            ("fresh", false),
        ] {
            assert_eq!(is_fresh(id), fresh, "{id:?}");
        }
    }
}
