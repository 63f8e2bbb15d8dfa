//! A workspace's data policy: what of a call is stored (`storage`), for how long
//! (`retention_days`, `raw_retention_days`), and which kinds of personal data are replaced
//! (`pii_entities`). A request may tighten its call's storage, never loosen it.

use serde::{Deserialize, Serialize};

/// What of a call is stored, from the loosest to the strictest (the order of the variants
/// is their strictness: `max` is the stricter).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Storage {
    /// Everything, and the request body byte for byte.
    #[default]
    Everything,
    /// Everything, with personal data replaced before anything is stored.
    Redacted,
    /// Times, agent, status, sentiment, cost, durations and counts; no text of the call.
    MetadataOnly,
}

impl Storage {
    pub const ALL: [Storage; 3] = [Storage::Everything, Storage::Redacted, Storage::MetadataOnly];

    pub fn as_str(self) -> &'static str {
        match self {
            Storage::Everything => "everything",
            Storage::Redacted => "redacted",
            Storage::MetadataOnly => "metadata_only",
        }
    }

    pub fn parse(name: &str) -> Option<Storage> {
        Storage::ALL.into_iter().find(|s| s.as_str() == name.trim())
    }
}

/// A kind of personal data: the rules find the first six, a model the last two.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    PhoneNumber,
    Email,
    CreditCard,
    Ssn,
    Iban,
    DateOfBirth,
    PersonName,
    Address,
}

impl Kind {
    /// The kinds the rules find (`detect`): a policy's default.
    pub const RULES: [Kind; 6] =
        [Kind::PhoneNumber, Kind::Email, Kind::CreditCard, Kind::Ssn, Kind::Iban, Kind::DateOfBirth];
    /// The kinds only a model finds (names and street addresses: `PiiModel`).
    pub const MODEL: [Kind; 2] = [Kind::PersonName, Kind::Address];
    pub const ALL: [Kind; 8] = [
        Kind::PhoneNumber,
        Kind::Email,
        Kind::CreditCard,
        Kind::Ssn,
        Kind::Iban,
        Kind::DateOfBirth,
        Kind::PersonName,
        Kind::Address,
    ];

    /// Its name in policies and in `redactions[].kind` (Retell's names).
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::PhoneNumber => "phone_number",
            Kind::Email => "email",
            Kind::CreditCard => "credit_card",
            Kind::Ssn => "ssn",
            Kind::Iban => "iban",
            Kind::DateOfBirth => "date_of_birth",
            Kind::PersonName => "person_name",
            Kind::Address => "address",
        }
    }

    /// What replaces a value of this kind: `[PHONE_NUMBER]`.
    pub fn placeholder(self) -> &'static str {
        match self {
            Kind::PhoneNumber => "[PHONE_NUMBER]",
            Kind::Email => "[EMAIL]",
            Kind::CreditCard => "[CREDIT_CARD]",
            Kind::Ssn => "[SSN]",
            Kind::Iban => "[IBAN]",
            Kind::DateOfBirth => "[DATE_OF_BIRTH]",
            Kind::PersonName => "[PERSON_NAME]",
            Kind::Address => "[ADDRESS]",
        }
    }

    pub fn parse(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.as_str() == name.trim())
    }

    fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

/// A set of kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Kinds(u8);

impl Kinds {
    pub const NONE: Kinds = Kinds(0);

    /// Every kind the rules find: a policy's default (`all`). A model's kinds are named, or
    /// added when a model is set (`PiiModel`).
    pub fn all() -> Kinds {
        Kinds::of(Kind::RULES)
    }

    pub fn of(kinds: impl IntoIterator<Item = Kind>) -> Kinds {
        Kinds(kinds.into_iter().fold(0, |bits, k| bits | k.bit()))
    }

    pub fn contains(self, kind: Kind) -> bool {
        self.0 & kind.bit() != 0
    }

    pub fn iter(self) -> impl Iterator<Item = Kind> {
        Kind::ALL.into_iter().filter(move |k| self.contains(*k))
    }

    /// Both sets' kinds (a tightened policy redacts what either names).
    pub fn union(self, other: Kinds) -> Kinds {
        Kinds(self.0 | other.0)
    }

    /// The set as a comma-separated list of names.
    pub fn names(self) -> Vec<&'static str> {
        self.iter().map(Kind::as_str).collect()
    }

    /// Reads a comma-separated list of names; `all` is every kind.
    pub fn parse(list: &str) -> Result<Kinds, String> {
        if list.trim() == "all" {
            return Ok(Kinds::all());
        }
        let mut kinds = Vec::new();
        for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            kinds.push(
                Kind::parse(name).ok_or_else(|| {
                    format!("unknown kind {name:?}: one of {}", Kind::ALL.map(Kind::as_str).join(", "))
                })?,
            );
        }
        Ok(Kinds::of(kinds))
    }
}

impl Default for Kinds {
    fn default() -> Kinds {
        Kinds::all()
    }
}

impl Serialize for Kinds {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter().map(Kind::as_str))
    }
}

impl<'de> Deserialize<'de> for Kinds {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Kinds, D::Error> {
        Ok(Kinds::of(Vec::<Kind>::deserialize(d)?))
    }
}

/// Retention bounds, in days.
pub const MIN_RETENTION_DAYS: u32 = 1;
pub const MAX_RETENTION_DAYS: u32 = 3650;

/// A workspace's data policy, or the one a call was stored under.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Policy {
    pub storage: Storage,
    /// The call is erased this many days after its `created_at`; `None`: kept.
    pub retention_days: Option<u32>,
    /// Its raw body is removed this many days after `created_at` (at most `retention_days`).
    pub raw_retention_days: Option<u32>,
    /// The kinds replaced under `redacted`.
    pub pii_entities: Kinds,
    /// A model that finds names and street addresses besides the rules (off: `None`).
    pub pii_model: Option<PiiModel>,
}

/// A model run on a call's turns besides the rules, under `redacted`: AWS Comprehend's
/// `DetectPiiEntities` (English or Spanish), for the kinds the rules cannot find.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PiiModel {
    /// The language the turns are read in: `en` or `es` (Comprehend's two for PII).
    pub language: Language,
}

impl PiiModel {
    /// Its name in documents (`redaction.model`) and settings.
    pub const NAME: &'static str = "aws_comprehend";
}

/// What a document says of the model its policy names (`redaction`): `aws_comprehend` when
/// it read every turn, `unavailable` when it did not read the call (failed, throttled, late,
/// over the workspace's budget) and the rules alone redacted, `nothing_to_read` when no
/// turn had text or words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelNote {
    pub model: ModelOutcome,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelOutcome {
    AwsComprehend,
    Unavailable,
    NothingToRead,
}

/// A language Comprehend finds personal data in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Language {
    En,
    Es,
}

impl Language {
    pub fn as_str(self) -> &'static str {
        match self {
            Language::En => "en",
            Language::Es => "es",
        }
    }

    pub fn parse(name: &str) -> Option<Language> {
        [Language::En, Language::Es].into_iter().find(|l| l.as_str() == name.trim())
    }
}

impl Policy {
    /// Checks the bounds: days within 1–3650, and raw kept no longer than the call.
    pub fn check(&self) -> Result<(), String> {
        for (name, days) in [("retention_days", self.retention_days), ("raw_retention_days", self.raw_retention_days)] {
            if let Some(d) = days {
                if !(MIN_RETENTION_DAYS..=MAX_RETENTION_DAYS).contains(&d) {
                    return Err(format!("{name} must be from {MIN_RETENTION_DAYS} to {MAX_RETENTION_DAYS}"));
                }
            }
        }
        if let (Some(raw), Some(call)) = (self.raw_retention_days, self.retention_days) {
            if raw > call {
                return Err("raw_retention_days must be at most retention_days".into());
            }
        }
        if self.storage == Storage::Redacted && self.pii_entities == Kinds::NONE {
            return Err("redacted storage needs at least one kind in pii_entities".into());
        }
        Ok(())
    }

    /// This policy with its storage at least `storage` (a request's `X-Data-Policy`, or the
    /// strictest a call had before). A tightening to `redacted` redacts the policy's kinds.
    pub fn tightened(self, storage: Storage) -> Policy {
        let pii_entities = match self.pii_entities {
            Kinds::NONE => Kinds::all(),
            kinds => kinds,
        };
        Policy { storage: self.storage.max(storage), pii_entities, ..self }
    }

    /// Whether a call stored under this policy keeps its request body byte for byte.
    pub fn keeps_raw_as_sent(&self) -> bool {
        self.storage == Storage::Everything
    }
}

/// A stretch of the call's audio that said a value of `kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Redaction {
    pub start_ms: u64,
    pub end_ms: u64,
    pub kind: Kind,
}

/// The policy a stored call was kept under, as its document says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Applied {
    pub storage: Storage,
    /// The kinds replaced (`redacted` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pii_entities: Option<Kinds>,
}

/// What a call held, counted before it was dropped (`metadata_only`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    pub segments: u64,
    pub user_turns: u64,
    pub agent_turns: u64,
    pub tool_calls: u64,
    pub words: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storage_orders_by_strictness_and_tightening_never_loosens() {
        assert!(Storage::Everything < Storage::Redacted && Storage::Redacted < Storage::MetadataOnly);
        let redacted = Policy { storage: Storage::Redacted, ..Policy::default() };
        assert_eq!(redacted.tightened(Storage::Everything).storage, Storage::Redacted);
        assert_eq!(redacted.tightened(Storage::MetadataOnly).storage, Storage::MetadataOnly);
        assert_eq!(Policy::default().tightened(Storage::Redacted).storage, Storage::Redacted);
    }

    #[test]
    fn bounds_are_checked() {
        let p = |r, raw| Policy { retention_days: r, raw_retention_days: raw, ..Policy::default() };
        assert!(p(Some(30), Some(7)).check().is_ok());
        assert!(p(None, Some(7)).check().is_ok());
        assert!(p(Some(7), Some(30)).check().is_err());
        assert!(p(Some(0), None).check().is_err());
        assert!(p(Some(3651), None).check().is_err());
        let none = Policy { storage: Storage::Redacted, pii_entities: Kinds::NONE, ..Policy::default() };
        assert!(none.check().is_err());
    }

    #[test]
    fn kinds_parse_and_name() {
        assert_eq!(Kinds::parse("all").unwrap(), Kinds::all());
        let two = Kinds::parse("email, ssn").unwrap();
        assert_eq!(two.names(), ["email", "ssn"]);
        assert!(Kinds::parse("email,name").is_err());
        assert_eq!(Storage::parse("metadata_only"), Some(Storage::MetadataOnly));
        assert_eq!(Storage::parse("all"), None);
    }
}
