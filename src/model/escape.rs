//! Strings that came from outside — a server's model id, version or error body, a `--var`
//! value, a scenario name read from a file — made safe for where they are shown:
//!
//! * [`printable`]: for a terminal, a log or a text file. Control characters (ESC, BEL, CR,
//!   the C1 range, ESC sequences that clear a screen or retitle a window) are written as
//!   `\u{1b}` escapes and never reach the terminal as themselves.
//! * [`terminal`]: the same with line breaks kept, for everything `bench` prints.
//! * [`markdown`]: for GitHub-flavoured Markdown (`--markdown`, `$GITHUB_STEP_SUMMARY`).
//!   Every ASCII punctuation character Markdown gives a meaning to is backslash-escaped
//!   (CommonMark §2.4: any ASCII punctuation may be escaped, and an escaped one is literal), so a
//!   value cannot open a code span, a link, an image, raw HTML (`<img …>`), an autolink
//!   (`http\://…`), an `@mention`, a table cell (`|`) or emphasis; line breaks become spaces
//!   and other control characters are written `U+001B`.
//!
//! One function per destination, so that every renderer escapes the same way (the HTML pages
//! use their own entity escaping).

/// `s` with every control character shown as a `\u{..}` escape (tabs kept).
pub fn printable(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_control() && c != '\t' {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    out
}

/// `s` for a terminal: [`printable`] that keeps line breaks. Everything `bench` prints goes
/// through it (the `out!` and `say!` macros), so a string read from a file or a server can
/// never clear a screen, retitle a window or move the cursor.
pub fn terminal(s: &str) -> String {
    if !s.chars().any(|c| c.is_control() && c != '\n' && c != '\t') {
        return s.to_string();
    }
    let lines: Vec<String> = s.split('\n').map(printable).collect();
    lines.join("\n")
}

/// `s` as literal text in GitHub-flavoured Markdown, table cells included.
pub fn markdown(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + s.len() / 4);
    for c in s.chars() {
        match c {
            '\n' | '\r' => out.push(' '),
            '\t' => out.push(' '),
            // Rendered `U+001B` (its `+` escaped like any punctuation).
            c if c.is_control() => out.push_str(&format!("U\\+{:04X}", c as u32)),
            // `:` too: with it escaped no `http://`, `javascript:` or `mailto:` autolink forms.
            c if c.is_ascii_punctuation() => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

/// `text` as a Markdown code block whose fence no line of it can close: one backtick longer
/// than its longest run of backticks (at least three), control characters as in
/// [`printable`] (line breaks kept).
pub fn fenced(text: &str) -> String {
    let (mut run, mut longest) = (0, 0);
    for c in text.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat((longest + 1).max(3));
    let body: Vec<String> = text.lines().map(printable).collect();
    format!("{fence}\n{}\n{fence}\n", body.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hostile values as a server or a user could send them.
    pub const PAYLOADS: &[&str] = &[
        "m`<img src=http://evil/p.png>`",
        "<img src=http://evil/p.png>",
        "[c](javascript:alert(1))",
        "@octocat please look",
        "a | b | c",
        "line\nbreak\r\nagain",
        "\u{1b}]0;title\u{7}\u{1b}[2J",
        "![x](http://evil/x.png)",
        "**bold** _it_ ~~s~~ # h",
        "www.evil.example and https://evil.example",
        "&lt;script&gt;",
    ];

    #[test]
    fn no_payload_keeps_a_markdown_meaning() {
        for p in PAYLOADS {
            let m = markdown(p);
            // Every punctuation character is preceded by a backslash that is itself unescaped.
            let chars: Vec<char> = m.chars().collect();
            let mut i = 0;
            while i < chars.len() {
                let c = chars[i];
                if c == '\\' {
                    assert!(
                        i + 1 < chars.len() && chars[i + 1].is_ascii_punctuation(),
                        "{p:?} → {m:?}"
                    );
                    i += 2;
                    continue;
                }
                assert!(!c.is_ascii_punctuation(), "{p:?} → {m:?}: bare {c:?}");
                assert!(!c.is_control(), "{p:?} → {m:?}");
                i += 1;
            }
            assert!(!m.contains('\n'));
        }
    }

    #[test]
    fn a_fence_outlasts_every_backtick_run_in_its_text() {
        let f = fenced("a ```` b\n```\nc");
        assert!(f.starts_with("`````\n") && f.ends_with("\n`````\n"), "{f}");
        assert_eq!(fenced("x\n"), "```\nx\n```\n");
    }

    #[test]
    fn no_control_character_reaches_a_terminal() {
        for p in PAYLOADS {
            let t = printable(p);
            assert!(!t.chars().any(|c| c.is_control() && c != '\t'), "{t:?}");
        }
        assert_eq!(printable("\u{1b}[2J"), "\\u{1b}[2J");
        assert_eq!(printable("plain ✓"), "plain ✓");
    }
}
