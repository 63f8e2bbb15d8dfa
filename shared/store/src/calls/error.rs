//! What can go wrong with DynamoDB, sorted into "try again" (503) and "broken" (500).

use aws_sdk_dynamodb::config::http::HttpResponse;
use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;

/// What went wrong while storing or reading.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StoreError {
    /// Throttled, unreachable, contended or not ready, after the SDK's retries: 503, try
    /// again.
    #[error("DynamoDB is unavailable: {0}")]
    Unavailable(String),
    /// Anything else: 500.
    #[error("storage failed: {0}")]
    Internal(String),
}

/// Error codes that say "the same request may succeed later". A table that is missing or
/// still being created (`ResourceNotFoundException`) is among them: in AWS it is a table
/// that is not active yet, not a request that can never work.
const TRANSIENT: [&str; 11] = [
    "InternalFailure",
    "ServiceUnavailableException",
    "ProvisionedThroughputExceededException",
    "ThrottlingException",
    "RequestLimitExceeded",
    "InternalServerError",
    "ServiceUnavailable",
    "LimitExceededException",
    "TransactionInProgressException",
    "TransactionConflictException",
    "ResourceNotFoundException",
];

/// Cancellation reasons that say "try again" (the others are conditions or bad requests).
const TRANSIENT_REASONS: [&str; 3] = ["ThrottlingError", "ProvisionedThroughputExceeded", "TransactionConflict"];

impl StoreError {
    /// Sorts an SDK error into "try again" or not. Only the error's kind and code are kept:
    /// the SDK's debug form of some errors holds the raw response, which can hold an item.
    /// Any answer with a 5xx status is "try again", whatever its code (a proxy's 502 has
    /// none).
    pub fn from_sdk<E: ProvideErrorMetadata>(e: SdkError<E, HttpResponse>) -> Self {
        match &e {
            SdkError::TimeoutError(_) => StoreError::Unavailable("timed out".into()),
            SdkError::DispatchFailure(f) => StoreError::Unavailable(format!(
                "request not sent: {}",
                if f.is_timeout() {
                    "timeout"
                } else if f.is_io() {
                    "connection error"
                } else {
                    "other"
                }
            )),
            SdkError::ResponseError(_) => StoreError::Unavailable("no readable response".into()),
            SdkError::ServiceError(se) if se.raw().status().as_u16() >= 500 => {
                StoreError::Unavailable(format!("{} {}", se.raw().status().as_u16(), se.err().code().unwrap_or("")))
            }
            SdkError::ServiceError(se) => StoreError::from_service(se.err()),
            _ => StoreError::Internal("the request could not be built".into()),
        }
    }

    /// Sorts an error DynamoDB answered, by its code. Only the code is kept (and so
    /// logged): DynamoDB's message can quote the request, which may hold a transcript.
    pub fn from_service<E: ProvideErrorMetadata>(e: &E) -> Self {
        let code = e.code().unwrap_or("unknown");
        match TRANSIENT.contains(&code) {
            true => StoreError::Unavailable(code.to_owned()),
            false => StoreError::Internal(code.to_owned()),
        }
    }
}

impl From<aws_sdk_dynamodb::error::BuildError> for StoreError {
    fn from(e: aws_sdk_dynamodb::error::BuildError) -> Self {
        StoreError::Internal(e.to_string())
    }
}

/// How a transaction ended, when it did not fail outright.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transaction {
    Committed,
    /// A condition was false: someone else wrote first. Nothing was applied.
    ConditionFailed,
    /// Another transaction held an item (`TransactionConflict`): nothing was applied; the
    /// same transaction may succeed in a moment.
    Conflict,
}

/// Whether a conditional UpdateItem was applied: `false` when its condition failed or a
/// transaction held the item (read it again); other errors sorted as [`StoreError::from_sdk`].
pub fn updated<T>(result: Result<T, SdkError<UpdateItemError, HttpResponse>>) -> Result<bool, StoreError> {
    match result {
        Ok(_) => Ok(true),
        Err(SdkError::ServiceError(se)) => match se.into_err() {
            UpdateItemError::ConditionalCheckFailedException(_) | UpdateItemError::TransactionConflictException(_) => {
                Ok(false)
            }
            other => Err(StoreError::from_service(&other)),
        },
        Err(e) => Err(StoreError::from_sdk(e)),
    }
}

/// Sorts a `TransactWriteItems` error: a cancellation for a condition or a conflict is an
/// answer; one for throttling (per item, or the whole request) is 503; the rest 500.
pub fn transaction_outcome(e: SdkError<TransactWriteItemsError, HttpResponse>) -> Result<Transaction, StoreError> {
    let codes = cancellation_codes(&e);
    if codes.is_empty() {
        return Err(StoreError::from_sdk(e));
    }
    let has = |wanted: &str| codes.iter().any(|c| c.as_deref() == Some(wanted));
    // Throttling first: an item that was throttled was not checked, so a failed condition
    // elsewhere does not mean another writer won.
    if has("ThrottlingError") || has("ProvisionedThroughputExceeded") {
        return Err(StoreError::Unavailable("transaction cancelled: throttled".into()));
    }
    let failed = |c: &Option<String>| c.as_deref() == Some("ConditionalCheckFailed");
    if codes.iter().any(failed) {
        return Ok(Transaction::ConditionFailed);
    }
    if has("TransactionConflict") {
        return Ok(Transaction::Conflict);
    }
    let listed: Vec<&str> = codes.iter().map(|c| c.as_deref().unwrap_or("None")).collect();
    if listed.iter().all(|c| *c == "None" || TRANSIENT_REASONS.contains(c)) {
        return Err(StoreError::Unavailable("transaction cancelled".into()));
    }
    Err(StoreError::Internal(format!("transaction cancelled: {}", listed.join(", "))))
}

/// The reason code of each item of a cancelled transaction, in order (empty when the
/// error is not a cancellation).
pub fn cancellation_codes<R>(e: &SdkError<TransactWriteItemsError, R>) -> Vec<Option<String>> {
    match e.as_service_error() {
        Some(TransactWriteItemsError::TransactionCanceledException(c)) => {
            c.cancellation_reasons().iter().map(|r| r.code().map(str::to_owned)).collect()
        }
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use aws_sdk_dynamodb::error::ErrorMetadata;

    use super::*;

    #[test]
    fn only_the_code_of_a_dynamodb_error_is_kept_never_its_message() {
        // DynamoDB's messages can quote what was sent: a transcript, a phone number.
        let quoting = |code: &str| {
            ErrorMetadata::builder().code(code).message("Item {transcript: 'my card is 4111'} +14155550199").build()
        };
        for (code, unavailable) in [("ValidationException", false), ("ThrottlingException", true)] {
            let e = StoreError::from_service(&quoting(code));
            assert_eq!(matches!(e, StoreError::Unavailable(_)), unavailable, "{code}");
            let shown = format!("{e} {e:?}");
            assert!(shown.contains(code), "{shown}");
            assert!(!shown.contains("4111") && !shown.contains("+1415"), "{shown}");
        }
    }
}
