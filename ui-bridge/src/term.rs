//! Everything `bosun` prints for people goes through here ([`outln!`], [`out!`], [`errln!`]),
//! so that no control character that came from outside reaches the terminal as control: each line is passed through [`visible_lines`], which keeps line breaks and tabs and
//! writes every other control character out (`\x1b`, `\r`). Fields that must stay on one line
//! (a name, a tool's description, an error a server sent) are passed through
//! [`bosun_shared::text::visible`] where they are printed, so a newline in them cannot forge a
//! line of bosun's own either.
//!
//! The raw log (`bosun logs`, a followed run) is written with `write_all`, bypassing this: the
//! person asked for the program's bytes as they are. bosun's own control sequences (the
//! progress line of `mcp sign-in`) go through [`raw_err`].

use std::io::Write;

use bosun_shared::text::visible_lines;

/// Writes `text` and, with `newline`, a line break to `to`, its control characters visible. A
/// reader that went away is not an error worth more than silence (SIGPIPE ends bosun first
/// anyway).
pub fn write(mut to: impl Write, text: &str, newline: bool) {
    let text = visible_lines(text);
    let _ = to.write_all(text.as_bytes());
    if newline {
        let _ = to.write_all(b"\n");
    }
    let _ = to.flush();
}

/// bosun's own words to stderr as they are, escape sequences included: for bosun's own progress
/// line only. Anything from outside in it must be made [`bosun_shared::text::visible`] first.
pub fn raw_err(text: &str) {
    let mut err = std::io::stderr();
    let _ = err.write_all(text.as_bytes());
    let _ = err.flush();
}

/// `println!`, for people: see the module's documentation.
macro_rules! outln {
    () => {
        $crate::term::write(std::io::stdout().lock(), "", true)
    };
    ($($arg:tt)*) => {
        $crate::term::write(std::io::stdout().lock(), &format!($($arg)*), true)
    };
}

/// `print!`, for people.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::term::write(std::io::stdout().lock(), &format!($($arg)*), false)
    };
}

/// `eprintln!`, for people.
macro_rules! errln {
    () => {
        $crate::term::write(std::io::stderr().lock(), "", true)
    };
    ($($arg:tt)*) => {
        $crate::term::write(std::io::stderr().lock(), &format!($($arg)*), true)
    };
}
