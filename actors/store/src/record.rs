//! What the store asks of a record, and reading records back.
//!
//! The store knows no domain: each domain owns its records and their tables and implements
//! [`Record`] for them; [`Reader`] (and the writer's [`Change`](super::writer::Change)) read and
//! write any of them through that trait alone.
//!
//! Every table is `&str` → `&[u8]`: the record's key written out, and the record as JSON. redb
//! keeps a table's key and value types in the file, so these two types, the table names, the
//! keys and the JSON are all part of the on-disk layout (pinned by `compat_tests.rs`). The
//! schema version is one for the whole file, kept by the store in `meta`.

use std::fmt::Display;

use redb::{ReadOnlyTable, ReadTransaction, ReadableTable, TableDefinition, TableError};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::StoreError;

/// A table of the store: a key written out, and a record's bytes.
pub(crate) type Table = TableDefinition<'static, &'static str, &'static [u8]>;

/// The definition of the table called `name`.
pub(crate) const fn table(name: &'static str) -> Table {
    TableDefinition::new(name)
}

/// A record the store keeps: one row of its table.
pub trait Record: Serialize + DeserializeOwned + Send + 'static {
    /// The name of its table in redb.
    const TABLE: &'static str;
    /// What it is called when it cannot be read back (`"server"` → "server record: …").
    const WHAT: &'static str;
    /// What it is found by; written out with `Display`, that is its key in the table.
    type Key: Display + ?Sized;

    /// Its key in its table: its [`Record::Key`] written out.
    fn key(&self) -> String;

    /// Its bytes in the table.
    fn encode(&self) -> Vec<u8> {
        // Serializing plain data to JSON cannot fail.
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// The record from its bytes in the table.
    fn decode(bytes: &[u8]) -> Result<Self, StoreError> {
        decode_part::<Self, Self>(bytes)
    }
}

/// The part of a record of `R` that `T` names, from the record's bytes in its table (the
/// fields `T` leaves out are passed over; its strings may borrow from `bytes`): for a pass over
/// many records that needs only a few fields of each (see [`Reader::each_bytes`]).
pub fn decode_part<'a, R: Record, T: Deserialize<'a>>(bytes: &'a [u8]) -> Result<T, StoreError> {
    serde_json::from_slice(bytes)
        .map_err(|e| StoreError::Corrupt(format!("{} record: {e}", R::WHAT)))
}

/// A read transaction: whatever is read through one `Reader` is one moment of the store.
pub struct Reader(pub(super) ReadTransaction);

impl Reader {
    /// The table of `R`, or none when nothing was ever written to it.
    fn table<R: Record>(
        &self,
    ) -> Result<Option<ReadOnlyTable<&'static str, &'static [u8]>>, StoreError> {
        match self.0.open_table(table(R::TABLE)) {
            Ok(t) => Ok(Some(t)),
            Err(TableError::TableDoesNotExist(_)) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// The record with this key, if there is one.
    pub fn get<R: Record>(&self, key: &R::Key) -> Result<Option<R>, StoreError> {
        let Some(table) = self.table::<R>()? else {
            return Ok(None);
        };
        let key = key.to_string();
        table
            .get(key.as_str())?
            .map(|v| R::decode(v.value()))
            .transpose()
    }

    /// Every record of its table, in key order.
    pub fn all<R: Record>(&self) -> Result<Vec<R>, StoreError> {
        let Some(table) = self.table::<R>()? else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for entry in table.iter()? {
            let (_, v) = entry?;
            out.push(R::decode(v.value())?);
        }
        Ok(out)
    }

    /// Hands each record of its table to `f`, in key order, one at a time: for a pass over a
    /// table too large to hold whole.
    pub fn each<R: Record>(
        &self,
        mut f: impl FnMut(R) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        let Some(table) = self.table::<R>()? else {
            return Ok(());
        };
        for entry in table.iter()? {
            let (_, v) = entry?;
            f(R::decode(v.value())?)?;
        }
        Ok(())
    }

    /// Hands the bytes of each record of `R`'s table to `f`, in key order, one at a time,
    /// undecoded: for a pass that reads only part of each record ([`decode_part`]).
    pub fn each_bytes<R: Record>(
        &self,
        mut f: impl FnMut(&[u8]) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        let Some(table) = self.table::<R>()? else {
            return Ok(());
        };
        for entry in table.iter()? {
            let (_, v) = entry?;
            f(v.value())?;
        }
        Ok(())
    }

    /// The records whose keys are in `from..to`, in key order.
    pub fn range<R: Record>(&self, from: &str, to: &str) -> Result<Vec<R>, StoreError> {
        let Some(table) = self.table::<R>()? else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for entry in table.range(from..to)? {
            let (_, v) = entry?;
            out.push(R::decode(v.value())?);
        }
        Ok(out)
    }

    /// The keys that start with `prefix`, in order, at most `limit` of them.
    pub fn keys_with_prefix<R: Record>(
        &self,
        prefix: &str,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        let Some(table) = self.table::<R>()? else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for entry in table.range(prefix..)? {
            let (k, _) = entry?;
            let key = k.value();
            if !key.starts_with(prefix) || out.len() >= limit {
                break;
            }
            out.push(key.to_string());
        }
        Ok(out)
    }
}
