//! `attach_file`: only a file the person named or added in the chat is attached to a card,
//! copied to `<attachments>/<card id>/<file name>`.

use crate::record::ChatReads;
use std::path::PathBuf;

use bosun_board::CardEdit;
use bosun_shared::ChatId;
use serde_json::Value;

use super::{ToolCtx, board, need};
use crate::ToolError;
use bosun_board::BoardRequest;
use bosun_kit::offload::blocking;

/// The files the person named (in a message) or added in a chat.
async fn person_files(
    ctx: &ToolCtx,
    chat: ChatId,
) -> Result<(Vec<String>, Vec<String>), ToolError> {
    let store = ctx.store.clone();
    Ok(blocking(
        move || -> Result<(Vec<String>, Vec<String>), bosun_store::StoreError> {
            let (chats, _) = store.chats()?;
            let added = chats
                .into_iter()
                .find(|c| c.id == chat)
                .map(|c| c.files)
                .unwrap_or_default();
            let said = store
                .messages(chat)?
                .into_iter()
                .filter(|m| m.kind == crate::record::MessageKind::Person)
                .map(|m| m.text)
                .collect();
            Ok((added, said))
        },
    )
    .await??)
}

/// Checks an attachment: the file, its size, and where it would go.
pub(super) async fn attachment(
    ctx: &ToolCtx,
    args: &Value,
    chat: Option<ChatId>,
) -> Result<(PathBuf, u64, PathBuf, String), ToolError> {
    let path = PathBuf::from(need(args, "path")?);
    let chat = chat.ok_or(ToolError::NotInChat)?;
    let (added, said) = person_files(ctx, chat).await?;
    let shown = path.display().to_string();
    if !(added.contains(&shown) || said.iter().any(|m| m.contains(&shown))) {
        return Err(ToolError::NotThePersonsFile(shown));
    }
    let meta = std::fs::metadata(&path).map_err(|error| ToolError::Unreadable {
        file: shown.clone(),
        error,
    })?;
    if !meta.is_file() {
        return Err(ToolError::NotAFile(shown));
    }
    let key = need(args, "card")?.to_string();
    let card = board(ctx, |reply| BoardRequest::ShowCard { card: key, reply }).await?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .ok_or(ToolError::NoFileName(shown))?;
    let dest = ctx.attachments.join(card.record.id.to_string()).join(&name);
    Ok((path, meta.len(), dest, card.record.id.to_string()))
}

pub(super) async fn attach(
    ctx: &ToolCtx,
    args: &Value,
    chat: Option<ChatId>,
) -> Result<String, ToolError> {
    let (path, size, dest, card) = attachment(ctx, args, chat).await?;
    let (from, to) = (path.clone(), dest.clone());
    blocking(move || -> std::io::Result<()> {
        if let Some(dir) = to.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::copy(&from, &to).map(|_| ())
    })
    .await?
    .map_err(|error| ToolError::CopyFailed {
        file: path.display().to_string(),
        error,
    })?;
    let params = CardEdit {
        card,
        comment: Some(format!(
            "attached {} ({size} bytes) as {}",
            path.display(),
            dest.display()
        )),
        ..CardEdit::default()
    };
    board(ctx, |reply| BoardRequest::EditCard {
        params: Box::new(params),
        taint: None,
        reply,
    })
    .await?;
    Ok(format!(
        "Attached {} ({size} bytes) to the card.",
        path.display()
    ))
}
