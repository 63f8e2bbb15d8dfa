//! `Accept-Encoding`: whether a client takes gzip. Shared by the API's answers and the
//! viewer's assets, so both read the header alike.

/// Whether the `Accept-Encoding` values (each a comma-separated list) take gzip: `gzip` or
/// `x-gzip` with a weight above 0, else `*` with one when gzip is not named (RFC 9110
/// 12.5.3).
pub fn takes_gzip<'a>(values: impl IntoIterator<Item = &'a str>) -> bool {
    let (mut named, mut any) = (None::<bool>, false);
    for coding in values.into_iter().flat_map(|v| v.split(',')) {
        let mut parts = coding.split(';');
        let name = parts.next().unwrap_or_default().trim().to_ascii_lowercase();
        let weight = parts
            .filter_map(|p| p.trim().strip_prefix("q=").or_else(|| p.trim().strip_prefix("Q=")))
            .find_map(|q| q.trim().parse::<f32>().ok())
            .unwrap_or(1.0);
        match name.as_str() {
            "gzip" | "x-gzip" => named = Some(named.unwrap_or(false) || weight > 0.0),
            "*" => any = weight > 0.0,
            _ => {}
        }
    }
    named.unwrap_or(any)
}
