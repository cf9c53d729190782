//! What omp sees of its credentials, and what the job changed of it: the upstream snapshot
//! filtered to the provider (only the keys omp accepts, never a `!command` key), minus the
//! credentials omp disabled during the job, with the blocks omp set during the job merged in.
//! No HTTP here: proxy.rs routes omp's requests, guards them and moves the generation.

use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{json, Map, Value};

/// The most blocks the job keeps per credential; the oldest goes first. omp sets one per key
/// and scope it saw fail, a handful in a job: the bound only keeps a hostile seat from growing
/// every snapshot (and every open stream's queue of them) without limit.
const MAX_LOCAL_BLOCKS: usize = 32;
/// The longest `providerKey` or `blockScope` a block may carry (omp's are a provider and an
/// auth kind, such as `kimi-code:api_key`).
const MAX_BLOCK_FIELD: usize = 256;
/// The keys of a snapshot entry omp accepts; anything else upstream adds is dropped, since omp
/// rejects unknown keys.
const ENTRY_KEYS: [&str; 6] = [
    "id",
    "provider",
    "credential",
    "identityKey",
    "rotatesInMs",
    "blocks",
];

/// The view, and what the job changed of it.
#[derive(Default)]
pub(super) struct View {
    /// The proxy's own generation, bumped by [`super::proxy::Proxy`] whenever the view changes.
    pub(super) generation: u64,
    generated_at: Value,
    refresher: Value,
    /// The provider's upstream entries by id (unknown keys dropped, local state not applied).
    entries: BTreeMap<i64, Map<String, Value>>,
    /// Credentials omp disabled during the job: (type, cause, when).
    disabled: BTreeMap<i64, (Value, String, u64)>,
    /// Blocks omp set during the job, by credential.
    blocks: BTreeMap<i64, Vec<Value>>,
}

/// The wall clock in milliseconds, as omp's snapshots carry it.
pub(super) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

impl View {
    /// The entries omp may see, each with upstream's and the job's blocks.
    pub(super) fn visible(&self) -> BTreeMap<i64, Value> {
        self.entries
            .iter()
            .filter(|(id, _)| !self.disabled.contains_key(id))
            .map(|(id, entry)| {
                let mut entry = entry.clone();
                if let Some(local) = self.blocks.get(id) {
                    let same = |a: &Value, b: &Value| {
                        a["providerKey"] == b["providerKey"] && a["blockScope"] == b["blockScope"]
                    };
                    let mut blocks: Vec<Value> = entry
                        .get("blocks")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .filter(|b| !local.iter().any(|l| same(l, b)))
                        .cloned()
                        .collect();
                    blocks.extend(local.iter().cloned());
                    if !blocks.is_empty() {
                        entry.insert("blocks".into(), Value::Array(blocks));
                    }
                }
                (*id, Value::Object(entry))
            })
            .collect()
    }

    fn head(&self) -> Map<String, Value> {
        let mut head = Map::new();
        head.insert("generation".into(), json!(self.generation));
        head.insert("generatedAt".into(), self.generated_at.clone());
        head.insert("serverNowMs".into(), json!(now_ms()));
        head.insert("refresher".into(), self.refresher.clone());
        head
    }

    pub(super) fn snapshot(&self) -> Value {
        let mut body = self.head();
        body.insert(
            "credentials".into(),
            Value::Array(self.visible().into_values().collect()),
        );
        Value::Object(body)
    }

    /// An upstream entry of `provider`, with only the keys omp accepts; `None` for another
    /// provider's or a malformed one.
    pub(super) fn admit(provider: &str, entry: &Value) -> Option<(i64, Map<String, Value>)> {
        let object = entry.as_object()?;
        if object.get("provider")?.as_str()? != provider {
            return None;
        }
        let id = object.get("id")?.as_i64()?;
        let credential = object.get("credential")?.as_object()?;
        // omp runs an API key that starts with `!` as a shell command: never hand one over.
        if credential
            .get("key")
            .and_then(Value::as_str)
            .is_some_and(|key| key.starts_with('!'))
        {
            return None;
        }
        let kept = object
            .iter()
            .filter(|(key, _)| ENTRY_KEYS.contains(&key.as_str()))
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect();
        Some((id, kept))
    }

    /// Takes in an upstream snapshot of `provider`'s credentials; true when omp's view changed
    /// (the first snapshot always does), which moves the generation.
    pub(super) fn take_in(&mut self, provider: &str, snapshot: &Value) -> bool {
        let entries: BTreeMap<i64, Map<String, Value>> = snapshot["credentials"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|entry| View::admit(provider, entry))
            .collect();
        self.refresher = match &snapshot["refresher"] {
            Value::Object(r) if r.len() == 4 => Value::Object(r.clone()),
            _ => default_refresher(),
        };
        self.generated_at = snapshot["generatedAt"]
            .as_f64()
            .map_or_else(|| json!(now_ms()), |_| snapshot["generatedAt"].clone());
        if self.generation == 0 || self.entries != entries {
            self.entries = entries;
            return true;
        }
        false
    }

    /// Whether upstream holds credential `id` of this provider.
    pub(super) fn knows(&self, id: i64) -> bool {
        self.entries.contains_key(&id)
    }

    /// Whether omp disabled credential `id` during the job.
    pub(super) fn is_disabled(&self, id: i64) -> bool {
        self.disabled.contains_key(&id)
    }

    /// Hides credential `id` from omp for the rest of the job, keeping why and when.
    pub(super) fn disable(&mut self, id: i64, cause: String) {
        let kind = self.entries.get(&id).map_or(Value::Null, |e| {
            e.get("credential")
                .map_or(Value::Null, |c| c["type"].clone())
        });
        self.disabled.insert(id, (kind, cause, now_ms()));
    }

    /// Sets `block` (checked by [`is_block`]) on credential `id`, replacing the one for the same
    /// key and scope; past [`MAX_LOCAL_BLOCKS`] the oldest goes.
    pub(super) fn block(&mut self, id: i64, block: Value) {
        let blocks = self.blocks.entry(id).or_default();
        blocks.retain(|b| {
            b["providerKey"] != block["providerKey"] || b["blockScope"] != block["blockScope"]
        });
        if blocks.len() >= MAX_LOCAL_BLOCKS {
            blocks.remove(0);
        }
        blocks.push(block);
    }

    /// Drops the job's blocks of credential `id`; true when there were some.
    pub(super) fn clear_blocks(&mut self, id: i64) -> bool {
        self.blocks.remove(&id).is_some()
    }

    /// A refreshed credential upstream answered: its key material and identity replace the old.
    pub(super) fn refreshed(&mut self, id: i64, fresh: &Map<String, Value>) {
        if let Some(entry) = self.entries.get_mut(&id) {
            for key in ["credential", "identityKey"] {
                if let Some(value) = fresh.get(key) {
                    entry.insert(key.into(), value.clone());
                }
            }
        }
    }

    /// The credentials omp disabled during the job (identity and cause, no key material).
    pub(super) fn disabled(&self, provider: &str) -> Vec<Value> {
        self.disabled
            .iter()
            .map(|(id, (kind, cause, at))| {
                json!({"id": id, "provider": provider, "type": kind, "cause": cause, "disabledAtMs": at})
            })
            .collect()
    }
}

/// The refresher schedule omp requires when upstream sends none it would accept.
fn default_refresher() -> Value {
    json!({"enabled": false, "intervalMs": 60000, "skewMs": 0, "nextSweepInMs": 60000})
}

/// The stream events that take omp from `shown` to `now`, as (event name, body).
pub(super) fn deltas(
    view: &View,
    shown: &BTreeMap<i64, Value>,
    now: &BTreeMap<i64, Value>,
) -> Vec<(&'static str, Value)> {
    let mut events = Vec::new();
    for (id, entry) in now {
        if shown.get(id) != Some(entry) {
            let mut event = Map::new();
            event.insert("kind".into(), json!("entry"));
            event.extend(view.head().into_iter().filter(|(k, _)| k != "generatedAt"));
            event.insert("entry".into(), entry.clone());
            events.push(("entry", Value::Object(event)));
        }
    }
    for id in shown.keys().filter(|id| !now.contains_key(id)) {
        let mut event = Map::new();
        event.insert("kind".into(), json!("removed"));
        event.extend(view.head().into_iter().filter(|(k, _)| k != "generatedAt"));
        event.insert("id".into(), json!(id));
        events.push(("removed", Value::Object(event)));
    }
    events
}

/// Whether `body` is a block as omp sends one, within bounds.
pub(super) fn is_block(body: &Value) -> bool {
    let Some(object) = body.as_object() else {
        return false;
    };
    let field = |name: &str| body[name].as_str().map(str::len);
    field("providerKey").is_some_and(|len| (1..=MAX_BLOCK_FIELD).contains(&len))
        && field("blockScope").is_some_and(|len| len <= MAX_BLOCK_FIELD)
        && body["blockedUntilMs"].is_number()
        && object.get("updatedAtMs").is_none_or(Value::is_number)
        && object.keys().all(|k| {
            ["providerKey", "blockScope", "blockedUntilMs", "updatedAtMs"].contains(&k.as_str())
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_providers_entries_are_admitted_with_known_keys() {
        let entry = json!({"id": 3, "provider": "kimi-code", "credential": {"type": "api_key", "key": "k"},
                           "identityKey": null, "rotatesInMs": null, "extra": 1});
        let (id, kept) = View::admit("kimi-code", &entry).unwrap();
        assert_eq!(id, 3);
        assert!(!kept.contains_key("extra"));
        assert!(View::admit("anthropic", &entry).is_none());
        assert!(View::admit("kimi-code", &json!({"id": "3", "provider": "kimi-code"})).is_none());
        let command = json!({"id": 4, "provider": "kimi-code", "credential": {"type": "api_key", "key": "!cat /etc/passwd"}});
        assert!(View::admit("kimi-code", &command).is_none());
    }

    #[test]
    fn blocks_are_checked_for_omps_shape() {
        assert!(is_block(
            &json!({"providerKey": "k:api_key", "blockScope": "", "blockedUntilMs": 1})
        ));
        assert!(!is_block(
            &json!({"providerKey": "", "blockScope": "", "blockedUntilMs": 1})
        ));
        assert!(!is_block(
            &json!({"providerKey": "k", "blockScope": "", "blockedUntilMs": 1, "x": 1})
        ));
        assert!(!is_block(&json!([])));
        let long = "k".repeat(MAX_BLOCK_FIELD + 1);
        assert!(!is_block(
            &json!({"providerKey": long, "blockScope": "", "blockedUntilMs": 1})
        ));
        assert!(!is_block(
            &json!({"providerKey": "k", "blockScope": long, "blockedUntilMs": 1})
        ));
    }
}
