//! The automation: which cards' runs are going or over (read from the store), which cards are
//! owed a run, and how a card's run is asked for (in its project's worktree, with a QA run's
//! verdict tools) and recorded on the card when it starts and when it ends.

use bosun_agents::record::AgentReads;
use bosun_runs::record::RunReads;
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use bosun_shared::projects::RunGit;
use bosun_shared::run::{Outcome, RunState};
use bosun_shared::{AgentId, CardId, RunId};
use ractor::{ActorProcessingErr, ActorRef};
use tracing::warn;

use crate::record::{BoardChange, CardRecord, CardRun, CardWorktree, Hold, ProjectRecord};
use crate::{BoardError, BoardMsg, BoardState, worktree};
use bosun_agents::launch;
use bosun_agents::registry::AgentsContext;
use bosun_kit::handle::ActorHandle;
use bosun_kit::offload::blocking;
use bosun_runs::RunsMsg;

/// What the store says of a card's run.
pub(crate) struct RunNow {
    pub(crate) words: String,
    over: bool,
    /// Its runner was never recorded, so its program never started.
    never_ran: bool,
    /// Lost before its program was reported started: it may or may not have begun.
    maybe_ran: bool,
    why: String,
}

impl BoardState {
    /// The state of each card's latest run, and whether it is over.
    /// With `live_only`, runs already known to be over are not read again.
    pub(crate) async fn run_states(&self, live_only: bool) -> HashMap<RunId, RunNow> {
        let ids: Vec<RunId> = self
            .cards
            .values()
            .filter_map(|c| c.runs.last().map(|r| r.run))
            .filter(|r| !(live_only && self.over.contains(r)))
            .collect();
        let store = self.ctx.store.clone();
        blocking(move || {
            ids.into_iter()
                .filter_map(|id| {
                    store.run(id).ok().flatten().map(|r| {
                        let now = RunNow {
                            words: r.state.to_string(),
                            over: r.state.is_final(),
                            never_ran: r.runner.is_none()
                                && r.state == RunState::Exited(Outcome::Lost),
                            maybe_ran: r.runner.is_some()
                                && r.process.is_none()
                                && r.state == RunState::Exited(Outcome::Lost),
                            why: r.exit.map(|e| e.reason).unwrap_or_default(),
                        };
                        (id, now)
                    })
                })
                .collect()
        })
        .await
        .unwrap_or_default()
    }

    /// Whether a run of the card is being started or going.
    pub(crate) fn in_progress(&self, c: &CardRecord, states: &HashMap<RunId, RunNow>) -> bool {
        self.starting.contains(&c.id)
            || c.runs.last().is_some_and(|r| {
                !self.over.contains(&r.run) && states.get(&r.run).is_none_or(|s| !s.over)
            })
    }

    /// Starts the runs the board owes, as far as the limit allows, and notes runs that ended.
    pub(crate) async fn automate(
        &mut self,
        myself: &ActorRef<BoardMsg>,
    ) -> Result<(), ActorProcessingErr> {
        let states = self.run_states(true).await;
        for (run, now) in &states {
            if now.over && self.over.insert(*run) {
                // Said on its card once.
                self.note_run_over(*run, now).await?;
            }
        }
        let mut running = self
            .cards
            .values()
            .filter(|c| self.in_progress(c, &states))
            .count() as u32;
        let (due, qa_agents) = self.due_cards(&states).await;
        for id in due {
            if running >= self.meta.limit {
                break;
            }
            let Some(mut card) = self.cards.get(&id).cloned() else {
                continue;
            };
            let Some(agent) = card.assignee else {
                continue;
            };
            // A QA run of a card of a project gets a token for its verdict; its digest is
            // committed with the mark, before the run is asked for.
            let qa_token = (card.project.is_some() && qa_agents.contains(&agent))
                .then(bosun_shared::RunToken::generate);
            let mark = card.started_for != Some(card.moved);
            if mark || qa_token.is_some() {
                card.started_for = Some(card.moved);
                if let Some(token) = &qa_token {
                    card.qa_tokens.push(token.digest());
                }
                self.save(vec![BoardChange::Card(Box::new(card.clone()))])
                    .await?;
                self.cards.insert(id, card.clone());
                if mark {
                    bosun_kit::crash::point("board-after-mark");
                }
            }
            if let Some(token) = &qa_token {
                self.ctx.qa_tokens.open(id, token.digest());
            }
            self.starting.insert(id);
            running += 1;
            self.start_card(myself, &card, agent, qa_token);
        }
        Ok(())
    }

    /// A run of a card ended: said on the card (or, for a run that never started, or that may
    /// have, another run is owed or the card is held), and its QA tokens are spent.
    async fn note_run_over(&mut self, run: RunId, now: &RunNow) -> Result<(), ActorProcessingErr> {
        let card = self
            .cards
            .values()
            .find(|c| c.runs.last().is_some_and(|r| r.run == run && !r.ended))
            .cloned();
        if let Some(mut card) = card {
            card.qa_tokens.clear();
            if let Some(r) = card.runs.last_mut() {
                r.ended = true;
            }
            if now.never_ran {
                // Its program never started (bosund died first): this move is owed a
                // run still, under a new move so that Runs makes a new one.
                card.moved += 1;
                card.log(format!(
                    "run {} never started ({}); starting another",
                    run.short(),
                    now.why
                ));
            } else if now.maybe_ran {
                let reason = format!(
                    "run {} was lost before it said its program had started ({}), so it may or may not have begun; check, then take the card off hold to run it again",
                    run.short(),
                    now.why
                );
                card.log(format!("put on hold: {reason}"));
                card.hold = Some(Hold::needs_decision(reason));
                card.rerun_on_release = true;
            } else {
                card.log(format!("run {} {}", run.short(), now.words));
            }
            self.save(vec![BoardChange::Card(Box::new(card.clone()))])
                .await?;
            self.ctx.qa_tokens.close(card.id);
            self.cards.insert(card.id, card);
        }
        Ok(())
    }

    /// The cards owed a run, oldest move first: in an auto column, assigned to an agent not
    /// paused, not held, not run for this move and not in progress. With them, the QA agents.
    async fn due_cards(&self, states: &HashMap<RunId, RunNow>) -> (Vec<CardId>, HashSet<AgentId>) {
        let store = self.ctx.store.clone();
        let agents = blocking(move || store.agents())
            .await
            .ok()
            .and_then(Result::ok)
            .unwrap_or_default();
        let paused: HashSet<AgentId> = agents.iter().filter(|a| a.paused).map(|a| a.id).collect();
        let qa_agents: HashSet<AgentId> = agents
            .iter()
            .filter(|a| a.role.eq_ignore_ascii_case("qa"))
            .map(|a| a.id)
            .collect();
        let mut due: Vec<&CardRecord> = self
            .cards
            .values()
            .filter(|c| {
                self.is_auto(c.column)
                    && c.assignee.is_some_and(|a| !paused.contains(&a))
                    && c.hold.is_none()
                    && !c.runs.iter().any(|r| r.moved == c.moved)
                    && !self.in_progress(c, states)
            })
            .collect();
        due.sort_by_key(|c| (c.moved_at, c.id));
        let due: Vec<CardId> = due.into_iter().map(|c| c.id).collect();
        (due, qa_agents)
    }

    /// Asks, in a task of its own, for the run of a card by its agent (in a worktree of the
    /// card's project, when it has one); the Board hears how it went as [`BoardMsg::Started`].
    fn start_card(
        &self,
        myself: &ActorRef<BoardMsg>,
        card: &CardRecord,
        agent: AgentId,
        qa_token: Option<bosun_shared::RunToken>,
    ) {
        let id = card.id;
        let (ctx, runs, me) = (
            self.ctx.agents.clone(),
            self.ctx.runs.clone(),
            myself.clone(),
        );
        let qa = QaLaunch {
            url: self.ctx.mcp_url.get().cloned(),
            token: qa_token,
        };
        let (prompt, moved) = (card.prompt(), card.moved);
        let place = match card.project {
            None => Ok(None),
            Some(p) => self
                .projects
                .get(&p)
                .map(|project| {
                    Some(Place {
                        worktrees: self.ctx.worktrees.clone(),
                        project: project.clone(),
                        title: card.title.clone(),
                        recorded: card.worktree.clone(),
                    })
                })
                .ok_or_else(|| {
                    BoardError::not_found(
                        "its project is gone; put it in another (`bosun board card edit CARD --project NAME`)",
                    )
                }),
        };
        tokio::spawn(async move {
            let result = match place {
                Ok(place) => {
                    start_card_run(&ctx, &runs, agent, &prompt, (id, moved), place, qa).await
                }
                Err(e) => Err(e),
            };
            let _ = me.cast(BoardMsg::Started {
                card: id,
                moved,
                result,
            });
        });
    }

    pub(crate) async fn started(
        &mut self,
        id: CardId,
        moved: u64,
        result: Result<(RunId, Option<CardWorktree>), BoardError>,
    ) -> Result<(), ActorProcessingErr> {
        let Some(mut card) = self.cards.get(&id).cloned() else {
            return Ok(());
        };
        match result {
            Ok((run, wt)) => {
                let recorded = card.worktree.is_some();
                let new_place = wt.is_some() && wt != card.worktree;
                if let Some(wt) = wt.filter(|_| new_place) {
                    card.log(if recorded {
                        format!("worktree made again on branch {}", wt.branch)
                    } else {
                        format!("worktree made on branch {}", wt.branch)
                    });
                    card.worktree = Some(wt);
                }
                if card.runs.iter().any(|r| r.run == run) {
                    if new_place {
                        self.save(vec![BoardChange::Card(Box::new(card.clone()))])
                            .await?;
                        self.cards.insert(id, card);
                    }
                    return Ok(());
                }
                card.runs.push(CardRun {
                    run,
                    moved,
                    ended: false,
                });
                card.log(format!("run {} started", run.short()));
            }
            Err(e) => {
                warn!(card = %id, error = %e, "a card's run could not start");
                card.started_for = None;
                // No run of it is going, so no QA token of it is live.
                card.qa_tokens.clear();
                self.ctx.qa_tokens.close(id);
                let reason = format!(
                    "its agent's run could not start: {}. Put that right, then take the card off hold",
                    e
                );
                card.log(format!("put on hold: {reason}"));
                card.hold = Some(Hold::needs_decision(reason));
            }
        }
        self.save(vec![BoardChange::Card(Box::new(card.clone()))])
            .await?;
        self.cards.insert(id, card);
        Ok(())
    }
}

/// Where a card of a project runs: its worktree, made or found again before the run.
struct Place {
    worktrees: PathBuf,
    project: ProjectRecord,
    title: String,
    recorded: Option<CardWorktree>,
}

/// A run of the card's agent, carrying the card and its move; for a card of a project, in its
/// worktree, whatever the agent's own folder (the worktree is answered, to be recorded).
async fn start_card_run(
    ctx: &AgentsContext,
    runs: &ActorHandle<RunsMsg>,
    agent: AgentId,
    prompt: &str,
    card: (CardId, u64),
    place: Option<Place>,
    qa: QaLaunch,
) -> Result<(RunId, Option<CardWorktree>), BoardError> {
    let mut prepared = launch::prepare(ctx, &agent.to_string(), prompt).await?;
    prepared.run.card = Some(card);
    prepared.run.project = place.as_ref().map(|p| p.project.id);
    prepared.run.unattended = true;
    let rec = bosun_agents::registry::find(&ctx.store, &agent.to_string()).await?;
    if rec.role.eq_ignore_ascii_case("qa") && place.is_some() {
        give_verdict_tools(&mut prepared, rec.cli, &qa);
    }
    let mut spec = bosun_runs::RunSpec::from(prepared);
    let mut made = None;
    if let Some(p) = place {
        let (wt, head) = blocking(move || {
            worktree::ensure(
                &p.worktrees,
                &p.project,
                card.0,
                &p.title,
                p.recorded.as_ref(),
            )
        })
        .await?
        .map_err(|e| BoardError::unavailable(format!("its worktree could not be made: {e}")))?;
        spec.request.cwd = wt.path.clone();
        spec.git = Some(RunGit {
            branch: wt.branch.clone(),
            head_at_start: head,
            head_at_end: None,
        });
        made = Some(wt);
    }
    let run = bosun_runs::start(runs, spec).await.map(|v| v.record.id);
    bosun_kit::crash::point("board-after-run-started");
    Ok((run?, made))
}

/// What a QA run needs to give its verdict: bosun's MCP server and a token of its own (whose
/// digest the card keeps).
struct QaLaunch {
    url: Option<String>,
    token: Option<bosun_shared::RunToken>,
}

/// A QA run of a card of a project (a Claude Code agent) gets bosun's MCP server, with a token
/// of its own whose only tools are `qa_pass` and `qa_fail`; the token is one of the run's
/// secrets (written as `[redacted]` wherever the run prints it).
fn give_verdict_tools(
    prepared: &mut launch::Prepared,
    cli: bosun_shared::agents::CliKind,
    qa: &QaLaunch,
) {
    let why_not = match (&qa.url, cli) {
        (None, _) => Some("bosun's MCP server was not listening yet".to_string()),
        (Some(_), bosun_shared::agents::CliKind::Claude) => None,
        (Some(_), other) => Some(format!(
            "a {other} agent gets no bosun MCP server; make the QA agent a Claude Code agent"
        )),
    };
    let config = prepared
        .files
        .iter_mut()
        .find(|(path, _)| path.ends_with("/mcp.json"));
    let why_not = why_not.or_else(|| {
        qa.token
            .is_none()
            .then(|| "bosun gave it no token (its agent's role changed as it started)".to_string())
    });
    let (Some(url), None, Some((_, text)), Some(token)) = (&qa.url, &why_not, config, &qa.token)
    else {
        prepared.notes.push(format!(
            "This QA run cannot give its verdict through bosun's qa_pass and qa_fail tools: {}.",
            why_not.unwrap_or_else(|| "its MCP config was not found".into())
        ));
        return;
    };
    let Ok(mut json) = serde_json::from_str::<serde_json::Value>(text) else {
        return;
    };
    let secret = token.expose().to_string();
    json["mcpServers"][launch::BOSUN_SERVER] = serde_json::json!({
        "type": "http",
        "url": url,
        "headers": { "Authorization": format!("Bearer {secret}") },
    });
    *text = serde_json::to_string_pretty(&json).unwrap_or_default();
    bosun_agents::fence::allow_url(&mut prepared.run.net, url, "bosun's own MCP server");
    prepared.redact.push(secret);
    prepared.notes.push(
        "bosun's MCP server is given to this QA run: it ends with qa_pass or qa_fail for its card."
            .into(),
    );
}
