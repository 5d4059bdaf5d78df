//! What the daemon's parts share: the store, the keychain, the live runs, the actor refs, and
//! the paths.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use anyhow::Context;
use bosun_agents::login::LoginChecks;
use bosun_agents::registry::{AgentsContext, AgentsHandle};
use bosun_auth::AuthContext;
use bosun_board::{BoardContext, BoardMsg, QaTokens};
use bosun_kit::handle::ActorHandle;
use bosun_kit::keychain::Keychain;
use bosun_lead::answers::Answers;
use bosun_lead::chats::{ChatsContext, ChatsHandle};
use bosun_lead::server::McpCtx;
use bosun_lead::tools::ToolCtx;
use bosun_mcp::registry::{RegistryContext, RegistryMsg};
use bosun_notify::Notifier;
use bosun_placement::Remote;
use bosun_runs::live::LiveRuns;
use bosun_runs::spend::Spend;
use bosun_runs::{RunsContext, RunsMsg};
use bosun_shared::Timestamp;
use bosun_shared::notice::{Notice, NotificationKind};
use bosun_shared::paths::StateDir;
use bosun_shared::prices::Prices;

use crate::events::EventsHandle;
use bosun_store::Store;
use bosun_store::writer::StoreWriter;
use ractor::ActorRef;

use crate::control::RootMsg;
use crate::settings::DaemonSettings;

pub struct DaemonCtx {
    pub dirs: StateDir,
    pub store: Store,
    pub writer: StoreWriter,
    pub runner_bin: PathBuf,
    pub live: LiveRuns,
    pub events: EventsHandle,
    pub keychain: Keychain,
    pub agents: AgentsHandle,
    /// Sign-ins: shared by the Auth actor, the registry, List tools and the runs' launch.
    pub auth: AuthContext,
    /// The coding CLIs' sign-in checks that passed lately (one check for runs started together).
    pub logins: LoginChecks,
    pub started_at: Timestamp,
    root: RwLock<Option<ActorRef<RootMsg>>>,
    runs: ActorHandle<RunsMsg>,
    pub board: ActorHandle<BoardMsg>,
    /// The lead's live answers, for bosun's own MCP server.
    pub answers: Answers,
    pub chats: ChatsHandle,
    /// bosun's own MCP server, once it listens.
    pub mcp_url: Arc<OnceLock<String>>,
    /// The tokens of live QA runs of cards, shared by the Board and bosun's MCP server.
    pub qa_tokens: QaTokens,
    mcp_server: Mutex<Option<tokio::task::JoinHandle<()>>>,
    registry: ActorHandle<RegistryMsg>,
    root_failure: Mutex<Option<String>>,
    /// Remote placement, when `placement.toml` configures it: the backends, and the TLS
    /// listener runners on other hosts dial.
    pub remote: Option<RemoteListener>,
    /// What this bosund did when it upgraded the store at its start, in words, for
    /// `daemon status`.
    pub upgrade: Option<String>,
    /// bosund's own settings as last saved; held while a change is saved, so that two changes
    /// at once each start from the other's result.
    pub settings: tokio::sync::Mutex<DaemonSettings>,
    /// Desktop notifications: the switch `settings.notify` sets, and how they fare.
    pub notifier: Notifier,
    /// Wakes the pruner (`crate::prune`) for a round now.
    pub prune_now: tokio::sync::Notify,
    /// The pruner's last round since bosund started, for `daemon status`.
    pub last_prune: Mutex<Option<bosun_protocol::runs::PruneView>>,
    /// The last compaction of the store since bosund started, for `daemon status`.
    pub last_compact: Mutex<Option<bosun_protocol::runs::CompactView>>,
    /// What a run costs when its CLI does not say: `prices.toml` in the state directory, or
    /// the repository's.
    pub prices: Arc<Prices>,
    /// What the runs of each card and project (per day) spent together, for their budgets:
    /// filled from the store's usage rows before any actor starts.
    pub spend: Arc<Spend>,
    /// Who changed what agents may do, and who answered what (`audit.jsonl`).
    pub audit: Arc<crate::audit::AuditLog>,
}

/// Tells every UI (and so the desktop) that a server's sign-in can no longer be used.
fn sign_in_lost(events: EventsHandle) -> bosun_auth::SignInLost {
    let tell = crate::events::tell_notices(events);
    Arc::new(move |server, why| {
        tell(Notice {
            kind: NotificationKind::SignIn,
            text: format!(
                "{server} needs you to sign in again ({why}): bosun mcp sign-in {server}"
            ),
            card: None,
            chat: None,
            at: Timestamp::now(),
        });
    })
}

/// The runner listener over TCP with mutual TLS, bound once at startup (a restarted Listener
/// actor accepts on the same socket).
pub struct RemoteListener {
    pub remote: Arc<Remote>,
    pub tcp: Arc<tokio::net::TcpListener>,
    pub tls: tokio_rustls::TlsAcceptor,
    /// The address bound.
    pub bound: std::net::SocketAddr,
}

impl RemoteListener {
    pub fn describe(&self) -> String {
        if self.remote.advertise == self.bound.to_string() {
            format!("{} (mutual TLS)", self.bound)
        } else {
            format!(
                "{} (mutual TLS), dialled as {}",
                self.bound, self.remote.advertise
            )
        }
    }
}

fn read<T: Clone>(lock: &RwLock<Option<T>>) -> Option<T> {
    lock.read().ok().and_then(|a| a.clone())
}

fn write<T>(lock: &RwLock<Option<T>>, value: T) {
    if let Ok(mut a) = lock.write() {
        *a = Some(value);
    }
}

impl DaemonCtx {
    pub fn new(
        dirs: StateDir,
        store: Store,
        writer: StoreWriter,
        runner_bin: PathBuf,
        keychain: Keychain,
        started_at: Timestamp,
        remote: Option<RemoteListener>,
    ) -> Self {
        let events = EventsHandle::default();
        let auth = AuthContext::new(
            store.clone(),
            writer.clone(),
            keychain.clone(),
            bosun_mcp::record::server_names,
        )
        .with_sign_in_lost(sign_in_lost(events.clone()));
        let audit = Arc::new(crate::audit::AuditLog::new(dirs.root()));
        Self {
            dirs,
            store,
            writer,
            runner_bin,
            live: LiveRuns::default(),
            events,
            keychain,
            agents: AgentsHandle::default(),
            auth,
            logins: LoginChecks::default(),
            started_at,
            root: RwLock::new(None),
            runs: ActorHandle::default(),
            board: ActorHandle::default(),
            answers: Answers::default(),
            chats: ChatsHandle::default(),
            mcp_url: Arc::new(OnceLock::new()),
            qa_tokens: QaTokens::default(),
            mcp_server: Mutex::new(None),
            registry: ActorHandle::default(),
            root_failure: Mutex::new(None),
            remote,
            upgrade: None,
            settings: tokio::sync::Mutex::new(DaemonSettings::default()),
            notifier: Notifier::new(DaemonSettings::default().notify),
            prune_now: tokio::sync::Notify::new(),
            last_prune: Mutex::new(None),
            last_compact: Mutex::new(None),
            prices: Arc::new(Prices::built_in()),
            spend: Arc::new(Spend::default()),
            audit,
        }
    }

    /// With the sums of the runs' spending the store keeps.
    pub fn with_spend(mut self, spend: Spend) -> Self {
        self.spend = Arc::new(spend);
        self
    }

    /// With the price table bosund read at its start.
    pub fn with_prices(mut self, prices: Prices) -> Self {
        self.prices = Arc::new(prices);
        self
    }

    /// With bosund's settings as the store keeps them.
    pub fn with_settings(mut self, settings: DaemonSettings) -> Self {
        self.notifier.set(settings.notify);
        self.settings = tokio::sync::Mutex::new(settings);
        self
    }

    /// With what this bosund did when it upgraded the store at its start.
    pub fn with_upgrade(mut self, line: Option<String>) -> Self {
        self.upgrade = line;
        self
    }

    /// The actors, once Root has started them (and the current ones after a restart).
    pub fn root(&self) -> Option<ActorRef<RootMsg>> {
        read(&self.root)
    }

    pub fn runs(&self) -> Option<ActorRef<RunsMsg>> {
        self.runs.get()
    }

    /// Runs as the actors ask it (`runs::start`), across its restarts.
    pub fn runs_handle(&self) -> &ActorHandle<RunsMsg> {
        &self.runs
    }

    pub fn registry(&self) -> Option<ActorRef<RegistryMsg>> {
        self.registry.get()
    }

    pub fn set_root(&self, a: ActorRef<RootMsg>) {
        write(&self.root, a);
    }

    pub fn set_runs(&self, a: ActorRef<RunsMsg>) {
        self.runs.set(a);
    }

    pub fn set_registry(&self, a: ActorRef<RegistryMsg>) {
        self.registry.set(a);
    }

    pub fn record_root_failure(&self, why: String) {
        if let Ok(mut f) = self.root_failure.lock() {
            *f = Some(why);
        }
    }

    pub fn root_failure(&self) -> Option<String> {
        self.root_failure.lock().ok().and_then(|f| f.clone())
    }

    /// What the RunActors share, made from the daemon's parts.
    pub fn runs_context(&self) -> Arc<RunsContext> {
        Arc::new(RunsContext {
            store: self.store.clone(),
            writer: self.writer.clone(),
            dirs: self.dirs.clone(),
            runner_bin: self.runner_bin.clone(),
            live: self.live.clone(),
            tell: crate::events::tell_runs(self.events.clone()),
            agents: self.agents.clone(),
            answers: Arc::new(self.answers.clone()),
            remote: self.remote.as_ref().map(|r| r.remote.clone()),
            prices: self.prices.clone(),
            secrets: bosun_agents::secrets::SecretReader {
                keychain: self.keychain.clone(),
                auth: self.auth.clone(),
            },
            spend: self.spend.clone(),
            budgets: Arc::new(bosun_board::record::BoardBudgets(self.store.clone())),
            registry: self.registry.clone(),
        })
    }

    /// What the Agents actor works with.
    pub fn agents_context(&self) -> AgentsContext {
        AgentsContext {
            store: self.store.clone(),
            writer: self.writer.clone(),
            keychain: self.keychain.clone(),
            auth: self.auth.clone(),
            logins: self.logins.clone(),
        }
    }

    pub fn set_mcp_server(&self, task: tokio::task::JoinHandle<()>) {
        if let Ok(mut t) = self.mcp_server.lock() {
            *t = Some(task);
        }
    }

    /// Ends bosun's own MCP server and its connections (at shutdown).
    pub async fn stop_mcp_server(&self) {
        let task = self.mcp_server.lock().ok().and_then(|mut t| t.take());
        if let Some(task) = task {
            task.abort();
            let _ = task.await;
        }
    }

    /// What the lead's tools work with.
    pub fn tool_context(&self) -> ToolCtx {
        ToolCtx {
            store: self.store.clone(),
            board: self.board.clone(),
            agents: self.agents.clone(),
            agents_ctx: self.agents_context(),
            runs: self.runs.clone(),
            attachments: self.dirs.root().join("attachments"),
            shows: Arc::new(crate::api::views::lead::LeadShows),
            audit: self.audit.clone(),
        }
    }

    /// What the Chats actor works with.
    pub fn chats_context(&self) -> ChatsContext {
        ChatsContext {
            store: self.store.clone(),
            writer: self.writer.clone(),
            answers: self.answers.clone(),
            tools: self.tool_context(),
            mcp_url: self.mcp_url.clone(),
            tell: crate::events::tell_chats(self.events.clone()),
        }
    }

    /// What bosun's own MCP server works with.
    pub fn mcp_context(&self) -> McpCtx {
        McpCtx {
            writer: self.writer.clone(),
            answers: self.answers.clone(),
            tools: self.tool_context(),
            chats: self.chats.clone(),
            qa: self.qa_tokens.clone(),
        }
    }

    /// What the board works with.
    pub fn board_context(&self) -> BoardContext {
        BoardContext {
            store: self.store.clone(),
            writer: self.writer.clone(),
            agents: self.agents_context(),
            runs: self.runs.clone(),
            worktrees: self.dirs.worktrees(),
            mcp_url: self.mcp_url.clone(),
            qa_tokens: self.qa_tokens.clone(),
            tell: crate::events::tell_notices(self.events.clone()),
            spend: self.spend.clone(),
        }
    }

    /// What the MCP registry works with.
    pub fn registry_context(&self) -> RegistryContext {
        RegistryContext {
            store: self.store.clone(),
            writer: self.writer.clone(),
            keychain: self.keychain.clone(),
            auth: self.auth.clone(),
        }
    }
}

/// Where `bosun-runner` is: `$BOSUN_RUNNER_BIN`, else beside `bosund`, else on `PATH`.
pub fn runner_binary() -> anyhow::Result<PathBuf> {
    if let Some(p) = std::env::var_os("BOSUN_RUNNER_BIN") {
        return Ok(PathBuf::from(p));
    }
    let exe = std::env::current_exe().context("could not find bosund's own path")?;
    if let Some(beside) = exe.parent().map(|d| d.join("bosun-runner"))
        && beside.is_file()
    {
        return Ok(beside);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join("bosun-runner"))
        .find(|p| p.is_file())
        .context("bosun-runner was not found beside bosund or on PATH; install it next to bosund or set BOSUN_RUNNER_BIN")
}
