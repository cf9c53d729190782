//! Quoting for a POSIX shell: what moot-render prints for `--format sh` and what moot-sandbox
//! writes into the commands it shows.

/// Quotes one word for a POSIX shell, on one line: bare when it is plainly safe, in single
/// quotes otherwise, and as `$'...'` (POSIX.1-2024, bash, zsh, ksh) when it holds control
/// characters such as newlines, so the whole argv stays one line.
pub fn sh_quote(word: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "_@%+=:,./-".contains(c);
    if !word.is_empty() && word.chars().all(safe) {
        return word.to_string();
    }
    if !word.chars().any(char::is_control) {
        return format!("'{}'", word.replace('\'', r"'\''"));
    }
    let mut quoted = String::from("$'");
    for c in word.chars() {
        match c {
            '\\' => quoted.push_str(r"\\"),
            '\'' => quoted.push_str(r"\'"),
            '\n' => quoted.push_str(r"\n"),
            '\t' => quoted.push_str(r"\t"),
            '\r' => quoted.push_str(r"\r"),
            c if c.is_control() => {
                let mut buf = [0u8; 4];
                for byte in c.encode_utf8(&mut buf).bytes() {
                    quoted.push_str(&format!("\\x{byte:02x}"));
                }
            }
            c => quoted.push(c),
        }
    }
    quoted.push('\'');
    quoted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_quoting_stays_on_one_line() {
        assert_eq!(sh_quote("--mode=json"), "--mode=json");
        assert_eq!(sh_quote("@/tmp/x/prompt.md"), "@/tmp/x/prompt.md");
        assert_eq!(sh_quote(""), "''");
        assert_eq!(sh_quote("review this"), "'review this'");
        assert_eq!(sh_quote("it's $HOME"), r"'it'\''s $HOME'");
        assert_eq!(sh_quote("a\nb\t'c'\\\u{7}"), r"$'a\nb\t\'c\'\\\x07'");
        assert_eq!(sh_quote("é"), "'é'");
    }
}
