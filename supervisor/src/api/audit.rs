//! `bosun audit`: the audit log's entries, and the check of its chain.

use std::sync::Arc;

use bosun_kit::offload::blocking;
use bosun_protocol::audit::{AuditList, AuditView};
use bosun_protocol::error::{ErrorCode, WireError};
use bosun_shared::Timestamp;

use super::Handle;
use crate::ctx::DaemonCtx;
use crate::wire::Failure;

impl Handle for AuditList {
    async fn handle(self, ctx: &Arc<DaemonCtx>) -> Result<AuditView, Failure> {
        let since = self
            .since_ms
            .map(|ms| Timestamp::from_millis(Timestamp::now().as_millis().saturating_sub(ms)));
        let ctx2 = ctx.clone();
        let verify = self.verify;
        let read = blocking(move || -> std::io::Result<AuditView> {
            Ok(AuditView {
                entries: ctx2.audit.read(since)?,
                check: if verify {
                    Some(ctx2.audit.verify()?)
                } else {
                    None
                },
            })
        })
        .await;
        match read {
            Ok(Ok(view)) => Ok(view),
            Ok(Err(e)) => Err(Failure(WireError::new(
                ErrorCode::Internal,
                format!(
                    "could not read the audit log {}: {e}",
                    ctx.dirs.root().join("audit.jsonl").display()
                ),
            ))),
            Err(e) => Err(Failure(WireError::new(ErrorCode::Internal, e.to_string()))),
        }
    }
}
