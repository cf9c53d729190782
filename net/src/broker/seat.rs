//! The seat: a job-private directory holding omp's HOME, config root and agent directory, with
//! a minimal `config.yml` that points omp at the job's proxy. omp's snapshot cache lands in the
//! config root, so it is inside the seat too, and goes with it.

use std::ffi::OsString;
use std::fs;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};

/// `$PI_CONFIG_DIR`: omp joins it to `$HOME` even when absolute, so it is given relative.
const CONFIG_DIR: &str = ".omp";

/// A prepared seat; [`Seat::remove`] deletes it with everything omp wrote in it.
#[derive(Debug)]
pub struct Seat {
    pub dir: PathBuf,
    pub home: PathBuf,
    pub agent_dir: PathBuf,
}

/// A job bearer: 32 random bytes in hex after a `moot-` prefix. It never starts with `!` (omp
/// would run it as a shell command) and, with its `-`, is no variable name omp would expand.
pub fn job_token() -> anyhow::Result<String> {
    Ok(format!("moot-{}", moot::session::random_hex::<32>()?))
}

impl Seat {
    /// Creates `dir` (which must not exist; its parent must) owner-only, with `home/.omp/agent`
    /// and `config.yml` in it naming the proxy at `url` with `token`; `models`, when given, is
    /// copied in as the agent directory's `models.yml`. `made` learns of the directory before
    /// anything is written in it (the guard, net/src/broker/guard.rs).
    pub fn create(
        dir: &Path,
        url: &str,
        token: &str,
        models: Option<&[u8]>,
        made: impl FnOnce(&Path) -> std::io::Result<()>,
    ) -> anyhow::Result<Seat> {
        let what = || format!("--seat-dir ({})", dir.display());
        fs::DirBuilder::new()
            .mode(0o700)
            .create(dir)
            .with_context(what)?;
        let seat = Seat {
            dir: dir.to_path_buf(),
            home: dir.join("home"),
            agent_dir: dir.join("home").join(CONFIG_DIR).join("agent"),
        };
        let made = made(dir)
            .map_err(anyhow::Error::from)
            .and_then(|()| seat.fill(url, token, models))
            .with_context(what);
        if made.is_err() {
            seat.remove();
        }
        made.map(|()| seat)
    }

    fn fill(&self, url: &str, token: &str, models: Option<&[u8]>) -> anyhow::Result<()> {
        fs::DirBuilder::new()
            .mode(0o700)
            .recursive(true)
            .create(&self.agent_dir)?;
        if token.starts_with('!') || url.contains('"') || token.contains('"') {
            bail!("a broker value omp would not read literally");
        }
        let config = format!("auth:\n  broker:\n    url: \"{url}\"\n    token: \"{token}\"\n");
        write_new(&self.agent_dir.join("config.yml"), config.as_bytes())?;
        if let Some(models) = models {
            write_new(&self.agent_dir.join("models.yml"), models)?;
        }
        Ok(())
    }

    /// The variables the command gets: a private HOME, config root and agent directory.
    pub fn env(&self) -> Vec<(OsString, OsString)> {
        vec![
            ("HOME".into(), self.home.clone().into()),
            ("PI_CONFIG_DIR".into(), CONFIG_DIR.into()),
            ("PI_CODING_AGENT_DIR".into(), self.agent_dir.clone().into()),
        ]
    }

    /// Deletes the seat, whatever the agent made of it (shared/src/tree.rs: any depth, read-only
    /// directories, links never followed), saying whether it is gone; a failure is reported on
    /// stderr, and the guard tries again after moot-broker.
    pub fn remove(&self) -> bool {
        match moot::tree::remove_tree(&self.dir) {
            Ok(()) => true,
            Err(e) => {
                moot::eprintln_whole!(
                    "moot-broker: cannot remove the seat ({}): {e}",
                    self.dir.display()
                );
                false
            }
        }
    }
}

fn write_new(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("writing {}", path.display()))?;
    file.write_all(bytes)
        .with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_seat_is_private_and_goes_whole() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("seat");
        let token = job_token().unwrap();
        assert!(token.starts_with("moot-") && token.len() == 69);
        assert_ne!(token, job_token().unwrap());
        let mut told = None;
        let seat = Seat::create(
            &dir,
            "http://127.0.0.1:9",
            &token,
            Some(b"providers: {}\n"),
            |made| {
                told = Some(made.to_path_buf());
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(told.as_deref(), Some(dir.as_path()));
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir), 0o700);
        let config = seat.agent_dir.join("config.yml");
        assert_eq!(mode(&config), 0o600);
        let text = fs::read_to_string(&config).unwrap();
        assert!(text.contains(&token) && text.contains("http://127.0.0.1:9"));
        assert!(seat.agent_dir.join("models.yml").is_file());
        assert!(
            Seat::create(&dir, "http://127.0.0.1:9", &token, None, |_| Ok(())).is_err(),
            "an existing dir"
        );
        assert!(seat.remove());
        assert!(!dir.exists());
    }
}
