//! Moving the frames of calls stored before frames moved to S3 (kept in chunk items) to S3:
//! `callctl tables move-frames`. Readers read both forms, so calls stay readable before,
//! during and after the move.

use super::frames::Frames;
use super::item::{chunk_prefix, get_b, get_s, get_u64, n, parse_call_pk, s, Item, FRAME_KEY};
use super::query::SortKeys;
use super::{Owner, Store, StoreError};

impl Store {
    /// Moves every chunked frame to S3: for each head or revision with `chunks`, writes its
    /// frame to S3, points the item at it (on the condition that it is still that
    /// submission's item with chunks), then deletes its chunk items. Safe to run again and
    /// alongside traffic: an item that changed meanwhile is left as it is. Answers how many
    /// items it moved.
    pub async fn move_chunks_to_s3(&self) -> Result<usize, StoreError> {
        super::query::scan_pages(&self.client, &self.table, "attribute_exists(chunks)", &[], |items| async move {
            let mut moved = 0;
            for item in &items {
                moved += usize::from(self.move_chunks(item).await?);
            }
            Ok(moved)
        })
        .await
    }

    async fn move_chunks(&self, item: &Item) -> Result<bool, StoreError> {
        let (Some(pk), Some(sk), Some(token), Some(agent_id)) =
            (get_s(item, "pk"), get_s(item, "sk"), get_s(item, "submission"), get_s(item, "agent_id"))
        else {
            return Ok(false);
        };
        let Some((workspace_id, call_id)) = parse_call_pk(pk) else {
            return Ok(false);
        };
        let chunks = self.query(pk, SortKeys::Prefix(chunk_prefix(token)), None).await?;
        if chunks.len() as u64 != get_u64(item, "chunks").unwrap_or_default() {
            // Being erased, or an erase stopped part-way: the next erase finishes it.
            return Ok(false);
        }
        let frame: Vec<u8> = chunks.iter().flat_map(|c| get_b(c, "data").unwrap_or_default().iter().copied()).collect();
        let key = Frames::key(workspace_id, call_id, token);
        let frame_bytes = frame.len();
        let received = get_u64(item, "updated_at").unwrap_or_default();
        self.frames.put(&key, frame.into(), Owner { workspace_id, agent_id }, call_id, received).await?;
        let result = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("pk", s(pk))
            .key("sk", s(sk))
            .update_expression("SET #frame = :key, frame_bytes = :bytes REMOVE chunks")
            .condition_expression("#submission = :token AND attribute_exists(chunks)")
            .expression_attribute_names("#frame", FRAME_KEY)
            .expression_attribute_names("#submission", "submission")
            .expression_attribute_values(":key", s(key))
            .expression_attribute_values(":bytes", n(frame_bytes))
            .expression_attribute_values(":token", s(token))
            .send()
            .await;
        match result {
            Ok(_) => {}
            Err(e) if e.as_service_error().is_some_and(|e| e.is_conditional_check_failed_exception()) => {
                return Ok(false)
            }
            Err(e) => return Err(StoreError::from_sdk(e)),
        }
        for chunk in &chunks {
            if let Some(chunk_sk) = get_s(chunk, "sk") {
                self.client
                    .delete_item()
                    .table_name(&self.table)
                    .key("pk", s(pk))
                    .key("sk", s(chunk_sk))
                    .send()
                    .await
                    .map_err(StoreError::from_sdk)?;
            }
        }
        Ok(true)
    }
}
