//! One run of a CLI through the README's pipeline, with moot's own tools:
//! `moot-render RT … | moot-run … --env-preset RT … -- moot-sandbox --profile RT … -- | moot-parse-P`,
//! in a private HOME, and the version probe, confined the same way. Nothing here reads the
//! caller's HOME or config: every process gets an environment built from scratch (see [`Env`]).

use std::ffi::OsString;
use std::fs::{self, File};
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde_json::Value;

use moot::model::{FakeHome, Meta};

/// The caller's variables a CLI run keeps (locale, terminal, time zone, identity); everything
/// else, the caller's HOME, config locations and credentials included, is left out.
const INHERITED: &[&str] = &[
    "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TZ", "USER", "LOGNAME",
];

/// Where moot's own tools are: beside this executable (a build or an install puts them
/// together), else on the caller's PATH.
pub fn tool(name: &str) -> Result<PathBuf> {
    let beside = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join(name)));
    if let Some(path) = beside.filter(|p| p.is_file()) {
        return Ok(path);
    }
    moot::program::find_on_path(name).with_context(|| {
        format!("{name}: not found beside moot-doctor nor on PATH; install the moot tools together")
    })
}

/// The environment every process of one runtime's certification gets.
#[derive(Debug, Clone)]
pub struct Env {
    pub vars: Vec<(String, OsString)>,
}

impl Env {
    /// The private HOME, a PATH that finds the certified CLI first (`bin`, holding it under its
    /// runtime's name, then the directory it was found in), the runtime's own variables, and
    /// proxies that lead nowhere, so the CLI reaches the fake model only.
    pub fn new(home: &Path, bin: &Path, program_dir: Option<&Path>, fake: &FakeHome) -> Env {
        let mut path = vec![bin.to_path_buf()];
        path.extend(program_dir.map(Path::to_path_buf));
        path.extend(std::env::split_paths(
            &std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into()),
        ));
        let mut vars: Vec<(String, OsString)> = INHERITED
            .iter()
            .filter_map(|name| std::env::var_os(name).map(|v| (name.to_string(), v)))
            .collect();
        vars.push((
            "PATH".into(),
            std::env::join_paths(path).unwrap_or_default(),
        ));
        vars.push(("HOME".into(), home.as_os_str().to_owned()));
        for name in ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"] {
            vars.push((name.into(), "http://127.0.0.1:9".into()));
        }
        vars.push(("NO_PROXY".into(), "127.0.0.1,localhost".into()));
        vars.extend(fake.env.iter().map(|(k, v)| (k.clone(), v.into())));
        Env { vars }
    }

    fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut command = Command::new(program);
        command
            .env_clear()
            .envs(self.vars.iter().map(|(k, v)| (k, v)));
        command
    }
}

/// What a version probe runs: the CLI, its flags, and the sandbox it runs in.
pub struct Probe<'a> {
    pub sandbox: &'a Path,
    pub runtime: &'a str,
    pub program: &'a Path,
    pub args: &'a [&'a str],
    /// The CLI's private state (moot-sandbox --state).
    pub state: &'a Path,
}

/// Runs `program ARGS` and returns what it printed (stdout then stderr), ending it after
/// `limit`. The CLI runs in the private HOME, confined like a scenario's run
/// (`moot-sandbox --profile RT`): some write there even to print a version, and a CLI that is
/// not what it claims gets no more of the machine for being asked its version.
pub fn probe(env: &Env, probe: &Probe, dir: &Path, limit: Duration) -> Result<String> {
    let out = dir.join("version.out");
    let program = probe.program;
    let args = probe.args;
    let mut child = env
        .command(probe.sandbox)
        .args(["--profile", probe.runtime, "--state"])
        .arg(probe.state)
        .arg("--")
        .arg(program)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(File::create(&out)?)
        .stderr(File::create(dir.join("version.err"))?)
        .spawn()
        .with_context(|| format!("{}", program.display()))?;
    wait_for(&mut child, limit)
        .with_context(|| format!("{} {}", program.display(), args.join(" ")))?;
    let mut text = fs::read_to_string(&out).unwrap_or_default();
    text.push_str(&fs::read_to_string(dir.join("version.err")).unwrap_or_default());
    Ok(text)
}

/// Waits for `child`, killing it (only it: it is ours) once `limit` has passed.
fn wait_for(child: &mut Child, limit: Duration) -> Result<()> {
    let started = Instant::now();
    loop {
        if child.try_wait()?.is_some() {
            return Ok(());
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            bail!("still running after {} s", limit.as_secs());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The pieces of one runtime's pipeline that do not change between runs.
pub struct Pipeline<'a> {
    pub meta: &'static Meta,
    pub fake: &'a FakeHome,
    pub env: &'a Env,
    pub workspace: &'a Path,
    /// The CLI's private state (moot-sandbox --state), kept between the runs of a
    /// certification so a resumed run finds its session.
    pub state: &'a Path,
    pub render: PathBuf,
    /// moot-broker, the credential proxy the seat reaches the model through.
    pub broker: PathBuf,
    /// The fake model, which the proxy forwards to with the key in `key_file`.
    pub origin: String,
    pub key_file: &'a Path,
    pub run: PathBuf,
    pub sandbox: PathBuf,
    pub parse: PathBuf,
}

/// What one run left: the envelope (when the parser printed one), the parser's exit status, and
/// the stage directory holding the transcript and every tool's stderr.
pub struct Outcome {
    pub envelope: Option<Value>,
    pub exit: Option<i32>,
    pub stage: PathBuf,
    /// The session moot-render announced for this run, when it announced one.
    pub announced: Option<String>,
}

impl Pipeline<'_> {
    /// The tools of `meta`'s pipeline, found beside moot-doctor or on PATH.
    pub fn tools(meta: &Meta) -> Result<[PathBuf; 5]> {
        let dialect = meta.parser.unwrap_or(meta.name);
        Ok([
            tool("moot-render")?,
            tool("moot-broker")?,
            tool("moot-run")?,
            tool("moot-sandbox")?,
            tool(&format!("moot-parse-{dialect}"))?,
        ])
    }

    /// One run of `prompt` (resuming `session` when given) with everything kept in `stage`.
    pub fn run_once(
        &self,
        stage: &Path,
        prompt: &str,
        deadline: u64,
        session: Option<&str>,
    ) -> Result<Outcome> {
        fs::create_dir_all(stage)?;
        let job = stage.join("job.md");
        fs::write(&job, prompt)?;
        let staged = stage.join("p");
        let deadline = deadline.to_string();
        let rt = self.meta.name;

        let mut render = self.env.command(&self.render);
        render.args([
            rt,
            "--policy",
            "workspace-write",
            "--seat",
            // The stream that carries the tool calls, as the README's job asks (claude's).
            "--stream",
            "--deadline",
            &deadline,
        ]);
        render.arg("--stage-dir").arg(&staged);
        render.arg("--add-dir").arg(self.workspace);
        render.arg("--prompt-file").arg(&job);
        if let Some(id) = session {
            render.args(["--session", id]);
        }

        let mut run = self.env.command(&self.broker);
        run.args(["--forward", &self.origin, "--key-file"]);
        run.arg(self.key_file).arg("--").arg(&self.run);
        run.args(["--deadline", &deadline]);
        run.arg("--transcript").arg(stage.join("run.ndjson"));
        run.arg("--status-file").arg(stage.join("status"));
        run.args(["--env-preset", rt]);
        for name in &self.fake.keep {
            run.args(["--keep", name]);
        }
        if self.fake.stderr_file {
            run.arg("--stderr-file").arg(stage.join("cli.err"));
        }
        run.arg("--cleanup").arg(&staged);
        run.args(["--stdin-argv", "--"]);
        run.arg(&self.sandbox).args(["--profile", rt]);
        run.arg("--state").arg(self.state);
        run.arg("--rw").arg(self.workspace);
        run.arg("--ro-try").arg(&staged).arg("--");

        let mut parse = self.env.command(&self.parse);
        parse.arg("--status-file").arg(stage.join("status"));
        if self.fake.stderr_file {
            parse.arg("--stderr-file").arg(stage.join("cli.err"));
        }
        if let Some(store) = self.fake.session_store {
            parse
                .arg("--session-store")
                .arg(self.state.join("home").join(store));
        }

        let mut first = self.start(render, Stdio::null(), stage, "render.err")?;
        let mut second = self.start(run, take(first.stdout.take())?, stage, "run.err")?;
        let mut third = self.start(parse, take(second.stdout.take())?, stage, "parse.err")?;
        let mut printed = String::new();
        if let Some(mut out) = third.stdout.take() {
            out.read_to_string(&mut printed)?;
        }
        let exit = third.wait()?.code();
        second.wait()?;
        first.wait()?;
        fs::write(stage.join("envelope.json"), &printed)?;
        let announced = fs::read_to_string(stage.join("render.err"))
            .ok()
            .and_then(|text| announced_session(&text));
        Ok(Outcome {
            envelope: serde_json::from_str(&printed).ok(),
            exit,
            stage: stage.to_path_buf(),
            announced,
        })
    }
}

impl Pipeline<'_> {
    /// Starts one tool of the pipeline in the workspace, its stdout piped to the next and its
    /// stderr kept in `stage/err`.
    fn start(&self, mut command: Command, stdin: Stdio, stage: &Path, err: &str) -> Result<Child> {
        let program = command.get_program().to_owned();
        command
            .current_dir(self.workspace)
            .stdin(stdin)
            .stdout(Stdio::piped())
            .stderr(File::create(stage.join(err))?)
            .spawn()
            .with_context(|| program.to_string_lossy().into_owned())
    }
}

fn take<T: Into<Stdio>>(pipe: Option<T>) -> io::Result<Stdio> {
    pipe.map(Into::into)
        .ok_or_else(|| io::Error::other("a pipe between the tools was not made"))
}

/// The id in moot-render's `… session id ID: store it only if the run succeeds` line.
fn announced_session(stderr: &str) -> Option<String> {
    let (_, rest) = stderr.split_once(" session id ")?;
    let (id, _) = rest.split_once(':')?;
    Some(id.trim().to_string()).filter(|id| !id.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_announced_session_is_read_from_render_stderr() {
        assert_eq!(
            announced_session(
                "moot-render: claude session id 1234-ab: store it only if the run succeeds\n"
            )
            .as_deref(),
            Some("1234-ab")
        );
        assert_eq!(announced_session("moot-render: nothing\n"), None);
    }

    #[test]
    fn the_environment_keeps_nothing_of_the_callers_home() {
        let fake = FakeHome::with_env(&[("CODEX_HOME", "/private/.codex".into())]);
        let env = Env::new(
            Path::new("/private"),
            Path::new("/private/bin"),
            None,
            &fake,
        );
        let get = |name: &str| {
            env.vars
                .iter()
                .rev()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        };
        assert_eq!(get("HOME"), Some("/private".into()));
        assert_eq!(get("CODEX_HOME"), Some("/private/.codex".into()));
        assert!(get("PATH").is_some_and(|p| p.to_string_lossy().starts_with("/private/bin:")));
        assert!(env.vars.iter().all(|(k, _)| INHERITED.contains(&k.as_str())
            || [
                "PATH",
                "HOME",
                "HTTP_PROXY",
                "HTTPS_PROXY",
                "ALL_PROXY",
                "NO_PROXY",
                "CODEX_HOME"
            ]
            .contains(&k.as_str())));
    }
}
