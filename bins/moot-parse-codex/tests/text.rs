//! `--text`, the adapter.sh contract: the answer alone on success, nothing but one stderr line on
//! failure.

moot_testkit::parser_text_tests!(
    "codex",
    answer = "real-tool",
    truncated = "real-length",
    no_result = ("no-gitmoot-result", "All good, nothing to change.\n")
);
