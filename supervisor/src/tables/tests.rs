//! The on-disk layout, pinned: the rows below are what the store held before the domains owned
//! their records (captured from that code: its writer, one record per table), and the rows of
//! what came later (a machine's DPoP-bound sign-in, with the `grant` and `dpop` fields; the
//! `registrations` table), and this build must read them unchanged and write the very same
//! bytes. The upgrade from schema 1 (`crate::upgrade`) changes only the agents it carries a
//! permission mode over for and the servers whose query it moves: pinned below too.

use bosun_agents::record::AgentReads;
use bosun_board::record::BoardReads;
use bosun_lead::record::ChatReads;
use bosun_mcp::record::ServerReads;
use bosun_runs::record::RunReads;
use bosun_runs::record::RunWrites;
use std::os::unix::fs::PermissionsExt;

use bosun_shared::{ChatId, RunId, ServerId};
use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};

use bosun_store::writer::{Change, StoreWriter};
use bosun_store::{Record, SCHEMA_VERSION, Store};

use super::TABLES;
use bosun_agents::record::AgentRecord;
use bosun_auth::record::{Grant, SignInRecord};
use bosun_auth::registrations::RegistrationRecord;
use bosun_board::record::{BoardChange, BoardMeta, CardRecord, ColumnRecord, NoteRecord};
use bosun_lead::record::{ChatChange, ChatRecord, MessageRecord, PendingRecord};
use bosun_mcp::record::ServerRecord;
use bosun_runs::record::RunRecord;
use bosun_runs::spend::UsageRow;

/// (table, key, value) of every row but the schema version, in table then key order.
const ROWS: &[(&str, &str, &str)] = &[
    ("meta", "board", r#"{"limit":3}"#),
    (
        "runs",
        "01j9aaaaaaaaaaaaaaaaaaaar1",
        r#"{"id":"01j9aaaaaaaaaaaaaaaaaaaar1","name":"build","program":"/bin/sh","args":["-c","echo hi"],"cwd":"/tmp/w","env_names":["PATH"],"time_cap_ms":60000,"ladder":{"int_grace_ms":5000,"term_grace_ms":5000},"state":{"exited":"succeeded"},"created_at":1700000000000,"started_at":1700000000100,"ended_at":1700000000200,"runner":{"pid":41,"start_time":7},"process":{"pid":42,"pgid":42,"start_time":8},"token_digest":"abcd","stop":{"reason":"stopped by the person","immediate":false},"exit":{"outcome":"succeeded","code":0,"signal":null,"reason":"exited with status 0"},"last_seq":3,"secret_files":["/tmp/w/mcp.json"],"agent":{"agent":"01j9aaaaaaaaaaaaaaaaaaaaa1","agent_name":"coder","cli":"claude","servers":[["everything","given"]],"claude_signs_in":["linear"],"card":["01j9aaaaaaaaaaaaaaaaaaaac1",2],"answer":["01j9aaaaaaaaaaaaaaaaaaaac3","01j9aaaaaaaaaaaaaaaaaaaaa2"],"tools":["Read"],"calls":[{"id":"t1","name":"Read","ok":true,"error":null,"input":"d1"}],"session":"sess","model":"m","result":{"is_error":false,"reason":"done","text":"ok"}}}"#,
    ),
    (
        "servers",
        "01j9aaaaaaaaaaaaaaaaaaaas1",
        r#"{"id":"01j9aaaaaaaaaaaaaaaaaaaas1","name":"everything","kind":"stdio","command":"npx","args":["-y","x"],"url":null,"env_names":["TOKEN"],"header_names":["Authorization"],"created_at":1700000000000,"updated_at":1700000000001,"listing":{"at":1700000000002,"tools":[{"name":"echo","title":"Echo","description":"echoes","params":[{"name":"message","type":"string","required":true,"description":"what"}],"hints":{"read_only":true,"destructive":false,"idempotent":null,"open_world":null}}],"pages":1,"truncated":null},"last_error":"boom","browser":{"version":"1.10.1","program":"/usr/bin/chromium"},"client_id":"cid","callback_port":8765,"sign_in_by":"claude-code"}"#,
    ),
    (
        "agents",
        "01j9aaaaaaaaaaaaaaaaaaaaa1",
        r#"{"id":"01j9aaaaaaaaaaaaaaaaaaaaa1","name":"coder","role":"writes code","cli":"claude","instructions":"be good","permission_mode":"acceptEdits","allowed_commands":["Bash(ls:*)"],"time_cap_ms":600000,"cwd":"/tmp/w","command":[],"env":[["A","1"]],"secret_env":["KEY"],"model":"opus","codex_config":[["k","v"]],"switches":{"mcp":{"01j9aaaaaaaaaaaaaaaaaaaas1":{"on":true,"tools":{"kind":"all_except","tools":["bad"]}}},"web_search":true,"web_fetch":{"mode":"domains","domains":["example.com"]},"browser_insecure_certs":false,"skills":true},"paused":true,"created_at":1700000000000,"updated_at":1700000000001,"last_run":{"run":"01j9aaaaaaaaaaaaaaaaaaaar1","at":1700000000002,"servers":[["everything","connected"]],"tools_seen":["Read"]}}"#,
    ),
    (
        "oauth",
        "01j9aaaaaaaaaaaaaaaaaaaas1",
        r#"{"server":"01j9aaaaaaaaaaaaaaaaaaaas1","resource":"https://mcp.example.com/mcp","issuer":"https://auth.example.com","authorization_endpoint":"https://auth.example.com/authorize","token_endpoint":"https://auth.example.com/token","revocation_endpoint":"https://auth.example.com/revoke","registration_endpoint":null,"client_id":"cid","client_auth":"client_secret_basic","registered":true,"redirect_uri":"http://127.0.0.1:8765/callback","scope":"read","expires_at":1700000360000,"signed_in_at":1700000000000,"refreshed_at":null,"refresh_started":1700000300000,"needs_sign_in":null,"wanted_scope":"read write","step_ups":1}"#,
    ),
    // A machine's sign-in (client credentials, `private_key_jwt`) whose tokens are DPoP-bound.
    (
        "oauth",
        "01j9aaaaaaaaaaaaaaaaaaaas2",
        r#"{"server":"01j9aaaaaaaaaaaaaaaaaaaas2","resource":"https://mcp.example.com/mcp","issuer":"https://auth.example.com","authorization_endpoint":"https://auth.example.com/authorize","token_endpoint":"https://auth.example.com/token","revocation_endpoint":null,"registration_endpoint":null,"client_id":"robot","client_auth":"private_key_jwt","registered":false,"redirect_uri":"","scope":"mcp:read","expires_at":1700000360000,"signed_in_at":1700000000000,"refreshed_at":1700000100000,"refresh_started":null,"needs_sign_in":null,"wanted_scope":null,"step_ups":0,"grant":"client_credentials","dpop":true}"#,
    ),
    (
        "registrations",
        "https://auth.example.com",
        r#"{"issuer":"https://auth.example.com","client_id":"client-1","client_auth":"client_secret_basic","has_secret":true,"redirect_uri":"http://127.0.0.1:8765/callback","registered_at":1700000000000}"#,
    ),
    (
        "columns",
        "01j9aaaaaaaaaaaaaaaaaaaac2",
        r#"{"id":"01j9aaaaaaaaaaaaaaaaaaaac2","name":"Doing","auto":true,"position":1,"created_at":1700000000000}"#,
    ),
    (
        "cards",
        "01j9aaaaaaaaaaaaaaaaaaaac1",
        r#"{"id":"01j9aaaaaaaaaaaaaaaaaaaac1","title":"Fix it","description":"the bug","acceptance":"tests pass","assignee":"01j9aaaaaaaaaaaaaaaaaaaaa1","column":"01j9aaaaaaaaaaaaaaaaaaaac2","hold":{"kind":"needs_decision","reason":"why"},"activity":[{"at":1700000000001,"what":"moved"}],"created_at":1700000000000,"updated_at":1700000000001,"moved":2,"moved_at":1700000000001,"started_for":2,"runs":[{"run":"01j9aaaaaaaaaaaaaaaaaaaar1","moved":2,"ended":true}],"rerun_on_release":true}"#,
    ),
    (
        "notes",
        "plans/today.md",
        r#"{"path":"plans/today.md","text":"ship it","version":3,"updated_at":1700000000000}"#,
    ),
    (
        "chats",
        "01j9aaaaaaaaaaaaaaaaaaaac3",
        r#"{"id":"01j9aaaaaaaaaaaaaaaaaaaac3","agent":"01j9aaaaaaaaaaaaaaaaaaaaa1","created_at":1700000000000,"session":"sess","messages":2,"answering":{"id":"01j9aaaaaaaaaaaaaaaaaaaaa2","run":"01j9aaaaaaaaaaaaaaaaaaaar1","token_digest":"ffff","started_at":1700000000001},"untold":["approved x"],"files":["/tmp/w/a.txt"],"next_action":4}"#,
    ),
    (
        "messages",
        "01j9aaaaaaaaaaaaaaaaaaaac3/000000000001",
        r#"{"chat":"01j9aaaaaaaaaaaaaaaaaaaac3","n":1,"at":1700000000000,"kind":"person","text":"hello","failed":false}"#,
    ),
    (
        "pending",
        "01j9aaaaaaaaaaaaaaaaaaaaa3",
        r#"{"id":"01j9aaaaaaaaaaaaaaaaaaaaa3","chat":"01j9aaaaaaaaaaaaaaaaaaaac3","answer":"01j9aaaaaaaaaaaaaaaaaaaaa2","tool":"write_note","args":{"path":"a.md","text":"x"},"cause":"mcp__everything__echo","at":1700000000000,"order":3,"state":{"state":"approved","at":1700000000001,"result":"done"}}"#,
    ),
];

/// The usage row the upgrade to schema 3 writes for the run of `ROWS` (its usage is empty).
const USAGE_ROW: &str = r#"{"id":"01j9aaaaaaaaaaaaaaaaaaaar1","created_at":1700000000000,"agent_name":"coder","cli":"claude","card":"01j9aaaaaaaaaaaaaaaaaaaac1","tokens":{"input":0,"output":0,"cache_read":0,"cache_write":0},"tool_calls":0,"models":[]}"#;

const RUN: &str = "01j9aaaaaaaaaaaaaaaaaaaar1";
const SERVER: &str = "01j9aaaaaaaaaaaaaaaaaaaas1";
const CHAT: &str = "01j9aaaaaaaaaaaaaaaaaaaac3";
/// The machine's sign-in, the second row of `oauth`.
const MACHINE: &str = "01j9aaaaaaaaaaaaaaaaaaaas2";
const ISSUER: &str = "https://auth.example.com";

/// The first row of `table`, or the one at `key`.
fn row(table: &str, key: Option<&str>) -> (&'static str, &'static str) {
    let (_, k, v) = ROWS
        .iter()
        .find(|(t, k, _)| *t == table && key.is_none_or(|key| key == *k))
        .unwrap();
    (k, v)
}

/// The first record of `R`'s table in `ROWS`, decoded, after checking that it encodes back to
/// the same key and bytes.
fn fixture<R: Record>() -> R {
    fixture_at(None)
}

/// As [`fixture`], for the row at `key` (a table pinned with more than one row).
fn fixture_at<R: Record>(key: Option<&str>) -> R {
    let (key, value) = row(R::TABLE, key);
    let rec = R::decode(value.as_bytes()).unwrap();
    assert_eq!(rec.key(), key, "{} key", R::TABLE);
    assert_eq!(
        String::from_utf8(rec.encode()).unwrap(),
        value,
        "{} bytes",
        R::TABLE
    );
    rec
}

/// Every row of the file, the way the old code's tables were typed.
fn rows_of(db: &Database) -> Vec<(String, String, Vec<u8>)> {
    let txn = db.begin_read().unwrap();
    let mut out = Vec::new();
    for name in std::iter::once("meta").chain(TABLES.iter().copied()) {
        let table = txn
            .open_table(TableDefinition::<&str, &[u8]>::new(name))
            .unwrap();
        for entry in table.iter().unwrap() {
            let (k, v) = entry.unwrap();
            out.push((name.to_string(), k.value().to_string(), v.value().to_vec()));
        }
    }
    out
}

/// The rows of `ROWS`, with the schema version `schema`.
fn expected_rows(schema: u64) -> Vec<(String, String, Vec<u8>)> {
    let mut out: Vec<_> = ROWS
        .iter()
        .map(|(t, k, v)| (t.to_string(), k.to_string(), v.as_bytes().to_vec()))
        .collect();
    out.insert(
        1,
        (
            "meta".into(),
            "schema_version".into(),
            schema.to_be_bytes().to_vec(),
        ),
    );
    out
}

#[test]
fn a_state_directory_of_the_old_layout_opens_and_reads_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bosun.redb");
    {
        // The file as the old code left it: every table `&str` -> `&[u8]`.
        let db = Database::create(&path).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut meta = txn
                .open_table(TableDefinition::<&str, &[u8]>::new("meta"))
                .unwrap();
            meta.insert("schema_version", 1u64.to_be_bytes().as_slice())
                .unwrap();
        }
        for (table, key, value) in ROWS {
            let mut t = txn
                .open_table(TableDefinition::<&str, &[u8]>::new(table))
                .unwrap();
            t.insert(*key, value.as_bytes()).unwrap();
        }
        txn.commit().unwrap();
    }
    assert_eq!(SCHEMA_VERSION, 4);
    let store = Store::open(&path, &dir.path().join("runs"), TABLES).unwrap();
    // Schema 1 is read as it is, and must be upgraded before bosund uses it.
    assert_eq!(store.upgrade_from(), Some(1));

    let run = store.run(RUN.parse().unwrap()).unwrap().unwrap();
    assert_eq!(run, fixture::<RunRecord>());
    assert_eq!(store.runs().unwrap(), vec![run]);
    assert_eq!(
        store.run_ids_with_prefix("01j9", 5).unwrap(),
        vec![RUN.parse::<RunId>().unwrap()]
    );
    assert_eq!(store.servers().unwrap(), vec![fixture::<ServerRecord>()]);
    assert_eq!(
        store.find_server("everything").unwrap(),
        Some(fixture::<ServerRecord>())
    );
    assert_eq!(store.agents().unwrap(), vec![fixture::<AgentRecord>()]);
    let server: ServerId = SERVER.parse().unwrap();
    assert_eq!(
        store.get::<SignInRecord>(&server).unwrap(),
        Some(fixture::<SignInRecord>())
    );
    let machine = fixture_at::<SignInRecord>(Some(MACHINE));
    assert_eq!(
        (machine.grant, machine.dpop),
        (Grant::ClientCredentials, true)
    );
    assert_eq!(
        store
            .get::<SignInRecord>(&MACHINE.parse().unwrap())
            .unwrap(),
        Some(machine)
    );
    assert_eq!(
        store.get::<RegistrationRecord>(ISSUER).unwrap(),
        Some(fixture::<RegistrationRecord>())
    );
    let (meta, columns, cards) = store.board().unwrap();
    assert_eq!(meta, Some(fixture::<BoardMeta>()));
    assert_eq!(columns, vec![fixture::<ColumnRecord>()]);
    assert_eq!(cards, vec![fixture::<CardRecord>()]);
    assert_eq!(
        store.get::<NoteRecord>("plans/today.md").unwrap(),
        Some(fixture::<NoteRecord>())
    );
    let (chats, pending) = store.chats().unwrap();
    assert_eq!(chats, vec![fixture::<ChatRecord>()]);
    assert_eq!(pending, vec![fixture::<PendingRecord>()]);
    let chat: ChatId = CHAT.parse().unwrap();
    assert_eq!(
        store.messages(chat).unwrap(),
        vec![fixture::<MessageRecord>()]
    );

    // Opening left every row as it was.
    drop(store);
    let db = Database::open(&path).unwrap();
    assert_eq!(rows_of(&db), expected_rows(1));
}

#[tokio::test]
async fn the_writer_writes_the_old_layout() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bosun.redb");
    let store = Store::open(&path, &dir.path().join("runs"), TABLES).unwrap();
    let (writer, thread) = StoreWriter::start(store.clone()).unwrap();
    writer.put_run(&fixture()).await.unwrap();
    writer.put(&fixture::<ServerRecord>()).await.unwrap();
    writer.put(&fixture::<AgentRecord>()).await.unwrap();
    writer.put(&fixture::<SignInRecord>()).await.unwrap();
    writer
        .put(&fixture_at::<SignInRecord>(Some(MACHINE)))
        .await
        .unwrap();
    writer.put(&fixture::<RegistrationRecord>()).await.unwrap();
    let gone = NoteRecord {
        path: "gone.md".into(),
        ..fixture()
    };
    let board = vec![
        BoardChange::Meta(fixture()),
        BoardChange::Column(fixture()),
        BoardChange::Card(Box::new(fixture())),
        BoardChange::Note(gone),
        BoardChange::Note(fixture()),
        BoardChange::DeleteNote("gone.md".into()),
    ];
    writer
        .commit(board.into_iter().map(Change::from).collect())
        .await
        .unwrap();
    let chats = [
        ChatChange::Chat(Box::new(fixture())),
        ChatChange::Message(Box::new(fixture())),
        ChatChange::Pending(Box::new(fixture())),
    ];
    writer
        .commit(chats.iter().map(Change::from).collect())
        .await
        .unwrap();
    // A record put and deleted is gone, and its table stays.
    let other = ServerRecord {
        id: ServerId::new(),
        name: "other".into(),
        ..fixture()
    };
    writer.put(&other).await.unwrap();
    writer.delete::<ServerRecord>(&other.id).await.unwrap();
    drop(writer);
    thread.join().unwrap();
    drop(store);

    let db = Database::open(&path).unwrap();
    assert_eq!(rows_of(&db), expected_rows(SCHEMA_VERSION));
}

/// A file of schema 1 holding `ROWS`, as the old code left it.
fn schema_1_file(path: &std::path::Path) {
    let db = Database::create(path).unwrap();
    let txn = db.begin_write().unwrap();
    {
        let mut meta = txn
            .open_table(TableDefinition::<&str, &[u8]>::new("meta"))
            .unwrap();
        meta.insert("schema_version", 1u64.to_be_bytes().as_slice())
            .unwrap();
    }
    for (table, key, value) in ROWS {
        let mut t = txn
            .open_table(TableDefinition::<&str, &[u8]>::new(table))
            .unwrap();
        t.insert(*key, value.as_bytes()).unwrap();
    }
    txn.commit().unwrap();
}

#[test]
fn the_upgrade_from_schema_1_carries_the_permission_mode_over_and_keeps_a_backup() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bosun.redb");
    schema_1_file(&path);
    let keychain = bosun_kit::keychain::Keychain::file(dir.path().join("keychain.json"));
    let mut store = Store::open(&path, &dir.path().join("runs"), TABLES).unwrap();
    let upgraded = crate::upgrade::run(&mut store, &keychain).unwrap();
    let line = upgraded.line.unwrap();
    let backup = dir.path().join("bosun.redb.v1.bak");
    assert!(
        line.contains("from schema 1 to 4")
            && line.contains("what 1 run of coding CLIs used is kept apart")
            && line.contains(&backup.display().to_string())
            && line.contains("coder: Write, Edit, MultiEdit, NotebookEdit from acceptEdits"),
        "{line}"
    );
    assert_eq!(store.upgrade_from(), None);
    drop(store);

    // The backup is the store as it was, private.
    assert_eq!(
        std::fs::metadata(&backup).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert_eq!(rows_of(&Database::open(&backup).unwrap()), expected_rows(1));

    // The store: every row as it was but the schema version and the one agent with a mode.
    let rows = rows_of(&Database::open(&path).unwrap());
    let mut want = expected_rows(SCHEMA_VERSION);
    // ... and the run's usage row (schema 3), after the runs.
    let at = want.iter().position(|(t, _, _)| t == "runs").unwrap() + 1;
    want.insert(
        at,
        ("usage".into(), RUN.into(), USAGE_ROW.as_bytes().to_vec()),
    );
    let usage = UsageRow::of(&fixture::<RunRecord>()).unwrap();
    assert_eq!(String::from_utf8(usage.encode()).unwrap(), USAGE_ROW);
    let old: AgentRecord = fixture();
    let changed = rows
        .iter()
        .find(|(t, _, _)| t == "agents")
        .map(|(_, _, v)| AgentRecord::decode(v).unwrap())
        .unwrap();
    let carried = changed.carried_over.clone().unwrap();
    assert_eq!(carried.permission_mode, "acceptEdits");
    assert_eq!(
        carried.allowed,
        ["Write", "Edit", "MultiEdit", "NotebookEdit"]
    );
    let mut expected = old;
    for k in ["Write", "Edit", "MultiEdit", "NotebookEdit"] {
        expected
            .approvals
            .verdicts
            .insert(k.into(), bosun_shared::approvals::Verdict::AlwaysAllow);
    }
    expected.carried_over = Some(carried);
    assert_eq!(changed, expected);
    for row in want.iter_mut().filter(|(t, _, _)| t == "agents") {
        row.2 = expected.encode();
    }
    assert_eq!(rows, want);
    assert!(
        std::fs::read_dir(dir.path()).unwrap().flatten().all(|e| !e
            .file_name()
            .to_string_lossy()
            .ends_with(".new")
            && !e.file_name().to_string_lossy().ends_with(".work")),
        "no working file is left"
    );
}

#[test]
fn a_store_of_a_newer_schema_is_refused_with_words_and_the_backup_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bosun.redb");
    {
        let db = Database::create(&path).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut meta = txn
                .open_table(TableDefinition::<&str, &[u8]>::new("meta"))
                .unwrap();
            meta.insert(
                "schema_version",
                (SCHEMA_VERSION + 1).to_be_bytes().as_slice(),
            )
            .unwrap();
        }
        txn.commit().unwrap();
    }
    let e = Store::open(&path, &dir.path().join("runs"), TABLES)
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.starts_with(
            "this state directory was made by a newer bosun: upgrade, or restore the backup it made"
        ) && e.contains(
            &dir.path()
                .join(format!("bosun.redb.v{SCHEMA_VERSION}.bak"))
                .display()
                .to_string()
        ),
        "{e}"
    );
}

/// Issue 31: a record rewritten without its secret (as c9425cd moved an address query to the
/// keychain) leaves the old bytes in the file's free pages while bosund has it open, and in the
/// file when bosund is killed; the upgrade writes the file anew.
#[test]
fn the_upgrade_leaves_no_copy_of_a_secret_in_free_pages() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bosun.redb");
    let has = |p: &std::path::Path| {
        let canary = b"canary-free-page-9d2c";
        std::fs::read(p)
            .unwrap()
            .windows(canary.len())
            .any(|w| w == canary)
    };
    // The file as a killed daemon leaves it: copied while it is open (a clean close writes
    // redb's allocator state over free pages, which hides the bytes this test is about).
    let open = dir.path().join("open.redb");
    schema_1_file(&open);
    let (_, key, row) = ROWS.iter().find(|(t, _, _)| *t == "notes").unwrap();
    {
        let db = Database::open(&open).unwrap();
        let notes = TableDefinition::<&str, &[u8]>::new("notes");
        let secret = row.replace("ship it", "ship it with canary-free-page-9d2c");
        for value in [secret.as_str(), row] {
            let txn = db.begin_write().unwrap();
            txn.open_table(notes)
                .unwrap()
                .insert(*key, value.as_bytes())
                .unwrap();
            txn.commit().unwrap();
        }
        std::fs::copy(&open, &path).unwrap();
    }
    assert!(has(&path), "the old bytes are in a free page before");
    let keychain = bosun_kit::keychain::Keychain::file(dir.path().join("keychain.json"));
    let mut store = Store::open(&path, &dir.path().join("runs"), TABLES).unwrap();
    crate::upgrade::run(&mut store, &keychain).unwrap();
    assert!(!has(&path), "nor in the store after");
    assert!(
        !has(&dir.path().join("bosun.redb.v1.bak")),
        "nor in its backup"
    );
    assert_eq!(
        store.get::<NoteRecord>("plans/today.md").unwrap(),
        Some(fixture::<NoteRecord>())
    );
}

#[tokio::test]
async fn bosunds_settings_are_one_row_of_meta_and_a_store_without_it_reads_the_defaults() {
    use crate::settings::{DaemonSettings, Setting};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bosun.redb");
    let store = Store::open(&path, &dir.path().join("runs"), TABLES).unwrap();
    assert_eq!(
        store.get::<DaemonSettings>(DaemonSettings::KEY).unwrap(),
        None,
        "a store bosund never set anything in"
    );
    let (writer, thread) = StoreWriter::start(store.clone()).unwrap();
    let off = DaemonSettings::default().with(&[Setting::Notify(false)]);
    writer.put(&off).await.unwrap();
    assert_eq!(
        store.get::<DaemonSettings>(DaemonSettings::KEY).unwrap(),
        Some(off)
    );
    drop(writer);
    thread.join().unwrap();
    drop(store);
    let db = Database::open(&path).unwrap();
    let meta: Vec<_> = rows_of(&db)
        .into_iter()
        .filter(|(t, k, _)| t == "meta" && k == "daemon")
        .map(|(_, _, v)| String::from_utf8(v).unwrap())
        .collect();
    assert_eq!(meta, [r#"{"notify":false,"retention_ms":2592000000}"#]);
}

/// Two decisions as schema 3 kept them inside the run's record (`agent.decisions`), the second
/// one a person's, and the rows schema 4 keeps them in, in order.
const INLINE_DECISIONS: &str = r#"[{"key":"t1","tool":"Read","summary":"read a.txt","allowed":true,"by":"the policy (step 6)","at":1700000000150},{"key":"t2","tool":"Bash","summary":"$ rm -rf x","allowed":false,"by":"the person","approval":"01j9aaaaaaaaaaaaaaaaaaaaa4","message":"no","at":1700000000160}]"#;
const DECISION_ROWS: [(&str, &str); 2] = [
    (
        "01j9aaaaaaaaaaaaaaaaaaaar1/0000000000",
        r#"{"run":"01j9aaaaaaaaaaaaaaaaaaaar1","n":0,"decision":{"key":"t1","tool":"Read","summary":"read a.txt","allowed":true,"by":"the policy (step 6)","at":1700000000150}}"#,
    ),
    (
        "01j9aaaaaaaaaaaaaaaaaaaar1/0000000001",
        r#"{"run":"01j9aaaaaaaaaaaaaaaaaaaar1","n":1,"decision":{"key":"t2","tool":"Bash","summary":"$ rm -rf x","allowed":false,"by":"the person","approval":"01j9aaaaaaaaaaaaaaaaaaaaa4","message":"no","at":1700000000160}}"#,
    ),
];

#[test]
fn the_upgrade_from_schema_3_moves_each_runs_decisions_into_rows_of_their_own_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bosun.redb");
    let (_, run_row) = row("runs", None);
    let inline = run_row.replace(
        r#""result":{"is_error":false,"reason":"done","text":"ok"}}"#,
        &format!(
            r#""result":{{"is_error":false,"reason":"done","text":"ok"}},"decisions":{INLINE_DECISIONS}}}"#
        ),
    );
    assert_ne!(inline, run_row);
    {
        let db = Database::create(&path).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut meta = txn
                .open_table(TableDefinition::<&str, &[u8]>::new("meta"))
                .unwrap();
            meta.insert("schema_version", 3u64.to_be_bytes().as_slice())
                .unwrap();
        }
        for (table, key, value) in ROWS {
            let value = if *table == "runs" { &inline } else { *value };
            txn.open_table(TableDefinition::<&str, &[u8]>::new(table))
                .unwrap()
                .insert(*key, value.as_bytes())
                .unwrap();
        }
        txn.commit().unwrap();
    }
    let keychain = bosun_kit::keychain::Keychain::file(dir.path().join("keychain.json"));
    let mut store = Store::open(&path, &dir.path().join("runs"), TABLES).unwrap();
    let line = crate::upgrade::run(&mut store, &keychain)
        .unwrap()
        .line
        .unwrap();
    assert!(
        line.contains("from schema 3 to 4")
            && line.contains("the runs' decisions on tool calls (2) are now kept a row each"),
        "{line}"
    );
    // Read back with its record, in order, as schema 3 had them.
    let run = store.run(RUN.parse().unwrap()).unwrap().unwrap();
    let want: Vec<bosun_agents::record::Decision> = serde_json::from_str(INLINE_DECISIONS).unwrap();
    let got: Vec<_> = run
        .agent
        .as_ref()
        .unwrap()
        .decisions
        .iter()
        .map(|d| (**d).clone())
        .collect();
    assert_eq!(got, want);
    assert_eq!(store.runs().unwrap(), vec![run]);
    drop(store);

    // The store: the record as schema 4 writes it (no decisions), and a row each.
    let rows = rows_of(&Database::open(&path).unwrap());
    let mut expected = expected_rows(SCHEMA_VERSION);
    let at = expected.iter().position(|(t, _, _)| t == "runs").unwrap() + 1;
    for (i, (key, value)) in DECISION_ROWS.iter().enumerate() {
        expected.insert(
            at + i,
            (
                "decisions".into(),
                key.to_string(),
                value.as_bytes().to_vec(),
            ),
        );
    }
    assert_eq!(rows, expected);
    // The backup is the store as schema 3 had it.
    let backup = rows_of(&Database::open(dir.path().join("bosun.redb.v3.bak")).unwrap());
    assert!(
        backup
            .iter()
            .any(|(t, _, v)| t == "runs" && *v == inline.as_bytes()),
        "the backup keeps the record with its decisions"
    );
}
