//! Creating a call: one conditional put of its head.

use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::types::{Put, ReturnValuesOnConditionCheckFailure};

use super::item::{get_s, n, s, Item, COMMITTED, ERASED_AT, ERASED_IDS};
use super::submission::Submission;
use super::{Store, StoreError};

/// How an attempt at creating a call ended.
pub(super) enum Creation {
    Created,
    /// The head's key holds something: a call or an erase's tombstone, as DynamoDB
    /// returned it, or `None` when it did not.
    Exists(Option<Item>),
    /// Another transaction held the head: nothing was written; try again shortly.
    Conflict,
}

/// Where a call is created: on a key that holds nothing, or over the very erase's tombstone
/// that was read (its token), whose erased ids the new head carries forward: over a newer
/// one it would drop the ids erased since. Nor over a tombstone that noted this submission
/// (its pending copy dropped by the erase, its frame blanked: `Store::after_erase`), which
/// a late copy of this write, sent before the note, must find.
const ON_NOTHING: &str = "attribute_not_exists(pk)";
const OVER_TOMBSTONE: &str =
    "attribute_not_exists(id) AND #submission = :tombstone AND NOT contains(#erased, :id) AND NOT contains(#committed, :own)";

/// How long after its start (or first receipt) a call's creation is noted for the raw
/// sweep: a day less a quarter (18 hours). The quarter day covers the sweep's clock ahead of
/// this one, and a put visible before its answer that never came (the instance gone).
pub(super) fn late_after(day_ms: u64) -> u64 {
    day_ms - day_ms / 4
}

/// When the call `sub` creates is created (`created_at`): when it was first received.
fn created_at(sub: &Submission) -> u64 {
    sub.made_at().as_n().ok().and_then(|v| v.parse::<u64>().ok()).unwrap_or(sub.received_ms)
}

impl Store {
    /// The call `sub` creates (its workspace, call id and `created_at`) if it is created
    /// late, by now (`late_after`).
    fn late_call<'s>(&self, sub: &'s Submission) -> Option<(u64, &'s str, u64)> {
        let (workspace_id, call_id) = super::item::parse_call_pk(&sub.pk)?;
        let created_at = created_at(sub);
        let listed = sub.listed_ms().unwrap_or(created_at).min(created_at);
        let late = super::now_ms().saturating_sub(listed) >= late_after(self.day.ms(workspace_id));
        late.then_some((workspace_id, call_id, created_at))
    }

    /// After `stored`, a call of one revision this submission created (answered, or found
    /// when its answer was lost, or found stored by its pending copy: `Unchanged` when its
    /// frame is in S3, since such a copy reads the head first) or found stored by another
    /// (noted all the same: the note names the call), or any call a pending copy finds (its
    /// direct write may have created it and answered 202 for want of its note, and a
    /// revision landed since: a reader's find), unless noted before its put: a note if it
    /// is late by now (keyed by this submission's receipt: settled when due). The
    /// put was visible before its answer came, so a call not late by then was there before
    /// any pass went by its start; one that turned late meanwhile (a put held up by
    /// throttles and retries, or delivered late) may not have been (a reviewer's find). A
    /// pending copy committed later finds its direct write's creation and notes it then.
    pub(super) async fn note_if_late(
        &self,
        sub: &Submission,
        stored: &super::Stored,
        pending: bool,
    ) -> Result<(), StoreError> {
        match (stored.revision == 1 || pending).then(|| self.late_call(sub)).flatten() {
            Some((workspace_id, call_id, created_at)) => {
                self.note_raw_late(workspace_id, call_id, stored.id, created_at).await
            }
            None => Ok(()),
        }
    }

    /// Tries to create the call with internal id `id`, over `tombstone` when the key holds
    /// one. A late copy of this write finds the call, or a tombstone naming `id` once it
    /// is erased, and fails: it can never bring an erased call back.
    pub(super) async fn create(
        &self,
        sub: &Submission,
        id: u64,
        tombstone: Option<&Item>,
        noted: &mut bool,
    ) -> Result<Creation, StoreError> {
        // Created late (three quarters of a day or more after it started or was first
        // received): the raw sweep's passes may have gone by it already, or will before this
        // put is visible, so it is noted for the sweep first.
        let made_at = sub.made_at();
        if let Some((workspace_id, call_id, created_at)) = self.late_call(sub) {
            self.note_raw_late(workspace_id, call_id, id, created_at).await?;
            *noted = true;
        }
        let mut head = sub.head(id, 1, &made_at);
        let mut put = Put::builder().table_name(&self.table).condition_expression(ON_NOTHING);
        if let Some(tombstone) = tombstone {
            // The pending copies noted as committed into the erased call stay committed
            // (`Store::keep_unchanged`): their frames are erased.
            for carried in [ERASED_IDS, ERASED_AT, COMMITTED] {
                if let Some(value) = tombstone.get(carried) {
                    head.insert(carried.into(), value.clone());
                }
            }
            put = put
                .condition_expression(OVER_TOMBSTONE)
                .expression_attribute_names("#erased", ERASED_IDS)
                .expression_attribute_names("#submission", "submission")
                .expression_attribute_names("#committed", COMMITTED)
                .expression_attribute_values(":id", n(id))
                .expression_attribute_values(":own", s(&sub.token))
                .expression_attribute_values(":tombstone", s(get_s(tombstone, "submission").unwrap_or_default()));
        }
        let put = put.set_item(Some(head)).build()?;
        let result = self
            .client
            .put_item()
            .table_name(put.table_name)
            .set_item(Some(put.item))
            .set_condition_expression(put.condition_expression)
            .set_expression_attribute_names(put.expression_attribute_names)
            .set_expression_attribute_values(put.expression_attribute_values)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        match result {
            Ok(_) => Ok(Creation::Created),
            Err(SdkError::ServiceError(se)) => match se.into_err() {
                PutItemError::ConditionalCheckFailedException(c) => Ok(Creation::Exists(c.item)),
                PutItemError::TransactionConflictException(_) => Ok(Creation::Conflict),
                other => Err(StoreError::from_service(&other)),
            },
            Err(e) => Err(StoreError::from_sdk(e)),
        }
    }
}
