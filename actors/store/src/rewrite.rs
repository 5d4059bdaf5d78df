//! Writing the store anew: a fresh file holding the live rows only, changed by a migration, then
//! put in place of the old one. It is how a migration upgrades the schema and how a secret
//! moved out of the store leaves no copy behind.
//!
//! redb does not wipe a page it frees: a record rewritten without a secret leaves its old bytes
//! in the file's free space until a later write happens to reuse that page, and `compact` only
//! moves pages toward the start, so a freed page that stays below the end keeps them. A file
//! made of the live rows and nothing else has no free page holding anything.
//!
//! The steps, and why a crash between any two is safe:
//! 1. On an upgrade, the backup: the live rows are copied into a working file, scrubbed there
//!    (a secret an older bosun kept in a record goes to the keychain), copied once more into
//!    `bosun.redb.v<old>.bak.new` and renamed to `bosun.redb.v<old>.bak`: the store as it was
//!    in its own schema, which the older bosun reads, kept 0600.
//! 2. The store: the live rows are copied into a working file with the new schema version,
//!    scrubbed and migrated there, and copied once more into `bosun.redb.new` (a change frees
//!    pages that still hold what it replaced; the second copy leaves them behind), committed
//!    with an fsync. A crash until here leaves `bosun.redb` as it was, and the next start begins
//!    again (the leftover files are replaced).
//! 3. The old file is closed, `bosun.redb.new` is renamed over it and the directory is
//!    fsynced: the rename is atomic, so the store is the old file or the new one, whole.
//!
//! # Caveats
//! The old file's blocks go back to the file system as they are: a disk read below the file
//! system could still find them until they are reused. A secret the keychain could not take
//! stays in the store and in its backup, as it was, until a later start moves it. The backup of
//! a store whose queries were moved by this upgrade has them in the keychain: a bosun older
//! that kept queries in the store (before commit 6ca3fd5) would reach those servers without
//! them.

use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError};

use redb::{
    Database, ReadableDatabase, ReadableTable, TableDefinition, TableHandle, WriteTransaction,
};

use super::record::{Record, table};
use super::{Handle, META, SCHEMA_VERSION, Store, StoreError, open_db};

/// The fresh copy a migration changes before it takes the old file's place.
pub struct Rewrite {
    db: Database,
}

impl Rewrite {
    /// A read transaction of the copy, as it is now.
    pub fn read(&self) -> Result<super::Reader, StoreError> {
        Ok(super::Reader(self.db.begin_read()?))
    }

    /// Every record of `R`'s table in the copy, in key order.
    pub fn all<R: Record>(&self) -> Result<Vec<R>, StoreError> {
        super::Reader(self.db.begin_read()?).all()
    }

    /// Puts many records into the copy, in one transaction.
    pub fn put_all<R: Record>(&self, recs: &[R]) -> Result<(), StoreError> {
        let txn = self.db.begin_write()?;
        {
            let mut t = txn.open_table(table(R::TABLE))?;
            for rec in recs {
                t.insert(rec.key().as_str(), rec.encode().as_slice())?;
            }
        }
        txn.commit()?;
        Ok(())
    }

    /// Puts a record into the copy.
    pub fn put<R: Record>(&self, rec: &R) -> Result<(), StoreError> {
        let txn = self.db.begin_write()?;
        {
            let mut t = txn.open_table(table(R::TABLE))?;
            t.insert(rec.key().as_str(), rec.encode().as_slice())?;
        }
        txn.commit()?;
        Ok(())
    }
}

/// Where the backup of a store of schema `version` is kept: beside it.
pub fn backup_path(store: &Path, version: u64) -> PathBuf {
    let mut name = store.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".v{version}.bak"));
    store.with_file_name(name)
}

/// `path` with `suffix` added to its file name.
fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(suffix);
    path.with_file_name(name)
}

impl Store {
    /// The schema of the file when it was opened, when it is older than this build's: the
    /// store must be upgraded (by [`Store::rewrite`]) before anything else uses it.
    pub fn upgrade_from(&self) -> Option<u64> {
        self.older
    }

    /// Writes the store anew and puts it in place (see the module's steps): `scrub` changes a
    /// copy of it as it is (taking secrets out of it; on an upgrade, that copy is the backup, in
    /// the old schema), then `migrate` changes the copy that becomes the store. Call it before
    /// the writer starts and before anything reads: the old file is closed under every handle.
    /// Returns what `migrate` returned, and the backup's path when one was made.
    pub fn rewrite<T>(
        &mut self,
        scrub: impl Fn(&Rewrite) -> Result<(), StoreError>,
        migrate: impl FnOnce(&Rewrite) -> Result<T, StoreError>,
    ) -> Result<(T, Option<PathBuf>), StoreError> {
        let old = self.db()?;
        let backup = match self.older {
            Some(version) => {
                let backup = backup_path(&self.path, version);
                let ((), made) = staged(&old, &backup, None, &scrub)?;
                std::fs::rename(&made, &backup)?;
                Some(backup)
            }
            None => None,
        };
        let (out, made) = staged(&old, &self.path, Some(SCHEMA_VERSION), |copy| {
            scrub(copy)?;
            migrate(copy)
        })?;
        drop(old);

        let mut slot = self.db.write().unwrap_or_else(PoisonError::into_inner);
        if let Handle::Open(db) = &*slot
            && Arc::strong_count(db) > 1
        {
            return Err(StoreError::Corrupt(
                "the store was in use while it was being written anew".into(),
            ));
        }
        *slot = Handle::Closed("bosund's store is being written anew; try again".into());
        std::fs::rename(&made, &self.path)?;
        if let Some(dir) = self.path.parent() {
            std::fs::File::open(dir)?.sync_all()?;
        }
        *slot = Handle::Open(Arc::new(open_db(&self.path)?));
        self.older = None;
        Ok((out, backup))
    }
}

/// A new file for `dest`, made of the live rows of `from` changed by `change`: the rows are
/// copied into a working file and changed there, then copied once more into `<dest>.new` (a
/// change frees pages of the working file that still hold what it replaced). Returns what
/// `change` returned and the `.new` file, 0600 and fsynced, for the caller to rename.
fn staged<T>(
    from: &Database,
    dest: &Path,
    schema: Option<u64>,
    change: impl FnOnce(&Rewrite) -> Result<T, StoreError>,
) -> Result<(T, PathBuf), StoreError> {
    let work = with_suffix(dest, ".work");
    let made = with_suffix(dest, ".new");
    let copy = Rewrite {
        db: copy_live(from, &work, schema)?,
    };
    let out = change(&copy)?;
    drop(copy_live(&copy.db, &made, None)?);
    drop(copy);
    std::fs::remove_file(&work)?;
    set_private(&made)?;
    Ok((out, made))
}

/// The file's private bits (0600), whatever the umask was.
fn set_private(path: &Path) -> Result<(), StoreError> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    Ok(())
}

/// Copies every live row of `from` into a new file at `to` (one left by an interrupted attempt
/// is replaced), with the schema version set to `schema` when given, committed with an fsync.
fn copy_live(from: &Database, to: &Path, schema: Option<u64>) -> Result<Database, StoreError> {
    match std::fs::remove_file(to) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e.into()),
    }
    let db = super::builder()
        .create(to)
        .map_err(|e| StoreError::Db(e.into()))?;
    let read = from.begin_read()?;
    if read.list_multimap_tables()?.next().is_some() {
        return Err(StoreError::Corrupt(
            "the store has a multimap table, which no bosun writes".into(),
        ));
    }
    let txn = db.begin_write()?;
    for handle in read.list_tables()? {
        let def: TableDefinition<&str, &[u8]> = TableDefinition::new(handle.name());
        let source = read.open_table(def)?;
        let mut target = txn.open_table(def)?;
        for entry in source.iter()? {
            let (k, v) = entry?;
            target.insert(k.value(), v.value())?;
        }
    }
    if let Some(version) = schema {
        set_schema(&txn, version)?;
    }
    txn.commit()?;
    Ok(db)
}

fn set_schema(txn: &WriteTransaction, version: u64) -> Result<(), StoreError> {
    let mut meta = txn.open_table(table(META))?;
    meta.insert("schema_version", version.to_be_bytes().as_slice())?;
    Ok(())
}
