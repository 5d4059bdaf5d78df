//! Text that came from outside bosun, made safe to show.
//!
//! A terminal obeys what it is given: an escape sequence in a server's tool name can set the
//! window's title, clear the screen or hide a link; a carriage return can overwrite a line; a
//! newline in a name can forge a line of bosun's own. Every string bosun prints that it did not
//! write itself goes through [`visible`] (one line: every control character written out) or,
//! for a block of text the person asked to read (a tool's result), [`visible_lines`] (its line
//! breaks and tabs kept, every other control character written out). The raw log is the one
//! place a program's bytes pass as they are, because the person asked for exactly that.
//!
//! Written out: C0 controls as `\n`, `\r`, `\t`, `\x1b` and `\xNN`; DEL as `\x7f`; C1 controls
//! (which some terminals take as `ESC [`) and the Unicode marks that reorder or hide text on
//! screen (bidirectional overrides and isolates, zero-width characters) as `\u{NNNN}`.

use std::borrow::Cow;
use std::fmt::Write as _;

/// `text` on one line, every control character in it written out visibly.
pub fn visible(text: &str) -> Cow<'_, str> {
    escape(text, false)
}

/// `text` with its line breaks and tabs kept, every other control character written out (a
/// carriage return too, so no line can be overwritten).
pub fn visible_lines(text: &str) -> Cow<'_, str> {
    escape(text, true)
}

/// Whether `c` is shown written out rather than as itself.
fn hidden(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2060}'..='\u{2069}' | '\u{feff}'
        )
}

fn escape(text: &str, keep_lines: bool) -> Cow<'_, str> {
    let kept = |c: char| keep_lines && matches!(c, '\n' | '\t');
    if !text.chars().any(|c| hidden(c) && !kept(c)) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if !hidden(c) || kept(c) {
            out.push(c);
            continue;
        }
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x80 => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c => {
                let _ = write!(out, "\\u{{{:04x}}}", c as u32);
            }
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_kept_as_it_is_without_a_copy() {
        let text = "echo: héllo wörld — 東京";
        assert!(matches!(visible(text), Cow::Borrowed(t) if t == text));
        assert!(matches!(visible_lines("a\n\tb"), Cow::Borrowed(_)));
    }

    #[test]
    fn a_title_a_clear_a_link_and_a_forged_line_are_written_out() {
        let nasty = "\x1b]0;pwned\x07\x1b[2J\x1b]8;;https://e/\x07x\x1b]8;;\x07\r\nbosun: forged";
        assert_eq!(
            visible(nasty),
            "\\x1b]0;pwned\\x07\\x1b[2J\\x1b]8;;https://e/\\x07x\\x1b]8;;\\x07\\r\\nbosun: forged"
        );
        assert_eq!(
            visible_lines(nasty),
            "\\x1b]0;pwned\\x07\\x1b[2J\\x1b]8;;https://e/\\x07x\\x1b]8;;\\x07\\r\nbosun: forged"
        );
    }

    #[test]
    fn c1_controls_del_and_marks_that_reorder_text_are_written_out() {
        assert_eq!(visible("a\u{9b}2Jb\u{7f}"), "a\\u{009b}2Jb\\x7f");
        assert_eq!(visible("file\u{202e}gpj.exe"), "file\\u{202e}gpj.exe");
        assert_eq!(visible("zero\u{200b}width"), "zero\\u{200b}width");
        assert_eq!(visible("tab\there"), "tab\\there");
    }

    #[test]
    fn nothing_printed_holds_a_control_character() {
        let every: String = (0u32..0x3000).filter_map(char::from_u32).collect();
        assert!(!visible(&every).chars().any(hidden));
        assert!(
            !visible_lines(&every)
                .chars()
                .any(|c| hidden(c) && c != '\n' && c != '\t')
        );
    }
}
