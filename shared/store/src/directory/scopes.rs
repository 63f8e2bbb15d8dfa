//! What a credential may do: send calls, read them, erase them, send traces.
//!
//! An API key carries its scopes in its item (`scopes`, a string set); a key without the
//! attribute was made before scopes existed and may send, exactly as it could then. A
//! session is a person using the workspaces they are a member of, so it has every scope.

use std::fmt;
use std::str::FromStr;

use aws_sdk_dynamodb::types::AttributeValue;

use crate::calls::item::Item;

/// One thing a credential may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scope {
    /// Store calls (both `POST` endpoints).
    Send,
    /// Read calls back.
    Read,
    /// Erase calls.
    Erase,
    /// Send OpenTelemetry traces (`POST /otel/v1/traces`); a key that may send calls may
    /// send their traces too ([`Scopes::allows`]).
    Traces,
    /// Manage the workspace's event endpoints (`/api/v1/public/endpoints`): make, list,
    /// disable, enable, rotate and delete them. Never implied by another scope.
    Manage,
}

impl Scope {
    pub const ALL: [Scope; 5] = [Scope::Send, Scope::Read, Scope::Erase, Scope::Traces, Scope::Manage];

    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Send => "send",
            Scope::Read => "read",
            Scope::Erase => "erase",
            Scope::Traces => "traces",
            Scope::Manage => "manage",
        }
    }

    fn bit(self) -> u8 {
        1 << self as u8
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Scope {
    type Err = String;

    fn from_str(s: &str) -> Result<Scope, String> {
        Scope::ALL
            .into_iter()
            .find(|scope| scope.as_str() == s)
            .ok_or_else(|| format!("unknown scope {s:?}: one of send, read, erase, traces, manage"))
    }
}

/// A set of scopes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scopes(u8);

impl Scopes {
    /// What a key made before scopes existed may do, and a new key unless told otherwise.
    pub const DEFAULT: Scopes = Scopes(1 << Scope::Send as u8);
    /// Every scope: sessions.
    pub const ALL: Scopes = Scopes(0b1_1111);

    pub fn of(scopes: impl IntoIterator<Item = Scope>) -> Scopes {
        Scopes(scopes.into_iter().fold(0, |bits, s| bits | s.bit()))
    }

    pub fn contains(self, scope: Scope) -> bool {
        self.0 & scope.bit() != 0
    }

    /// Whether these scopes allow what `scope` allows: it, or for traces, sending calls.
    pub fn allows(self, scope: Scope) -> bool {
        self.contains(scope) || (scope == Scope::Traces && self.contains(Scope::Send))
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    pub fn iter(self) -> impl Iterator<Item = Scope> {
        Scope::ALL.into_iter().filter(move |s| self.contains(*s))
    }

    /// The scopes an API key's item grants: its `scopes` set; [`Scopes::DEFAULT`] when it
    /// has none (made before scopes existed). Names this version does not know, and a
    /// `scopes` attribute that is not a string set, grant nothing.
    pub fn of_item(item: &Item) -> Scopes {
        match item.get("scopes").map(|v| v.as_ss()) {
            Some(Ok(names)) => Scopes::of(names.iter().filter_map(|n| n.parse().ok())),
            Some(Err(_)) => Scopes::of([]),
            None => Scopes::DEFAULT,
        }
    }

    /// The attribute [`Scopes::of_item`] reads back.
    pub fn to_attribute(self) -> AttributeValue {
        AttributeValue::Ss(self.iter().map(|s| s.as_str().to_owned()).collect())
    }
}

impl fmt::Display for Scopes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.iter().map(Scope::as_str).collect();
        f.write_str(&names.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calls::item::s;

    #[test]
    fn a_key_without_scopes_may_send_only() {
        let item = Item::from([("pk".into(), s("CRED#x"))]);
        let scopes = Scopes::of_item(&item);
        assert!(scopes.contains(Scope::Send));
        assert!(!scopes.contains(Scope::Read) && !scopes.contains(Scope::Erase));
    }

    #[test]
    fn scopes_round_trip_through_the_item() {
        for set in [vec![Scope::Read], vec![Scope::Send, Scope::Erase], Scope::ALL.to_vec()] {
            let scopes = Scopes::of(set.clone());
            let item = Item::from([("scopes".into(), scopes.to_attribute())]);
            assert_eq!(Scopes::of_item(&item), scopes);
            assert_eq!(scopes.iter().collect::<Vec<_>>(), set);
        }
    }

    #[test]
    fn a_key_that_may_send_calls_may_send_their_traces_and_only_that_way_round() {
        assert!(Scopes::of([Scope::Send]).allows(Scope::Traces));
        assert!(Scopes::of([Scope::Traces]).allows(Scope::Traces));
        assert!(!Scopes::of([Scope::Traces]).allows(Scope::Send));
        assert!(!Scopes::of([Scope::Read, Scope::Erase]).allows(Scope::Traces));
    }

    #[test]
    fn unknown_names_grant_nothing() {
        let item = Item::from([("scopes".into(), AttributeValue::Ss(vec!["admin".into(), "read".into()]))]);
        assert_eq!(Scopes::of_item(&item), Scopes::of([Scope::Read]));
        assert!("admin".parse::<Scope>().is_err());
        assert_eq!("erase".parse::<Scope>(), Ok(Scope::Erase));
        let malformed = Item::from([("scopes".into(), s("read"))]);
        assert!(Scopes::of_item(&malformed).is_empty(), "a malformed attribute grants nothing");
    }
}
