//! The grammar of a marker's body: what follows `ralph:` and precedes `-->`.
//!
//! ```text
//! body  = KIND ws NAME (ws KEY "=" VALUE)* ws?
//! KIND, NAME, KEY = [a-z][a-z0-9_-]*          (ASCII, case-insensitive, reported lowercase)
//! VALUE = bare | quoted
//! bare  = one or more bytes, none of them whitespace or `"`
//! quoted = `"` (any byte but `"` and `\` | `\"` | `\\`)* `"`
//! ws    = one or more of space, tab, LF, FF, CR  (HTML whitespace)
//! ```

/// A parsed body: kind, name and attributes, all owned.
pub(crate) struct Body {
    pub(crate) kind: String,
    pub(crate) name: String,
    pub(crate) attrs: Vec<(String, String)>,
}

/// Parses a marker body, or says in a short sentence what is wrong with it.
pub(crate) fn parse(body: &[u8]) -> Result<Body, String> {
    let mut p = Parser { s: body, i: 0 };
    let kind = p
        .ident()
        .ok_or_else(|| format!("expected a marker kind after `ralph:`, found {}", p.found()))?;
    if !p.ws() && !p.at_end() {
        return Err(format!(
            "expected whitespace after `ralph:{kind}`, found {}",
            p.found()
        ));
    }
    let name = p
        .ident()
        .ok_or_else(|| format!("expected a name after `ralph:{kind}`, found {}", p.found()))?;
    let mut attrs = Vec::new();
    loop {
        let had_ws = p.ws();
        if p.at_end() {
            break;
        }
        if !had_ws {
            // Values end at whitespace or are checked for it, so only a name gets here.
            return Err(format!("unexpected {} after the name `{name}`", p.found()));
        }
        let key = p
            .ident()
            .ok_or_else(|| format!("expected an attribute name, found {}", p.found()))?;
        if p.peek() != Some(b'=') {
            return Err(format!(
                "expected `=` after attribute `{key}`, found {}",
                p.found()
            ));
        }
        p.i += 1;
        let value = p.value(&key)?;
        attrs.push((key, value));
    }
    Ok(Body { kind, name, attrs })
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn at_end(&self) -> bool {
        self.i >= self.s.len()
    }

    /// Skips whitespace; returns whether there was any.
    fn ws(&mut self) -> bool {
        let start = self.i;
        while self.peek().is_some_and(|b| b.is_ascii_whitespace()) {
            self.i += 1;
        }
        self.i > start
    }

    /// `[a-z][a-z0-9_-]*`, case-insensitive, returned lowercase.
    fn ident(&mut self) -> Option<String> {
        if !self.peek()?.is_ascii_alphabetic() {
            return None;
        }
        let start = self.i;
        while self
            .peek()
            .is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        {
            self.i += 1;
        }
        // The bytes are ASCII, so this cannot fail.
        let ident = std::str::from_utf8(&self.s[start..self.i]).unwrap_or_default();
        Some(ident.to_ascii_lowercase())
    }

    /// A bare or quoted value; invalid UTF-8 is replaced with U+FFFD.
    fn value(&mut self, key: &str) -> Result<String, String> {
        if self.peek() == Some(b'"') {
            self.i += 1;
            let mut raw = Vec::new();
            loop {
                match self.peek() {
                    None => return Err(format!("unclosed quote in the value of `{key}`")),
                    Some(b'"') => {
                        self.i += 1;
                        break;
                    }
                    Some(b'\\') => {
                        self.i += 1;
                        match self.peek() {
                            Some(c @ (b'"' | b'\\')) => raw.push(c),
                            None => {
                                return Err(format!("unclosed quote in the value of `{key}`"));
                            }
                            Some(_) => {
                                return Err(format!(
                                    "invalid escape `\\{}` in the value of `{key}` (only `\\\"` and `\\\\` are allowed)",
                                    self.found_raw()
                                ));
                            }
                        }
                        self.i += 1;
                    }
                    Some(c) => {
                        raw.push(c);
                        self.i += 1;
                    }
                }
            }
            if !self.at_end() && !self.peek().is_some_and(|b| b.is_ascii_whitespace()) {
                return Err(format!(
                    "expected whitespace after the quoted value of `{key}`, found {}",
                    self.found()
                ));
            }
            Ok(String::from_utf8_lossy(&raw).into_owned())
        } else {
            let start = self.i;
            while self
                .peek()
                .is_some_and(|b| !b.is_ascii_whitespace() && b != b'"')
            {
                self.i += 1;
            }
            if self.peek() == Some(b'"') {
                return Err(format!(
                    "unexpected `\"` in the unquoted value of `{key}` (quote the whole value)"
                ));
            }
            if self.i == start {
                return Err(format!(
                    "expected a value after `{key}=`, found {} (write `{key}=\"\"` for an empty value)",
                    self.found()
                ));
            }
            Ok(String::from_utf8_lossy(&self.s[start..self.i]).into_owned())
        }
    }

    /// The next byte, described for a message.
    fn found(&self) -> String {
        match self.peek() {
            None => "the end of the marker".to_owned(),
            Some(b) if b.is_ascii_whitespace() => "whitespace".to_owned(),
            Some(_) => format!("`{}`", self.found_raw()),
        }
    }

    /// The next byte as text: the character itself if printable ASCII, else its hex value.
    fn found_raw(&self) -> String {
        match self.peek() {
            Some(b) if b.is_ascii_graphic() => (b as char).to_string(),
            Some(b) => format!("\\x{b:02x}"),
            None => String::new(),
        }
    }
}
