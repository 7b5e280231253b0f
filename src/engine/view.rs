//! Views (`CREATE VIEW`): each kept as its defining query's SQL text in the `meta` column
//! family under `view/<name>` (JSON); the SQL layer binds that text where a query names the
//! view (expanded at plan time, as PostgreSQL's rewriter does).

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use rocksdb::WriteBatch;
use serde::{Deserialize, Serialize};

use super::{Database, Inner};
use crate::error::{Error, Result, SqlState};
use crate::store::CF_META;
use crate::types::DataType;

/// A view's definition as stored.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ViewDef {
    pub name: String,
    /// The defining query, as SQL text.
    pub sql: String,
    /// The output columns (name, type), fixed when the view is created, as PostgreSQL fixes a
    /// view's `pg_attribute` rows: a `SELECT *` view keeps these columns when its table gains
    /// one.
    pub columns: Vec<(String, DataType)>,
    /// The tables and views the query reads (DROP of one of them fails while this view exists,
    /// unless CASCADE).
    #[serde(default)]
    pub depends_on: Vec<String>,
    /// Whether `columns` carry their type modifiers. False for a view stored before they were
    /// kept: its modifiers are unknown, and `CREATE OR REPLACE VIEW` compares its columns'
    /// types without them.
    #[serde(default)]
    pub typmods: bool,
}

/// The views of an engine instance, loaded from the store on first use.
#[derive(Default)]
pub(crate) struct Views {
    state: Mutex<Option<HashMap<String, Arc<ViewDef>>>>,
}

fn meta_key(name: &str) -> String {
    format!("view/{name}")
}

impl Inner {
    fn with_views<R>(
        &self,
        f: impl FnOnce(&Inner, &mut HashMap<String, Arc<ViewDef>>) -> Result<R>,
    ) -> Result<R> {
        self.check_open()?;
        let mut g = self.views.state.lock();
        if g.is_none() {
            let mut m = HashMap::new();
            for (_, v) in self.store.scan_prefix(CF_META, b"view/")? {
                let def: ViewDef = serde_json::from_slice(&v)
                    .map_err(|e| Error::Corrupt(format!("view definition: {e}")))?;
                m.insert(def.name.clone(), Arc::new(def));
            }
            *g = Some(m);
        }
        f(self, g.as_mut().expect("loaded above"))
    }
}

impl Database {
    /// Creates a view, or replaces the one of that name when `or_replace` (42P07 if it exists
    /// otherwise). The SQL layer checks the query and the replacement's columns first.
    pub fn create_view(&self, def: ViewDef, or_replace: bool) -> Result<()> {
        if self.inner().table(&def.name).is_ok() {
            return Err(Error::new(
                SqlState::DUPLICATE_TABLE,
                format!("relation \"{}\" already exists", def.name),
            ));
        }
        self.inner().with_views(|inner, m| {
            if m.contains_key(&def.name) && !or_replace {
                return Err(Error::new(
                    SqlState::DUPLICATE_TABLE,
                    format!("relation \"{}\" already exists", def.name),
                ));
            }
            let mut b = WriteBatch::default();
            let json = serde_json::to_vec(&def).expect("a ViewDef always serializes");
            b.put_cf(inner.store.db()?.cf(CF_META), meta_key(&def.name), json);
            inner.store.write_sync(b)?;
            m.insert(def.name.clone(), Arc::new(def));
            Ok(())
        })
    }

    /// Drops a view; false if there is none of that name.
    pub fn drop_view(&self, name: &str) -> Result<bool> {
        self.inner().with_views(|inner, m| {
            if !m.contains_key(name) {
                return Ok(false);
            }
            let mut b = WriteBatch::default();
            b.delete_cf(inner.store.db()?.cf(CF_META), meta_key(name));
            inner.store.write_sync(b)?;
            m.remove(name);
            Ok(true)
        })
    }

    /// The view named `name`, if there is one. The same `Arc` until the view is replaced or
    /// dropped (plans compare it to know whether they are still valid).
    pub fn view(&self, name: &str) -> Result<Option<Arc<ViewDef>>> {
        self.inner().with_views(|_, m| Ok(m.get(name).cloned()))
    }

    /// Every view, sorted by name (for catalog relations: pg_class relkind 'v', pg_views,
    /// information_schema.views).
    pub fn views(&self) -> Result<Vec<Arc<ViewDef>>> {
        self.inner().with_views(|_, m| {
            let mut v: Vec<Arc<ViewDef>> = m.values().cloned().collect();
            v.sort_by(|a, b| a.name.cmp(&b.name));
            Ok(v)
        })
    }

    /// The views that read `name` (a table or a view) directly.
    pub fn views_depending_on(&self, name: &str) -> Result<Vec<Arc<ViewDef>>> {
        Ok(self
            .views()?
            .into_iter()
            .filter(|v| v.depends_on.iter().any(|d| d == name))
            .collect())
    }
}
