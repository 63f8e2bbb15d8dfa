//! A tiny ordered JSON value (serde_json's `Map` sorts keys unless `preserve_order` is
//! on, and gen_call.py's key order is part of the record's realism) and its compact
//! writer. Strings and floats go through serde_json for escaping and shortest
//! round-trip float formatting.

/// JSON value whose objects keep their keys in insertion order.
pub(crate) enum J {
    /// A key whose value is `Absent` is left out of its object (Python's `**({} ...)`).
    Absent,
    Bool(bool),
    Int(u64),
    Float(f64),
    Str(String),
    Arr(Vec<J>),
    Obj(Vec<(&'static str, J)>),
}

/// `obj! { "key": value, ... }` builds a `J::Obj`, converting each value with `J::from`.
macro_rules! obj {
    ($($k:literal : $v:expr),* $(,)?) => {
        $crate::json::J::Obj(vec![$(($k, $crate::json::J::from($v))),*])
    };
}
pub(crate) use obj;

impl J {
    /// The value of `key` if this is an object that has it.
    pub(crate) fn get(&self, key: &str) -> Option<&J> {
        match self {
            J::Obj(fields) => fields.iter().find(|(k, _)| *k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// Appends compact JSON (no spaces) to `out`.
    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        // Serializing a str or f64 into a Vec<u8> cannot fail (non-finite f64 become null).
        let scalar = "serde_json never fails writing a scalar into a Vec";
        match self {
            J::Absent => out.extend_from_slice(b"null"),
            J::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
            J::Int(n) => out.extend_from_slice(n.to_string().as_bytes()),
            J::Float(x) => serde_json::to_writer(&mut *out, x).expect(scalar),
            J::Str(s) => serde_json::to_writer(&mut *out, s).expect(scalar),
            J::Arr(items) => {
                out.push(b'[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    item.write(out);
                }
                out.push(b']');
            }
            J::Obj(fields) => {
                out.push(b'{');
                let present = fields.iter().filter(|(_, v)| !matches!(v, J::Absent));
                for (i, (k, v)) in present.enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    serde_json::to_writer(&mut *out, k).expect(scalar);
                    out.push(b':');
                    v.write(out);
                }
                out.push(b'}');
            }
        }
    }
}

/// `From` impls that just wrap the value in its variant.
macro_rules! wrap {
    ($($t:ty => $variant:path),* $(,)?) => {
        $(impl From<$t> for J { fn from(v: $t) -> Self { $variant(v) } })*
    };
}
wrap! { bool => J::Bool, u64 => J::Int, f64 => J::Float, String => J::Str, Vec<J> => J::Arr }

impl From<&str> for J {
    fn from(s: &str) -> Self {
        J::Str(s.to_owned())
    }
}
impl<T: Into<J>> From<Option<T>> for J {
    fn from(v: Option<T>) -> Self {
        v.map_or(J::Absent, Into::into)
    }
}
