//! `nvr-node --help`, written from the table when the program is compiled:
//! the binary holds the text, not the table it comes from.

use super::table::SECTIONS;

const HEAD: &str = "\
nvr-node: the local node of a network video recorder.

Serves the Local Node API and the browser UI on http://LISTEN_ADDRESS:PORT.

Usage: nvr-node [--help | --version]

Settings are environment variables; unset or blank, each takes its default.
";

/// Where the help of each variable starts, and where lines end.
const INDENT: usize = 14;
const WIDTH: usize = 79;

pub const HELP: &str = match std::str::from_utf8(&BYTES) {
    Ok(text) => text,
    Err(_) => panic!("the help is not UTF-8"),
};

// Written twice: once into nothing to measure it, then into its array.
const BYTES: [u8; write(&mut [])] = {
    let mut bytes = [0; write(&mut [])];
    write(&mut bytes);
    bytes
};

/// Writes the help into `bytes` as far as they reach, and returns its length.
/// (A const fn: loops are `while`, without iterators.)
const fn write(bytes: &mut [u8]) -> usize {
    let mut out = Out {
        buffer: bytes,
        len: 0,
        column: 0,
    };
    out.text(HEAD);
    let mut s = 0;
    while s < SECTIONS.len() {
        let section = &SECTIONS[s];
        out.text("\n");
        out.text(section.heading);
        out.text(":\n");
        let mut v = 0;
        while v < section.vars.len() {
            let var = &section.vars[v];
            out.text("  ");
            out.text(var.name);
            // A long name has the line to itself.
            if out.column + 2 > INDENT {
                out.text("\n");
            }
            while out.column < INDENT {
                out.text(" ");
            }
            out.words(var.help.as_bytes());
            // "(default:" and the default's first word stay on one line.
            let (first, rest) = first_word(var.default.text().as_bytes());
            out.space_for(b"(default: ".len() + first.len());
            out.text("(default: ");
            out.bytes(first);
            out.words(rest);
            out.text(")\n");
            v += 1;
        }
        s += 1;
    }
    out.len
}

struct Out<'a> {
    buffer: &'a mut [u8],
    len: usize,
    column: usize,
}

impl Out<'_> {
    const fn text(&mut self, text: &str) {
        self.bytes(text.as_bytes());
    }

    const fn bytes(&mut self, text: &[u8]) {
        let mut i = 0;
        while i < text.len() {
            if self.len < self.buffer.len() {
                self.buffer[self.len] = text[i];
            }
            self.len += 1;
            self.column = if text[i] == b'\n' { 0 } else { self.column + 1 };
            i += 1;
        }
    }

    /// `text`'s words, each after a space or on a new line.
    const fn words(&mut self, text: &[u8]) {
        let mut rest = text;
        while !rest.is_empty() {
            let (word, after) = first_word(rest);
            if !word.is_empty() {
                self.space_for(word.len());
                self.bytes(word);
            }
            rest = after;
        }
    }

    /// A space before `len` bytes more, or a new line, indented, if they
    /// would pass the width.
    const fn space_for(&mut self, len: usize) {
        if self.column + 1 + len > WIDTH {
            self.text("\n");
            while self.column < INDENT {
                self.text(" ");
            }
        } else if self.column > INDENT {
            self.text(" ");
        }
    }
}

/// The bytes up to the first space, and those after it.
const fn first_word(text: &[u8]) -> (&[u8], &[u8]) {
    let mut end = 0;
    while end < text.len() && text[end] != b' ' {
        end += 1;
    }
    let (word, rest) = text.split_at(end);
    match rest.split_first() {
        Some((_, rest)) => (word, rest),
        None => (word, rest),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_help_names_every_variable_within_the_width() {
        for section in SECTIONS {
            assert!(HELP.contains(&format!("\n{}:\n", section.heading)));
            for var in section.vars {
                assert!(
                    HELP.contains(&format!("\n  {} ", var.name))
                        || HELP.contains(&format!("\n  {}\n", var.name)),
                    "{} is missing:\n{HELP}",
                    var.name
                );
            }
        }
        for line in HELP.lines() {
            // The closing bracket may pass the width.
            assert!(line.len() <= WIDTH + 1, "too long: {line:?}");
            assert_eq!(line, line.trim_end(), "trailing space: {line:?}");
        }
        assert!(
            HELP.contains(
                "\n  PORT        port to listen on; 0 picks a free one (default: 8080)\n"
            )
        );
    }
}
