//! JSON Pointers (RFC 6901) to the place of a violation, built on the stack as validation
//! descends and turned into text only when something is wrong there.

/// A path into the request body.
#[derive(Debug, Clone, Copy)]
pub enum Pointer<'a> {
    Root,
    Key(&'a Pointer<'a>, &'a str),
    Index(&'a Pointer<'a>, usize),
}

impl<'a> Pointer<'a> {
    /// The member `name` of the object here.
    pub fn key(&'a self, name: &'a str) -> Pointer<'a> {
        Pointer::Key(self, name)
    }

    /// Element `i` of the array here.
    pub fn index(&'a self, i: usize) -> Pointer<'a> {
        Pointer::Index(self, i)
    }

    /// The pointer as text: `""` for the root, else `/a/0/b`, with `~` and `/` escaped.
    pub fn render(&self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }

    fn write(&self, out: &mut String) {
        match self {
            Pointer::Root => {}
            Pointer::Key(parent, name) => {
                parent.write(out);
                out.push('/');
                for c in name.chars() {
                    match c {
                        '~' => out.push_str("~0"),
                        '/' => out.push_str("~1"),
                        c => out.push(c),
                    }
                }
            }
            Pointer::Index(parent, i) => {
                parent.write(out);
                out.push('/');
                out.push_str(&i.to_string());
            }
        }
    }
}

/// Turns a garde path (`transcript_with_tool_calls[3].words[0].end_ms`) into a JSON
/// pointer (`/transcript_with_tool_calls/3/words/0/end_ms`). garde names fields by their
/// Rust names (it reads but ignores its `rename` option), so each is looked up in `names`,
/// (Rust, JSON) pairs, to give the name the client sent. Our field names hold no `.` or
/// `[`, so the text form is unambiguous.
pub fn from_garde_path(path: &str, names: &[&[(&str, &'static str)]]) -> String {
    let mut out = String::with_capacity(path.len() + 2);
    for part in path.split(['.', '[']) {
        if part.is_empty() {
            continue;
        }
        out.push('/');
        match part.strip_suffix(']') {
            Some(index) => out.push_str(index),
            None => out.push_str(
                names
                    .iter()
                    .flat_map(|list| list.iter())
                    .find(|(rust, _)| *rust == part)
                    .map_or(part, |(_, json)| json),
            ),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointers_render_and_escape() {
        let root = Pointer::Root;
        let a = root.key("transcript_with_tool_calls");
        let b = a.index(3);
        let c = b.key("a/b~c");
        assert_eq!(root.render(), "");
        assert_eq!(c.render(), "/transcript_with_tool_calls/3/a~1b~0c");
    }

    #[test]
    fn garde_paths_become_pointers() {
        assert_eq!(
            from_garde_path("transcript_with_tool_calls[3].words[0].end_ms", &[]),
            "/transcript_with_tool_calls/3/words/0/end_ms"
        );
        assert_eq!(from_garde_path("call_id", &[]), "/call_id");
        assert_eq!(
            from_garde_path("metadata.duration_seconds", &[&[("duration_seconds", "durationSeconds")]]),
            "/metadata/durationSeconds"
        );
        assert_eq!(from_garde_path("", &[]), "");
    }
}
