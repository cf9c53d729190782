//! Shims: a program that runs the real CLI from somewhere else. A `#!` shell script that `exec`s
//! a path it spells out (a hand-made wrapper, a package's launcher) is followed, so a profile
//! grants what it executes. A version manager's shim (asdf, mise, pyenv, volta, ...) picks the
//! real program only when it runs, from version files in the working directory (in a job, the
//! repository under review's); no profile can follow that, so it is refused with the command
//! that names the real program.

use std::ffi::OsStr;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::program::resolve_program;

/// The shells whose scripts are read for `exec`: the POSIX family's syntax for it.
const SHELLS: &[&str] = &[
    "sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "yash", "posh",
];

/// A shim is small; a longer script is a program of its own and is not read.
const MAX_SCRIPT: u64 = 64 * 1024;

/// The version managers whose shims choose the program when they run, by the file name of what
/// the shim ends in, and the command that prints the real program for a name.
const DISPATCHERS: &[(&str, &str)] = &[
    ("asdf", "asdf which"),
    ("mise", "mise which"),
    ("rtx", "rtx which"),
    ("volta", "volta which"),
    ("volta-shim", "volta which"),
    ("pyenv", "pyenv which"),
    ("rbenv", "rbenv which"),
    ("nodenv", "nodenv which"),
    ("goenv", "goenv which"),
];

/// If `real` (a resolved program) is a version manager that dispatches at run time, the
/// manager's name and its `which` command.
pub fn dispatcher(real: &Path) -> Option<(&'static str, &'static str)> {
    let name = real.file_name()?;
    DISPATCHERS
        .iter()
        .find(|(manager, _)| name == OsStr::new(manager))
        .copied()
}

/// The programs the shell script `script` (run by `interpreter`) `exec`s by a name its text
/// spells out: an absolute path that exists, or a bare name found on `path_var`. A word built
/// when the script runs (`$var`, a backtick) is not followed; nothing is, for a script that is
/// not a shell's, cannot be read, or is larger than a shim.
pub fn exec_targets(script: &Path, interpreter: &Path, path_var: Option<&OsStr>) -> Vec<PathBuf> {
    if !is_shell(interpreter) {
        return Vec::new();
    }
    let mut text = Vec::new();
    let read =
        fs::File::open(script).and_then(|file| file.take(MAX_SCRIPT + 1).read_to_end(&mut text));
    if read.is_err() || text.len() as u64 > MAX_SCRIPT {
        return Vec::new();
    }
    let mut targets: Vec<PathBuf> = Vec::new();
    for line in String::from_utf8_lossy(&text).lines() {
        for word in exec_words(line) {
            let resolved = if word.contains('/') {
                Path::new(&word).is_absolute().then(|| PathBuf::from(&word))
            } else {
                resolve_program(OsStr::new(&word), path_var).ok()
            };
            if let Some(target) = resolved.filter(|t| t.is_file() && t != script) {
                if !targets.contains(&target) {
                    targets.push(target);
                }
            }
        }
    }
    targets
}

/// Whether `interpreter` is a shell of the POSIX family, by its name or its real file's.
fn is_shell(interpreter: &Path) -> bool {
    let real = fs::canonicalize(interpreter).ok();
    let named_a_shell = |path: &Path| {
        path.file_name()
            .is_some_and(|name| SHELLS.iter().any(|shell| name == OsStr::new(shell)))
    };
    named_a_shell(interpreter) || real.as_deref().is_some_and(named_a_shell)
}

/// A word of a line of shell: its text with quotes removed, whether it is built when the script
/// runs, and whether it is an operator or a redirection rather than an argument.
#[derive(Debug, Default)]
struct Word {
    text: String,
    dynamic: bool,
    operator: bool,
    /// A redirection (`>file`, `2>&1`); `open` when its target is the next word (`>`, `2>`).
    redirect: bool,
    open: bool,
}

/// The commands `exec` runs on one line: the first word after `exec` at a command's start,
/// past its options and redirections, when that word is spelled out.
fn exec_words(line: &str) -> Vec<String> {
    let words = split(line);
    let mut found = Vec::new();
    let mut at_command = true;
    let mut i = 0;
    while i < words.len() {
        let word = &words[i];
        i += 1;
        if word.operator {
            at_command = true;
        } else if !at_command || word.redirect {
            i += usize::from(word.open);
        } else if is_keyword(&word.text) || is_assignment(word) {
            // The command is still to come.
        } else if word.text == "exec" && !word.dynamic {
            let (target, next) = exec_target(&words, i);
            found.extend(target);
            i = next;
            at_command = false;
        } else {
            at_command = false;
        }
    }
    found
}

/// The word `exec` runs, from `words[start..]`: past `-a NAME`, flags, `--` and redirections;
/// `None` when there is none (`exec 2>&1`) or it is built at run time. Returns where to go on.
fn exec_target(words: &[Word], start: usize) -> (Option<String>, usize) {
    let mut i = start;
    while let Some(word) = words.get(i) {
        i += 1;
        if word.operator {
            return (None, i - 1);
        } else if word.redirect {
            i += usize::from(word.open);
        } else if word.text == "-a" {
            i += 1;
        } else if word.text.starts_with('-') && !word.dynamic {
            // -c, -l, --: flags of exec itself.
        } else if word.dynamic || word.text.is_empty() {
            return (None, i);
        } else {
            return (Some(word.text.clone()), i);
        }
    }
    (None, i)
}

fn is_keyword(text: &str) -> bool {
    matches!(
        text,
        "if" | "then" | "else" | "elif" | "while" | "until" | "do" | "!" | "{" | "time"
    )
}

/// `NAME=value` before a command.
fn is_assignment(word: &Word) -> bool {
    let Some((name, _)) = word.text.split_once('=') else {
        return false;
    };
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Splits a line of shell into words as the shell would before expansion: quotes removed,
/// operators (`;`, `&&`, `||`, `|`, `&`, `(`, `)`) apart, a comment dropped.
fn split(line: &str) -> Vec<Word> {
    let mut words = Vec::new();
    let mut word = Word::default();
    let mut started = false;
    let mut chars = line.chars().peekable();
    let (mut single, mut double) = (false, false);
    let finish = |word: &mut Word, started: &mut bool, words: &mut Vec<Word>| {
        if *started {
            words.push(std::mem::take(word));
        }
        *started = false;
    };
    while let Some(c) = chars.next() {
        match c {
            '\'' if !double => {
                single = !single;
                started = true;
            }
            _ if single => word.text.push(c),
            '"' => {
                double = !double;
                started = true;
            }
            '\\' => {
                if let Some(next) = chars.next() {
                    word.text.push(next);
                }
                started = true;
            }
            '$' | '`' => {
                word.dynamic = true;
                word.text.push(c);
                started = true;
            }
            _ if double => word.text.push(c),
            '#' if !started => break,
            ' ' | '\t' => finish(&mut word, &mut started, &mut words),
            ';' | '&' | '|' | '(' | ')' => {
                finish(&mut word, &mut started, &mut words);
                let mut operator = Word {
                    operator: true,
                    ..Word::default()
                };
                operator.text.push(c);
                while let Some(&more) = chars.peek().filter(|&&n| matches!(n, ';' | '&' | '|')) {
                    operator.text.push(more);
                    chars.next();
                }
                words.push(operator);
            }
            '<' | '>' => {
                word.redirect = true;
                word.text.push(c);
                started = true;
                // `>&2` and `>>file` stay one word; a bare `>` or `2>` takes the next word.
                while let Some(&more) = chars.peek().filter(|&&n| matches!(n, '<' | '>' | '&')) {
                    word.text.push(more);
                    chars.next();
                }
                word.open = chars.peek().is_none_or(|n| n.is_whitespace());
                if word.text.ends_with('&') {
                    word.open = false;
                }
            }
            _ => {
                word.text.push(c);
                started = true;
            }
        }
    }
    finish(&mut word, &mut started, &mut words);
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exec_finds_the_spelled_out_command_past_flags_assignments_and_redirections() {
        let cases: &[(&str, &[&str])] = &[
            ("exec /opt/omp/bin/omp \"$@\"", &["/opt/omp/bin/omp"]),
            ("  exec '/opt/a b/omp' \"$@\" # comment", &["/opt/a b/omp"]),
            ("exec -a omp /opt/omp \"$@\"", &["/opt/omp"]),
            ("exec 2>&1 /opt/omp", &["/opt/omp"]),
            ("exec 2> /tmp/log /opt/omp", &["/opt/omp"]),
            ("X=1 exec node /opt/cli.js", &["node"]),
            (
                "if [ -x /a ]; then exec /a; else exec /b; fi",
                &["/a", "/b"],
            ),
            ("[ -n \"$X\" ] && exec /opt/x", &["/opt/x"]),
            (
                "exec \"/root/.pyenv/libexec/pyenv\" exec \"$program\" \"$@\"",
                &["/root/.pyenv/libexec/pyenv"],
            ),
            // Built when the script runs, a redirection alone, not a command, a comment.
            ("exec \"$0.real\" \"$@\"", &[]),
            ("exec `which omp`", &[]),
            ("exec >&2", &[]),
            ("exec 3>/tmp/x", &[]),
            ("echo exec /opt/omp", &[]),
            ("# exec /opt/omp", &[]),
            ("execute /opt/omp", &[]),
        ];
        for (line, expected) in cases {
            assert_eq!(exec_words(line), *expected, "{line}");
        }
    }

    #[test]
    fn only_shell_scripts_are_read_and_only_existing_targets_kept() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        fs::write(&real, "").unwrap();
        let script = dir.path().join("shim");
        let text = format!(
            "#!/bin/sh\nexec {} \"$@\"\nexec /no/such/file\n",
            real.display()
        );
        fs::write(&script, text).unwrap();
        assert_eq!(
            exec_targets(&script, Path::new("/bin/sh"), None),
            vec![real.clone()]
        );
        assert_eq!(
            exec_targets(&script, Path::new("/usr/bin/bash"), None),
            vec![real]
        );
        assert!(exec_targets(&script, Path::new("/usr/bin/python3"), None).is_empty());
        fs::write(&script, format!("#!/bin/sh\n{}", "#\n".repeat(40_000))).unwrap();
        assert!(exec_targets(&script, Path::new("/bin/sh"), None).is_empty());
    }

    #[test]
    fn version_managers_are_known_by_the_file_a_shim_ends_in() {
        assert_eq!(
            dispatcher(Path::new("/root/.pyenv/libexec/pyenv")).map(|d| d.0),
            Some("pyenv")
        );
        assert_eq!(
            dispatcher(Path::new("/usr/local/bin/mise")).map(|d| d.1),
            Some("mise which")
        );
        assert_eq!(dispatcher(Path::new("/usr/bin/node")), None);
    }
}
