//! A server an older bosun kept with its whole address in the store: it works unmoved, and its
//! query moves to the keychain at bosund's start with no copy left in the file.

use bosun_kit::keychain::Keychain;
use bosun_mcp::record::ServerReads;
use bosun_mcp::record::connect_url;
use bosun_store::Store;
use redb::{Database, ReadableDatabase, TableDefinition};

const ID: &str = "01j9aaaaaaaaaaaaaaaaaaaas2";

/// A server row as bosun wrote it before the query was a secret: the whole address in `url`.
const OLD_ROW: &str = r#"{"id":"01j9aaaaaaaaaaaaaaaaaaaas2","name":"keyed","kind":"http","command":null,"args":[],"url":"https://mcp.example.com/mcp?api_key=old-layout-k3y","env_names":[],"header_names":["X-Team"],"created_at":1700000000000,"updated_at":1700000000001,"listing":null,"last_error":"could not reach https://mcp.example.com/mcp?api_key=old-layout-k3y: dns error","client_id":null,"callback_port":null,"sign_in_by":"bosun"}"#;

fn old_store(dir: &std::path::Path) -> Store {
    let path = dir.join("bosun.redb");
    {
        let db = Database::create(&path).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut meta = txn
                .open_table(TableDefinition::<&str, &[u8]>::new("meta"))
                .unwrap();
            meta.insert("schema_version", 1u64.to_be_bytes().as_slice())
                .unwrap();
            let mut servers = txn
                .open_table(TableDefinition::<&str, &[u8]>::new("servers"))
                .unwrap();
            servers.insert(ID, OLD_ROW.as_bytes()).unwrap();
        }
        txn.commit().unwrap();
    }
    Store::open(&path, &dir.join("runs"), crate::tables::TABLES).unwrap()
}

fn stored_bytes(store: Store, dir: &std::path::Path) -> String {
    drop(store);
    let db = Database::open(dir.join("bosun.redb")).unwrap();
    let txn = db.begin_read().unwrap();
    let table = txn
        .open_table(TableDefinition::<&str, &[u8]>::new("servers"))
        .unwrap();
    let row = table.get(ID).unwrap().unwrap();
    String::from_utf8(row.value().to_vec()).unwrap()
}

#[test]
fn an_old_record_works_as_it_is_and_its_query_moves_to_the_keychain_on_start() {
    let dir = tempfile::tempdir().unwrap();
    let store = old_store(dir.path());
    let rec = store.find_server("keyed").unwrap().unwrap();
    assert!(!rec.query_in_keychain);
    // Unmoved, it is still reached at its whole address and shown without the query.
    let keychain = Keychain::file(dir.path().join("keychain.json"));
    assert_eq!(
        connect_url(&keychain, &rec).unwrap().as_deref(),
        Some("https://mcp.example.com/mcp?api_key=old-layout-k3y")
    );
    assert_eq!(
        rec.shown_url().as_deref(),
        Some("https://mcp.example.com/mcp?…")
    );
    assert_eq!(
        rec.shown_error().as_deref(),
        Some("could not reach https://mcp.example.com/mcp?…: dns error")
    );

    // Without a keychain to move it to, it stays as it was (and works); the store is upgraded.
    let mut store = store;
    let nowhere = Keychain::file(dir.path().join("no/such/dir/keychain.json"));
    super::run(&mut store, &nowhere).unwrap();
    assert_eq!(store.upgrade_from(), None);
    assert_eq!(store.find_server("keyed").unwrap(), Some(rec.clone()));

    // The next start moves it, and writes the store anew.
    super::run(&mut store, &keychain).unwrap();
    let moved = store.find_server("keyed").unwrap().unwrap();
    assert!(moved.query_in_keychain);
    assert_eq!(moved.url.as_deref(), Some("https://mcp.example.com/mcp"));
    assert_eq!(
        moved.last_error.as_deref(),
        Some("could not reach https://mcp.example.com/mcp?…: dns error")
    );
    assert_eq!(
        keychain
            .get(&format!("mcp/{ID}/url-query"))
            .unwrap()
            .as_deref(),
        Some("api_key=old-layout-k3y")
    );
    assert_eq!(
        connect_url(&keychain, &moved).unwrap().as_deref(),
        Some("https://mcp.example.com/mcp?api_key=old-layout-k3y")
    );
    assert_eq!(
        moved.shown_url().as_deref(),
        Some("https://mcp.example.com/mcp?…")
    );
    // No copy of it stays anywhere in the file, free pages included.
    let file = std::fs::read(dir.path().join("bosun.redb")).unwrap();
    assert!(!file.windows(14).any(|w| w == b"old-layout-k3y"));
    // A second start finds nothing to move.
    super::run(&mut store, &keychain).unwrap();
    assert_eq!(store.find_server("keyed").unwrap(), Some(moved));

    let bytes = stored_bytes(store, dir.path());
    assert!(!bytes.contains("old-layout-k3y"), "{bytes}");
    assert!(bytes.contains(r#""url":"https://mcp.example.com/mcp","query_in_keychain":true"#));

    // Its query gone from the keychain, it says how to give it again.
    std::fs::write(dir.path().join("keychain.json"), "{}").unwrap();
    let store = Store::open(
        &dir.path().join("bosun.redb"),
        &dir.path().join("runs"),
        crate::tables::TABLES,
    )
    .unwrap();
    let rec = store.find_server("keyed").unwrap().unwrap();
    let e = connect_url(&keychain, &rec).unwrap_err().to_string();
    assert!(e.contains("bosun mcp edit keyed --url URL"), "{e}");
}
